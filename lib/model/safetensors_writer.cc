// write_safetensors: the writing half of the safetensors format. See include/brisk/model/safetensors.h.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "brisk/model/safetensors.h"
#include "nlohmann/json.hpp"

namespace brisk {

namespace {

using nlohmann::json;

constexpr uint64_t kDataAlignment = 64;  // where the data section starts in the file

class File {
 public:
  explicit File(const std::string& path) : f_(std::fopen(path.c_str(), "wb")) {}
  ~File() {
    if (f_ != nullptr) std::fclose(f_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  bool ok() const { return f_ != nullptr; }
  bool write(const void* data, size_t n) { return n == 0 || std::fwrite(data, 1, n, f_) == n; }
  bool close() {
    const bool flushed = std::fflush(f_) == 0;
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    return flushed && closed;
  }

 private:
  std::FILE* f_;
};

}  // namespace

Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    const std::string where = absl::StrCat(path, ": tensor '", name, "'");
    if (name == "__metadata__" || name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has a reserved name; expected a tensor name"));
    }
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is given twice; expected distinct names"));
    }
    if (!t.defined() || t.device() != Device::kCPU || !t.is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is ",
                                                     t.defined() ? "a non-contiguous or device tensor" : "undefined",
                                                     "; expected a contiguous cpu tensor"));
    }
    if (safetensors_dtype_name(t.dtype()) == "?") {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has dtype ", dtype_name(t.dtype()), "; expected F32, F16, BF16, I8, U8, I32 or I64"));
    }
  }
  // Data order: larger elements first, so that every tensor starts at a multiple of its element size.
  std::vector<const std::pair<std::string, Tensor>*> order;
  for (const auto& entry : tensors) order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    const size_t sa = dtype_size(a->second.dtype()), sb = dtype_size(b->second.dtype());
    return sa != sb ? sa > sb : a->first < b->first;
  });

  json header = json::object();  // keys are kept sorted
  if (!metadata.empty()) {
    json meta = json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const auto* entry : order) {
    const Tensor& t = entry->second;
    const uint64_t n = t.nbytes();
    header[entry->first] = {{"dtype", std::string(safetensors_dtype_name(t.dtype()))},
                            {"shape", t.shape()},
                            {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    // dump() refuses strings that are not UTF-8.
    return absl::InvalidArgumentError(absl::StrCat(path, ": the header cannot be written as JSON (", e.what(),
                                                   "); expected UTF-8 names and metadata"));
  }
  const uint64_t unpadded = 8 + text.size();
  text.append((kDataAlignment - unpadded % kDataAlignment) % kDataAlignment, ' ');
  if (text.size() > SafetensorsFile::kMaxHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the header is ", text.size(), " bytes; expected at most ",
                                                   SafetensorsFile::kMaxHeaderBytes, " (too much metadata)"));
  }

  const std::string tmp = path + ".tmp";
  File file(tmp);
  if (!file.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(tmp, ": cannot create: ", std::strerror(errno)));
  }
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((uint64_t(text.size()) >> (8 * i)) & 0xff);
  bool ok = file.write(len, 8) && file.write(text.data(), text.size());
  for (const auto* entry : order) {
    if (!ok) break;
    ok = file.write(entry->second.raw_data(), entry->second.nbytes());
  }
  const int write_errno = errno;
  if (!file.close() || !ok) {
    std::remove(tmp.c_str());
    return absl::DataLossError(absl::StrCat(tmp, ": write failed: ", std::strerror(write_errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot rename ", tmp, " to it: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace brisk
