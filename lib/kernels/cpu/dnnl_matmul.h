// Private to lib/kernels/cpu: one weight matrix on oneDNN matmul, shared by the f32/bf16 and int8 Linears.
// - The weights are reordered once, by pack(), into the blocked layout oneDNN's matmul prefers, so no call repacks
//   them (that repacking dominates small-batch calls). When a row count has no implementation for the blocked
//   layout, the call falls back to PyTorch's plain [n, k] layout, read as a transposed [k, n] matrix.
// - Primitives are cached per (rows, variant, threads): building one costs far more than running a small one, and
//   oneDNN partitions work for the thread count it was built under. `variant` is the caller's key for what else
//   shapes the primitive (epilogue, output stride).
// - Scratchpads are user-managed (one per calling thread), so concurrent calls never share oneDNN's global one.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace brisk::kernels::cpu {

class DnnlPackedMatmul {
 public:
  // The primitive descriptor for `rows` rows of the caller's `variant`, over weights laid out as `weights`.
  using Describe =
      std::function<dnnl::matmul::primitive_desc(int64_t rows, int64_t variant, const dnnl::memory::desc& weights)>;

  // `weight` is [n, k] row-major of `type`; it must outlive this object (the plain-layout fallback reads it).
  DnnlPackedMatmul(const Tensor& weight, dnnl::memory::data_type type, Describe describe);

  // Reorders the weights into oneDNN's preferred layout; throws dnnl::error.
  void pack();
  // Runs the matmul; `args` holds SRC, DST and any BIAS, WEIGHTS and SCRATCHPAD are added here.
  Status run(int64_t rows, int64_t variant, std::unordered_map<int, dnnl::memory> args) const;
  // oneDNN's implementation name (impl_info_str(), e.g. "brg:avx512_core") for the layout pack() chose, as its
  // probe found it: for reports, at no cost of a primitive of its own.
  const std::string& probe_implementation() const { return probe_implementation_; }

 private:
  struct Primitive {
    dnnl::matmul matmul;
    dnnl::memory::desc scratchpad;
    bool uses_packed = false;
    std::string implementation;
  };
  dnnl::memory::desc plain_desc() const;
  StatusOr<Primitive> primitive(int64_t rows, int64_t variant) const;

  Tensor weight_;
  int64_t n_ = 0;
  int64_t k_ = 0;
  dnnl::memory::data_type type_;
  Describe describe_;
  std::optional<dnnl::memory> packed_;
  std::string probe_implementation_;

  mutable std::mutex mu_;
  mutable absl::flat_hash_map<std::tuple<int64_t, int64_t, int>, Primitive> cache_;
  static constexpr size_t kMaxCachedPrimitives = 512;
};

// How many matmul primitives this process has created so far, by oneDNN implementation name (impl_info_str()):
// what the tests check for oneDNN's reference implementations ("ref:any"), which must never run on a hot path.
std::map<std::string, int64_t> dnnl_matmul_implementations();

}  // namespace brisk::kernels::cpu
