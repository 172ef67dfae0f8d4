// Weight masks for unstructured and semi-structured (N:M) pruning, and the per-element importance scores they rank
// by: magnitude (what torch.nn.utils.prune.l1_unstructured ranks by) or Wanda's activation-aware |w_ij| * ||x_j||.
// Masks are u8 tensors shaped like the weight: 1 keeps an element, 0 prunes it. They do not make a CPU faster
// (the matrices keep their shape); structured pruning (brisk/prune/structured.h) does.
//
//   BRISK_ASSIGN_OR_RETURN(Tensor scores, element_scores(weight, {}));           // |w|
//   BRISK_ASSIGN_OR_RETURN(Tensor mask, unstructured_mask(scores, 0.4));         // exactly round(0.4 * n) zeros
//   BRISK_RETURN_IF_ERROR(apply_mask(weight, mask));
//
//   // one threshold across layers, as torch.nn.utils.prune.global_unstructured does:
//   UnstructuredOptions o;
//   o.amount = 0.4;
//   o.global = true;
//   BRISK_ASSIGN_OR_RETURN(UnstructuredResult r, prune_unstructured(weights, config, o));
//
// Counting follows torch: an amount a of n elements prunes round(a * n) (round half to even); ties in score are
// pruned lowest flat index first. Amounts must lie in [0, 1).
//
// Thread safety: the functions are reentrant; apply_mask and prune_unstructured modify only their arguments.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/weights.h"

namespace brisk::prune {

// InvalidArgument "<what>: amount is <a>; expected a fraction in [0, 1)" unless 0 <= amount < 1 (NaN fails).
BRISK_API Status check_amount(double amount, std::string_view what);

// Per-element scores of a 2-D f32 weight [out, in]: |w_ij|, or, when input_norms is given (one per input column,
// the L2 norm of that column of the layer's input over calibration tokens), Wanda's |w_ij| * input_norms[j].
BRISK_API StatusOr<Tensor> element_scores(const Tensor& weight, std::span<const float> input_norms);

// Prunes exactly round(amount * numel) elements of lowest score.
BRISK_API StatusOr<Tensor> unstructured_mask(const Tensor& scores, double amount);
// One ranking across all the tensors: exactly round(amount * total elements) pruned, wherever they fall.
BRISK_API StatusOr<std::vector<Tensor>> global_unstructured_masks(const std::vector<Tensor>& scores, double amount);

// N:M semi-structured mask (NVIDIA ASP's 2:4 by default): in every group of m consecutive elements along a row,
// the n highest scores are kept. Needs a 2-D tensor whose row length is a multiple of m.
BRISK_API StatusOr<Tensor> n_m_mask(const Tensor& scores, int n = 2, int m = 4);
// OK when every group of m consecutive elements along each row of `weight_or_mask` holds at most n non-zeros;
// otherwise an error naming the first bad row and group and its non-zero count.
BRISK_API Status validate_n_m(const Tensor& weight_or_mask, int n = 2, int m = 4);

// Zeroes the weight where the mask is 0. The weight must be a writable f32 tensor shaped like the mask.
BRISK_API Status apply_mask(Tensor& weight, const Tensor& mask);
// Fraction of exact zeros in an f32 tensor.
BRISK_API double sparsity(const Tensor& tensor);

// The L2 norm of every input column of every linear layer over the batches (one forward pass with an activation
// tap), keyed by the layer's name in the model file (see linear_slots). Wanda's and the structured scores use it.
BRISK_API StatusOr<std::map<std::string, std::vector<float>>> input_norms(const BertEncoder& encoder,
                                                                          const std::vector<PackedSequences>& batches);

struct BRISK_API UnstructuredOptions {
  double amount = 0.0;
  bool global = false;  // one ranking across all selected layers; otherwise `amount` of each layer
  bool n_m = false;     // N:M masks instead (amount is then ignored; n of every m kept)
  int n = 2, m = 4;
  // Layers to prune, by linear_slots name; empty selects every linear layer (embeddings are never pruned).
  std::vector<std::string> layers;
  // Wanda scores when given (from input_norms); magnitude otherwise.
  const std::map<std::string, std::vector<float>>* input_norms = nullptr;
};

struct BRISK_API UnstructuredResult {
  std::map<std::string, Tensor> masks;     // per pruned layer name
  std::map<std::string, double> sparsity;  // per pruned layer, after applying
  int64_t pruned = 0, total = 0;           // elements over the selected layers
};

// Masks the selected f32 linear weights of `weights` and applies them (each pruned weight becomes an owned copy,
// so a memory-mapped source is never written). Unknown layer names are errors that list the valid names.
BRISK_API StatusOr<UnstructuredResult> prune_unstructured(EncoderWeights& weights, const BertConfig& config,
                                                          const UnstructuredOptions& options);

}  // namespace brisk::prune
