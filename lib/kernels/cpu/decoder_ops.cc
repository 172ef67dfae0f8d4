// The CPU bodies of brisk/kernels/decoder_ops.h: plain loops over rows (or sequence x head pairs), f32 throughout,
// in transformers' order of operations.
#include "decoder_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/core/parallel.h"
#include "cpu_kernels.h"

namespace brisk::kernels::cpu {
namespace {

// x / sqrt(mean(x^2) + eps) * gamma over one row of n, as Qwen3RMSNorm (f32 mean, rsqrt, then the weight); the
// sum of squares on the ISA's dot kernel.
using DotFn = float (*)(const float*, const float*, int64_t);
DotFn dot_kernel() { return select_kernel(&dot_scalar, &dot_avx2, &dot_avx512); }

void rms_row(DotFn dot, const float* x, const float* gamma, float eps, float* out, int64_t n) {
  const float sum = dot(x, x, n);
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = gamma[i] * (x[i] * inv);
}

// rotate_half: element i (< half) pairs with i + half.
void rotate(float* x, const float* cos, const float* sin, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    x[i] = a * cos[i] - b * sin[i];
    x[i + half] = b * cos[i] + a * sin[i];
  }
}

}  // namespace

void rms_norm(const float* x, const float* gamma, float eps, float* out, int64_t rows, int64_t cols) {
  const DotFn dot = dot_kernel();
  parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) rms_row(dot, x + r * cols, gamma, eps, out + r * cols, cols);
  });
}

Status rotary_qk(float* qkv, int64_t ld, int64_t rows, const int32_t* positions, const RotaryShape& s) {
  const int64_t d = s.head_dim, half = d / 2;
  int32_t max_pos = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (positions[r] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("rotary_qk: position ", positions[r], " at row ", r, "; expected >= 0"));
    }
    max_pos = std::max(max_pos, positions[r]);
  }
  // The angles as transformers computes them: inv_freq = 1 / theta^(2i / d) in f32, times the position in f32.
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(d);
    inv_freq[static_cast<size_t>(i)] = 1.0f / std::pow(static_cast<float>(s.theta), exponent);
  }
  const auto positions_seen = static_cast<int64_t>(max_pos) + 1;
  std::vector<float> cos(static_cast<size_t>(positions_seen * half)), sin(cos.size());
  parallel_for(0, positions_seen, 64, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      for (int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(p) * inv_freq[static_cast<size_t>(i)];
        cos[static_cast<size_t>(p * half + i)] = static_cast<float>(std::cos(static_cast<double>(angle)));
        sin[static_cast<size_t>(p * half + i)] = static_cast<float>(std::sin(static_cast<double>(angle)));
      }
    }
  });
  const DotFn dot = dot_kernel();
  parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* c = cos.data() + static_cast<int64_t>(positions[r]) * half;
      const float* sn = sin.data() + static_cast<int64_t>(positions[r]) * half;
      float* row = qkv + r * ld;
      for (int64_t h = 0; h < s.heads + s.kv_heads; ++h) {
        float* head = row + h * d;
        const float* gamma = h < s.heads ? s.q_gamma : s.k_gamma;
        if (gamma != nullptr) rms_row(dot, head, gamma, s.eps, head, d);
        rotate(head, c, sn, half);
      }
    }
  });
  return absl::OkStatus();
}

void silu_mul(const float* gate_up, int64_t rows, int64_t width, float* out) {
  const auto silu = select_kernel(&elementwise_rows_scalar, &elementwise_rows_avx2, &elementwise_rows_avx512);
  parallel_for(0, rows, row_grain(2 * width), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* g = gate_up + r * 2 * width;
      const float* u = g + width;
      float* o = out + r * width;
      silu(ElementwiseArgs{g, o, nullptr, width, ElementwiseOp::kSilu}, 0, 1);
      for (int64_t j = 0; j < width; ++j) o[j] *= u[j];
    }
  });
}

}  // namespace brisk::kernels::cpu
