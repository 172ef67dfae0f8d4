// DnnlPackedMatmul. See dnnl_matmul.h.
#include "dnnl_matmul.h"

#include <omp.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/core/parallel.h"
#include "dnnl_engine.h"

namespace brisk::kernels::cpu {
namespace {

std::mutex g_implementations_mu;
std::map<std::string, int64_t>& implementations_seen() {
  static auto* seen = new std::map<std::string, int64_t>();
  return *seen;
}

bool is_reference(const std::string& implementation) { return implementation.rfind("ref", 0) == 0; }

void record_implementation(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_implementations_mu);
  ++implementations_seen()[name];
}

}  // namespace

std::map<std::string, int64_t> dnnl_matmul_implementations() {
  std::lock_guard<std::mutex> lock(g_implementations_mu);
  return implementations_seen();
}

DnnlPackedMatmul::DnnlPackedMatmul(const Tensor& weight, dnnl::memory::data_type type, Describe describe)
    : weight_(weight), n_(weight.dim(0)), k_(weight.dim(1)), type_(type), describe_(std::move(describe)) {}

// Logical [k, n]; physical [n, k] row-major, i.e. strides {1, k}.
dnnl::memory::desc DnnlPackedMatmul::plain_desc() const {
  return dnnl::memory::desc({k_, n_}, type_, dnnl::memory::dims{1, k_});
}

void DnnlPackedMatmul::pack() {
  // The blocked layout depends on K, N and the ISA, not on the row count; probe it with a typical one.
  constexpr int64_t kProbeRows = 128;
  const dnnl::memory::desc any({k_, n_}, type_, dnnl::memory::format_tag::any);
  const dnnl::matmul::primitive_desc probe = describe_(kProbeRows, 0, any);
  probe_implementation_ = probe.impl_info_str();
  const dnnl::memory::desc chosen = probe.weights_desc();
  if (chosen == plain_desc()) return;
  const dnnl::engine& eng = cpu_engine();
  dnnl::memory src(plain_desc(), eng, const_cast<void*>(weight_.raw_data()));
  dnnl::memory dst(chosen, eng);
  dnnl::stream stream(eng);
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  packed_ = dst;
}

StatusOr<DnnlPackedMatmul::Primitive> DnnlPackedMatmul::primitive(int64_t rows, int64_t variant) const {
  const auto key = std::make_tuple(rows, variant, omp_get_max_threads());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  std::optional<Primitive> prim;
  if (packed_.has_value()) {
    try {
      auto pd = describe_(rows, variant, packed_->get_desc());
      prim = Primitive{dnnl::matmul(pd), pd.scratchpad_desc(), true, pd.impl_info_str()};
    } catch (const dnnl::error&) {
      // No implementation for the blocked layout at this row count: use the plain weights below.
    }
  }
  // oneDNN's reference implementation is orders of magnitude slower than its JIT ones. Some small shapes (k = n =
  // 64, a pruned layer's) have a JIT implementation for the plain layout only: try it before settling for "ref".
  if (!prim.has_value() || is_reference(prim->implementation)) {
    try {
      auto pd = describe_(rows, variant, plain_desc());
      if (!prim.has_value() || !is_reference(pd.impl_info_str())) {
        prim = Primitive{dnnl::matmul(pd), pd.scratchpad_desc(), false, pd.impl_info_str()};
      }
    } catch (const dnnl::error& e) {
      if (!prim.has_value()) {
        return absl::InternalError(absl::StrCat("oneDNN matmul [", rows, " x ", k_, "] x [", k_, " x ", n_,
                                                "] could not be created: ", e.what()));
      }
    }
  }
  record_implementation(prim->implementation);
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= kMaxCachedPrimitives) cache_.clear();
  cache_.emplace(key, *prim);
  return *prim;
}

Status DnnlPackedMatmul::run(int64_t rows, int64_t variant, std::unordered_map<int, dnnl::memory> args) const {
  // oneDNN sizes its team from the calling thread's OpenMP setting, which follows num_threads(): one thread while
  // the process is contended (brisk/core/parallel.h), so that no oneDNN barrier waits for a CPU either.
  const ScopedNumThreads team(num_threads());
  BRISK_ASSIGN_OR_RETURN(Primitive prim, primitive(rows, variant));
  thread_local std::vector<uint8_t> scratch;
  try {
    const dnnl::engine& eng = cpu_engine();
    args.emplace(DNNL_ARG_WEIGHTS,
                 prim.uses_packed ? *packed_ : dnnl::memory(plain_desc(), eng, const_cast<void*>(weight_.raw_data())));
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

}  // namespace brisk::kernels::cpu
