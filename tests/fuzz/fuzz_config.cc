// libFuzzer target: the model-directory configuration files. The input is split at NUL bytes into config.json,
// 1_Pooling/config.json, modules.json, sentence_bert_config.json and config_sentence_transformers.json; the first
// two are parsed from memory (a parsed config.json is also rewritten as brisk prune writes it and read back), then
// the last four are written to a scratch model folder and read back with read_pooling_config (a missing part: no
// file). config.json's head settings (id2label, problem_type, a decoder's pad_token_id) are read as a Qwen3
// sequence classifier's over a one-row score layer.
#include "brisk/model/classification_head.h"
#include "brisk/model/config.h"
#include "brisk/prune/structured.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = brisk_fuzz::split(data, size, '\0', 5);
  auto config = brisk::BertConfig::from_json_string(std::string(parts[0]), "config.json");
  if (config.ok()) {
    if (!config->validate("config.json").ok()) brisk_fuzz::invariant_failed("a parsed config does not validate");
    (void)config->summary();
    for (int64_t l = 0; l < config->num_hidden_layers; ++l) {
      if (config->layer_heads(l) < 1 || config->layer_intermediate_size(l) < 1 ||
          config->layer_intermediate_size(l) > config->intermediate_size) {
        brisk_fuzz::invariant_failed("a parsed config has a layer without heads or with a width out of range");
      }
    }
    // What brisk prune writes for this config reads back as the same shapes.
    auto rewritten = brisk::prune::pruned_config_json(std::string(parts[0]), *config);
    if (rewritten.ok()) {
      auto back = brisk::BertConfig::from_json_string(*rewritten, "pruned config.json");
      if (!back.ok() || back->pruned_heads != config->pruned_heads ||
          back->num_hidden_layers != config->num_hidden_layers) {
        brisk_fuzz::invariant_failed("pruned_config_json does not read back as the same shapes");
      }
    }
  }
  brisk::NamedTensors score;
  score.emplace("score.weight", brisk::Tensor::zeros({1, 4}, brisk::DType::kF32).value());
  auto head =
      brisk::read_sequence_classification_head(score, std::string(parts[0]), brisk::ModelFamily::kQwen3, "config.json");
  if (head.ok() && head->has_value() &&
      ((*head)->num_labels() != 1 || (*head)->input != brisk::ClassificationHead::Input::kLastToken)) {
    brisk_fuzz::invariant_failed("a one-row score layer read as other than a one-label last-token head");
  }
  if (!head.ok() && head.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
  if (parts.size() > 1) (void)brisk::PoolingConfig::from_json_string(std::string(parts[1]), "1_Pooling/config.json");

  const auto& dir = brisk_fuzz::scratch_dir();
  std::filesystem::create_directories(dir / "1_Pooling");
  const std::filesystem::path files[] = {dir / "config.json", dir / "1_Pooling" / "config.json", dir / "modules.json",
                                         dir / "sentence_bert_config.json", dir / "config_sentence_transformers.json"};
  for (size_t k = 1; k < 5; ++k) {
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
