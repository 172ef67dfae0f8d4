// Internal to lib/cache/semantic_cache*.cc: the approximate nearest-neighbour index of one tenant, a thin
// wrapper over hnswlib's HierarchicalNSW with inner-product distance. hnswlib stays inside
// semantic_index.cc: its header defines non-inline functions, so exactly one translation unit may include it,
// and it reports errors by throwing, which the wrapper turns into Status.
//
// Thread safety: search() may run concurrently with other search() calls; add(), remove() and reserve()
// need exclusive access (the cache's per-tenant lock).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "brisk/core/status.h"

namespace brisk::cache::internal {

struct HnswParams {
  size_t dim = 0;
  size_t M = 16;
  size_t ef_construction = 200;
  size_t ef_search = 64;
  size_t max_elements = 0;  // hard cap; storage grows by doubling up to it
};

class HnswIndex {
 public:
  static StatusOr<std::unique_ptr<HnswIndex>> create(const HnswParams& params);
  ~HnswIndex();

  // Stores `vec` (dim floats, L2-normalised) under `label`. A label that is live is updated in place; a
  // deleted one is un-deleted and rewired to the new vector (how slots are reused); a new label must be
  // < max_elements and appends an element.
  Status add(uint32_t label, const float* vec);
  // Marks `label` deleted: searches skip it, its element stays until add() reuses the label.
  Status remove(uint32_t label);
  // Up to k (cosine similarity, label) pairs, most similar first; deleted labels never appear.
  std::vector<std::pair<float, uint32_t>> search(const float* query, size_t k) const;

  struct Impl;

 private:
  explicit HnswIndex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk::cache::internal
