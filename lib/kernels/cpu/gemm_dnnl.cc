// CPU Linear on oneDNN matmul. Weights stay in PyTorch's [n, k] layout, which oneDNN reads as a transposed
// [k, n] matrix; primitives are cached per (rows, epilogue) because building one costs far more than running a
// small one. Scratchpads are user-managed (one per calling thread) so that concurrent calls on one primitive never
// share oneDNN's global scratchpad.
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "brisk/kernels/gemm.h"
#include "dnnl_engine.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace brisk {

struct Linear::Impl {
  Tensor weight;  // [n, k] f32
  Tensor bias;    // [n] f32, or undefined
  int64_t n = 0;
  int64_t k = 0;

  struct Primitive {
    dnnl::matmul matmul;
    dnnl::memory::desc scratchpad;
  };
  mutable std::mutex mu;
  mutable absl::flat_hash_map<std::pair<int64_t, int>, Primitive> cache;
  static constexpr size_t kMaxCachedPrimitives = 512;

  StatusOr<Primitive> primitive(int64_t rows, GemmEpilogue epilogue) const;
};

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::memory::desc weight_desc(int64_t k, int64_t n) {
  // Logical [k, n]; physical [n, k] row-major, i.e. strides {1, k}.
  return dnnl::memory::desc({k, n}, dt::f32, dnnl::memory::dims{1, k});
}

}  // namespace

StatusOr<Linear::Impl::Primitive> Linear::Impl::primitive(int64_t rows, GemmEpilogue epilogue) const {
  const auto key = std::make_pair(rows, static_cast<int>(epilogue));
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  try {
    const dnnl::memory::desc src({rows, k}, dt::f32, tag::ab);
    const dnnl::memory::desc dst({rows, n}, dt::f32, tag::ab);
    dnnl::post_ops ops;
    switch (epilogue) {
      case GemmEpilogue::kBias: break;
      case GemmEpilogue::kBiasGeluErf: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f); break;
      case GemmEpilogue::kBiasGeluTanh: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f); break;
      case GemmEpilogue::kBiasRelu: ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
      case GemmEpilogue::kBiasAccumulate: ops.append_sum(1.f); break;
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::engine& eng = cpu_engine();
    dnnl::matmul::primitive_desc pd =
        bias.defined() && bias.numel() > 0
            ? dnnl::matmul::primitive_desc(
                  dnnl::matmul::desc(src, weight_desc(k, n), dnnl::memory::desc({1, n}, dt::f32, tag::ab), dst), attr,
                  eng)
            : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weight_desc(k, n), dst), attr, eng);
    Primitive prim{dnnl::matmul(pd), pd.scratchpad_desc()};
    std::lock_guard<std::mutex> lock(mu);
    if (cache.size() >= kMaxCachedPrimitives) cache.clear();
    cache.emplace(key, prim);
    return prim;
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("oneDNN matmul [", rows, " x ", k, "] x [", k, " x ", n,
                                            "] could not be created: ", e.what()));
  }
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
    dnnl::memory wei(weight_desc(k, n), eng, const_cast<void*>(impl_->weight.raw_data()));
    dnnl::memory dst({{rows, n}, dt::f32, tag::ab}, eng, y);
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (impl_->bias.defined() && impl_->bias.numel() > 0) {
      args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, n}, dt::f32, tag::ab}, eng,
                                               const_cast<void*>(impl_->bias.raw_data())));
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
