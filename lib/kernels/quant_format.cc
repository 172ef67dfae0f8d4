// The quantized formats' arithmetic. See include/brisk/kernels/quant_format.h.
#include "brisk/kernels/quant_format.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "brisk/core/half.h"
#include "brisk/core/internal/finite.h"

namespace brisk {
namespace {

Status check_matrix(const Tensor& w, std::string_view name) {
  if (w.dtype() != DType::kF32 || w.rank() != 2 || !w.is_contiguous() || w.device() != Device::kCPU) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", std::string(name), "' is ", dtype_name(w.dtype()), " ",
                                                   w.shape_string(), "; expected a contiguous f32 cpu matrix"));
  }
  return check_finite(w.data<float>(), w.numel(), name);
}

int64_t round_to_int(float v) { return static_cast<int64_t>(std::nearbyint(v)); }

}  // namespace

Status check_finite(const float* data, int64_t n, std::string_view name) {
  if (const int64_t i = first_non_finite(data, n); i >= 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", std::string(name), "' has ", data[i], " at element ", i,
                                                   "; expected finite values to quantize"));
  }
  return absl::OkStatus();
}

StatusOr<Int8Matrix> quantize_int8(const Tensor& weight, std::string_view name, bool per_channel) {
  BRISK_RETURN_IF_ERROR(check_matrix(weight, name));
  const int64_t rows = weight.dim(0);
  const int64_t cols = weight.dim(1);
  Int8Matrix q;
  BRISK_ASSIGN_OR_RETURN(q.values, Tensor::empty({rows, cols}, DType::kI8));
  BRISK_ASSIGN_OR_RETURN(q.scales, Tensor::empty({per_channel ? rows : 1}, DType::kF32));
  const float* w = weight.data<float>();
  float* scales = q.scales.data<float>();
  auto absmax = [&](int64_t begin, int64_t end) {
    float m = 0.0f;
    for (int64_t i = begin; i < end; ++i) m = std::max(m, std::fabs(w[i]));
    return m;
  };
  if (per_channel) {
    for (int64_t r = 0; r < rows; ++r) scales[r] = absmax(r * cols, (r + 1) * cols) / 127.0f;
  } else {
    scales[0] = absmax(0, rows * cols) / 127.0f;
  }
  for (int64_t i = 0; i < q.scales.numel(); ++i) {
    if (scales[i] == 0.0f) scales[i] = 1.0f;
  }
  int8_t* out = q.values.data<int8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const float inv = 1.0f / scales[per_channel ? r : 0];
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t v = round_to_int(w[r * cols + c] * inv);
      out[r * cols + c] = static_cast<int8_t>(std::clamp<int64_t>(v, -127, 127));
    }
  }
  return q;
}

StatusOr<Tensor> dequantize_int8(const Int8Matrix& q) {
  const int64_t rows = q.values.dim(0);
  const int64_t cols = q.values.dim(1);
  const bool per_channel = q.scales.numel() == rows;
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty({rows, cols}, DType::kF32));
  const int8_t* v = q.values.data<int8_t>();
  const float* s = q.scales.data<float>();
  float* o = out.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = s[per_channel ? r : 0];
    for (int64_t c = 0; c < cols; ++c) o[r * cols + c] = static_cast<float>(v[r * cols + c]) * scale;
  }
  return out;
}

StatusOr<Int4Matrix> quantize_int4(const Tensor& weight, int64_t group_size, bool with_min, std::string_view name) {
  BRISK_RETURN_IF_ERROR(check_matrix(weight, name));
  if (group_size != 32 && group_size != 64 && group_size != 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("int4 group size for '", std::string(name), "' is ", group_size, "; expected 32, 64 or 128"));
  }
  const int64_t rows = weight.dim(0);
  const int64_t cols = weight.dim(1);
  if (cols % group_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", std::string(name), "' has ", cols,
                                                   " columns; expected a multiple of the int4 group size ",
                                                   group_size));
  }
  const int64_t groups = cols / group_size;
  Int4Matrix q;
  q.group_size = group_size;
  BRISK_ASSIGN_OR_RETURN(q.packed, Tensor::zeros({rows, cols / 2}, DType::kU8));
  BRISK_ASSIGN_OR_RETURN(q.scales, Tensor::empty({rows, groups}, DType::kF16));
  if (with_min) {
    BRISK_ASSIGN_OR_RETURN(q.mins, Tensor::empty({rows, groups}, DType::kF16));
  }
  const float* w = weight.data<float>();
  uint8_t* packed = q.packed.data<uint8_t>();
  auto* scales = q.scales.data<uint16_t>();
  auto* mins = with_min ? q.mins.data<uint16_t>() : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* x = w + r * cols + g * group_size;
      float lo = x[0], hi = x[0];
      for (int64_t i = 1; i < group_size; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
      // The scale and minimum are stored in f16: quantize against the rounded values so that decoding matches.
      float scale, minimum = 0.0f;
      if (with_min) {
        minimum = f16_to_float(float_to_f16(lo));
        scale = f16_to_float(float_to_f16((hi - minimum) / 15.0f));
        mins[r * groups + g] = float_to_f16(minimum);
      } else {
        scale = f16_to_float(float_to_f16(std::max(std::fabs(lo), std::fabs(hi)) / 7.0f));
      }
      if (!(scale > 0.0f) || !std::isfinite(scale)) scale = 1.0f;  // constant group, or f16 underflow/overflow
      scales[r * groups + g] = float_to_f16(scale);
      const float inv = 1.0f / scale;
      for (int64_t i = 0; i < group_size; ++i) {
        const int64_t v = with_min ? std::clamp<int64_t>(round_to_int((x[i] - minimum) * inv), 0, 15)
                                   : std::clamp<int64_t>(round_to_int(x[i] * inv), -8, 7) + 8;
        const int64_t c = g * group_size + i;
        packed[r * (cols / 2) + c / 2] |= static_cast<uint8_t>(v << ((c & 1) * 4));
      }
    }
  }
  return q;
}

void dequantize_int4_row(const Int4Matrix& q, int64_t row, float* out) {
  const int64_t cols = q.cols();
  const int64_t groups = cols / q.group_size;
  const uint8_t* packed = q.packed.data<uint8_t>() + row * (cols / 2);
  const auto* scales = q.scales.data<uint16_t>() + row * groups;
  const auto* mins = q.mins.defined() ? q.mins.data<uint16_t>() + row * groups : nullptr;
  for (int64_t g = 0; g < groups; ++g) {
    const float scale = f16_to_float(scales[g]);
    const float offset = mins != nullptr ? f16_to_float(mins[g]) : -8.0f * scale;
    for (int64_t i = 0; i < q.group_size; ++i) {
      const int64_t c = g * q.group_size + i;
      const int v = (packed[c / 2] >> ((c & 1) * 4)) & 0xf;
      out[c] = static_cast<float>(v) * scale + offset;
    }
  }
}

StatusOr<Tensor> dequantize_int4(const Int4Matrix& q) {
  const int64_t rows = q.packed.dim(0);
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty({rows, q.cols()}, DType::kF32));
  for (int64_t r = 0; r < rows; ++r) dequantize_int4_row(q, r, out.data<float>() + r * q.cols());
  return out;
}

Status check_int4_matrix(const Int4Matrix& q, std::string_view name) {
  if (q.group_size != 32 && q.group_size != 64 && q.group_size != 128) {
    return absl::InvalidArgumentError(absl::StrCat("int4 tensor '", std::string(name), "' has group size ",
                                                   q.group_size, "; expected 32, 64 or 128"));
  }
  if (!q.packed.defined() || q.packed.dtype() != DType::kU8 || q.packed.rank() != 2 || !q.packed.is_contiguous()) {
    return absl::InvalidArgumentError(
        absl::StrCat("int4 tensor '", std::string(name), "' is not a contiguous u8 matrix"));
  }
  const int64_t rows = q.packed.dim(0);
  if (q.cols() % q.group_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("int4 tensor '", std::string(name), "' has ", q.cols(),
                                                   " columns; expected a multiple of its group size ", q.group_size));
  }
  const std::vector<int64_t> expected{rows, q.cols() / q.group_size};
  for (const Tensor* t : {&q.scales, &q.mins}) {
    if (t == &q.mins && !t->defined()) continue;
    if (!t->defined() || t->dtype() != DType::kF16 || t->shape() != expected || !t->is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "int4 tensor '", std::string(name), "' has ", t == &q.scales ? "scales " : "minimums ",
          t->defined() ? absl::StrCat(dtype_name(t->dtype()), " ", t->shape_string()) : std::string("missing"),
          "; expected f16 [", expected[0], ", ", expected[1], "]"));
    }
  }
  return absl::OkStatus();
}

StatusOr<Tensor> to_bfloat16(const Tensor& weight, std::string_view name) {
  if (weight.dtype() != DType::kF32 || !weight.is_contiguous() || weight.device() != Device::kCPU) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", std::string(name), "' is ", dtype_name(weight.dtype()),
                                                   "; expected a contiguous f32 cpu tensor to convert to bf16"));
  }
  BRISK_RETURN_IF_ERROR(check_finite(weight.data<float>(), weight.numel(), name));
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(weight.shape(), DType::kBF16));
  const float* src = weight.data<float>();
  auto* dst = out.data<uint16_t>();
  for (int64_t i = 0; i < weight.numel(); ++i) dst[i] = float_to_bf16(src[i]);
  return out;
}

}  // namespace brisk
