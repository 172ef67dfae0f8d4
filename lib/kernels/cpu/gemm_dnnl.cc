// CPU Linear on oneDNN matmul.
// - Weights are reordered once, at create(), into the blocked layout oneDNN's matmul prefers, so no call repacks
//   them (that repacking dominates small-batch calls). When a row count has no implementation for the blocked
//   layout, the call falls back to PyTorch's plain [n, k] layout, read as a transposed [k, n] matrix.
// - Primitives are cached per (rows, epilogue, threads): building one costs far more than running a small one, and
//   oneDNN partitions work for the thread count it was built under.
// - Scratchpads are user-managed (one per calling thread), so concurrent calls never share oneDNN's global one.
#include <omp.h>

#include <mutex>
#include <tuple>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "brisk/kernels/gemm.h"
#include "dnnl_engine.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace brisk {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Logical [k, n]; physical [n, k] row-major, i.e. strides {1, k}.
dnnl::memory::desc plain_weight_desc(int64_t k, int64_t n) {
  return dnnl::memory::desc({k, n}, dt::f32, dnnl::memory::dims{1, k});
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

}  // namespace

struct Linear::Impl {
  Tensor weight;  // [n, k] f32, plain layout
  Tensor bias;    // [n] f32, or undefined
  int64_t n = 0;
  int64_t k = 0;
  std::optional<dnnl::memory> packed;  // the weights in oneDNN's preferred layout, when it differs from plain

  struct Primitive {
    dnnl::matmul matmul;
    dnnl::memory::desc scratchpad;
    bool uses_packed = false;
  };
  mutable std::mutex mu;
  mutable absl::flat_hash_map<std::tuple<int64_t, int, int>, Primitive> cache;
  static constexpr size_t kMaxCachedPrimitives = 512;

  bool has_bias() const { return bias.defined() && bias.numel() > 0; }
  dnnl::matmul::primitive_desc make_pd(int64_t rows, const dnnl::memory::desc& weights,
                                       const dnnl::primitive_attr& attr) const;
  void pack_weights();
  StatusOr<Primitive> primitive(int64_t rows, GemmEpilogue epilogue) const;
};

dnnl::matmul::primitive_desc Linear::Impl::make_pd(int64_t rows, const dnnl::memory::desc& weights,
                                                   const dnnl::primitive_attr& attr) const {
  const dnnl::memory::desc src({rows, k}, dt::f32, tag::ab);
  const dnnl::memory::desc dst({rows, n}, dt::f32, tag::ab);
  const dnnl::engine& eng = cpu_engine();
  if (has_bias()) {
    return {dnnl::matmul::desc(src, weights, dnnl::memory::desc({1, n}, dt::f32, tag::ab), dst), attr, eng};
  }
  return {dnnl::matmul::desc(src, weights, dst), attr, eng};
}

void Linear::Impl::pack_weights() {
  // The blocked layout depends on K, N and the ISA, not on the row count; probe it with a typical one.
  constexpr int64_t kProbeRows = 128;
  const dnnl::memory::desc any({k, n}, dt::f32, tag::any);
  const dnnl::memory::desc chosen = make_pd(kProbeRows, any, dnnl::primitive_attr()).weights_desc();
  const dnnl::memory::desc plain = plain_weight_desc(k, n);
  if (chosen == plain) return;
  const dnnl::engine& eng = cpu_engine();
  dnnl::memory src(plain, eng, const_cast<void*>(weight.raw_data()));
  dnnl::memory dst(chosen, eng);
  dnnl::stream stream(eng);
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  packed = dst;
}

StatusOr<Linear::Impl::Primitive> Linear::Impl::primitive(int64_t rows, GemmEpilogue epilogue) const {
  const auto key = std::make_tuple(rows, static_cast<int>(epilogue), omp_get_max_threads());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(epilogue_post_ops(epilogue));
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  std::optional<Primitive> prim;
  if (packed.has_value()) {
    try {
      auto pd = make_pd(rows, packed->get_desc(), attr);
      prim = Primitive{dnnl::matmul(pd), pd.scratchpad_desc(), true};
    } catch (const dnnl::error&) {
      // No implementation for the blocked layout at this row count: use the plain weights below.
    }
  }
  if (!prim.has_value()) {
    try {
      auto pd = make_pd(rows, plain_weight_desc(k, n), attr);
      prim = Primitive{dnnl::matmul(pd), pd.scratchpad_desc(), false};
    } catch (const dnnl::error& e) {
      return absl::InternalError(
          absl::StrCat("oneDNN matmul [", rows, " x ", k, "] x [", k, " x ", n, "] could not be created: ", e.what()));
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kMaxCachedPrimitives) cache.clear();
  cache.emplace(key, *prim);
  return *prim;
}

StatusOr<Linear> Linear::create(const Tensor& weight, const Tensor& bias, Device device) {
  if (weight.rank() != 2 || weight.dtype() != DType::kF32 || !weight.is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat("Linear weight must be a contiguous f32 [out, in] matrix; got ",
                                                   dtype_name(weight.dtype()), " ", weight.shape_string()));
  }
  const bool has_bias = bias.defined() && bias.numel() > 0;
  if (has_bias && (bias.dtype() != DType::kF32 || bias.numel() != weight.dim(0))) {
    return absl::InvalidArgumentError(absl::StrCat("Linear bias must be f32 [", weight.dim(0), "]; got ",
                                                   dtype_name(bias.dtype()), " ", bias.shape_string()));
  }
  if (device != Device::kCPU) {
    return absl::UnimplementedError("Linear: this build runs linear layers on cpu only; expected device cpu");
  }
  auto impl = std::make_shared<Impl>();
  impl->weight = weight;
  if (has_bias) impl->bias = bias;
  impl->n = weight.dim(0);
  impl->k = weight.dim(1);
  try {
    impl->pack_weights();
  } catch (const dnnl::error& e) {
    return absl::InternalError(
        absl::StrCat("oneDNN could not pack Linear weights ", weight.shape_string(), ": ", e.what()));
  }
  Linear linear;
  linear.in_features_ = impl->k;
  linear.out_features_ = impl->n;
  linear.impl_ = std::move(impl);
  return linear;
}

Status Linear::forward(const float* x, int64_t rows, float* y, GemmEpilogue epilogue) const {
  if (impl_ == nullptr) return absl::FailedPreconditionError("Linear::forward on an empty Linear");
  if (rows == 0) return absl::OkStatus();
  if (x == nullptr || y == nullptr || rows < 0) {
    return absl::InvalidArgumentError("Linear::forward needs non-null x and y and rows >= 0");
  }
  BRISK_ASSIGN_OR_RETURN(Impl::Primitive prim, impl_->primitive(rows, epilogue));
  thread_local std::vector<uint8_t> scratch;
  try {
    const dnnl::engine& eng = cpu_engine();
    const int64_t k = impl_->k;
    const int64_t n = impl_->n;
    dnnl::memory src({{rows, k}, dt::f32, tag::ab}, eng, const_cast<float*>(x));
    dnnl::memory wei = prim.uses_packed
                           ? *impl_->packed
                           : dnnl::memory(plain_weight_desc(k, n), eng, const_cast<void*>(impl_->weight.raw_data()));
    dnnl::memory dst({{rows, n}, dt::f32, tag::ab}, eng, y);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (impl_->has_bias()) {
      args.emplace(DNNL_ARG_BIAS,
                   dnnl::memory({{1, n}, dt::f32, tag::ab}, eng, const_cast<void*>(impl_->bias.raw_data())));
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

}  // namespace brisk
