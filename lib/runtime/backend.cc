// The checks every backend's self-description passes before a Runtime uses it.
#include "brisk/runtime/backend.h"

#include "absl/strings/str_cat.h"

namespace brisk {

std::string_view backend_output_name(BackendOutput output) {
  switch (output) {
    case BackendOutput::kEmbedding: return "embedding";
    case BackendOutput::kLogits: return "logits";
  }
  return "unknown";
}

Status validate_backend_info(const BackendInfo& info) {
  const std::string who = absl::StrCat("backend '", info.name, "'");
  if (info.output != BackendOutput::kEmbedding && info.output != BackendOutput::kLogits) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": output is ", static_cast<int>(info.output), "; expected embedding or logits"));
  }
  if (info.output_dim <= 0 || info.output_dim > (int64_t{1} << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": output_dim is ", info.output_dim, "; expected 1 to ", int64_t{1} << 20));
  }
  if (info.output == BackendOutput::kLogits) {
    if (static_cast<int64_t>(info.labels.size()) != info.output_dim) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": ", info.labels.size(), " labels for ", info.output_dim,
                                                     " logits; expected one label per logit"));
    }
    for (size_t i = 0; i < info.labels.size(); ++i) {
      if (info.labels[i].empty()) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": label ", i, " is empty; expected a name"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace brisk
