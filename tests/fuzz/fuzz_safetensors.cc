// libFuzzer target: SafetensorsFile::open (header length, JSON header, dtypes, shapes, data offsets) on arbitrary
// bytes, then every tensor read back through get(). Invariant: a file that opens yields tensors whose bytes lie
// inside the file and whose size matches numel x dtype size.
#include "brisk/model/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = brisk_fuzz::scratch_dir() / "model.safetensors";
  brisk_fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto file = brisk::SafetensorsFile::open(path.string());
  if (!file.ok()) {
    if (file.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  for (const std::string& name : file->tensor_names()) {
    auto info = file->info(name);
    if (!info.ok()) brisk_fuzz::invariant_failed("info() fails for a listed tensor", name);
    if (info->data_end < info->data_begin || info->file_offset + info->nbytes() > size) {
      brisk_fuzz::invariant_failed("tensor bytes outside the file", name);
    }
    auto t = file->get(name);
    if (!t.ok()) continue;  // e.g. a dtype brisk does not compute with
    if (uint64_t(t->numel()) * brisk::dtype_size(t->dtype()) != info->nbytes()) {
      brisk_fuzz::invariant_failed("tensor size differs from its byte range", name);
    }
    // Touch every byte so that ASan sees any read outside the mapping.
    const auto* p = static_cast<const volatile uint8_t*>(t->raw_data());
    uint8_t sum = 0;
    for (uint64_t k = 0; k < info->nbytes(); ++k) sum = uint8_t(sum + p[k]);
    (void)sum;
  }
  return 0;
}
