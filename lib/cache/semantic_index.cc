// The only translation unit that includes hnswlib (see semantic_index.h).
#include "semantic_index.h"

#include <algorithm>
#include <exception>

#include "absl/strings/str_cat.h"
#include "brisk/core/cpu_features.h"

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

// Inner-product distance (1 - a.b) with the widest SIMD this CPU has, chosen at run time. hnswlib's own
// InnerProductSpace picks its SIMD at compile time, and brisk is built for baseline x86-64 (SSE only).
float dot_scalar(const float* a, const float* b, size_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, size_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  __m256 acc = _mm256_add_ps(acc0, acc1);
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  float s = _mm_cvtss_f32(lo);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

__attribute__((target("avx512f"))) float dot_avx512(const float* a, const float* b, size_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(acc0, acc1));
  float s = 0;
  for (float lane : lanes) s += lane;
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
#endif

template <float (*Dot)(const float*, const float*, size_t)>
float ip_distance(const void* a, const void* b, const void* dim) {
  return 1.0f - Dot(static_cast<const float*>(a), static_cast<const float*>(b), *static_cast<const size_t*>(dim));
}

// brisk's ISA level, so that BRISK_ISA and set_cpu_isa_cap() reach the index as they reach the kernels.
hnswlib::DISTFUNC<float> pick_distance() {
#if defined(__x86_64__)
  if (cpu_isa() >= CpuIsa::kAvx512) return &ip_distance<dot_avx512>;
  if (cpu_isa() >= CpuIsa::kAvx2) return &ip_distance<dot_avx2>;
#endif
  return &ip_distance<dot_scalar>;
}

class DotSpace final : public hnswlib::SpaceInterface<float> {
 public:
  explicit DotSpace(size_t dim) : dim_(dim), dist_(pick_distance()) {}
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
    return absl::ResourceExhaustedError(absl::StrCat("semantic cache: could not create an HNSW index of dim ",
                                                     params.dim, ": ", e.what()));
  }
  return std::unique_ptr<HnswIndex>(new HnswIndex(std::move(impl)));
}

Status HnswIndex::add(uint32_t label, const float* vec) {
  auto& h = *impl_->hnsw;
  try {
    bool known = h.label_lookup_.count(label) != 0;
    if (!known) {
      if (label >= impl_->params.max_elements)
        return absl::InternalError(absl::StrCat("semantic cache: HNSW label ", label, " beyond capacity ",
                                                impl_->params.max_elements));
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
