// libFuzzer target: load_intent_head and is_intent_head_file on arbitrary files. A head that loads is applied to
// an embedding, must be recognised by is_intent_head_file, and must save and load again unchanged (labels, shapes,
// weights, threshold, model id).
#include <cstring>
#include <vector>

#include "brisk/model/intent_head.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = brisk_fuzz::scratch_dir() / "head.safetensors";
  brisk_fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  const bool recognised = brisk::is_intent_head_file(path.string());
  auto file = brisk::load_intent_head(path.string());
  if (!file.ok()) {
    if (file.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  if (!recognised) brisk_fuzz::invariant_failed("a head that loads is not recognised by is_intent_head_file");
  const brisk::ClassificationHead& head = file->head;
  if (head.layers.size() != 1 || head.num_labels() < 2 || head.input_size() < 1) {
    brisk_fuzz::invariant_failed("a loaded head of the wrong form");
  }
  if (!(file->unknown_threshold >= 0.0f && file->unknown_threshold <= 1.0f)) {
    brisk_fuzz::invariant_failed("a threshold outside [0, 1]");
  }
  std::vector<float> x(static_cast<size_t>(head.input_size()), 0.5f);
  std::vector<float> logits(static_cast<size_t>(head.num_labels()));
  if (!head.apply(x.data(), 1, logits.data()).ok()) brisk_fuzz::invariant_failed("apply of a loaded head");
  (void)brisk::label_probabilities(logits, head.num_labels(), head.multi_label);

  const auto again_path = brisk_fuzz::scratch_dir() / "head_again.safetensors";
  if (auto s = brisk::save_intent_head(again_path.string(), *file); !s.ok()) {
    brisk_fuzz::invariant_failed("save of a loaded head", std::string(s.message()));
  }
  auto again = brisk::load_intent_head(again_path.string());
  if (!again.ok()) brisk_fuzz::invariant_failed("reload of a saved head", std::string(again.status().message()));
  const brisk::Tensor& w1 = head.layers[0].weight;
  const brisk::Tensor& w2 = again->head.layers[0].weight;
  if (again->head.labels != head.labels || w1.shape() != w2.shape() ||
      std::memcmp(w1.data<float>(), w2.data<float>(), w1.nbytes()) != 0 ||
      again->unknown_threshold != file->unknown_threshold || again->embedding_model_id != file->embedding_model_id ||
      again->training_stats.examples_per_label != file->training_stats.examples_per_label) {
    brisk_fuzz::invariant_failed("a saved head reloads differently");
  }
  return 0;
}
