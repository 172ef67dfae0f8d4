// libFuzzer target: the model-directory configuration files. The input is split at NUL bytes into config.json,
// 1_Pooling/config.json, modules.json and sentence_bert_config.json; the first two are parsed from memory, then all
// four are written to a scratch model folder and read back with read_pooling_config (a missing part: no file).
#include "brisk/model/config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = brisk_fuzz::split(data, size, '\0', 4);
  auto config = brisk::BertConfig::from_json_string(std::string(parts[0]), "config.json");
  if (config.ok()) {
    if (!config->validate("config.json").ok()) brisk_fuzz::invariant_failed("a parsed config does not validate");
    (void)config->summary();
  }
  if (parts.size() > 1) (void)brisk::PoolingConfig::from_json_string(std::string(parts[1]), "1_Pooling/config.json");

  const auto& dir = brisk_fuzz::scratch_dir();
  std::filesystem::create_directories(dir / "1_Pooling");
  const std::filesystem::path files[] = {dir / "config.json", dir / "1_Pooling" / "config.json", dir / "modules.json",
                                         dir / "sentence_bert_config.json"};
  for (size_t k = 1; k < 4; ++k) {
    std::error_code ec;
    if (k < parts.size()) {
      brisk_fuzz::write_file(files[k], parts[k]);
    } else {
      std::filesystem::remove(files[k], ec);
    }
  }
  auto pooling = brisk::read_pooling_config(dir.string());
  if (!pooling.ok() && pooling.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
  return 0;
}
