// Shared by the C API's source files (brisk.cc, brisk_prune.cc): the thread-local error message, status mapping,
// and the catch-all that keeps C++ exceptions out of C. Not installed; hidden in libbrisk.so.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "absl/status/status.h"
#include "brisk.h"

namespace brisk_capi {

// Records message as this thread's brisk_last_error and returns code.
brisk_status fail(brisk_status code, std::string message);
// The C status for an absl status (BRISK_OK for OK).
brisk_status code_of(const absl::Status& s);
// fail(code_of(s), s.message()), or BRISK_OK.
brisk_status from_status(const absl::Status& s);
// "<function>: <argument> is NULL; expected a valid pointer".
brisk_status null_argument(const char* function, const char* argument);

// Runs body, turning any exception into a status and message.
template <typename F>
brisk_status guarded(const char* function, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(BRISK_RESOURCE_EXHAUSTED, std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    return fail(BRISK_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(BRISK_INTERNAL, std::string(function) + ": unknown internal error");
  }
}

}  // namespace brisk_capi
