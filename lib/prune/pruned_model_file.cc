// Writing a pruned model directory. See include/brisk/prune/structured.h.
#include <filesystem>
#include <fstream>

#include "brisk/core/internal/bounded_input.h"
#include "absl/strings/str_cat.h"
#include "brisk/model/safetensors.h"
#include "brisk/model/weights.h"
#include "brisk/prune/structured.h"
#include "brisk/model/model_file.h"
#include "nlohmann/json.hpp"

namespace brisk::prune {

namespace {

// Every tensor under its Hugging Face name (no model prefix), as EncoderWeights::from_tensors reads it back.
std::vector<std::pair<std::string, Tensor>> named_tensors(const PrunedModel& m) {
  EncoderWeights w = m.weights;  // shares the tensors; the slot lists want a mutable struct
  std::vector<std::pair<std::string, Tensor>> out = {{std::string(kWordEmbeddingsName) + ".weight", w.embeddings.word}};
  for (const F32TensorSlot& t : f32_tensors(w, m.config)) out.emplace_back(t.name, *t.tensor);
  for (const LinearSlot& s : linear_slots(w, m.config)) {
    out.emplace_back(s.name + ".weight", *s.weight);
    out.emplace_back(s.name + ".bias", *s.bias);
  }
  for (const auto& [name, t] : m.head_tensors) out.emplace_back(name, t);
  return out;
}

Status write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) return absl::InternalError(absl::StrCat(path.string(), ": cannot write"));
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::string> pruned_config_json(const std::string& original, const BertConfig& pruned) {
  BRISK_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_bounded(original, "config.json"));
  if (!j.is_object()) {
    return absl::InvalidArgumentError("config.json is not a JSON object; expected the source model's config");
  }
  const bool distil = pruned.family == ModelFamily::kDistilBert;
  j[distil ? "n_layers" : "num_hidden_layers"] = pruned.num_hidden_layers;
  j[distil ? "hidden_dim" : "intermediate_size"] = pruned.intermediate_size;
  nlohmann::json heads = nlohmann::json::object();
  for (const auto& [layer, list] : pruned.pruned_heads) heads[std::to_string(layer)] = list;
  j["pruned_heads"] = heads;
  if (pruned.intermediate_sizes.empty()) {
    j.erase("brisk_intermediate_sizes");
  } else {
    j["brisk_intermediate_sizes"] = pruned.intermediate_sizes;
  }
  return j.dump(2) + "\n";
}

Status save_pruned_model(const PrunedModel& model, const std::string& source_dir, const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out_dir, ec) && fs::equivalent(source_dir, out_dir, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output directory ", out_dir, " is the source model directory; expected a new directory"));
  }
  BRISK_ASSIGN_OR_RETURN(auto files, read_model_files(source_dir));
  BRISK_ASSIGN_OR_RETURN(files["config.json"], pruned_config_json(files["config.json"], model.config));
  fs::create_directories(out_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(out_dir, ": cannot create the directory: ", ec.message()));
  for (const auto& [rel, text] : files) BRISK_RETURN_IF_ERROR(write_text(fs::path(out_dir) / rel, text));
  return write_safetensors((fs::path(out_dir) / "model.safetensors").string(), named_tensors(model),
                           {{"format", "pt"}});
}

Status save_pruned_model_file(const PrunedModel& model, const std::string& source_dir,
                              const std::string& source_weights, const std::string& path) {
  QuantizedModel q;
  q.config = model.config;
  BRISK_ASSIGN_OR_RETURN(q.model_files, read_model_files(source_dir));
  BRISK_ASSIGN_OR_RETURN(q.model_files["config.json"], pruned_config_json(q.model_files["config.json"], model.config));
  q.weights = model.weights;
  q.head_tensors = model.head_tensors;
  q.plan = "pruned";
  BRISK_ASSIGN_OR_RETURN(q.source_sha256, file_sha256_hex(source_weights));
  return save_quantized_model(path, q);
}

}  // namespace brisk::prune
