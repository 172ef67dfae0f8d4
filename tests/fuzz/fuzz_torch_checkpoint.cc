// libFuzzer target: read_torch_checkpoint (pytorch_model.bin: the zip container through libtorch's
// PyTorchStreamReader, then brisk's restricted pickle machine over data.pkl and the storage records).
#include "brisk/model/weights.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = brisk_fuzz::scratch_dir() / "pytorch_model.bin";
  brisk_fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto tensors = brisk::read_torch_checkpoint(path.string());
  if (!tensors.ok()) {
    if (tensors.status().message().find("pytorch_model.bin") == std::string_view::npos) {
      brisk_fuzz::invariant_failed("an error that does not name the file", std::string(tensors.status().message()));
    }
    return 0;
  }
  for (const auto& [name, t] : *tensors) {
    const auto* p = static_cast<const volatile uint8_t*>(t.raw_data());
    uint8_t sum = 0;
    for (size_t k = 0; k < t.nbytes(); ++k) sum = uint8_t(sum + p[k]);
    (void)sum;
  }
  return 0;
}
