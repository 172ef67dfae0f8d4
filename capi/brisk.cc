// The C API over brisk::Runtime: argument checks, status mapping, the thread-local error message, and a
// catch-all so that no C++ exception crosses into C.
#include "brisk.h"
#include "brisk_internal.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/runtime/runtime.h"

namespace brisk_capi {

namespace {
thread_local std::string g_last_error;
}  // namespace

brisk_status fail(brisk_status code, std::string message) {
  g_last_error = std::move(message);
  return code;
}

brisk_status code_of(const absl::Status& s) {
  if (s.ok()) return BRISK_OK;
  // Device memory (the caching allocator's cap, or the GPU full) marks its RESOURCE_EXHAUSTED: told apart from a
  // full queue, since the caller's remedy differs (smaller batches or a higher cap, not a retry later).
  if (brisk::is_out_of_memory(s)) return BRISK_OUT_OF_MEMORY;
  brisk_status code = BRISK_INTERNAL;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument: code = BRISK_INVALID_ARGUMENT; break;
    case absl::StatusCode::kNotFound: code = BRISK_NOT_FOUND; break;
    case absl::StatusCode::kOutOfRange: code = BRISK_OUT_OF_RANGE; break;
    case absl::StatusCode::kResourceExhausted: code = BRISK_RESOURCE_EXHAUSTED; break;
    case absl::StatusCode::kUnimplemented: code = BRISK_UNIMPLEMENTED; break;
    case absl::StatusCode::kFailedPrecondition: code = BRISK_FAILED_PRECONDITION; break;
    case absl::StatusCode::kDataLoss: code = BRISK_DATA_LOSS; break;
    case absl::StatusCode::kDeadlineExceeded: code = BRISK_DEADLINE_EXCEEDED; break;
    case absl::StatusCode::kCancelled: code = BRISK_CANCELLED; break;
    case absl::StatusCode::kUnavailable: code = BRISK_SHUTDOWN; break;
    case absl::StatusCode::kPermissionDenied: code = BRISK_PERMISSION_DENIED; break;
    default: break;
  }
  return code;
}

brisk_status from_status(const absl::Status& s) {
  if (s.ok()) return BRISK_OK;
  return fail(code_of(s), std::string(s.message()));
}

brisk_status null_argument(const char* function, const char* argument) {
  return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": " + argument + " is NULL; expected a valid pointer");
}

}  // namespace brisk_capi

using namespace brisk_capi;

namespace {

// brisk_pooling values are brisk::Pooling's, so the two convert by cast.
static_assert(BRISK_TORCHSCRIPT_AUTO == static_cast<int>(brisk::TorchScriptOutput::kAuto) &&
              BRISK_TORCHSCRIPT_LAST_HIDDEN_STATE == static_cast<int>(brisk::TorchScriptOutput::kLastHiddenState) &&
              BRISK_TORCHSCRIPT_POOLED == static_cast<int>(brisk::TorchScriptOutput::kPooled) &&
              BRISK_TORCHSCRIPT_LOGITS == static_cast<int>(brisk::TorchScriptOutput::kLogits));
static_assert(BRISK_POOLING_MODEL_DEFAULT == static_cast<int>(brisk::Pooling::kModelDefault) &&
              BRISK_POOLING_MEAN == static_cast<int>(brisk::Pooling::kMean) &&
              BRISK_POOLING_CLS == static_cast<int>(brisk::Pooling::kCls));

// Fields of brisk_runtime_options a caller must provide at the least.
constexpr size_t kMinOptionsSize = offsetof(brisk_runtime_options, model_dir) + sizeof(const char*);

// An option field out of range, named as the caller wrote it.
brisk_status bad(const char* field, int64_t value, const std::string& expected) {
  return fail(BRISK_INVALID_ARGUMENT, std::string("brisk_runtime_create: options->") + field + " is " +
                                          std::to_string(value) + "; expected " + expected);
}

// The batcher fields of brisk_runtime_options onto the C++ policy.
brisk_status batching_options(const brisk_runtime_options& o, brisk::batch::BatchPolicy& p) {
  if (o.max_batch_size < 1 || static_cast<size_t>(o.max_batch_size) > brisk::kMaxBatchSize) {
    return bad("max_batch_size", o.max_batch_size, "1 to " + std::to_string(brisk::kMaxBatchSize));
  }
  const int64_t max_delay_us = std::chrono::duration_cast<std::chrono::microseconds>(brisk::kMaxQueueDelay).count();
  if (o.batch_max_delay_us < 0 || o.batch_max_delay_us > max_delay_us) {
    return bad("batch_max_delay_us", o.batch_max_delay_us, "0 to " + std::to_string(max_delay_us) + " (60 s)");
  }
  if (o.batch_max_queue < 1 || static_cast<size_t>(o.batch_max_queue) > brisk::kMaxQueueSize) {
    return bad("batch_max_queue", o.batch_max_queue, "1 to " + std::to_string(brisk::kMaxQueueSize));
  }
  const int64_t max_target_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(brisk::batch::kMaxLatencyTarget).count();
  if (o.batch_p99_target_ms < 0 || o.batch_p99_target_ms > max_target_ms) {
    return bad("batch_p99_target_ms", o.batch_p99_target_ms, "0 (off) to " + std::to_string(max_target_ms) + " (1 h)");
  }
  p.max_batch_size = static_cast<size_t>(o.max_batch_size);
  p.max_queue_delay = std::chrono::microseconds(o.batch_max_delay_us);
  p.max_queue_size = static_cast<size_t>(o.batch_max_queue);
  p.adaptive.enabled = o.batch_p99_target_ms > 0;
  if (p.adaptive.enabled) p.adaptive.p99_target = std::chrono::milliseconds(o.batch_p99_target_ms);
  return BRISK_OK;
}

// The GPU fields of brisk_runtime_options (appended in 0.5) onto the C++ options. A struct from before them got
// their defaults from brisk_runtime_create's copy over brisk_runtime_options_init. Whether the device and dtype can
// run here is Runtime::create's to say (UNIMPLEMENTED / NOT_FOUND naming the device).
brisk_status device_options(const brisk_runtime_options& o, brisk::RuntimeOptions& ro) {
  if (o.device_index < 0) return bad("device_index", o.device_index, ">= 0 (the GPU's ordinal; 0: the first)");
  if (o.remove_padding != 0 && o.remove_padding != 1) return bad("remove_padding", o.remove_padding, "0 or 1");
  if (o.device_memory_limit < 0) return bad("device_memory_limit", o.device_memory_limit, ">= 0 bytes (0: no cap)");
  switch (o.activation_dtype) {
    case BRISK_DTYPE_DEFAULT: ro.activation_dtype.reset(); break;
    case BRISK_DTYPE_F32: ro.activation_dtype = brisk::DType::kF32; break;
    case BRISK_DTYPE_F16: ro.activation_dtype = brisk::DType::kF16; break;
    case BRISK_DTYPE_BF16: ro.activation_dtype = brisk::DType::kBF16; break;
    default:
      return bad("activation_dtype", o.activation_dtype,
                 "a brisk_dtype: BRISK_DTYPE_DEFAULT (0), F32 (1), F16 (2) or BF16 (3)");
  }
  ro.device_index = o.device_index;
  ro.remove_padding = o.remove_padding == 1;
  ro.device_memory_limit = static_cast<size_t>(o.device_memory_limit);
  return BRISK_OK;
}

// The cache fields of brisk_runtime_options onto the C++ options.
brisk_status cache_options(const brisk_runtime_options& o, brisk::RuntimeCacheOptions& c) {
  if (o.cache_result_bytes < 0) return bad("cache_result_bytes", o.cache_result_bytes, ">= 0 (0: no result cache)");
  if (o.cache_ttl_ms < 0) return bad("cache_ttl_ms", o.cache_ttl_ms, ">= 0 (0: until evicted)");
  if (o.cache_token_entries < 0 || static_cast<size_t>(o.cache_token_entries) > brisk::kMaxTokenCacheEntries) {
    return bad("cache_token_entries", o.cache_token_entries,
               "0 (off) to " + std::to_string(brisk::kMaxTokenCacheEntries));
  }
  c.result_cache_bytes = static_cast<uint64_t>(o.cache_result_bytes);
  c.result_ttl = std::chrono::milliseconds(o.cache_ttl_ms);
  c.token_cache_entries = static_cast<size_t>(o.cache_token_entries);
  if (o.redis_host != nullptr) {
    if (o.cache_ttl_ms == 0) return bad("cache_ttl_ms", 0, "> 0 with redis_host (shared entries must expire)");
    if (o.redis_port < 1 || o.redis_port > 65535) return bad("redis_port", o.redis_port, "a TCP port, 1 to 65535");
    const int64_t max_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(brisk::cache::kMaxRedisTimeout).count();
    if (o.redis_timeout_ms < 1 || o.redis_timeout_ms > max_ms) {
      return bad("redis_timeout_ms", o.redis_timeout_ms, "1 to " + std::to_string(max_ms));
    }
    brisk::cache::RedisOptions& r = c.redis.emplace();
    r.host = o.redis_host;
    r.port = o.redis_port;
    r.command_timeout = std::chrono::milliseconds(o.redis_timeout_ms);
    if (o.redis_tls != 0 && o.redis_tls != 1) return bad("redis_tls", o.redis_tls, "0 or 1");
    if (o.redis_user != nullptr && o.redis_user[0] != '\0' &&
        (o.redis_password == nullptr || o.redis_password[0] == '\0')) {
      return fail(BRISK_INVALID_ARGUMENT,
                  "brisk_runtime_create: options->redis_user is set but redis_password is "
                  "empty; expected the ACL user's password");
    }
    if (o.redis_user != nullptr) r.user = o.redis_user;
    if (o.redis_password != nullptr) r.password = o.redis_password;
    if (o.redis_signing_key != nullptr) r.signing_key = o.redis_signing_key;
    if (o.redis_allow_unsigned != 0 && o.redis_allow_unsigned != 1) {
      return bad("redis_allow_unsigned", o.redis_allow_unsigned, "0 or 1");
    }
    r.allow_unsigned = o.redis_allow_unsigned == 1;
    if (r.signing_key.empty() && !r.allow_unsigned) {
      return fail(BRISK_INVALID_ARGUMENT,
                  "brisk_runtime_create: options->redis_signing_key is not set; expected a secret shared by every "
                  "process using the server, or options->redis_allow_unsigned = 1 to accept unsigned values (which "
                  "anyone who can write to the server can forge)");
    }
    r.tls = o.redis_tls == 1;
  }
  return BRISK_OK;
}

// Copies text into buf when it fits (NUL included), reporting the size needed.
brisk_status write_string(const char* function, const std::string& text, char* buf, size_t len, size_t* required) {
  const size_t need = text.size() + 1;
  if (required != nullptr) *required = need;
  if (len < need) {
    return fail(BRISK_OUT_OF_RANGE, std::string(function) + ": len is " + std::to_string(len) +
                                        " bytes; the text needs " + std::to_string(need) + " (NUL included)");
  }
  if (buf == nullptr) return null_argument(function, "buf");
  std::memcpy(buf, text.c_str(), need);
  return BRISK_OK;
}

}  // namespace

namespace brisk_capi {

brisk_status runtime_options(const char* function, const brisk_runtime_options* options, brisk::RuntimeOptions& ro) {
  if (options == nullptr) return null_argument(function, "options");
  if (options->struct_size < kMinOptionsSize) {
    return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": options->struct_size is " +
                                            std::to_string(options->struct_size) +
                                            "; expected sizeof(brisk_runtime_options), set by "
                                            "brisk_runtime_options_init");
  }
  // Copy the prefix the caller knows about over our defaults.
  brisk_runtime_options o = over_defaults(*options, brisk_runtime_options_init);
  // Callers built before the caches existed keep their behaviour: no result cache, so every submit still
  // calls back from a batcher thread.
  if (options->struct_size < offsetof(brisk_runtime_options, cache_result_bytes) + sizeof(int64_t)) {
    o.cache_result_bytes = 0;
  }
  if (o.model_dir == nullptr) return null_argument(function, "options->model_dir");
  if (o.pooling < BRISK_POOLING_MODEL_DEFAULT || o.pooling > BRISK_POOLING_CLS) {
    return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": options->pooling is " + std::to_string(o.pooling) +
                                            "; expected a brisk_pooling value (0, 1 or 2)");
  }
  if (o.device != BRISK_DEVICE_CPU && o.device != BRISK_DEVICE_CUDA) {
    return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": options->device is " + std::to_string(o.device) +
                                            "; expected BRISK_DEVICE_CPU (0) or BRISK_DEVICE_CUDA (1)");
  }
  ro.model_dir = o.model_dir;
  ro.num_threads = o.num_threads;
  ro.max_seq_len = o.max_seq_len;
  ro.pooling = static_cast<brisk::Pooling>(o.pooling);
  if (o.num_threads < 0 || o.num_threads > brisk::kMaxThreads) {
    return bad("num_threads", o.num_threads,
               "0 (the CPUs this process may use) to " + std::to_string(brisk::kMaxThreads));
  }
  if (o.normalize < -1 || o.normalize > 1) {
    return bad("normalize", o.normalize, "1 (on), 0 (off) or -1 (as the model says)");
  }
  if (o.normalize >= 0) ro.normalize = o.normalize == 1;
  if (o.replace_invalid_utf8 != 0 && o.replace_invalid_utf8 != 1) {
    return bad("replace_invalid_utf8", o.replace_invalid_utf8, "0 or 1");
  }
  ro.replace_invalid_utf8 = o.replace_invalid_utf8 == 1;
  ro.device = o.device == BRISK_DEVICE_CUDA ? brisk::Device::kCUDA : brisk::Device::kCPU;
  if (brisk_status s = device_options(o, ro); s != BRISK_OK) return s;
  if (brisk_status s = batching_options(o, ro.batching); s != BRISK_OK) return s;
  if (brisk_status s = cache_options(o, ro.cache); s != BRISK_OK) return s;
  if (brisk_status s = tracing_options(function, o, ro); s != BRISK_OK) return s;
  if (o.classification_head != nullptr) ro.classification_head = o.classification_head;
  if (o.torchscript_module != nullptr && o.torchscript_module[0] != '\0') {
    if (o.torchscript_output < BRISK_TORCHSCRIPT_AUTO || o.torchscript_output > BRISK_TORCHSCRIPT_LOGITS) {
      return bad("torchscript_output", o.torchscript_output, "a brisk_torchscript_output (0 to 3)");
    }
    ro.torchscript.emplace();
    ro.torchscript->module = o.torchscript_module;
    ro.torchscript->output = static_cast<brisk::TorchScriptOutput>(o.torchscript_output);
  }
  if (o.fallback_model != nullptr && o.fallback_model[0] != '\0') {
    if (o.fallback_threads < 0 || o.fallback_threads > brisk::kMaxThreads) {
      return bad("fallback_threads", o.fallback_threads, "0 (num_threads) to " + std::to_string(brisk::kMaxThreads));
    }
    ro.fallback = brisk::FallbackOptions{
        .model_dir = o.fallback_model, .classification_head = {}, .num_threads = o.fallback_threads};
  }
  if (o.cache_stale_ttl_ms < 0) return bad("cache_stale_ttl_ms", o.cache_stale_ttl_ms, ">= 0 (0: none kept)");
  ro.cache.stale_ttl = std::chrono::milliseconds(o.cache_stale_ttl_ms);
  if (o.policy_path != nullptr) ro.policy_path = o.policy_path;
  return BRISK_OK;
}

}  // namespace brisk_capi

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
    case BRISK_RESOURCE_EXHAUSTED: return "resource exhausted or overloaded";
    case BRISK_UNIMPLEMENTED: return "unimplemented";
    case BRISK_FAILED_PRECONDITION: return "failed precondition";
    case BRISK_DATA_LOSS: return "data loss";
    case BRISK_INTERNAL: return "internal error";
    case BRISK_DEADLINE_EXCEEDED: return "deadline exceeded";
    case BRISK_CANCELLED: return "cancelled";
    case BRISK_SHUTDOWN: return "shut down";
    case BRISK_PERMISSION_DENIED: return "permission denied";
    case BRISK_OUT_OF_MEMORY: return "out of device memory";
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
  defaults.normalize = cpp.normalize ? (*cpp.normalize ? 1 : 0) : -1;
  defaults.device = cpp.device == brisk::Device::kCUDA ? BRISK_DEVICE_CUDA : BRISK_DEVICE_CPU;
  defaults.max_batch_size = static_cast<int32_t>(cpp.batching.max_batch_size);
  defaults.batch_max_delay_us =
      static_cast<int32_t>(std::chrono::duration_cast<std::chrono::microseconds>(cpp.batching.max_queue_delay).count());
  defaults.batch_max_queue = static_cast<int32_t>(cpp.batching.max_queue_size);
  defaults.batch_p99_target_ms = 0;
  defaults.cache_result_bytes = static_cast<int64_t>(cpp.cache.result_cache_bytes);
  defaults.cache_ttl_ms =
      static_cast<int32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(cpp.cache.result_ttl).count());
  defaults.cache_token_entries = static_cast<int32_t>(cpp.cache.token_cache_entries);
  const brisk::cache::RedisOptions redis;
  defaults.redis_host = nullptr;
  defaults.redis_port = redis.port;
  defaults.redis_timeout_ms =
      static_cast<int32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(redis.command_timeout).count());
  defaults.redis_user = nullptr;
  defaults.redis_password = nullptr;
  defaults.redis_signing_key = nullptr;
  defaults.redis_tls = 0;
  defaults.replace_invalid_utf8 = cpp.replace_invalid_utf8 ? 1 : 0;
  defaults.device_index = cpp.device_index;
  defaults.activation_dtype = BRISK_DTYPE_DEFAULT;  // cpp.activation_dtype is nullopt: as the device says
  defaults.remove_padding = cpp.remove_padding ? 1 : 0;
  defaults.device_memory_limit = static_cast<int64_t>(cpp.device_memory_limit);
  // Exactly the caller's bytes: zero what a newer caller has beyond our struct, our defaults for the rest.
  write_defaults(options, struct_size, defaults);
  return BRISK_OK;
}

brisk_status brisk_runtime_create(const brisk_runtime_options* options, brisk_runtime** out) {
  return guarded("brisk_runtime_create", [&]() -> brisk_status {
    if (out == nullptr) return null_argument("brisk_runtime_create", "out");
    *out = nullptr;
    brisk::RuntimeOptions ro;
    if (brisk_status s = runtime_options("brisk_runtime_create", options, ro); s != BRISK_OK) return s;
    auto rt = brisk::Runtime::create(ro);
    if (!rt.ok()) return from_status(rt.status());
    return make_handle("brisk_runtime_create", options, std::move(*rt), out);
  });
}

void brisk_runtime_destroy(brisk_runtime* runtime) { delete runtime; }

brisk_status brisk_embedding_dim(const brisk_runtime* runtime, size_t* out_dim) {
  if (runtime == nullptr) return null_argument("brisk_embedding_dim", "runtime");
  if (out_dim == nullptr) return null_argument("brisk_embedding_dim", "out_dim");
  *out_dim = static_cast<size_t>(runtime->runtime->embedding_dim());
  return BRISK_OK;
}

const char* brisk_query_prompt(const brisk_runtime* runtime) {
  if (runtime == nullptr) return nullptr;
  const auto& prompts = runtime->runtime->info().prompts;
  const auto query = prompts.find("query");
  return query == prompts.end() ? "" : query->second.c_str();
}

brisk_status brisk_embed(brisk_runtime* runtime, const char* const* texts, size_t n, float* out, size_t out_len) {
  return guarded("brisk_embed", [&]() -> brisk_status {
    if (runtime == nullptr) return null_argument("brisk_embed", "runtime");
    if (n == 0) return BRISK_OK;
    if (texts == nullptr) return null_argument("brisk_embed", "texts");
    if (out == nullptr) return null_argument("brisk_embed", "out");
    const size_t dim = static_cast<size_t>(runtime->runtime->embedding_dim());
    if (dim == 0) return from_status(runtime->runtime->embed({}, {}));  // not an embedding model: says which
    if (out_len / dim < n) {
      return fail(BRISK_INVALID_ARGUMENT, "brisk_embed: out_len is " + std::to_string(out_len) +
                                              " floats; expected at least n * dim = " + std::to_string(n) + " * " +
                                              std::to_string(dim));
    }
    std::vector<std::string_view> views(n);
    for (size_t i = 0; i < n; ++i) {
      if (texts[i] == nullptr) {
        return fail(BRISK_INVALID_ARGUMENT,
                    "brisk_embed: texts[" + std::to_string(i) + "] is NULL; expected a NUL-terminated UTF-8 string");
      }
      views[i] = texts[i];
    }
    return from_status(runtime->runtime->embed(views, std::span<float>(out, n * dim)));
  });
}

}  // extern "C"

extern "C" {

brisk_status brisk_cancel(brisk_runtime* runtime, uint64_t request_id) {
  return guarded("brisk_cancel", [&]() -> brisk_status {
    if (runtime == nullptr) return null_argument("brisk_cancel", "runtime");
    return from_status(runtime->runtime->cancel(request_id));
  });
}

brisk_status brisk_stats_json(brisk_runtime* runtime, char* buf, size_t len, size_t* required) {
  return guarded("brisk_stats_json", [&]() -> brisk_status {
    if (runtime == nullptr) return null_argument("brisk_stats_json", "runtime");
    return write_string("brisk_stats_json", runtime->runtime->stats_json(), buf, len, required);
  });
}

brisk_status brisk_metrics_prometheus(brisk_runtime* runtime, char* buf, size_t len, size_t* required) {
  return guarded("brisk_metrics_prometheus", [&]() -> brisk_status {
    if (runtime == nullptr) return null_argument("brisk_metrics_prometheus", "runtime");
    std::string text = runtime->runtime->metrics_prometheus();
    if (runtime->answers != nullptr) text += runtime->answers->metrics_prometheus();
    return write_string("brisk_metrics_prometheus", text, buf, len, required);
  });
}

brisk_status brisk_cache_invalidate_tag(brisk_runtime* runtime, const char* tag, size_t* removed) {
  return guarded("brisk_cache_invalidate_tag", [&]() -> brisk_status {
    if (removed != nullptr) *removed = 0;
    if (runtime == nullptr) return null_argument("brisk_cache_invalidate_tag", "runtime");
    if (tag == nullptr) return null_argument("brisk_cache_invalidate_tag", "tag");
    auto n = runtime->runtime->cache_invalidate_tag(tag);
    if (!n.ok()) return from_status(n.status());
    if (removed != nullptr) *removed = *n;
    return BRISK_OK;
  });
}

brisk_status brisk_cache_stats_json(brisk_runtime* runtime, char* buf, size_t len, size_t* required) {
  return guarded("brisk_cache_stats_json", [&]() -> brisk_status {
    if (runtime == nullptr) return null_argument("brisk_cache_stats_json", "runtime");
    return write_string("brisk_cache_stats_json", runtime->runtime->cache_stats_json(), buf, len, required);
  });
}

}  // extern "C"
