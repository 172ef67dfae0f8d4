// Unstructured and N:M pruning of an EncoderWeights' linear layers, and the input-column norms Wanda ranks by.
// See include/brisk/prune/mask.h.
#include "brisk/prune/mask.h"
#include "brisk/prune/structured.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace brisk::prune {
namespace {

// The slots `options.layers` names, in model order; every name must be a linear layer.
StatusOr<std::vector<LinearSlot>> selected_slots(EncoderWeights& weights, const BertConfig& config,
                                                 const std::vector<std::string>& layers) {
  std::vector<LinearSlot> slots = linear_slots(weights, config);
  if (layers.empty()) return slots;
  std::set<std::string> wanted;
  for (const std::string& name : layers) {
    const bool known = std::any_of(slots.begin(), slots.end(), [&](const LinearSlot& s) { return s.name == name; });
    if (!known) {
      std::vector<std::string> names;
      for (const LinearSlot& s : slots) names.push_back(s.name);
      return absl::InvalidArgumentError(absl::StrCat("layer '", name, "' is not a linear layer of this ",
                                                     config.model_type, " model; expected one of ",
                                                     absl::StrJoin(names, ", ")));
    }
    wanted.insert(name);
  }
  std::vector<LinearSlot> out;
  for (const LinearSlot& s : slots) {
    if (wanted.count(s.name) != 0) out.push_back(s);
  }
  return out;
}

}  // namespace

StatusOr<std::map<std::string, std::vector<float>>> input_norms(const BertEncoder& encoder,
                                                                const std::vector<PackedSequences>& batches) {
  if (batches.empty()) {
    return absl::InvalidArgumentError("input_norms has no batches; expected at least one tokenized text");
  }
  std::map<std::string, std::vector<double>> squares;
  const ActivationTap tap = [&](std::string_view name, const float* x, int64_t rows, int64_t cols) -> Status {
    std::vector<double>& sq = squares[std::string(name)];
    if (sq.empty()) sq.assign(static_cast<size_t>(cols), 0.0);
    if (static_cast<int64_t>(sq.size()) != cols) {
      return absl::InternalError(absl::StrCat("layer '", std::string(name), "' input has ", cols, " columns; expected ",
                                              sq.size(), " as in the previous batch"));
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * cols;
      for (int64_t c = 0; c < cols; ++c) sq[static_cast<size_t>(c)] += double(row[c]) * row[c];
    }
    return absl::OkStatus();
  };
  std::vector<float> hidden;
  for (const PackedSequences& batch : batches) {
    hidden.resize(static_cast<size_t>(batch.total_tokens() * encoder.hidden_size()));
    BRISK_RETURN_IF_ERROR(encoder.forward(batch, hidden.data(), tap));
  }
  std::map<std::string, std::vector<float>> norms;
  for (const auto& [name, sq] : squares) {
    std::vector<float>& n = norms[name];
    n.reserve(sq.size());
    for (double v : sq) n.push_back(static_cast<float>(std::sqrt(v)));
  }
  return norms;
}

StatusOr<UnstructuredResult> prune_unstructured(EncoderWeights& weights, const BertConfig& config,
                                                const UnstructuredOptions& options) {
  BRISK_RETURN_IF_ERROR(check_prunable(config, "prune_unstructured"));
  if (options.n_m && options.global) {
    return absl::InvalidArgumentError(
        "UnstructuredOptions has both n_m and global set; expected at most one (an N:M mask is per group of m)");
  }
  if (!options.n_m) BRISK_RETURN_IF_ERROR(check_amount(options.amount, "prune_unstructured"));
  BRISK_ASSIGN_OR_RETURN(std::vector<LinearSlot> slots, selected_slots(weights, config, options.layers));

  // Everything that can fail happens before the weights change: scores, masks, the owned copies.
  std::vector<Tensor> scores;
  for (const LinearSlot& slot : slots) {
    const Tensor& w = *slot.weight;
    if (w.dtype() != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat("layer '", slot.name, "' is ", dtype_name(w.dtype()),
                                                     "; expected f32 weights (prune before quantizing)"));
    }
    std::span<const float> norms;
    if (options.input_norms != nullptr) {
      auto it = options.input_norms->find(slot.name);
      if (it == options.input_norms->end()) {
        return absl::InvalidArgumentError(absl::StrCat("input_norms has no entry for layer '", slot.name,
                                                       "'; expected one per pruned layer (from input_norms())"));
      }
      norms = it->second;
    }
    StatusOr<Tensor> s = element_scores(w, norms);
    if (!s.ok()) {
      return absl::Status(s.status().code(), absl::StrCat("layer '", slot.name, "': ", s.status().message()));
    }
    scores.push_back(std::move(*s));
  }
  std::vector<Tensor> masks;
  if (options.global) {
    BRISK_ASSIGN_OR_RETURN(masks, global_unstructured_masks(scores, options.amount));
  } else {
    for (size_t i = 0; i < slots.size(); ++i) {
      StatusOr<Tensor> mask =
          options.n_m ? n_m_mask(scores[i], options.n, options.m) : unstructured_mask(scores[i], options.amount);
      if (!mask.ok()) {
        return absl::Status(mask.status().code(),
                            absl::StrCat("layer '", slots[i].name, "': ", mask.status().message()));
      }
      masks.push_back(std::move(*mask));
    }
  }
  std::vector<Tensor> pruned;
  for (size_t i = 0; i < slots.size(); ++i) {
    const Tensor& w = *slots[i].weight;
    BRISK_ASSIGN_OR_RETURN(Tensor copy, Tensor::empty(w.shape(), DType::kF32));
    std::copy_n(w.data<float>(), w.numel(), copy.data<float>());
    BRISK_RETURN_IF_ERROR(apply_mask(copy, masks[i]));
    pruned.push_back(std::move(copy));
  }

  UnstructuredResult result;
  for (size_t i = 0; i < slots.size(); ++i) {
    const int64_t n = masks[i].numel();
    const uint8_t* m = masks[i].data<uint8_t>();
    for (int64_t j = 0; j < n; ++j) result.pruned += m[j] == 0;
    result.total += n;
    *slots[i].weight = std::move(pruned[i]);
    result.sparsity[slots[i].name] = sparsity(*slots[i].weight);
    result.masks[slots[i].name] = std::move(masks[i]);
  }
  return result;
}

}  // namespace brisk::prune
