// SafetensorsFile: a validated, zero-copy reader of the safetensors format (Hugging Face's model.safetensors).
//
// Layout of the format: an 8-byte little-endian u64 N, then N bytes of JSON header, then the data section. The
// header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data
// section) plus an optional "__metadata__" object of string to string.
//
//   BRISK_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(dir + "/model.safetensors"));
//   for (const std::string& name : file.tensor_names()) { ... }
//   BRISK_ASSIGN_OR_RETURN(Tensor w, file.get("embeddings.word_embeddings.weight"));  // view into the mapping
//
// open() memory-maps the whole file (MAP_PRIVATE; the descriptor is closed right away) and validates the entire
// header before it returns: sizes, JSON, dtypes, shapes (overflow-checked), offsets inside the data section,
// byte counts equal to numel x dtype size, and no two tensors overlapping. Every error names the file and the
// tensor. After open() succeeds, get() cannot read outside the mapping.
//
// Tensors returned by get() share the mapping and keep it alive (Tensor::from_shared), so they stay valid after
// the SafetensorsFile is destroyed. The pages are copy-on-write: writing into such a tensor changes only this
// process's private copy, never the file. A tensor whose data is not aligned to its element size (legal in the
// format when the header length is not a multiple of 8) is copied into an owned, aligned tensor instead.
//
// write_safetensors() writes the format (lib/model/safetensors_writer.cc): the header's keys sorted, padded with
// spaces so that the data section starts 64 bytes into the file, and the data of the tensors back to back (as the
// format requires) in order of decreasing element size, then name, so every tensor is aligned to its element size.
//
//   BRISK_RETURN_IF_ERROR(write_safetensors(path, {{"a.weight", w}, {"a.bias", b}}, {{"format", "pt"}}));
//
// Thread safety: a SafetensorsFile is immutable after open(); all const methods may run concurrently, and
// copies share the same mapping. write_safetensors may run concurrently for distinct paths.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"

namespace brisk {

// One tensor entry of a safetensors header.
struct SafetensorsTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t data_begin = 0;  // byte offsets relative to the start of the data section
  uint64_t data_end = 0;
  uint64_t file_offset = 0;  // absolute byte offset of the first byte in the file
  uint64_t nbytes() const { return data_end - data_begin; }
};

// The format's dtype string for a DType ("F32", "BF16", ...).
BRISK_API std::string_view safetensors_dtype_name(DType dtype);

// Writes `tensors` (contiguous cpu tensors of F32, F16, BF16, I8, U8, I32 or I64; distinct names, none
// "__metadata__") and `metadata` to path + ".tmp", then renames it to `path`, so a reader never sees a partial
// file. Errors name the path and the tensor.
BRISK_API Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                                   const std::map<std::string, std::string>& metadata);

class BRISK_API SafetensorsFile {
 public:
  // Largest header open() accepts; the format's reference implementation uses the same cap.
  static constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;

  // Maps and validates `path`. Fails with NotFound when the file is missing and InvalidArgument (naming the
  // file and tensor) when it is malformed.
  static StatusOr<SafetensorsFile> open(const std::string& path);

  const std::string& path() const { return path_; }
  uint64_t file_size() const;
  // Names of all tensors, sorted by name ("__metadata__" is not a tensor).
  const std::vector<std::string>& tensor_names() const { return names_; }
  bool contains(const std::string& name) const { return infos_.count(name) != 0; }
  // Dtype, shape and offsets of one tensor; NotFound naming the file when absent.
  StatusOr<SafetensorsTensorInfo> info(const std::string& name) const;
  // The tensor's data as a contiguous CPU tensor sharing the mapping (or an aligned copy; see above).
  StatusOr<Tensor> get(const std::string& name) const;
  // The header's "__metadata__" object (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  struct Mapping;
  SafetensorsFile() = default;

  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  uint64_t data_start_ = 0;  // 8 + header length
  std::vector<std::string> names_;
  std::map<std::string, SafetensorsTensorInfo> infos_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace brisk
