// The host-callback backend of the C API: a brisk_backend_fn behind brisk::Backend, so that compute the host does
// itself gets brisk's tokenizer, caches, batching and metrics.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk.h"
#include "brisk_internal.h"
#include "brisk/core/allocator.h"

using namespace brisk_capi;

namespace {

class CallbackBackend final : public brisk::Backend {
 public:
  CallbackBackend(const brisk_backend& b, brisk::BackendInfo info)
      : run_(b.run), user_data_(b.user_data), bytes_per_token_(b.bytes_per_token), info_(std::move(info)) {}

  const brisk::BackendInfo& info() const override { return info_; }

  brisk::Status run(const brisk::PackedSequences& batch, std::span<float> out) const override {
    const size_t n = static_cast<size_t>(batch.size());
    std::vector<int32_t> types = batch.token_type_ids;
    types.resize(batch.input_ids.size(), 0);
    const brisk_batch c{n, batch.input_ids.size(), batch.input_ids.data(), types.data(), batch.offsets.data()};
    // NaN marks what the host has not written.
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    char error[512] = {0};
    const brisk_status s = run_(user_data_, &c, out.data(), out.size(), error, sizeof error);
    error[sizeof error - 1] = '\0';
    if (s != BRISK_OK) {
      return to_absl(s, absl::StrCat("backend '", info_.name, "' returned ", brisk_status_string(s),
                                     error[0] != '\0' ? ": " : "", error));
    }
    const size_t dim = static_cast<size_t>(info_.output_dim);
    for (size_t i = 0; i < out.size(); ++i) {
      if (!std::isfinite(out[i])) {
        return absl::InternalError(absl::StrCat("backend '", info_.name, "' left row ", i / dim, " value ", i % dim,
                                                std::isnan(out[i]) ? " unset (NaN)" : " infinite",
                                                "; expected every one of the ", n, " x ", dim,
                                                " values written and finite"));
      }
    }
    return absl::OkStatus();
  }

  size_t estimate_activation_bytes(const brisk::BatchShape& shape) const override {
    if (bytes_per_token_ > 0 && shape.total_cost > std::numeric_limits<size_t>::max() / bytes_per_token_) {
      return std::numeric_limits<size_t>::max();  // saturate: past any budget
    }
    return shape.total_cost * bytes_per_token_;
  }

 private:
  // The host's status as the C++ one that code_of() maps back to it.
  static absl::Status to_absl(brisk_status s, std::string message) {
    switch (s) {
      case BRISK_INVALID_ARGUMENT: return absl::InvalidArgumentError(message);
      case BRISK_NOT_FOUND: return absl::NotFoundError(message);
      case BRISK_OUT_OF_RANGE: return absl::OutOfRangeError(message);
      case BRISK_RESOURCE_EXHAUSTED: return absl::ResourceExhaustedError(message);
      case BRISK_UNIMPLEMENTED: return absl::UnimplementedError(message);
      case BRISK_FAILED_PRECONDITION: return absl::FailedPreconditionError(message);
      case BRISK_DATA_LOSS: return absl::DataLossError(message);
      case BRISK_DEADLINE_EXCEEDED: return absl::DeadlineExceededError(message);
      case BRISK_CANCELLED: return absl::CancelledError(message);
      case BRISK_SHUTDOWN: return absl::UnavailableError(message);
      case BRISK_PERMISSION_DENIED: return absl::PermissionDeniedError(message);
      case BRISK_OUT_OF_MEMORY: return brisk::out_of_memory_error(message);
      default: return absl::InternalError(message);
    }
  }

  brisk_backend_fn run_;
  void* user_data_;
  size_t bytes_per_token_;
  brisk::BackendInfo info_;
};

}  // namespace

extern "C" {

brisk_status brisk_backend_init(brisk_backend* backend, size_t struct_size) {
  if (backend == nullptr) return null_argument("brisk_backend_init", "backend");
  if (struct_size < offsetof(brisk_backend, output_dim) + sizeof(size_t)) {
    return fail(BRISK_INVALID_ARGUMENT, "brisk_backend_init: struct_size is " + std::to_string(struct_size) +
                                            "; expected sizeof(brisk_backend)");
  }
  brisk_backend defaults;
  std::memset(&defaults, 0, sizeof defaults);
  defaults.output = BRISK_OUTPUT_EMBEDDING;
  write_defaults(backend, struct_size, defaults);
  return BRISK_OK;
}

brisk_status brisk_runtime_create_with_backend(const brisk_runtime_options* options, const brisk_backend* backend,
                                               brisk_runtime** out) {
  constexpr const char* kFn = "brisk_runtime_create_with_backend";
  return guarded(kFn, [&]() -> brisk_status {
    if (out == nullptr) return null_argument(kFn, "out");
    *out = nullptr;
    if (backend == nullptr) return null_argument(kFn, "backend");
    if (backend->struct_size < offsetof(brisk_backend, output_dim) + sizeof(size_t)) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(kFn) + ": backend->struct_size is " +
                                              std::to_string(backend->struct_size) +
                                              "; expected sizeof(brisk_backend), set by brisk_backend_init");
    }
    const brisk_backend b = over_defaults(*backend, brisk_backend_init);
    if (b.run == nullptr) return null_argument(kFn, "backend->run");
    if (b.output != BRISK_OUTPUT_EMBEDDING && b.output != BRISK_OUTPUT_LOGITS) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(kFn) + ": backend->output is " + std::to_string(b.output) +
                                              "; expected BRISK_OUTPUT_EMBEDDING (0) or BRISK_OUTPUT_LOGITS (1)");
    }
    if (b.multi_label != 0 && b.multi_label != 1) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(kFn) + ": backend->multi_label is " +
                                              std::to_string(b.multi_label) + "; expected 0 or 1");
    }
    brisk::BackendInfo info;
    info.name = b.name != nullptr && b.name[0] != '\0' ? b.name : "callback";
    info.description = "host callback";
    info.output = b.output == BRISK_OUTPUT_LOGITS ? brisk::BackendOutput::kLogits : brisk::BackendOutput::kEmbedding;
    info.output_dim = static_cast<int64_t>(std::min<size_t>(b.output_dim, size_t{1} << 40));
    info.multi_label = b.multi_label == 1;
    if (info.output == brisk::BackendOutput::kLogits && info.output_dim <= (int64_t{1} << 20)) {
      for (size_t i = 0; i < b.output_dim; ++i) {
        if (b.labels != nullptr && b.labels[i] == nullptr) {
          return fail(BRISK_INVALID_ARGUMENT,
                      std::string(kFn) + ": backend->labels[" + std::to_string(i) + "] is NULL; expected a label name");
        }
        info.labels.push_back(b.labels != nullptr ? std::string(b.labels[i]) : absl::StrCat("LABEL_", i));
      }
    }
    brisk::RuntimeOptions ro;
    if (brisk_status s = runtime_options(kFn, options, ro); s != BRISK_OK) return s;
    auto rt = brisk::Runtime::create(ro, std::make_unique<CallbackBackend>(b, std::move(info)));
    if (!rt.ok()) return from_status(rt.status());
    return make_handle(kFn, options, std::move(*rt), out);
  });
}

}  // extern "C"
