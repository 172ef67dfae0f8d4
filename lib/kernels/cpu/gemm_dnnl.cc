// CPU Linear on oneDNN matmul, for f32 and bf16 weights.
// - Weights are reordered once, at creation, into the blocked layout oneDNN's matmul prefers, so no call repacks
//   them (that repacking dominates small-batch calls). When a row count has no implementation for the blocked
//   layout, the call falls back to PyTorch's plain [n, k] layout, read as a transposed [k, n] matrix.
// - bf16: each call rounds its activations to bf16 into a per-thread buffer; the matmul accumulates in f32 and
//   writes f32, with the bias and epilogue fused as usual.
// - Primitives are cached per (rows, epilogue, ldy, threads): building one costs far more than running a small
//   one, and oneDNN partitions work for the thread count it was built under.
// - Scratchpads are user-managed (one per calling thread), so concurrent calls never share oneDNN's global one.
#include <omp.h>

#include <mutex>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "brisk/core/parallel.h"
#include "cpu_kernels.h"
#include "dnnl_engine.h"
#include "linear_impl.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace brisk::kernels::cpu {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Logical [k, n]; physical [n, k] row-major, i.e. strides {1, k}.
dnnl::memory::desc plain_weight_desc(int64_t k, int64_t n, dt type) {
  return dnnl::memory::desc({k, n}, type, dnnl::memory::dims{1, k});
}

dnnl::post_ops epilogue_post_ops(GemmEpilogue epilogue) {
  dnnl::post_ops ops;
  switch (epilogue) {
    case GemmEpilogue::kBias: break;
    case GemmEpilogue::kBiasGeluErf: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f); break;
    case GemmEpilogue::kBiasGeluTanh: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f); break;
    case GemmEpilogue::kBiasRelu: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
    case GemmEpilogue::kBiasAccumulate: ops.append_sum(1.f); break;
  }
  return ops;
}

class DnnlLinear final : public Linear::Impl {
 public:
  DnnlLinear(const Tensor& weight, const Tensor& bias)
      : weight_(weight),
        bias_(bias),
        n_(weight.dim(0)),
        k_(weight.dim(1)),
        type_(weight.dtype() == DType::kBF16 ? dt::bf16 : dt::f32) {}

  void pack_weights();
  Status forward(const float* x, int64_t rows, float* y, GemmEpilogue epilogue, int64_t ldy) const override;

 private:
  struct Primitive {
    dnnl::matmul matmul;
    dnnl::memory::desc scratchpad;
    bool uses_packed = false;
  };
  bool has_bias() const { return bias_.defined() && bias_.numel() > 0; }
  dnnl::matmul::primitive_desc make_pd(int64_t rows, int64_t ldy, const dnnl::memory::desc& weights,
                                       const dnnl::primitive_attr& attr) const;
  StatusOr<Primitive> primitive(int64_t rows, GemmEpilogue epilogue, int64_t ldy) const;

  Tensor weight_;  // [n, k] f32 or bf16, plain layout
  Tensor bias_;    // [n] f32, or undefined
  int64_t n_ = 0;
  int64_t k_ = 0;
  dt type_ = dt::f32;
  std::optional<dnnl::memory> packed_;  // the weights in oneDNN's preferred layout, when it differs from plain

  mutable std::mutex mu_;
  mutable absl::flat_hash_map<std::tuple<int64_t, int, int64_t, int>, Primitive> cache_;
  static constexpr size_t kMaxCachedPrimitives = 512;
};

dnnl::matmul::primitive_desc DnnlLinear::make_pd(int64_t rows, int64_t ldy, const dnnl::memory::desc& weights,
                                                 const dnnl::primitive_attr& attr) const {
  const dnnl::memory::desc src({rows, k_}, type_, tag::ab);
  const dnnl::memory::desc dst({rows, n_}, dt::f32, dnnl::memory::dims{ldy, 1});
  const dnnl::engine& eng = cpu_engine();
  if (has_bias()) {
    return {dnnl::matmul::desc(src, weights, dnnl::memory::desc({1, n_}, dt::f32, tag::ab), dst), attr, eng};
  }
  return {dnnl::matmul::desc(src, weights, dst), attr, eng};
}

void DnnlLinear::pack_weights() {
  // The blocked layout depends on K, N and the ISA, not on the row count; probe it with a typical one.
  constexpr int64_t kProbeRows = 128;
  const dnnl::memory::desc any({k_, n_}, type_, tag::any);
  const dnnl::memory::desc chosen = make_pd(kProbeRows, n_, any, dnnl::primitive_attr()).weights_desc();
  const dnnl::memory::desc plain = plain_weight_desc(k_, n_, type_);
  if (chosen == plain) return;
  const dnnl::engine& eng = cpu_engine();
  dnnl::memory src(plain, eng, const_cast<void*>(weight_.raw_data()));
  dnnl::memory dst(chosen, eng);
  dnnl::stream stream(eng);
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  packed_ = dst;
}

StatusOr<DnnlLinear::Primitive> DnnlLinear::primitive(int64_t rows, GemmEpilogue epilogue, int64_t ldy) const {
  const auto key = std::make_tuple(rows, static_cast<int>(epilogue), ldy, omp_get_max_threads());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(epilogue_post_ops(epilogue));
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  std::optional<Primitive> prim;
  if (packed_.has_value()) {
    try {
      auto pd = make_pd(rows, ldy, packed_->get_desc(), attr);
      prim = Primitive{dnnl::matmul(pd), pd.scratchpad_desc(), true};
    } catch (const dnnl::error&) {
      // No implementation for the blocked layout at this row count: use the plain weights below.
    }
  }
  if (!prim.has_value()) {
    try {
      auto pd = make_pd(rows, ldy, plain_weight_desc(k_, n_, type_), attr);
      prim = Primitive{dnnl::matmul(pd), pd.scratchpad_desc(), false};
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN matmul [", rows, " x ", k_, "] x [", k_, " x ", n_,
                                              "] could not be created: ", e.what()));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= kMaxCachedPrimitives) cache_.clear();
  cache_.emplace(key, *prim);
  return *prim;
}

Status DnnlLinear::forward(const float* x, int64_t rows, float* y, GemmEpilogue epilogue, int64_t ldy) const {
  BRISK_ASSIGN_OR_RETURN(Primitive prim, primitive(rows, epilogue, ldy));
  thread_local std::vector<uint8_t> scratch;
  thread_local std::vector<uint16_t> x_bf16;
  const void* src_data = x;
  if (type_ == dt::bf16) {
    if (x_bf16.size() < static_cast<size_t>(rows * k_)) x_bf16.resize(static_cast<size_t>(rows * k_));
    const Bf16RowsArgs args{x, k_, x_bf16.data()};
    const auto kernel = select_kernel(&bf16_rows_scalar, &bf16_rows_scalar, &bf16_rows_avx512);
    parallel_for(0, rows, row_grain(k_), [&](int64_t begin, int64_t end) { kernel(args, begin, end); });
    src_data = x_bf16.data();
  }
  try {
    const dnnl::engine& eng = cpu_engine();
    dnnl::memory src({{rows, k_}, type_, tag::ab}, eng, const_cast<void*>(src_data));
    dnnl::memory wei = prim.uses_packed
                           ? *packed_
                           : dnnl::memory(plain_weight_desc(k_, n_, type_), eng, const_cast<void*>(weight_.raw_data()));
    dnnl::memory dst({{rows, n_}, dt::f32, dnnl::memory::dims{ldy, 1}}, eng, y);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (has_bias()) {
      args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, n_}, dt::f32, tag::ab}, eng, const_cast<void*>(bias_.raw_data())));
    }
    const size_t scratch_bytes = prim.scratchpad.get_size();
    if (scratch_bytes > 0) {
      if (scratch.size() < scratch_bytes) scratch.resize(scratch_bytes);
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(prim.scratchpad, eng, scratch.data()));
    }
    dnnl::stream stream(eng);
    prim.matmul.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("oneDNN matmul failed: ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<const Linear::Impl>> make_dnnl_linear(const Tensor& weight, const Tensor& bias) {
  auto impl = std::make_shared<DnnlLinear>(weight, bias);
  try {
    impl->pack_weights();
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("oneDNN could not pack Linear weights ", dtype_name(weight.dtype()), " ",
                                            weight.shape_string(), ": ", e.what()));
  }
  return std::shared_ptr<const Linear::Impl>(std::move(impl));
}

}  // namespace brisk::kernels::cpu
