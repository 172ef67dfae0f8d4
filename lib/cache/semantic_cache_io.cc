// SemanticCache::save() / load(): one little-endian file.
//
//   offset  size  field
//        0     8  magic "BRSKSEMC"
//        8     4  u32 format version (2; version 1 files, without the model id, are read too)
//       12     4  u32 dim
//       16     8  u64 entry count
//       24     8  u64 payload size in bytes (= file size - 40)
//       32     8  u64 XXH64 (seed 0) of the payload
//       40     -  payload: u32 len + the embedding model's id (SemanticCacheOptions::embedding_model_id; may be
//                 empty; version 2 only), then per entry
//                   u32 len + tenant bytes, u32 len + question bytes, u32 len + answer bytes,
//                   u32 tag count, then per tag u32 len + bytes,
//                   i64 remaining TTL in ns (INT64_MAX: never expires),
//                   dim x f32 embedding (L2-normalised)
//
// Steady-clock time points mean nothing in another process, so the file holds remaining TTLs. load() trusts
// nothing: every length is checked against the bytes left before anything is allocated, the checksum catches
// flipped bytes, and entries go through insert()'s own validation.
#include <xxhash.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "brisk/cache/semantic_cache.h"
#include "semantic_cache_impl.h"

namespace brisk::cache {

namespace {

static_assert(std::endian::native == std::endian::little, "the semantic cache file format is little-endian");

constexpr char kMagic[8] = {'B', 'R', 'S', 'K', 'S', 'E', 'M', 'C'};
constexpr uint32_t kVersion = 2;  // 1: no embedding model id
constexpr size_t kHeaderSize = 40;

template <typename T>
void put(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

void put_bytes(std::string& out, std::string_view s) {
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Reads the payload; every read checks the bytes left.
class Reader {
 public:
  Reader(std::string_view data) : data_(data) {}
  size_t left() const { return data_.size() - pos_; }
  size_t pos() const { return pos_; }

  template <typename T>
  bool get(T& v) {
    if (left() < sizeof(T)) return false;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool get_bytes(std::string& s) {
    uint32_t n;
    if (!get(n) || left() < n) return false;
    s.assign(data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool get_floats(std::vector<float>& v, size_t n) {
    if (left() / sizeof(float) < n) return false;
    v.resize(n);
    std::memcpy(v.data(), data_.data() + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
    return true;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

Status file_error(const std::string& path, std::string_view what) {
  return absl::DataLossError(absl::StrCat("semantic cache file '", path, "': ", av(what)));
}

}  // namespace

Status SemanticCache::save(const std::string& path) const {
  std::vector<SemanticRecord> records = impl_->snapshot();
  std::string payload;
  put_bytes(payload, impl_->options.embedding_model_id);
  for (const SemanticRecord& r : records) {
    put_bytes(payload, r.tenant);
    put_bytes(payload, r.question);
    put_bytes(payload, r.answer);
    put<uint32_t>(payload, static_cast<uint32_t>(r.tags.size()));
    for (const std::string& tag : r.tags) put_bytes(payload, tag);
    put<int64_t>(payload, r.ttl_left == Duration::max() ? std::numeric_limits<int64_t>::max() : r.ttl_left.count());
    payload.append(reinterpret_cast<const char*>(r.embedding.data()), r.embedding.size() * sizeof(float));
  }
  std::string header(kMagic, sizeof(kMagic));
  put<uint32_t>(header, kVersion);
  put<uint32_t>(header, static_cast<uint32_t>(impl_->options.dim));
  put<uint64_t>(header, records.size());
  put<uint64_t>(header, payload.size());
  put<uint64_t>(header, XXH64(payload.data(), payload.size(), 0));

  std::string tmp = absl::StrCat(path, ".tmp.", reinterpret_cast<uintptr_t>(this));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat("semantic cache: cannot write '", tmp, "'"));
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      return absl::DataLossError(absl::StrCat("semantic cache: writing '", tmp, "' failed (disk full?)"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat("semantic cache: cannot rename '", tmp, "' to '", path, "': ", ec.message()));
  }
  return absl::OkStatus();
}

StatusOr<std::unique_ptr<SemanticCache>> SemanticCache::load(const std::string& path, SemanticCacheOptions options) {
  BRISK_ASSIGN_OR_RETURN(std::unique_ptr<SemanticCache> cache, create(std::move(options)));
  const SemanticCacheOptions& opts = cache->options();

  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return absl::NotFoundError(absl::StrCat("semantic cache file '", path, "' does not exist or is not a file"));
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return file_error(path, absl::StrCat("cannot read its size: ", ec.message()));
  if (size < kHeaderSize)
    return file_error(path, absl::StrCat("truncated: ", size, " bytes, the header alone needs ", kHeaderSize));
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat("semantic cache file '", path, "' cannot be opened"));
  std::string data(static_cast<size_t>(size), '\0');  // bounded by the file's real size
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<uintmax_t>(in.gcount()) != size)
    return file_error(path, absl::StrCat("read ", in.gcount(), " of ", size, " bytes"));

  Reader header(std::string_view(data).substr(0, kHeaderSize));
  char magic[8];
  std::memcpy(magic, data.data(), 8);
  if (std::memcmp(magic, kMagic, 8) != 0)
    return file_error(path, "not a brisk semantic cache file (bad magic; expected \"BRSKSEMC\")");
  uint64_t skip = 0, count = 0, payload_size = 0, checksum = 0;
  uint32_t version = 0, dim = 0;
  header.get(skip);
  header.get(version);
  header.get(dim);
  header.get(count);
  header.get(payload_size);
  header.get(checksum);
  if (version != 1 && version != kVersion)
    return file_error(path, absl::StrCat("format version ", version, "; this build reads versions 1 and ", kVersion));
  if (dim != opts.dim)
    return file_error(path, absl::StrCat("embedding dim ", dim, " in the file; expected options.dim = ", opts.dim));
  if (payload_size != size - kHeaderSize)
    return file_error(path, absl::StrCat("truncated or padded: the header announces ", payload_size,
                                         " payload bytes, the file holds ", size - kHeaderSize));
  std::string_view payload = std::string_view(data).substr(kHeaderSize);
  if (XXH64(payload.data(), payload.size(), 0) != checksum) return file_error(path, "checksum mismatch: corrupt");
  Reader r(payload);
  std::string model_id;  // version 1: none recorded
  if (version >= 2 && !r.get_bytes(model_id)) return file_error(path, "truncated embedding model id");
  if (model_id.size() > 4096)
    return file_error(path, absl::StrCat("embedding model id of ", model_id.size(), " bytes; expected at most 4096"));
  if (!opts.embedding_model_id.empty() && model_id != opts.embedding_model_id) {
    return absl::FailedPreconditionError(
        absl::StrCat("semantic cache file '", path, "' holds embeddings of ",
                     model_id.empty() ? std::string("an unrecorded model")
                                      : absl::StrCat("model '", absl::CHexEscape(model_id), "'"),
                     "; expected model '", opts.embedding_model_id,
                     "' (options.embedding_model_id): another model's vectors find the wrong neighbours"));
  }
  cache->impl_->options.embedding_model_id = model_id;  // kept by the next save()
  const size_t min_entry = 4 * 4 + 8 + size_t{dim} * sizeof(float);
  if (count > r.left() / min_entry)
    return file_error(path, absl::StrCat(count, " entries cannot fit in ", r.left(), " payload bytes"));

  TimePoint now = cache->impl_->clock->now();
  SemanticRecord rec;
  for (uint64_t i = 0; i < count; ++i) {
    auto bad = [&](std::string_view what) {
      return file_error(path, absl::StrCat("entry ", i, " at payload offset ", r.pos(), ": ", av(what)));
    };
    uint32_t ntags;
    int64_t ttl_ns;
    if (!r.get_bytes(rec.tenant) || !r.get_bytes(rec.question) || !r.get_bytes(rec.answer) || !r.get(ntags))
      return bad("truncated");
    if (ntags > r.left() / 4) return bad(absl::StrCat(ntags, " tags cannot fit in the bytes left"));
    rec.tags.resize(ntags);
    for (auto& tag : rec.tags)
      if (!r.get_bytes(tag)) return bad("truncated tag");
    if (!r.get(ttl_ns) || !r.get_floats(rec.embedding, dim)) return bad("truncated");
    if (ttl_ns <= 0) continue;  // already expired when saved
    TimePoint expires = ttl_ns == std::numeric_limits<int64_t>::max() || Duration(ttl_ns) >= TimePoint::max() - now
                            ? TimePoint::max()
                            : now + Duration(ttl_ns);
    Status st = cache->impl_->insert_until(rec.tenant, rec.question, rec.embedding, std::move(rec.answer),
                                           std::move(rec.tags), expires);
    if (!st.ok()) return bad(std::string_view(st.message().data(), st.message().size()));
  }
  if (r.left() != 0) return file_error(path, absl::StrCat(r.left(), " unexpected bytes after the last entry"));
  // Restoring is not traffic.
  for (auto* counter : {&cache->impl_->counters.inserts, &cache->impl_->counters.replacements,
                        &cache->impl_->counters.evictions, &cache->impl_->counters.expirations})
    counter->store(0, std::memory_order_relaxed);
  return cache;
}

}  // namespace brisk::cache
