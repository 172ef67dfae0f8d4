// The CUDA Linear (kernels::cuda::make_linear): cuBLASLt matmuls with fused bias / GeLU / ReLU epilogues for f32 and
// bf16 weights, and an s8 x s8 -> s32 IMMA matmul between brisk's row quantize and dequantize kernels for i8
// weights (dynamic per-token or static activation scales, SmoothQuant input scales: every plan brisk quantize
// writes). Weights are converted and uploaded once, at creation.
//
// Layout: cuBLASLt is column-major, and a row-major [r, c] matrix is the column-major c x r one. So brisk's
// row-major y[rows, n] = x[rows, k] · W[n, k]ᵀ is the column-major D (n x rows, ld ldy) = op(A) · B with A = W read
// as the column-major k x n matrix (ld k) taken transposed, and B = x read as the column-major k x rows matrix
// (ld k). That is the "TN" form (MatmulShape in blas_handles.h), the one int8 IMMA kernels require, and it puts the
// output channels on D's rows, along which cuBLASLt's epilogue broadcasts the bias.
#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "blas_handles.h"
#include "brisk/core/half.h"
#include "cuda_kernels.h"
#include "../linear_impl.h"

namespace brisk::kernels::cuda {
namespace {

// Element i of an f32 or bf16 host tensor.
float host_value(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kBF16 ? bf16_to_float(t.data<uint16_t>()[i]) : t.data<float>()[i];
}

// Copies host memory to a new device block. Synchronous: the host buffer is usually a temporary.
StatusOr<DeviceBuffer> upload(const void* host, size_t bytes) {
  BRISK_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::allocate(bytes));
  BRISK_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(d.get(), host, bytes, cudaMemcpyHostToDevice, cudaStreamPerThread),
                                    "cudaMemcpyAsync (Linear weights to the device)"));
  BRISK_RETURN_IF_ERROR(
      cuda_status(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize (Linear upload)"));
  return d;
}

// f32 host values to a device array of T.
template <typename T>
StatusOr<DeviceBuffer> upload_as(const std::vector<float>& values) {
  std::vector<T> converted(values.size());
  for (size_t i = 0; i < values.size(); ++i) converted[i] = from_float<T>(values[i]);
  return upload(converted.data(), converted.size() * sizeof(T));
}

std::vector<float> bias_values(const Tensor& bias) {
  if (!bias.defined() || bias.numel() == 0) return {};
  const float* b = bias.data<float>();
  return std::vector<float>(b, b + bias.numel());
}

// f32 or bf16 weights (or i8 weights dequantized on the host, see make_linear) as T: one cuBLASLt matmul with the
// epilogue fused where cuBLASLt has it. Compute is fp32 for every T (CUBLAS_COMPUTE_32F: no TF32 for f32).
template <typename T>
class FloatLinear final : public Linear::Impl {
 public:
  FloatLinear(DeviceBuffer weight, DeviceBuffer bias, int64_t n, int64_t k)
      : weight_(std::move(weight)), bias_(std::move(bias)), n_(n), k_(k) {}

  std::string kernel_name() const override { return "cuBLASLt matmul (fp32 compute)"; }
  Status forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const override {
    BRISK_ASSIGN_OR_RETURN(BlasContext * ctx, blas_context());
    const bool has_bias = bias_.get() != nullptr;
    const cublasLtEpilogue_t plain = has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    cublasLtEpilogue_t fused = plain;
    bool accumulate = false;
    bool erf_gelu = false;
    switch (epilogue) {
      case GemmEpilogue::kBias: break;
      case GemmEpilogue::kBiasAccumulate: accumulate = true; break;
      // cuBLASLt's GELU is the tanh approximation; the erf one runs as brisk's kernel on the biased result.
      case GemmEpilogue::kBiasGeluErf: erf_gelu = true; break;
      case GemmEpilogue::kBiasGeluTanh: fused = has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU; break;
      case GemmEpilogue::kBiasRelu: fused = has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU; break;
    }
    MatmulShape s;
    s.ab_type = s.cd_type = cuda_type<T>();
    s.compute = CUBLAS_COMPUTE_32F;
    s.scale_type = CUDA_R_32F;
    s.m = n_;
    s.n = rows;
    s.k = k_;
    s.lda = k_;
    s.ldb = k_;
    s.ldc = ldy;
    s.epilogue = fused;
    s.align_a = pointer_alignment(weight_.get());
    s.align_b = pointer_alignment(x);
    s.align_cd = pointer_alignment(y);
    s.align_bias = pointer_alignment(bias_.get());
    // y = y + x·Wᵀ + b: beta = 1 with C = D = y (cuBLASLt adds the bias after beta·C, before the activation).
    const float alpha = 1.0f;
    const float beta = accumulate ? 1.0f : 0.0f;
    Status st = ctx->matmul(s, &alpha, weight_.get(), x, &beta, y, bias_.get());
    if (absl::IsUnimplemented(st) && epilogue == GemmEpilogue::kBiasGeluTanh) {
      // No fused GELU for this type and shape (the answer is cached): plain bias, then brisk's tanh GeLU.
      s.epilogue = plain;
      st = ctx->matmul(s, &alpha, weight_.get(), x, &beta, y, bias_.get());
      BRISK_RETURN_IF_ERROR(st);
      return bias_gelu<T>(static_cast<T*>(y), nullptr, rows, n_, GeluApproximation::kTanh);
    }
    BRISK_RETURN_IF_ERROR(st);
    // Activation epilogues come with ldy == n (the dispatch checks), so y is one contiguous [rows, n] block.
    if (erf_gelu) return bias_gelu<T>(static_cast<T*>(y), nullptr, rows, n_, GeluApproximation::kErf);
    return absl::OkStatus();
  }

 private:
  DeviceBuffer weight_;  // T [n, k]
  DeviceBuffer bias_;    // T [n], or empty: cuBLASLt's bias type is the output type outside IMMA and fp8
  int64_t n_ = 0;
  int64_t k_ = 0;
};

// The IMMA shape of an int8 Linear at `gemm_rows` rows: s8 [n, k] weights x s8 [gemm_rows, k] activations -> s32
// [gemm_rows, n]. The regular-order IMMA kernels need the TN form, m (= n) and k multiples of 4, leading dimensions
// multiples of 4 and 4-byte aligned pointers; make_linear checks n and k, forward pads the rows to
// int8_gemm_rows(rows), and the scratch is 256-byte aligned.
MatmulShape int8_shape(int64_t n, int64_t k, int64_t gemm_rows) {
  MatmulShape s;
  s.ab_type = CUDA_R_8I;
  s.cd_type = CUDA_R_32I;
  s.compute = CUBLAS_COMPUTE_32I;
  s.scale_type = CUDA_R_32I;
  s.m = n;
  s.n = gemm_rows;
  s.k = k;
  s.lda = k;
  s.ldb = k;
  s.ldc = n;
  s.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  return s;
}

std::atomic<uint64_t> g_int8_fallback_calls{0};
std::atomic<bool> g_force_int8_fallback{false};

// i8 weights: quantize_rows_int8 (x, times SmoothQuant's 1 / s when the file has input scales, -> s8 with one
// scale per row, or the static scale), the IMMA matmul into s32, and dequantize_rows_int8 (row scale x channel
// scale, bias, epilogue) into y. A row count for which cuBLASLt has no int8 algorithm runs on the weights
// dequantized to T (made on the device at the first such call, 1 / s folded in; counted in int8_fallback_calls):
// slower, never a failed request.
template <typename T>
class Int8Linear final : public Linear::Impl {
 public:
  Int8Linear(DeviceBuffer weight, DeviceBuffer col_scales, int64_t n_col_scales, DeviceBuffer inv_input_scale,
             float static_scale, DeviceBuffer bias, int64_t n, int64_t k)
      : weight_(std::move(weight)),
        col_scales_(std::move(col_scales)),
        inv_input_scale_(std::move(inv_input_scale)),
        bias_(std::move(bias)),
        n_col_scales_(n_col_scales),
        static_scale_(static_scale),
        n_(n),
        k_(k) {}

  std::string kernel_name() const override { return "cuBLASLt IMMA int8 matmul"; }
  Status forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const override {
    if (g_force_int8_fallback.load(std::memory_order_relaxed)) return fallback_forward(x, rows, y, epilogue, ldy);
    BRISK_ASSIGN_OR_RETURN(BlasContext * ctx, blas_context());
    const int64_t gemm_rows = int8_gemm_rows(rows);
    const size_t q_bytes = align256(static_cast<size_t>(gemm_rows * k_));
    const size_t scale_bytes = align256(static_cast<size_t>(rows) * sizeof(float));
    const size_t acc_bytes = static_cast<size_t>(gemm_rows * n_) * sizeof(int32_t);
    // Freed when this call returns, with the work still queued: safe for this thread's next request (same stream),
    // not for another thread's until the caching allocator tracks streams (see attention.cc).
    BRISK_ASSIGN_OR_RETURN(DeviceBuffer scratch, DeviceBuffer::allocate(q_bytes + scale_bytes + acc_bytes));
    auto* xq = scratch.as<int8_t>();
    auto* row_scales = scratch.as<float>(q_bytes);
    auto* acc = scratch.as<int32_t>(q_bytes + scale_bytes);

    const Int8RowQuant rq{inv_input_scale_.as<float>(), static_scale_};
    BRISK_RETURN_IF_ERROR(quantize_rows_int8<T>(static_cast<const T*>(x), rows, k_, rq, xq, row_scales));
    if (gemm_rows != rows) {
      BRISK_RETURN_IF_ERROR(cuda_status(
          cudaMemsetAsync(xq + rows * k_, 0, static_cast<size_t>((gemm_rows - rows) * k_), cudaStreamPerThread),
          "cudaMemsetAsync (int8 Linear padding rows)"));
    }
    const int32_t alpha = 1;
    const int32_t beta = 0;
    MatmulShape s = int8_shape(n_, k_, gemm_rows);
    s.align_a = pointer_alignment(weight_.get());
    s.align_b = pointer_alignment(xq);
    s.align_cd = pointer_alignment(acc);
    const Status st = ctx->matmul(s, &alpha, weight_.get(), xq, &beta, acc, nullptr);
    if (absl::IsUnimplemented(st)) return fallback_forward(x, rows, y, epilogue, ldy);
    BRISK_RETURN_IF_ERROR(st);
    return dequantize_rows_int8<T>(acc, row_scales, col_scales_.as<float>(), n_col_scales_, bias_.as<T>(), epilogue,
                                   static_cast<T*>(y), ldy, rows, n_);
  }

 private:
  Status fallback_forward(const void* x, int64_t rows, void* y, GemmEpilogue epilogue, int64_t ldy) const {
    g_int8_fallback_calls.fetch_add(1, std::memory_order_relaxed);
    std::shared_ptr<const Linear::Impl> dequantized;
    {
      std::lock_guard<std::mutex> lock(fallback_mu_);
      if (dequantized_ == nullptr) {
        BRISK_ASSIGN_OR_RETURN(dequantized_, make_dequantized());
      }
      dequantized = dequantized_;
    }
    return dequantized->forward(x, rows, y, epilogue, ldy);
  }

  // The weights as T on the device (no host copy is kept), and the bias as it is.
  StatusOr<std::shared_ptr<const Linear::Impl>> make_dequantized() const {
    BRISK_ASSIGN_OR_RETURN(DeviceBuffer w, DeviceBuffer::allocate(static_cast<size_t>(n_ * k_) * sizeof(T)));
    BRISK_RETURN_IF_ERROR(dequantize_weights_int8<T>(weight_.as<int8_t>(), col_scales_.as<float>(), n_col_scales_,
                                                     inv_input_scale_.as<float>(), n_, k_, w.as<T>()));
    DeviceBuffer b;
    if (bias_.get() != nullptr) {
      BRISK_ASSIGN_OR_RETURN(b, DeviceBuffer::allocate(static_cast<size_t>(n_) * sizeof(T)));
      BRISK_RETURN_IF_ERROR(copy_bytes(b.get(), bias_.get(), static_cast<size_t>(n_) * sizeof(T)));
    }
    // Other threads use it on their own streams: it must be complete before it is shared.
    BRISK_RETURN_IF_ERROR(synchronize());
    return std::shared_ptr<const Linear::Impl>(std::make_shared<FloatLinear<T>>(std::move(w), std::move(b), n_, k_));
  }

  DeviceBuffer weight_;           // s8 [n, k]
  DeviceBuffer col_scales_;       // f32 [n_col_scales]: per output channel, or one per tensor
  DeviceBuffer inv_input_scale_;  // f32 [k]: SmoothQuant's 1 / s, or empty
  DeviceBuffer bias_;             // T [n], or empty
  int64_t n_col_scales_ = 0;
  float static_scale_ = 0.0f;  // > 0: one activation scale for every row; 0: per row (dynamic)
  int64_t n_ = 0;
  int64_t k_ = 0;
  mutable std::mutex fallback_mu_;
  mutable std::shared_ptr<const Linear::Impl> dequantized_;  // made at the first fallback call
};

template <typename T>
StatusOr<std::shared_ptr<const Linear::Impl>> make_float_linear(const std::vector<float>& weight,
                                                                const std::vector<float>& bias, int64_t n, int64_t k) {
  BRISK_ASSIGN_OR_RETURN(DeviceBuffer w, upload_as<T>(weight));
  DeviceBuffer b;
  if (!bias.empty()) {
    BRISK_ASSIGN_OR_RETURN(b, upload_as<T>(bias));
  }
  return std::shared_ptr<const Linear::Impl>(std::make_shared<FloatLinear<T>>(std::move(w), std::move(b), n, k));
}

template <typename T>
StatusOr<std::shared_ptr<const Linear::Impl>> make_typed(const Tensor& weight, const Tensor& bias,
                                                         const QuantScales& scales) {
  const int64_t n = weight.dim(0);
  const int64_t k = weight.dim(1);
  const std::vector<float> b = bias_values(bias);
  if (weight.dtype() != DType::kI8) {
    std::vector<float> w(static_cast<size_t>(n * k));
    for (int64_t i = 0; i < n * k; ++i) w[static_cast<size_t>(i)] = host_value(weight, i);
    return make_float_linear<T>(w, b, n, k);
  }

  const Tensor& ws = scales.weight_scale;
  const float* wscale = ws.data<float>();
  const int64_t n_scales = ws.numel();
  // SmoothQuant's 1 / s, which the activations are multiplied by before they are quantized (the dispatch has
  // checked that every input scale is positive and finite, with a finite inverse).
  std::vector<float> inv_input;
  if (scales.input_scale.defined() && scales.input_scale.numel() > 0) {
    const float* in = scales.input_scale.data<float>();
    inv_input.resize(static_cast<size_t>(k));
    for (int64_t c = 0; c < k; ++c) inv_input[static_cast<size_t>(c)] = 1.0f / in[c];
  }

  // IMMA needs n and k multiples of 4 and an algorithm for the shape (probed at a typical row count; a row count
  // without one falls back per call, see Int8Linear). Otherwise (a small classifier head, say) the weights are
  // dequantized here, 1 / s folded in, and run as T on the unquantized activations: more accurate, same interface.
  bool imma = n % 4 == 0 && k % 4 == 0;
  if (imma) {
    BRISK_ASSIGN_OR_RETURN(BlasContext * ctx, blas_context());
    const Status probe = ctx->prepare(int8_shape(n, k, 128), nullptr);
    if (absl::IsUnimplemented(probe)) {
      imma = false;
    } else {
      BRISK_RETURN_IF_ERROR(probe);
    }
  }
  if (!imma) {
    std::vector<float> w(static_cast<size_t>(n * k));
    const int8_t* q = weight.data<int8_t>();
    for (int64_t j = 0; j < n; ++j) {
      const float s = wscale[n_scales == 1 ? 0 : j];
      for (int64_t p = 0; p < k; ++p) {
        const float smooth = inv_input.empty() ? 1.0f : inv_input[static_cast<size_t>(p)];
        w[static_cast<size_t>(j * k + p)] = static_cast<float>(q[j * k + p]) * s * smooth;
      }
    }
    return make_float_linear<T>(w, b, n, k);
  }

  BRISK_ASSIGN_OR_RETURN(DeviceBuffer w, upload(weight.data<int8_t>(), static_cast<size_t>(n * k)));
  BRISK_ASSIGN_OR_RETURN(DeviceBuffer cs, upload(wscale, static_cast<size_t>(n_scales) * sizeof(float)));
  DeviceBuffer inv;
  if (!inv_input.empty()) {
    BRISK_ASSIGN_OR_RETURN(inv, upload(inv_input.data(), inv_input.size() * sizeof(float)));
  }
  DeviceBuffer bd;
  if (!b.empty()) {
    BRISK_ASSIGN_OR_RETURN(bd, upload_as<T>(b));
  }
  return std::shared_ptr<const Linear::Impl>(std::make_shared<Int8Linear<T>>(
      std::move(w), std::move(cs), n_scales, std::move(inv), scales.activation_scale, std::move(bd), n, k));
}

}  // namespace

uint64_t int8_fallback_calls() { return g_int8_fallback_calls.load(std::memory_order_relaxed); }
void force_int8_fallback_for_testing(bool on) { g_force_int8_fallback.store(on, std::memory_order_relaxed); }

StatusOr<std::shared_ptr<const Linear::Impl>> make_linear(const Tensor& weight, const Tensor& bias,
                                                          const QuantScales& scales, DType activation) {
  switch (activation) {
    case DType::kF32: return make_typed<float>(weight, bias, scales);
    case DType::kF16: return make_typed<float16_t>(weight, bias, scales);
    case DType::kBF16: return make_typed<bfloat16_t>(weight, bias, scales);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("Linear activation dtype on cuda is ", dtype_name(activation), "; expected f32, f16 or bf16"));
  }
}

}  // namespace brisk::kernels::cuda
