// libFuzzer target: load_quantized_model (the safetensors header, the brisk.* metadata, every precision's tensors,
// int4 dequantization) on arbitrary bytes written to a file. Invariants: an error has a message; a model that
// loads has the layers its config declares, and is_quantized_model_file agrees that the file is one.
#include "brisk/quant/model_file.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = brisk_fuzz::scratch_dir() / "model.brisk.safetensors";
  brisk_fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto model = brisk::quant::load_quantized_model(path.string());
  if (!model.ok()) {
    if (model.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  if (static_cast<int64_t>(model->weights.layers.size()) != model->config.num_hidden_layers) {
    brisk_fuzz::invariant_failed("layer count differs from the config");
  }
  if (!brisk::quant::is_quantized_model_file(path.string())) {
    brisk_fuzz::invariant_failed("a loadable file is not a quantized model file");
  }
  if (model->model_files.count("config.json") == 0) brisk_fuzz::invariant_failed("no config.json in model_files");
  return 0;
}
