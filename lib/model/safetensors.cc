// SafetensorsFile: mmap + full header validation. See include/brisk/model/safetensors.h.
#include "brisk/model/safetensors.h"
#include "brisk/core/internal/bounded_input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "json_describe.h"

namespace brisk {

struct SafetensorsFile::Mapping {
  void* base = nullptr;
  size_t size = 0;
  Mapping(void* b, size_t s) : base(b), size(s) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (base != nullptr) munmap(base, size);
  }
};

namespace {

using nlohmann::json;

// The file's base name: error messages name it the way the user sees it in the model directory.
std::string display_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  return name.empty() ? path : name;
}

struct DTypeEntry {
  const char* name;
  bool supported;
  DType dtype;
};

constexpr DTypeEntry kDTypes[] = {
    {"F32", true, DType::kF32},  {"F16", true, DType::kF16},      {"BF16", true, DType::kBF16},
    {"I8", true, DType::kI8},    {"U8", true, DType::kU8},        {"I32", true, DType::kI32},
    {"I64", true, DType::kI64},  {"F64", false, DType::kF32},     {"BOOL", false, DType::kF32},
    {"I16", false, DType::kF32}, {"U16", false, DType::kF32},     {"U32", false, DType::kF32},
    {"U64", false, DType::kF32}, {"F8_E4M3", false, DType::kF32}, {"F8_E5M2", false, DType::kF32},
    {"C64", false, DType::kF32},
};

constexpr const char* kSupportedList = "F32, F16, BF16, I8, U8, I32, I64";

std::string json_type(const json& j) { return j.type_name(); }

Status bad(const std::string& file, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", what));
}

StatusOr<SafetensorsTensorInfo> parse_entry(const std::string& file, const std::string& name, const json& entry,
                                            uint64_t data_size) {
  const std::string where = absl::StrCat("tensor '", name, "'");
  if (!entry.is_object()) {
    return bad(file, absl::StrCat(where, " is a JSON ", json_type(entry),
                                  "; expected an object with dtype, shape and data_offsets"));
  }
  SafetensorsTensorInfo info;
  info.name = name;

  auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return bad(file, absl::StrCat(where, dtype_it == entry.end() ? " has no \"dtype\"" : " has a non-string \"dtype\"",
                                  "; expected one of ", kSupportedList));
  }
  const std::string dtype_str = dtype_it->get<std::string>();
  const DTypeEntry* found = nullptr;
  for (const DTypeEntry& d : kDTypes) {
    if (dtype_str == d.name) found = &d;
  }
  if (found == nullptr) {
    return bad(file, absl::StrCat(where, " has unknown dtype '", dtype_str, "'; expected one of ", kSupportedList));
  }
  if (!found->supported) {
    return bad(file, absl::StrCat(where, " has unsupported dtype '", dtype_str, "'; brisk supports ", kSupportedList,
                                  " (convert the checkpoint, e.g. to F32)"));
  }
  info.dtype = found->dtype;

  auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return bad(file, absl::StrCat(where, shape_it == entry.end() ? " has no \"shape\"" : " has a non-array \"shape\"",
                                  "; expected an array of non-negative integers"));
  }
  const uint64_t elem = dtype_size(info.dtype);
  // numel x elem must fit in the data section, which bounds every intermediate product as well.
  uint64_t numel = 1;
  bool overflow = false;
  for (size_t i = 0; i < shape_it->size(); ++i) {
    const json& d = (*shape_it)[i];
    if (!d.is_number_integer()) {
      return bad(file, absl::StrCat(where, " has shape entry ", i, " = ", describe_json(d),
                                    "; expected a non-negative integer"));
    }
    if (d.is_number_unsigned() ? d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())
                               : d.get<int64_t>() < 0) {
      return bad(file, absl::StrCat(where, " has shape entry ", i, " = ", describe_json(d),
                                    "; expected a non-negative integer below 2^63"));
    }
    const uint64_t dim = d.is_number_unsigned() ? d.get<uint64_t>() : uint64_t(d.get<int64_t>());
    info.shape.push_back(static_cast<int64_t>(dim));
    if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / elem / dim) overflow = true;
    if (!overflow) numel *= dim;
  }
  const std::string shape_str = absl::StrCat("[", absl::StrJoin(info.shape, ", "), "]");
  // A zero dimension makes the tensor empty whatever the other dimensions say.
  if (std::find(info.shape.begin(), info.shape.end(), 0) != info.shape.end()) {
    numel = 0;
    overflow = false;
  }
  if (overflow) {
    return bad(file, absl::StrCat(where, " has shape ", shape_str,
                                  " whose byte size overflows 64 bits; expected a shape that fits the file"));
  }

  auto off_it = entry.find("data_offsets");
  if (off_it == entry.end() || !off_it->is_array() || off_it->size() != 2 || !(*off_it)[0].is_number_unsigned() ||
      !(*off_it)[1].is_number_unsigned()) {
    return bad(file, absl::StrCat(where, " has data_offsets ",
                                  off_it == entry.end() ? std::string("missing") : describe_json(*off_it),
                                  "; expected [begin, end] with non-negative integers"));
  }
  info.data_begin = (*off_it)[0].get<uint64_t>();
  info.data_end = (*off_it)[1].get<uint64_t>();
  const std::string off_str = absl::StrCat("[", info.data_begin, ", ", info.data_end, "]");
  if (info.data_begin > info.data_end) {
    return bad(file, absl::StrCat(where, " has data_offsets ", off_str, " with begin > end; expected begin <= end"));
  }
  if (info.data_end > data_size) {
    return bad(file, absl::StrCat(where, " has data_offsets ", off_str, " but the data section holds only ", data_size,
                                  " bytes; expected end <= ", data_size, " (truncated file?)"));
  }
  const uint64_t need = numel * elem;
  if (info.data_end - info.data_begin != need) {
    return bad(file,
               absl::StrCat(where, " has data_offsets ", off_str, " (", info.data_end - info.data_begin,
                            " bytes) but shape ", shape_str, " x ", dtype_name(info.dtype), " needs ", need, " bytes"));
  }
  return info;
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const DTypeEntry& d : kDTypes) {
    if (d.supported && d.dtype == dtype) return d.name;
  }
  return "?";
}

StatusOr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  const std::string file = display_name(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = absl::StrCat(path, ": cannot open safetensors file: ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(msg);
    if (err == EACCES) return absl::PermissionDeniedError(msg);
    return absl::InvalidArgumentError(msg);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file; expected a safetensors file"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return bad(file,
               absl::StrCat("file is ", size, " bytes; a safetensors file needs at least 8 bytes (the header length)"));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": mmap of ", size, " bytes failed: ", std::strerror(map_err)));
  }
  SafetensorsFile out;
  out.path_ = path;
  out.mapping_ = std::make_shared<Mapping>(base, size);
  const auto* bytes = static_cast<const unsigned char*>(base);

  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxHeaderBytes) {
    return bad(file, absl::StrCat("header length is ", header_len, " bytes; expected at most ", kMaxHeaderBytes,
                                  " (not a safetensors file, or a corrupt one)"));
  }
  if (header_len > size - 8) {
    return bad(file, absl::StrCat("header length is ", header_len, " bytes but only ", size - 8,
                                  " bytes follow the length field; expected a complete header (truncated file?)"));
  }
  out.data_start_ = 8 + header_len;
  const uint64_t data_size = size - out.data_start_;

  const char* hbegin = reinterpret_cast<const char*>(bytes + 8);
  StatusOr<json> parsed = parse_json_bounded(std::string_view(hbegin, header_len), "header");
  if (!parsed.ok()) {
    return bad(file, absl::StrCat("header (", header_len, " bytes) is not valid JSON (", parsed.status().message(),
                                  "); expected a JSON object"));
  }
  json header = std::move(*parsed);
  if (!header.is_object()) {
    return bad(file, absl::StrCat("header is a JSON ", json_type(header), "; expected a JSON object"));
  }

  std::vector<const SafetensorsTensorInfo*> by_offset;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) {
        return bad(file, absl::StrCat("__metadata__ is a JSON ", json_type(*it), "; expected an object of strings"));
      }
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) {
          return bad(file,
                     absl::StrCat("__metadata__ key '", m.key(), "' is a JSON ", json_type(*m), "; expected a string"));
        }
        out.metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    BRISK_ASSIGN_OR_RETURN(SafetensorsTensorInfo info, parse_entry(file, it.key(), *it, data_size));
    info.file_offset = out.data_start_ + info.data_begin;
    out.names_.push_back(it.key());
    out.infos_.emplace(it.key(), std::move(info));
  }
  std::sort(out.names_.begin(), out.names_.end());
  for (const auto& [name, info] : out.infos_) {
    if (info.nbytes() > 0) by_offset.push_back(&info);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return a->data_begin != b->data_begin ? a->data_begin < b->data_begin : a->data_end < b->data_end;
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsTensorInfo& prev = *by_offset[i - 1];
    const SafetensorsTensorInfo& cur = *by_offset[i];
    if (cur.data_begin < prev.data_end) {
      return bad(file, absl::StrCat("tensor '", cur.name, "' (data_offsets [", cur.data_begin, ", ", cur.data_end,
                                    "]) overlaps tensor '", prev.name, "' (data_offsets [", prev.data_begin, ", ",
                                    prev.data_end, "]); expected disjoint byte ranges"));
    }
  }
  return out;
}

uint64_t SafetensorsFile::file_size() const { return mapping_ ? mapping_->size : 0; }

StatusOr<SafetensorsTensorInfo> SafetensorsFile::info(const std::string& name) const {
  auto it = infos_.find(name);
  if (it == infos_.end()) {
    return absl::NotFoundError(
        absl::StrCat(display_name(path_), ": no tensor named '", name, "' (the file has ", names_.size(), " tensors)"));
  }
  return it->second;
}

StatusOr<Tensor> SafetensorsFile::get(const std::string& name) const {
  auto it = infos_.find(name);
  if (it == infos_.end()) {
    return absl::NotFoundError(
        absl::StrCat(display_name(path_), ": no tensor named '", name, "' (the file has ", names_.size(), " tensors)"));
  }
  const SafetensorsTensorInfo& info = it->second;
  char* data = static_cast<char*>(mapping_->base) + info.file_offset;
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(info.dtype) != 0) {
    BRISK_ASSIGN_OR_RETURN(Tensor copy, Tensor::empty(info.shape, info.dtype));
    if (info.nbytes() > 0) std::memcpy(copy.raw_data(), data, info.nbytes());
    return copy;
  }
  return Tensor::from_shared(mapping_, data, info.shape, info.dtype);
}

}  // namespace brisk
