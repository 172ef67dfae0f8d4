// libFuzzer target: SemanticCache::load on arbitrary files (options.dim = 8, as in the seeds). Mutated bytes would
// almost never pass the header's payload size and XXH64 checks, so the target rewrites both before loading (the
// unit tests cover those two checks): the fuzzer then reaches the entry parser. A cache that loads is saved and
// loaded again, which must succeed with no more entries.
#include <xxhash.h>

#include <cstring>

#include "brisk/cache/semantic_cache.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  constexpr size_t kHeader = 40;
  if (bytes.size() >= kHeader) {
    const uint64_t payload_size = bytes.size() - kHeader;
    const uint64_t checksum = XXH64(bytes.data() + kHeader, payload_size, 0);
    std::memcpy(bytes.data() + 24, &payload_size, 8);
    std::memcpy(bytes.data() + 32, &checksum, 8);
  }
  const auto path = brisk_fuzz::scratch_dir() / "semantic.cache";
  brisk_fuzz::write_file(path, bytes);
  brisk::cache::SemanticCacheOptions opts;
  opts.dim = 8;
  opts.max_entries = 64;
  auto cache = brisk::cache::SemanticCache::load(path.string(), opts);
  if (!cache.ok()) {
    if (cache.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  const size_t entries = (*cache)->size();
  const float query[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  (void)(*cache)->lookup("", "what is brisk?", query);
  const auto again_path = brisk_fuzz::scratch_dir() / "semantic_again.cache";
  if (auto s = (*cache)->save(again_path.string()); !s.ok()) {
    brisk_fuzz::invariant_failed("save of a loaded cache", std::string(s.message()));
  }
  auto again = brisk::cache::SemanticCache::load(again_path.string(), opts);
  if (!again.ok()) brisk_fuzz::invariant_failed("reload of a saved cache", std::string(again.status().message()));
  if ((*again)->size() > entries) brisk_fuzz::invariant_failed("reload gained entries");
  return 0;
}
