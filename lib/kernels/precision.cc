// Precision names. See include/brisk/kernels/precision.h.
#include "brisk/kernels/precision.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace brisk {
namespace {

constexpr const char* kValidPrecisions =
    "fp32, bf16, int8-dynamic (or int8), int8-static, int4-g32, int4-g64, int4-g128 (append -min for groups with a "
    "minimum)";

}  // namespace

std::string precision_name(const PrecisionSpec& spec) {
  switch (spec.precision) {
    case Precision::kF32: return "fp32";
    case Precision::kBF16: return "bf16";
    case Precision::kInt8Dynamic: return "int8-dynamic";
    case Precision::kInt8Static: return "int8-static";
    case Precision::kInt4: return absl::StrCat("int4-g", spec.group_size, spec.with_min ? "-min" : "");
  }
  return "unknown";
}

StatusOr<PrecisionSpec> parse_precision(std::string_view text) {
  PrecisionSpec spec;
  if (text == "fp32" || text == "f32") return spec;
  if (text == "bf16") return PrecisionSpec{Precision::kBF16};
  if (text == "int8" || text == "int8-dynamic") return PrecisionSpec{Precision::kInt8Dynamic};
  if (text == "int8-static") return PrecisionSpec{Precision::kInt8Static};
  std::string_view rest = text;
  if (rest.substr(0, 6) == "int4-g") {
    rest.remove_prefix(6);
    bool with_min = false;
    if (rest.size() > 4 && rest.substr(rest.size() - 4) == "-min") {
      with_min = true;
      rest.remove_suffix(4);
    }
    int64_t group = 0;
    if (absl::SimpleAtoi(std::string(rest), &group) && (group == 32 || group == 64 || group == 128)) {
      return PrecisionSpec{Precision::kInt4, group, with_min};
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("precision '", std::string(text), "' is not known; expected one of ", kValidPrecisions));
}

}  // namespace brisk
