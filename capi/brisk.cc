// The C API over brisk::Runtime: argument checks, status mapping, the thread-local error message, and a
// catch-all so that no C++ exception crosses into C.
#include "brisk.h"

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/runtime/runtime.h"

struct brisk_runtime {
  std::unique_ptr<brisk::Runtime> runtime;
};

namespace {

thread_local std::string g_last_error;

brisk_status fail(brisk_status code, std::string message) {
  g_last_error = std::move(message);
  return code;
}

brisk_status from_status(const absl::Status& s) {
  if (s.ok()) return BRISK_OK;
  brisk_status code = BRISK_INTERNAL;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument: code = BRISK_INVALID_ARGUMENT; break;
    case absl::StatusCode::kNotFound: code = BRISK_NOT_FOUND; break;
    case absl::StatusCode::kOutOfRange: code = BRISK_OUT_OF_RANGE; break;
    case absl::StatusCode::kResourceExhausted: code = BRISK_RESOURCE_EXHAUSTED; break;
    case absl::StatusCode::kUnimplemented: code = BRISK_UNIMPLEMENTED; break;
    case absl::StatusCode::kFailedPrecondition: code = BRISK_FAILED_PRECONDITION; break;
    case absl::StatusCode::kDataLoss: code = BRISK_DATA_LOSS; break;
    default: break;
  }
  return fail(code, std::string(s.message()));
}

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

brisk_status null_argument(const char* function, const char* argument) {
  return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": " + argument + " is NULL; expected a valid pointer");
}

// brisk_pooling values are brisk::Pooling's, so the two convert by cast.
static_assert(BRISK_POOLING_MODEL_DEFAULT == static_cast<int>(brisk::Pooling::kModelDefault) &&
              BRISK_POOLING_MEAN == static_cast<int>(brisk::Pooling::kMean) &&
              BRISK_POOLING_CLS == static_cast<int>(brisk::Pooling::kCls));

// Fields of brisk_runtime_options a caller must provide at the least.
constexpr size_t kMinOptionsSize = offsetof(brisk_runtime_options, model_dir) + sizeof(const char*);

}  // namespace

extern "C" {

uint32_t brisk_abi_version(void) { return BRISK_ABI_VERSION; }

const char* brisk_version_string(void) { return BRISK_VERSION_STRING; }

const char* brisk_last_error(void) { return g_last_error.c_str(); }

const char* brisk_status_string(brisk_status status) {
  switch (status) {
    case BRISK_OK: return "ok";
    case BRISK_INVALID_ARGUMENT: return "invalid argument";
    case BRISK_NOT_FOUND: return "not found";
    case BRISK_OUT_OF_RANGE: return "out of range";
    case BRISK_RESOURCE_EXHAUSTED: return "resource exhausted";
    case BRISK_UNIMPLEMENTED: return "unimplemented";
    case BRISK_FAILED_PRECONDITION: return "failed precondition";
    case BRISK_DATA_LOSS: return "data loss";
    case BRISK_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char* brisk_default_model_dir(void) {
  static const std::string dir = brisk::default_model_dir();
  return dir.c_str();
}

brisk_status brisk_runtime_options_init(brisk_runtime_options* options, size_t struct_size) {
  if (options == nullptr) return null_argument("brisk_runtime_options_init", "options");
  if (struct_size < kMinOptionsSize) {
    return fail(BRISK_INVALID_ARGUMENT, "brisk_runtime_options_init: struct_size is " + std::to_string(struct_size) +
                                            "; expected sizeof(brisk_runtime_options)");
  }
  brisk_runtime_options defaults;
  std::memset(&defaults, 0, sizeof defaults);
  const brisk::RuntimeOptions cpp;  // one source of truth for the defaults
  defaults.num_threads = cpp.num_threads;
  defaults.max_seq_len = cpp.max_seq_len;
  defaults.pooling = static_cast<int32_t>(cpp.pooling);
  defaults.normalize = cpp.normalize ? 1 : 0;
  defaults.device = cpp.device == brisk::Device::kCUDA ? BRISK_DEVICE_CUDA : BRISK_DEVICE_CPU;
  defaults.max_batch_size = cpp.max_batch_size;
  // Exactly the caller's bytes: zero what a newer caller has beyond our struct, our defaults for the rest.
  std::memset(options, 0, struct_size);
  std::memcpy(options, &defaults, std::min(struct_size, sizeof defaults));
  options->struct_size = struct_size;
  return BRISK_OK;
}

brisk_status brisk_runtime_create(const brisk_runtime_options* options, brisk_runtime** out) {
  return guarded("brisk_runtime_create", [&]() -> brisk_status {
    if (out == nullptr) return null_argument("brisk_runtime_create", "out");
    *out = nullptr;
    if (options == nullptr) return null_argument("brisk_runtime_create", "options");
    if (options->struct_size < kMinOptionsSize) {
      return fail(BRISK_INVALID_ARGUMENT, "brisk_runtime_create: options->struct_size is " +
                                              std::to_string(options->struct_size) +
                                              "; expected sizeof(brisk_runtime_options), set by "
                                              "brisk_runtime_options_init");
    }
    // Copy the prefix the caller knows about over our defaults.
    brisk_runtime_options o;
    brisk_runtime_options_init(&o, sizeof o);
    std::memcpy(&o, options, std::min(options->struct_size, sizeof(o)));
    if (o.model_dir == nullptr) return null_argument("brisk_runtime_create", "options->model_dir");
    if (o.pooling < BRISK_POOLING_MODEL_DEFAULT || o.pooling > BRISK_POOLING_CLS) {
      return fail(BRISK_INVALID_ARGUMENT, "brisk_runtime_create: options->pooling is " + std::to_string(o.pooling) +
                                              "; expected a brisk_pooling value (0, 1 or 2)");
    }
    if (o.device != BRISK_DEVICE_CPU && o.device != BRISK_DEVICE_CUDA) {
      return fail(BRISK_INVALID_ARGUMENT, "brisk_runtime_create: options->device is " + std::to_string(o.device) +
                                              "; expected BRISK_DEVICE_CPU (0) or BRISK_DEVICE_CUDA (1)");
    }
    brisk::RuntimeOptions ro;
    ro.model_dir = o.model_dir;
    ro.num_threads = o.num_threads;
    ro.max_seq_len = o.max_seq_len;
    ro.pooling = static_cast<brisk::Pooling>(o.pooling);
    ro.normalize = o.normalize != 0;
    ro.device = o.device == BRISK_DEVICE_CUDA ? brisk::Device::kCUDA : brisk::Device::kCPU;
    ro.max_batch_size = o.max_batch_size;
    auto rt = brisk::Runtime::create(ro);
    if (!rt.ok()) return from_status(rt.status());
    *out = new brisk_runtime{std::move(*rt)};
    return BRISK_OK;
  });
}

void brisk_runtime_destroy(brisk_runtime* runtime) { delete runtime; }

brisk_status brisk_embedding_dim(const brisk_runtime* runtime, size_t* out_dim) {
  if (runtime == nullptr) return null_argument("brisk_embedding_dim", "runtime");
  if (out_dim == nullptr) return null_argument("brisk_embedding_dim", "out_dim");
  *out_dim = static_cast<size_t>(runtime->runtime->embedding_dim());
  return BRISK_OK;
}

brisk_status brisk_embed(brisk_runtime* runtime, const char* const* texts, size_t n, float* out, size_t out_len) {
  return guarded("brisk_embed", [&]() -> brisk_status {
    if (runtime == nullptr) return null_argument("brisk_embed", "runtime");
    if (n == 0) return BRISK_OK;
    if (texts == nullptr) return null_argument("brisk_embed", "texts");
    if (out == nullptr) return null_argument("brisk_embed", "out");
    const size_t dim = static_cast<size_t>(runtime->runtime->embedding_dim());
    if (out_len / dim < n) {
      return fail(BRISK_INVALID_ARGUMENT, "brisk_embed: out_len is " + std::to_string(out_len) + " floats; expected at least n * dim = " +
                                              std::to_string(n) + " * " + std::to_string(dim));
    }
    std::vector<std::string_view> views(n);
    for (size_t i = 0; i < n; ++i) {
      if (texts[i] == nullptr) {
        return fail(BRISK_INVALID_ARGUMENT, "brisk_embed: texts[" + std::to_string(i) + "] is NULL; expected a NUL-terminated UTF-8 string");
      }
      views[i] = texts[i];
    }
    return from_status(runtime->runtime->embed(views, std::span<float>(out, n * dim)));
  });
}

}  // extern "C"
