// The zip central directory of a torch.save archive, read as miniz reads it, to bound each record's declared size.
#include "zip_directory.h"

#include <cstring>
#include <string_view>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace brisk {
namespace {

// The zip central directory, read the way miniz (inside libtorch's PyTorchStreamReader) reads it, to check every
// record's declared uncompressed size before libtorch allocates that many bytes for it: libtorch 1.13 trusts the
// size, so a 1 KB archive declaring a 4 GB record made it allocate 4 GB (found by fuzz_torch_checkpoint). A record
// can never hold more than the archive itself, as torch.save stores records uncompressed.
class ZipDirectoryCheck {
 public:
  ZipDirectoryCheck(std::ifstream& in, uint64_t size, const std::string& file) : in_(in), size_(size), file_(file) {}

  Status run() {
    // miniz takes the last end-of-central-directory signature with room for its 22-byte record, searching up to
    // 64 KiB (the longest comment) from the end.
    constexpr uint64_t kEocd = 22, kSearch = 0xFFFF + kEocd + 4096;
    if (size_ < kEocd) return error("is too short for a zip end-of-central-directory record");
    const uint64_t from = size_ > kSearch ? size_ - kSearch : 0;
    BRISK_ASSIGN_OR_RETURN(std::string tail, read_at(from, size_ - from));
    int64_t eocd = -1;
    for (int64_t k = int64_t(tail.size() - kEocd); k >= 0; --k) {
      if (std::memcmp(tail.data() + k, "PK\x05\x06", 4) == 0) {
        eocd = int64_t(from) + k;
        break;
      }
    }
    if (eocd < 0) return error("has no zip end-of-central-directory record (truncated file?)");
    const std::string_view e(tail.data() + (uint64_t(eocd) - from), kEocd);
    uint64_t entries = le(e, 10, 2), dir_offset = le(e, 16, 4);
    if (uint64_t(eocd) >= 20 + 56) {  // a zip64 locator in front: miniz then takes the zip64 record's values
      BRISK_ASSIGN_OR_RETURN(std::string locator, read_at(uint64_t(eocd) - 20, 20));
      if (std::memcmp(locator.data(), "PK\x06\x07", 4) == 0) {
        const uint64_t z = le(locator, 8, 8);
        if (z <= size_ - 56) {
          BRISK_ASSIGN_OR_RETURN(std::string z64, read_at(z, 56));
          if (std::memcmp(z64.data(), "PK\x06\x06", 4) == 0) {
            entries = le(z64, 32, 8);
            dir_offset = le(z64, 48, 8);
          }
        }
      }
    }
    uint64_t p = dir_offset;
    for (uint64_t i = 0; i < entries; ++i) {
      if (p > size_ || size_ - p < 46) return error("has a zip central directory that runs past the end of the file");
      BRISK_ASSIGN_OR_RETURN(std::string h, read_at(p, 46));
      if (std::memcmp(h.data(), "PK\x01\x02", 4) != 0) return error("has a corrupt zip central directory");
      const uint64_t name_len = le(h, 28, 2), extra_len = le(h, 30, 2), comment_len = le(h, 32, 2);
      if (size_ - p - 46 < name_len + extra_len) return error("has a zip central directory that runs past the end");
      BRISK_ASSIGN_OR_RETURN(std::string rest, read_at(p + 46, name_len + extra_len));
      const std::string_view name(rest.data(), name_len);
      uint64_t declared = le(h, 24, 4);
      if (declared == 0xFFFFFFFFu) {  // the real size is in the zip64 extra field (id 1), first of its values
        declared = UINT64_MAX;
        for (uint64_t x = name_len; x + 4 <= rest.size();) {
          const uint64_t id = le(rest, x, 2), len = le(rest, x + 2, 2);
          if (id == 1 && len >= 8 && x + 4 + 8 <= rest.size()) declared = le(rest, x + 4, 8);
          x += 4 + len;
        }
      }
      if (declared > size_) {
        return error(absl::StrCat("has a zip record '", absl::CHexEscape(std::string(name.substr(0, 64))),
                                  "' that declares ", declared, " bytes, more than the whole archive (", size_,
                                  " bytes); expected torch.save's uncompressed records"));
      }
      p += 46 + name_len + extra_len + comment_len;
    }
    return absl::OkStatus();
  }

 private:
  static uint64_t le(std::string_view b, size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t k = n; k-- > 0;) v = (v << 8) | uint8_t(b[at + k]);
    return v;
  }
  StatusOr<std::string> read_at(uint64_t offset, uint64_t n) {
    std::string out(size_t(n), '\0');
    in_.clear();
    in_.seekg(std::streamoff(offset));
    in_.read(out.data(), std::streamsize(n));
    if (uint64_t(in_.gcount()) != n) return error("could not be read (changed while reading?)");
    return out;
  }
  Status error(const std::string& what) const { return absl::InvalidArgumentError(absl::StrCat(file_, ": ", what)); }

  std::ifstream& in_;
  const uint64_t size_;
  const std::string& file_;
};

}  // namespace

Status check_zip_record_sizes(std::ifstream& in, uint64_t size, const std::string& file) {
  return ZipDirectoryCheck(in, size, file).run();
}

}  // namespace brisk
