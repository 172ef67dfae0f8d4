// The only translation unit that includes hnswlib (see semantic_index.h).
#include "semantic_index.h"

#include <algorithm>
#include <exception>

#include "absl/strings/str_cat.h"
#include "brisk/kernels/vector_math.h"

// Every header hnswlib includes, first, so that the memcpy macro below reaches hnswlib's own code only.
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <cassert>
#include <deque>
#include <fstream>
#include <iostream>
#include <list>
#include <mutex>
#include <queue>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <x86intrin.h>
#endif

namespace brisk::cache::internal {
// hnswlib 0.6 copies empty neighbour lists with memcpy(vector.data() == nullptr, src, 0), undefined behaviour
// that UBSan (nonnull-attribute) aborts on; route its memcpy calls through a size check.
inline void* hnsw_memcpy(void* dst, const void* src, size_t n) { return n == 0 ? dst : memcpy(dst, src, n); }
}  // namespace brisk::cache::internal

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-function"
#define memcpy ::brisk::cache::internal::hnsw_memcpy
#include <hnswlib/hnswlib.h>
#undef memcpy
#pragma GCC diagnostic pop

namespace brisk::cache::internal {

namespace {

// Inner-product distance (1 - a.b) through brisk::kernels::dot, which picks the widest SIMD this CPU has at run time
// (cpu_isa(), so BRISK_ISA and set_cpu_isa_cap() reach the index as they reach the kernels). hnswlib's own
// InnerProductSpace picks its SIMD at compile time, and brisk is built for baseline x86-64 (SSE only).
float ip_distance(const void* a, const void* b, const void* dim) {
  return 1.0f - kernels::dot(static_cast<const float*>(a), static_cast<const float*>(b),
                             static_cast<int64_t>(*static_cast<const size_t*>(dim)));
}

class DotSpace final : public hnswlib::SpaceInterface<float> {
 public:
  explicit DotSpace(size_t dim) : dim_(dim), dist_(&ip_distance) {}
  size_t get_data_size() override { return dim_ * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return dist_; }
  void* get_dist_func_param() override { return &dim_; }

 private:
  size_t dim_;
  hnswlib::DISTFUNC<float> dist_;
};

}  // namespace

struct HnswIndex::Impl {
  HnswParams params;
  std::unique_ptr<DotSpace> space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> hnsw;
};

HnswIndex::HnswIndex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HnswIndex::~HnswIndex() = default;

StatusOr<std::unique_ptr<HnswIndex>> HnswIndex::create(const HnswParams& params) {
  auto impl = std::make_unique<Impl>();
  impl->params = params;
  try {
    impl->space = std::make_unique<DotSpace>(params.dim);
    size_t initial = std::min<size_t>(params.max_elements, 64);
    impl->hnsw = std::make_unique<hnswlib::HierarchicalNSW<float>>(impl->space.get(), initial, params.M,
                                                                   params.ef_construction, /*random_seed=*/100);
    impl->hnsw->setEf(params.ef_search);
  } catch (const std::exception& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("semantic cache: could not create an HNSW index of dim ", params.dim, ": ", e.what()));
  }
  return std::unique_ptr<HnswIndex>(new HnswIndex(std::move(impl)));
}

Status HnswIndex::add(uint32_t label, const float* vec) {
  auto& h = *impl_->hnsw;
  try {
    bool known = h.label_lookup_.count(label) != 0;
    if (!known) {
      if (label >= impl_->params.max_elements)
        return absl::InternalError(
            absl::StrCat("semantic cache: HNSW label ", label, " beyond capacity ", impl_->params.max_elements));
      if (h.cur_element_count >= h.max_elements_) {
        size_t grown = std::min(impl_->params.max_elements, std::max<size_t>(h.max_elements_ * 2, 64));
        h.resizeIndex(grown);
      }
    }
    h.addPoint(vec, label);
  } catch (const std::exception& e) {
    return absl::ResourceExhaustedError(absl::StrCat("semantic cache: HNSW insert failed: ", e.what()));
  }
  return absl::OkStatus();
}

Status HnswIndex::remove(uint32_t label) {
  try {
    impl_->hnsw->markDelete(label);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("semantic cache: HNSW delete of label ", label, " failed: ", e.what()));
  }
  return absl::OkStatus();
}

std::vector<std::pair<float, uint32_t>> HnswIndex::search(const float* query, size_t k) const {
  std::vector<std::pair<float, uint32_t>> out;
  try {
    auto heap = impl_->hnsw->searchKnn(query, k);  // max-heap on distance = 1 - dot
    out.resize(heap.size());
    for (size_t i = heap.size(); i-- > 0;) {
      out[i] = {1.0f - heap.top().first, static_cast<uint32_t>(heap.top().second)};
      heap.pop();
    }
  } catch (const std::exception&) {
    out.clear();  // hnswlib's internal consistency checks; a miss is the safe answer
  }
  return out;
}

}  // namespace brisk::cache::internal
