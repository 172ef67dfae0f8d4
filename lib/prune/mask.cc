// Pruning scores and masks: magnitude and Wanda scores, torch-compatible unstructured counts (per tensor and global),
// N:M masks and their check, applying a mask. See include/brisk/prune/mask.h; prune_unstructured and input_norms
// are in unstructured.cc.
#include "brisk/prune/mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace brisk::prune {
namespace {

std::string str(std::string_view s) { return std::string(s); }

// A CPU, contiguous tensor of `dtype` (and `rank`, when rank >= 0); `what` names it in the error.
Status check_tensor(const Tensor& t, std::string_view what, DType dtype, int rank = -1) {
  if (t.dtype() != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(str(what), " is ", dtype_name(t.dtype()), "; expected ", dtype_name(dtype)));
  }
  if (t.device() != Device::kCPU) {
    return absl::InvalidArgumentError(
        absl::StrCat(str(what), " is on ", device_name(t.device()), "; expected a cpu tensor"));
  }
  if (rank >= 0 && t.rank() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(str(what), " has shape ", t.shape_string(), "; expected a ", rank, "-D tensor"));
  }
  if (!t.is_contiguous() || !t.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat(str(what), " of shape ", t.shape_string(), " is not contiguous; expected a contiguous tensor"));
  }
  return absl::OkStatus();
}

// Rankings need a total order: NaN scores are errors.
Status check_no_nan(const float* s, int64_t n, std::string_view what) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(s[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(str(what), " element ", i, " is NaN; expected a number (scores are ranked)"));
    }
  }
  return absl::OkStatus();
}

// round(amount * n) with Python's round half to even, as torch.nn.utils.prune counts (the default FP rounding
// mode, round to nearest even, is what nearbyint uses).
int64_t pruned_count(double amount, int64_t n) {
  return static_cast<int64_t>(std::nearbyint(amount * static_cast<double>(n)));
}

// Zeroes, in the masks, the k lowest of the scores taken in order as one sequence (ties: earliest first).
// O(total) on average: the k-th smallest score by nth_element, then everything below it, then the ties in order.
void mask_lowest(const std::vector<const float*>& scores, const std::vector<int64_t>& sizes,
                 const std::vector<uint8_t*>& masks, int64_t k) {
  for (size_t t = 0; t < masks.size(); ++t) std::fill_n(masks[t], sizes[t], uint8_t{1});
  if (k <= 0) return;
  std::vector<float> all;
  all.reserve(static_cast<size_t>(std::accumulate(sizes.begin(), sizes.end(), int64_t{0})));
  for (size_t t = 0; t < scores.size(); ++t) all.insert(all.end(), scores[t], scores[t] + sizes[t]);
  std::nth_element(all.begin(), all.begin() + (k - 1), all.end());
  const float threshold = all[static_cast<size_t>(k - 1)];
  std::vector<float>().swap(all);
  int64_t below = 0;
  for (size_t t = 0; t < scores.size(); ++t) {
    for (int64_t i = 0; i < sizes[t]; ++i) {
      if (scores[t][i] < threshold) {
        masks[t][i] = 0;
        ++below;
      }
    }
  }
  int64_t ties = k - below;  // > 0: the threshold itself is the k-th smallest
  for (size_t t = 0; t < scores.size() && ties > 0; ++t) {
    for (int64_t i = 0; i < sizes[t] && ties > 0; ++i) {
      if (scores[t][i] == threshold) {
        masks[t][i] = 0;
        --ties;
      }
    }
  }
}

}  // namespace

Status check_amount(double amount, std::string_view what) {
  if (amount >= 0.0 && amount < 1.0) return absl::OkStatus();  // false for NaN
  return absl::InvalidArgumentError(absl::StrCat(str(what), ": amount is ", amount, "; expected a fraction in [0, 1)"));
}

StatusOr<Tensor> element_scores(const Tensor& weight, std::span<const float> input_norms) {
  BRISK_RETURN_IF_ERROR(check_tensor(weight, "weight", DType::kF32, 2));
  const int64_t rows = weight.dim(0), cols = weight.dim(1);
  if (!input_norms.empty() && static_cast<int64_t>(input_norms.size()) != cols) {
    return absl::InvalidArgumentError(absl::StrCat("input_norms has ", input_norms.size(),
                                                   " entries; expected one per input column of the weight ",
                                                   weight.shape_string(), ", ", cols));
  }
  for (size_t j = 0; j < input_norms.size(); ++j) {
    if (!(input_norms[j] >= 0.0f) || std::isinf(input_norms[j])) {
      return absl::InvalidArgumentError(
          absl::StrCat("input_norms[", j, "] is ", input_norms[j], "; expected a finite value >= 0"));
    }
  }
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(weight.shape(), DType::kF32));
  const float* w = weight.data<float>();
  float* s = out.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float a = std::fabs(w[r * cols + c]);
      s[r * cols + c] = input_norms.empty() ? a : a * input_norms[static_cast<size_t>(c)];
    }
  }
  return out;
}

StatusOr<Tensor> unstructured_mask(const Tensor& scores, double amount) {
  BRISK_RETURN_IF_ERROR(check_amount(amount, "unstructured_mask"));
  BRISK_RETURN_IF_ERROR(check_tensor(scores, "scores", DType::kF32));
  BRISK_RETURN_IF_ERROR(check_no_nan(scores.data<float>(), scores.numel(), "scores"));
  BRISK_ASSIGN_OR_RETURN(Tensor mask, Tensor::empty(scores.shape(), DType::kU8));
  mask_lowest({scores.data<float>()}, {scores.numel()}, {mask.data<uint8_t>()}, pruned_count(amount, scores.numel()));
  return mask;
}

StatusOr<std::vector<Tensor>> global_unstructured_masks(const std::vector<Tensor>& scores, double amount) {
  BRISK_RETURN_IF_ERROR(check_amount(amount, "global_unstructured_masks"));
  std::vector<Tensor> masks;
  std::vector<const float*> in;
  std::vector<int64_t> sizes;
  std::vector<uint8_t*> out;
  int64_t total = 0;
  for (size_t t = 0; t < scores.size(); ++t) {
    const std::string what = absl::StrCat("scores[", t, "]");
    BRISK_RETURN_IF_ERROR(check_tensor(scores[t], what, DType::kF32));
    BRISK_RETURN_IF_ERROR(check_no_nan(scores[t].data<float>(), scores[t].numel(), what));
    BRISK_ASSIGN_OR_RETURN(Tensor mask, Tensor::empty(scores[t].shape(), DType::kU8));
    in.push_back(scores[t].data<float>());
    sizes.push_back(scores[t].numel());
    out.push_back(mask.data<uint8_t>());
    masks.push_back(std::move(mask));
    total += scores[t].numel();
  }
  mask_lowest(in, sizes, out, pruned_count(amount, total));
  return masks;
}

StatusOr<Tensor> n_m_mask(const Tensor& scores, int n, int m) {
  if (m < 1 || n < 0 || n > m) {
    return absl::InvalidArgumentError(
        absl::StrCat("N:M pattern is ", n, ":", m, "; expected 0 <= n <= m and m >= 1 (2:4 for sparse tensor cores)"));
  }
  BRISK_RETURN_IF_ERROR(check_tensor(scores, "scores", DType::kF32, 2));
  const int64_t rows = scores.dim(0), cols = scores.dim(1);
  if (cols % m != 0) {
    return absl::InvalidArgumentError(absl::StrCat("scores of shape ", scores.shape_string(), " have rows of ", cols,
                                                   " elements; expected a multiple of m = ", m, " for ", n, ":", m));
  }
  const float* s = scores.data<float>();
  BRISK_RETURN_IF_ERROR(check_no_nan(s, scores.numel(), "scores"));
  BRISK_ASSIGN_OR_RETURN(Tensor mask, Tensor::empty(scores.shape(), DType::kU8));
  uint8_t* out = mask.data<uint8_t>();
  std::fill_n(out, mask.numel(), uint8_t{1});
  std::vector<int> order(static_cast<size_t>(m));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < cols; g += m) {
      const float* group = s + r * cols + g;
      std::iota(order.begin(), order.end(), 0);
      // The m - n lowest are pruned; equal scores prune the earlier element first, as the unstructured masks do.
      std::partial_sort(order.begin(), order.begin() + (m - n), order.end(),
                        [&](int a, int b) { return group[a] < group[b] || (group[a] == group[b] && a < b); });
      for (int i = 0; i < m - n; ++i) out[r * cols + g + order[static_cast<size_t>(i)]] = 0;
    }
  }
  return mask;
}

Status validate_n_m(const Tensor& weight_or_mask, int n, int m) {
  if (m < 1 || n < 0 || n > m) {
    return absl::InvalidArgumentError(absl::StrCat("N:M pattern is ", n, ":", m, "; expected 0 <= n <= m and m >= 1"));
  }
  const Tensor& t = weight_or_mask;
  const bool is_mask = t.dtype() == DType::kU8;
  BRISK_RETURN_IF_ERROR(check_tensor(t, "tensor", is_mask ? DType::kU8 : DType::kF32, 2));
  const int64_t rows = t.dim(0), cols = t.dim(1);
  if (cols % m != 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor of shape ", t.shape_string(), " has rows of ", cols,
                                                   " elements; expected a multiple of m = ", m, " for ", n, ":", m));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < cols / m; ++g) {
      int nonzero = 0;
      for (int64_t i = r * cols + g * m; i < r * cols + (g + 1) * m; ++i) {
        nonzero += is_mask ? t.data<uint8_t>()[i] != 0 : t.data<float>()[i] != 0.0f;
      }
      if (nonzero > n) {
        return absl::InvalidArgumentError(absl::StrCat("row ", r, " group ", g, " (columns ", g * m, "..",
                                                       (g + 1) * m - 1, ") has ", nonzero,
                                                       " non-zeros; expected at most ", n, " of every ", m));
      }
    }
  }
  return absl::OkStatus();
}

Status apply_mask(Tensor& weight, const Tensor& mask) {
  BRISK_RETURN_IF_ERROR(check_tensor(weight, "weight", DType::kF32));
  BRISK_RETURN_IF_ERROR(check_tensor(mask, "mask", DType::kU8));
  if (weight.shape() != mask.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mask has shape ", mask.shape_string(), "; expected the weight's ", weight.shape_string()));
  }
  float* w = weight.data<float>();
  const uint8_t* k = mask.data<uint8_t>();
  for (int64_t i = 0, n = weight.numel(); i < n; ++i) {
    if (k[i] == 0) w[i] = 0.0f;
  }
  return absl::OkStatus();
}

double sparsity(const Tensor& tensor) {
  if (tensor.dtype() != DType::kF32 || tensor.device() != Device::kCPU || !tensor.is_contiguous()) return 0.0;
  const int64_t n = tensor.numel();
  if (n == 0 || tensor.raw_data() == nullptr) return 0.0;
  const float* x = tensor.data<float>();
  int64_t zeros = 0;
  for (int64_t i = 0; i < n; ++i) zeros += x[i] == 0.0f;
  return static_cast<double>(zeros) / static_cast<double>(n);
}

}  // namespace brisk::prune
