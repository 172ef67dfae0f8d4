// Shared by the C API's source files (brisk.cc, brisk_prune.cc): the thread-local error message, status mapping,
// and the catch-all that keeps C++ exceptions out of C. Not installed; hidden in libbrisk.so.
#pragma once

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "brisk.h"
#include "brisk/runtime/answer_cache.h"
#include "brisk/runtime/runtime.h"

// The C handle: a Runtime, and the label names brisk_label_score points at (NUL-terminated, alive with it).
// labels is declared first so that it outlives the Runtime, whose destructor still answers pending submits.
// answers (brisk_answer_cache_*) is declared last: it embeds with the Runtime, so it goes first.
struct brisk_runtime {
  explicit brisk_runtime(std::unique_ptr<brisk::Runtime> rt) : labels(rt->info().labels), runtime(std::move(rt)) {}
  std::vector<std::string> labels;
  std::unique_ptr<brisk::Runtime> runtime;
  std::unique_ptr<brisk::AnswerCache> answers;
};

namespace brisk_capi {

// Records message as this thread's brisk_last_error and returns code.
brisk_status fail(brisk_status code, std::string message);
// The C status for an absl status (BRISK_OK for OK).
brisk_status code_of(const absl::Status& s);
// fail(code_of(s), s.message()), or BRISK_OK.
brisk_status from_status(const absl::Status& s);
// "<function>: <argument> is NULL; expected a valid pointer".
brisk_status null_argument(const char* function, const char* argument);

// The C++ options from the C struct (a prefix of it, per struct_size, over the defaults); errors name `function`
// and the field.
brisk_status runtime_options(const char* function, const brisk_runtime_options* options, brisk::RuntimeOptions& ro);
// The C handle over a created Runtime, with the answer cache the options ask for (answer_cache, semantic_verifier,
// answer_cache_entries; errors name `function` and the field or file).
brisk_status make_handle(const char* function, const brisk_runtime_options* options,
                         std::unique_ptr<brisk::Runtime> runtime, brisk_runtime** out);
// The tracing fields of brisk_runtime_options (span_fn, otlp_trace_path) as RuntimeOptions::span_sink.
brisk_status tracing_options(const char* function, const brisk_runtime_options& o, brisk::RuntimeOptions& ro);

// The ABI rule of the C structs with a struct_size field: the caller knows the first struct_size bytes.
// write_defaults fills exactly those with `defaults` (zeroing any the caller has past ours) and records the size;
// over_defaults copies the caller's prefix over `init`'s defaults, so fields an older caller lacks take theirs.
template <typename T>
void write_defaults(T* out, size_t struct_size, const T& defaults) {
  std::memset(out, 0, struct_size);
  std::memcpy(out, &defaults, std::min(struct_size, sizeof defaults));
  out->struct_size = struct_size;
}
template <typename T, typename Init>
T over_defaults(const T& in, Init init) {
  T out;
  init(&out, sizeof out);
  std::memcpy(&out, &in, std::min(in.struct_size, sizeof out));
  return out;
}

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
