// read_torch_checkpoint: a torch.save'd state dict (pytorch_model.bin) to named tensors. Compiled only when
// libtorch is found (BRISK_HAVE_TORCH); this is the only file that includes libtorch headers.
//
// libtorch 1.13's torch::pickle_load cannot read what Python's model.state_dict() produces: its unpickler turns
// collections.OrderedDict into None ("Expected GenericDict but got None", pytorch/pytorch#100741, fixed only in
// 2.6) and cannot apply BUILD to the dict's _metadata. So this file uses libtorch for the zip container only
// (caffe2::serialize::PyTorchStreamReader: archive prefix, records, version checks) and interprets data.pkl with
// a small restricted pickle machine of its own (pickle_machine.h: nothing is ever executed, and its memory is bounded
// against the input). Here the state dict's tensors are materialized: sizes, offsets and strides are checked against
// each record.
#include <caffe2/serialize/inline_container.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "brisk/model/weights.h"
#include "pickle_machine.h"
#include "zip_directory.h"

namespace brisk {

namespace {

using internal::pickle::CheckpointError;
using internal::pickle::PickleMachine;
using internal::pickle::StorageType;
using internal::pickle::StorageTypeInfo;
using internal::pickle::Value;

DType output_dtype(StorageType t) {
  switch (t) {
    case StorageType::kFloat:
    case StorageType::kHalf:
    case StorageType::kBFloat16:
    case StorageType::kDouble: return DType::kF32;
    case StorageType::kLong: return DType::kI64;
    case StorageType::kInt:
    case StorageType::kShort: return DType::kI32;
    case StorageType::kChar: return DType::kI8;
    case StorageType::kByte:
    case StorageType::kBool: return DType::kU8;
  }
  return DType::kF32;
}

// Converts `n` contiguous elements of storage type `t` at `src` into `dst` (output_dtype(t), contiguous).
Status convert_contiguous(StorageType t, const char* src, int64_t n, Tensor& dst) {
  char* out = static_cast<char*>(dst.raw_data());
  const size_t count = size_t(n);
  switch (t) {
    case StorageType::kFloat:
    case StorageType::kLong:
    case StorageType::kInt:
    case StorageType::kChar:
    case StorageType::kByte: std::memcpy(out, src, count * dtype_size(dst.dtype())); return absl::OkStatus();
    case StorageType::kHalf:
    case StorageType::kBFloat16: {
      // to_float32 reads through a borrowed view; records are allocator-aligned and offsets are in elements.
      Tensor half = Tensor::borrow(const_cast<char*>(src), {n}, t == StorageType::kHalf ? DType::kF16 : DType::kBF16);
      BRISK_ASSIGN_OR_RETURN(Tensor f, to_float32(half));
      std::memcpy(out, f.raw_data(), count * 4);
      return absl::OkStatus();
    }
    case StorageType::kDouble:
      for (size_t e = 0; e < count; ++e) {
        double d;
        std::memcpy(&d, src + e * 8, 8);
        const float f = static_cast<float>(d);
        std::memcpy(out + e * 4, &f, 4);
      }
      return absl::OkStatus();
    case StorageType::kShort:
      for (size_t e = 0; e < count; ++e) {
        int16_t v;
        std::memcpy(&v, src + e * 2, 2);
        const int32_t w = v;
        std::memcpy(out + e * 4, &w, 4);
      }
      return absl::OkStatus();
    case StorageType::kBool:
      for (size_t e = 0; e < count; ++e) out[e] = src[e] != 0 ? 1 : 0;
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

StatusOr<Tensor> materialize(const Value& t, const std::string& name, const char* record, size_t record_size,
                             const std::string& file) {
  const StorageTypeInfo& st = *t.storage;
  const auto err = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", name, "' ", what));
  };
  if (t.size.size() != t.stride.size()) {
    return err(absl::StrCat("has ", t.size.size(), " sizes but ", t.stride.size(), " strides; expected one per dim"));
  }
  const uint64_t storage_numel = record_size / st.elem;
  bool empty = false;
  for (int64_t d : t.size) {
    if (d < 0) return err("has a negative size; expected non-negative sizes");
    if (d == 0) empty = true;
  }
  if (t.offset < 0) return err("has a negative storage offset");
  if (!empty) {
    // A state dict never needs more elements than its storage holds; refusing broadcast (stride-0) views keeps a
    // tiny hostile file from making us allocate gigabytes.
    uint64_t numel = 1;
    for (int64_t d : t.size) {
      if (numel > storage_numel / uint64_t(d)) {
        return err(absl::StrCat("has sizes [", absl::StrJoin(t.size, ", "), "], more elements than its storage of ",
                                storage_numel, " ", st.name, " elements; expected a view no larger than its storage"));
      }
      numel *= uint64_t(d);
    }
    // Highest element index touched, overflow-checked; must lie inside the storage record.
    uint64_t last = uint64_t(t.offset);
    for (size_t k = 0; k < t.size.size(); ++k) {
      if (t.stride[k] < 0) return err("has a negative stride; expected non-negative strides");
      const uint64_t span = uint64_t(t.size[k] - 1);
      if (t.stride[k] != 0 && span > (UINT64_MAX - last) / uint64_t(t.stride[k])) return err("has overflowing strides");
      last += span * uint64_t(t.stride[k]);
    }
    if (last >= storage_numel) {
      return err(absl::StrCat("reaches element ", last, " of its storage, which holds ", storage_numel, " ", st.name,
                              " elements; expected sizes and strides inside the storage (truncated file?)"));
    }
  }
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(t.size, output_dtype(st.type)));
  if (empty) return out;
  const int64_t n = out.numel();
  if (t.stride == contiguous_strides(t.size)) {
    BRISK_RETURN_IF_ERROR(convert_contiguous(st.type, record + uint64_t(t.offset) * st.elem, n, out));
    return out;
  }
  // A strided view (e.g. a transposed or sliced tensor): gather its elements, then convert.
  std::vector<char> gathered(size_t(n) * st.elem);
  std::vector<int64_t> idx(t.size.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    uint64_t src_index = uint64_t(t.offset);
    for (size_t k = 0; k < idx.size(); ++k) src_index += uint64_t(idx[k]) * uint64_t(t.stride[k]);
    std::memcpy(gathered.data() + size_t(e) * st.elem, record + src_index * st.elem, st.elem);
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < t.size[k]) break;
      idx[k] = 0;
    }
  }
  BRISK_RETURN_IF_ERROR(convert_contiguous(st.type, gathered.data(), n, out));
  return out;
}

const Value* find_state_dict(const Value* root) {
  if (root->kind != Value::kDict) return nullptr;
  bool has_tensor = false;
  for (size_t k = 0; k + 1 < root->items.size(); k += 2) has_tensor |= root->items[k + 1]->kind == Value::kTensor;
  if (has_tensor) return root;
  for (const char* wrapper : {"state_dict", "model", "module"}) {  // {"state_dict": {...}} training checkpoints
    for (size_t k = 0; k + 1 < root->items.size(); k += 2) {
      if (root->items[k]->kind == Value::kStr && root->items[k]->s == wrapper &&
          root->items[k + 1]->kind == Value::kDict) {
        return root->items[k + 1];
      }
    }
  }
  return root;
}

StatusOr<NamedTensors> read_checkpoint(const std::string& path, const std::string& file) {
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the PyTorch checkpoint"));
    char magic[4] = {0, 0, 0, 0};
    in.read(magic, 4);
    if (in.gcount() < 4 || std::memcmp(magic, "PK\x03\x04", 4) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          file,
          ": not a zip archive; expected a checkpoint written by torch.save with torch >= 1.6 (the legacy "
          "pre-1.6 format is not supported: re-save it with a current torch, or convert it to safetensors)"));
    }
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) return absl::NotFoundError(absl::StrCat(path, ": cannot read the size of the PyTorch checkpoint"));
    BRISK_RETURN_IF_ERROR(check_zip_record_sizes(in, size, file));
  }
  caffe2::serialize::PyTorchStreamReader reader(path);
  if (reader.hasRecord("byteorder")) {
    auto [ptr, n] = reader.getRecord("byteorder");
    const std::string order(static_cast<const char*>(ptr.get()), n);
    if (order != "little") {
      return absl::InvalidArgumentError(absl::StrCat(file, ": byteorder is '", order, "'; expected 'little'"));
    }
  }
  if (!reader.hasRecord("data.pkl")) {
    return absl::InvalidArgumentError(absl::StrCat(file,
                                                   ": the archive has no data.pkl record; expected a "
                                                   "torch.save'd state dict (a TorchScript module is not one)"));
  }
  auto [pkl_ptr, pkl_size] = reader.getRecord("data.pkl");
  PickleMachine machine(static_cast<const char*>(pkl_ptr.get()), pkl_size);
  const Value* root = machine.run();
  const Value* dict = find_state_dict(root);
  if (dict == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(file,
                                                   ": holds a pickled value that is not a dict; expected a "
                                                   "state dict mapping tensor names to tensors"));
  }
  // storage key -> record bytes, read once (tied weights share a storage)
  std::unordered_map<std::string, std::pair<at::DataPtr, size_t>> records;
  NamedTensors out;
  for (size_t k = 0; k + 1 < dict->items.size(); k += 2) {
    const Value* key = dict->items[k];
    const Value* val = dict->items[k + 1];
    if (key->kind != Value::kStr || val->kind != Value::kTensor) continue;  // e.g. metadata entries
    const std::string& key_str = val->tensor_storage->s;
    auto rec = records.find(key_str);
    if (rec == records.end()) {
      const std::string record_name = "data/" + key_str;
      if (!reader.hasRecord(record_name)) {
        return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", key->s, "' refers to storage record '",
                                                       record_name, "' which the archive lacks (truncated file?)"));
      }
      auto [ptr, n] = reader.getRecord(record_name);
      rec = records.emplace(key_str, std::make_pair(std::move(ptr), n)).first;
    }
    const uint64_t declared = uint64_t(val->tensor_storage->storage_numel) * val->storage->elem;
    const char* bytes = static_cast<const char*>(rec->second.first.get());
    const size_t nbytes = rec->second.second;
    if (nbytes < declared) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": storage record 'data/", key_str, "' of tensor '", key->s,
                                                     "' holds ", nbytes, " bytes; expected ", declared));
    }
    BRISK_ASSIGN_OR_RETURN(Tensor t, materialize(*val, key->s, bytes, nbytes, file));
    out.insert_or_assign(key->s, std::move(t));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": holds no tensors; expected a state dict"));
  }
  return out;
}

}  // namespace

bool torch_checkpoints_supported() { return true; }

StatusOr<NamedTensors> read_torch_checkpoint(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file; expected a PyTorch checkpoint"));
  }
  try {
    return read_checkpoint(path, file);
  } catch (const CheckpointError& e) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", e.what()));
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": libtorch could not read the archive: ", e.what_without_backtrace()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(file, ": out of memory while reading the checkpoint"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": cannot read the checkpoint: ", e.what()));
  }
}

}  // namespace brisk
