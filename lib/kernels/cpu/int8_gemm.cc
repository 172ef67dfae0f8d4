// The int8 GEMM of int8_gemm.h: weight packing, the scalar references (GEMM block and row quantisation), and the
// one dispatch point per op, with the work split over brisk::parallel_for.
#include "int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "quantize_rows_impl.h"

namespace brisk::kernels::cpu {
namespace {

// Rows per parallel task for large m: a task's activations (this many rows x k elements) are reused across the
// panels it computes; a multiple of the kernels' row tiles (4 and 6).
constexpr int64_t kRowsPerTask = 192;

// Rows per task of the row-block form (int8_gemm with `then`), and the fewest rows it runs on: each task reads all of
// the weights (from L2), so blocks stay well above the row tiles, and a thread needs several blocks to balance.
constexpr int64_t kRowsPerBlockTask = 32;
constexpr int64_t kMinRowBlockRows = 128;

// Each task should hold at least this many multiply-adds (~0.3 us of VNNI work on one core): below that, the
// second thread's wake-up costs more than it saves.
constexpr int64_t kMinMacsPerTask = 1 << 18;

}  // namespace

Int8RowKernels int8_row_kernels(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kAvx512Vnni: return {&int8_gemm_block_avx512_vnni, &quantize_activation_rows_avx512_vnni};
    case Int8Kernel::kAvx512: return {&int8_gemm_block_avx512, &quantize_activation_rows_avx512};
    case Int8Kernel::kAvxVnni: return {&int8_gemm_block_avx_vnni, &quantize_activation_rows_avx_vnni};
    case Int8Kernel::kAvx2: return {&int8_gemm_block_avx2, &quantize_activation_rows_avx2};
    case Int8Kernel::kScalar: break;
  }
  return {&int8_gemm_block_scalar, &quantize_activation_rows_scalar};
}

Int8Kernel int8_kernel_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512Bf16:
    case CpuIsa::kAvx512Vnni: return Int8Kernel::kAvx512Vnni;
    case CpuIsa::kAvx512: return Int8Kernel::kAvx512;
    case CpuIsa::kAvxVnni: return Int8Kernel::kAvxVnni;
    case CpuIsa::kAvx2: return Int8Kernel::kAvx2;
    case CpuIsa::kScalar: break;
  }
  return Int8Kernel::kScalar;
}

const char* int8_kernel_name(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kAvx512Vnni: return "avx512_vnni vpdpbusd";
    case Int8Kernel::kAvx512: return "avx512 vpmaddwd";
    case Int8Kernel::kAvxVnni: return "avx_vnni vpdpbusd";
    case Int8Kernel::kAvx2: return "avx2 vpmaddwd";
    case Int8Kernel::kScalar: break;
  }
  return "scalar reference";
}

int64_t int8_activation_bytes(Int8Kernel kernel) {
  return kernel == Int8Kernel::kAvx2 || kernel == Int8Kernel::kAvx512 ? 2 : 1;
}

void reshape_packed(Int8PackedWeights& w, int64_t n, int64_t k) {
  w.n = n;
  w.k = k;
  w.k_padded = round_up(k, 4);
  w.n_padded = round_up(n, 16);
  if (w.data.size() < static_cast<size_t>(w.n_padded * w.k_padded)) w.data.resize(w.n_padded * w.k_padded);
  if (w.compensation.size() < static_cast<size_t>(w.n_padded)) w.compensation.resize(w.n_padded);
}

Int8PackedWeights pack_int8_weights(const int8_t* w, int64_t n, int64_t k) {
  Int8PackedWeights p;
  reshape_packed(p, n, k);  // a fresh value: its bytes start at zero (the padding)
  for (int64_t first = 0; first < p.n_padded; first += kInt8PanelColumns) {
    const int64_t width = std::min(kInt8PanelColumns, p.n_padded - first);
    int8_t* panel = p.data.data() + first * p.k_padded;
    for (int64_t j = first; j < std::min(first + width, n); ++j) {
      int32_t sum = 0;
      for (int64_t c = 0; c < k; ++c) {
        const int8_t v = w[j * k + c];
        panel[(c / 4) * width * 4 + (j - first) * 4 + c % 4] = v;
        sum += v;
      }
      p.compensation[static_cast<size_t>(j)] = -128 * sum;
    }
  }
  return p;
}

void quantize_activation_rows_scalar(const QuantizeActivationsArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * a.ldx;
    uint8_t* q = static_cast<uint8_t*>(a.xq) + r * a.ldq;
    const float* cs = a.channel_scale;
    auto value = [&](int64_t c) { return cs != nullptr ? x[c] * cs[c] : x[c]; };
    float inv = 0.0f;
    if (a.static_scale > 0.0f) {
      a.row_scales[r] = a.static_scale;
      inv = 1.0f / a.static_scale;
    } else {
      float absmax = 0.0f;
      for (int64_t c = 0; c < a.k; ++c) absmax = std::max(absmax, std::fabs(value(c)));
      if (absmax == 0.0f) {
        a.row_scales[r] = 1.0f;
        std::memset(q, 128, static_cast<size_t>(a.ldq));
        continue;
      }
      a.row_scales[r] = absmax / 127.0f;
      inv = 127.0f / absmax;
    }
    for (int64_t c = 0; c < a.k; ++c) {
      // Dynamic: |x * inv| <= 127 up to one rounding, so the clamp only guards against that last ulp.
      const float v = std::nearbyint(clamp_to_code(value(c) * inv));
      q[c] = static_cast<uint8_t>(static_cast<int>(v) + 128);
    }
    std::memset(q + a.k, 128, static_cast<size_t>(a.ldq - a.k));
  }
}

void int8_gemm_block_scalar(const Int8GemmArgs& a, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                            int64_t panel_end) {
  const Int8PackedWeights& w = *a.w;
  const int64_t groups = w.k_padded / 4;
  const uint8_t* xq = static_cast<const uint8_t*>(a.xq);
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const int64_t first = p * kInt8PanelColumns;
    const int64_t width = std::min(kInt8PanelColumns, w.n_padded - first);
    const int64_t last = std::min(first + width, w.n);
    const int8_t* panel = w.data.data() + first * w.k_padded;
    for (int64_t r = row_begin; r < row_end; ++r) {
      const uint8_t* x = xq + r * a.ldq;
      float* y = a.y + r * a.ldy;
      for (int64_t j = first; j < last; ++j) {
        int32_t acc = w.compensation[static_cast<size_t>(j)];
        const int8_t* col = panel + (j - first) * 4;
        for (int64_t g = 0; g < groups; ++g) {
          for (int64_t b = 0; b < 4; ++b) acc += static_cast<int32_t>(x[4 * g + b]) * col[g * width * 4 + b];
        }
        if (a.epilogue == Int8Epilogue::kDots) {
          std::memcpy(y + j, &acc, sizeof(acc));
          continue;
        }
        // The same operations, in the same order, as the vector kernels' epilogue.
        const float scale = a.row_scales[r] * a.col_scales[j];
        float v = std::fma(static_cast<float>(acc), scale, a.bias != nullptr ? a.bias[j] : 0.0f);
        if (a.epilogue == Int8Epilogue::kBiasRelu) v = std::max(v, 0.0f);
        if (a.epilogue == Int8Epilogue::kBiasAccumulate) v = y[j] + v;
        y[j] = v;
      }
      if (a.epilogue == Int8Epilogue::kBiasGeluErf || a.epilogue == Int8Epilogue::kBiasGeluTanh) {
        const ElementwiseArgs gelu{
            y + first, y + first, nullptr, last - first,
            a.epilogue == Int8Epilogue::kBiasGeluErf ? ElementwiseOp::kGeluErf : ElementwiseOp::kGeluTanh};
        elementwise_rows_scalar(gelu, 0, 1);
      }
    }
  }
}

void quantize_activations(Int8Kernel kernel, const float* x, int64_t rows, int64_t k, int64_t ldq, void* xq,
                          float* row_scales, const float* channel_scale, float static_scale) {
  if (rows <= 0) return;
  const QuantizeActivationsArgs args{x, k, channel_scale, k, ldq, xq, row_scales, static_scale};
  const QuantizeActivationRows quantize = int8_row_kernels(kernel).quantize;
  parallel_for(0, rows, row_grain(k) + 1, [&](int64_t begin, int64_t end) { quantize(args, begin, end); });
}

void int8_gemm(Int8Kernel kernel, const void* xq, int64_t ldq, const float* row_scales, int64_t m,
               const Int8PackedWeights& w, const float* col_scales, const float* bias, Int8Epilogue epilogue, float* y,
               int64_t ldy) {
  if (m <= 0 || w.n <= 0) return;
  const Int8GemmArgs args{xq, ldq, row_scales, &w, col_scales, bias, epilogue, y, ldy};
  const Int8GemmBlock block = int8_row_kernels(kernel).gemm;
  // Tasks are (row block, column panel) pairs, row-block-major: a thread's contiguous range of tasks sweeps all
  // panels over one row block while that block's activations (<= 192 x k elements) stay in L2, with the weights
  // (n x k bytes: 147 KB to 590 KB at MiniLM's shapes) beside them; for m <= 192 the tasks are the panels.
  const int64_t panels = panel_count(w);
  const int64_t row_blocks = (m + kRowsPerTask - 1) / kRowsPerTask;
  const int64_t rows_per_block = (m + row_blocks - 1) / row_blocks;
  const int64_t macs_per_task = rows_per_block * kInt8PanelColumns * w.k_padded;
  const int64_t grain = std::max<int64_t>(1, kMinMacsPerTask / std::max<int64_t>(macs_per_task, 1));
  parallel_for(0, panels * row_blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end;) {
      // Runs of consecutive tasks on one row block become one call over their panels.
      const int64_t rb = t / panels;
      const int64_t p_begin = t % panels;
      const int64_t p_end = std::min(panels, p_begin + (end - t));
      block(args, rb * rows_per_block, std::min(m, (rb + 1) * rows_per_block), p_begin, p_end);
      t += p_end - p_begin;
    }
  });
}

void int8_gemm(Int8Kernel kernel, const void* xq, int64_t ldq, const float* row_scales, int64_t m,
               const Int8PackedWeights& w, const float* col_scales, const float* bias, Int8Epilogue epilogue, float* y,
               const RowsDone& then) {
  if (m <= 0 || w.n <= 0) return;
  const int64_t n = w.n;
  if (m < kMinRowBlockRows) {
    thread_local std::vector<float> whole;  // the caller's: y's stand-in when y is null
    float* out = y;
    if (out == nullptr) {
      if (whole.size() < static_cast<size_t>(m * n)) whole.resize(static_cast<size_t>(m * n));
      out = whole.data();
    }
    int8_gemm(kernel, xq, ldq, row_scales, m, w, col_scales, bias, epilogue, out, n);
    parallel_for(0, m, row_grain(n) + 1, [&](int64_t begin, int64_t end) { then(begin, end, out + begin * n); });
    return;
  }
  const Int8GemmBlock block = int8_row_kernels(kernel).gemm;
  const int64_t code_bytes = int8_activation_bytes(kernel);
  const int64_t panels = panel_count(w);
  // A multiple of the thread count of blocks, so that parallel_for's even shares give each thread as many.
  const int64_t threads = std::max(1, num_threads());
  const int64_t blocks = round_up((m + kRowsPerBlockTask - 1) / kRowsPerBlockTask, threads);
  parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scratch;  // the worker's: one block's output when y is null
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = m * b / blocks, rows = m * (b + 1) / blocks - first;
      float* out = y != nullptr ? y + first * n : nullptr;
      if (out == nullptr) {
        if (scratch.size() < static_cast<size_t>(rows * n)) scratch.resize(static_cast<size_t>(rows * n));
        out = scratch.data();
      }
      const Int8GemmArgs args{static_cast<const uint8_t*>(xq) + first * ldq * code_bytes,
                              ldq,
                              row_scales + first,
                              &w,
                              col_scales,
                              bias,
                              epilogue,
                              out,
                              n};
      block(args, 0, rows, 0, panels);
      then(first, first + rows, out);
    }
  });
}

}  // namespace brisk::kernels::cpu
