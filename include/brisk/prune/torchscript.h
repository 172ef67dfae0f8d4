// Pruning and sensitivity analysis for any TorchScript module (torch.jit.save), through libtorch: the path for
// models brisk does not run natively. Units are the module's named floating-point parameters
// ("encoder.0.linear.weight"); pruning is unstructured magnitude pruning (torch.nn.utils.prune's l1_unstructured and
// global_unstructured); the metric is the user's, or the built-in output cosine against the unpruned module.
//
//   BRISK_ASSIGN_OR_RETURN(TorchScriptModel model, TorchScriptModel::load("model.pt"));
//   BRISK_ASSIGN_OR_RETURN(TorchScriptMetric metric, output_cosine_metric(model, {{ids, mask}}));
//   TorchSensitivityOptions o;
//   o.metric = metric;
//   BRISK_ASSIGN_OR_RETURN(SensitivityTable t, torchscript_sensitivity(model, o));   // a sweep
//   TorchPruneOptions p;
//   p.amount = 0.4;
//   p.global = true;
//   BRISK_RETURN_IF_ERROR(torchscript_prune_unstructured(model, p).status());
//   BRISK_RETURN_IF_ERROR(model.save("model.pruned.pt"));
//
// The functions use the model's public API only (parameter, set_parameter, forward, clone), so they build without
// libtorch, where TorchScriptModel::load returns Unimplemented.
//
// Thread safety: the pruning functions need exclusive access to the model they change; sensitivity works on a
// clone.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/model/encoder.h"
#include "brisk/model/torchscript_model.h"
#include "brisk/prune/sensitivity_report.h"

namespace brisk::prune {

// The module itself is brisk/model/torchscript_model.h's; its prune:: name remains.
using ::brisk::TorchScriptModel;

// A score of a candidate module, higher is better.
using TorchScriptMetric = std::function<StatusOr<double>(const TorchScriptModel& candidate)>;

// The built-in metric: the mean cosine similarity between the candidate's and the reference's first output over
// the input sets (each one forward() call's inputs), row by row of the output flattened to [rows, features]:
//   - an output [B, T, H] whose input set's second tensor is an integer [B, T] attention mask (as token_inputs
//     builds it) is first mean-pooled over the mask's 1s per sequence, giving B rows of H (padding never counts);
//   - otherwise rows are the first dimension and features the product of the others (a rank-1 output is one row,
//     a scalar one row of one feature).
// Every row weighs the same in the mean. Two all-zero rows count as cosine 1, one all-zero row as 0.
// The reference runs once per input set here, and its outputs are kept; the metric holds no reference to the
// model. Errors: no input sets, a forward() failure, or a candidate output shaped unlike the reference's.
BRISK_API StatusOr<TorchScriptMetric> output_cosine_metric(const TorchScriptModel& reference,
                                                           std::vector<std::vector<Tensor>> inputs);

// Token ids to forward() inputs, one input set per batch: right-padded i64 tensors [B, T] (T = the batch's longest
// sequence) input_ids (pad 0), attention_mask (1 for tokens, 0 for padding) and token_type_ids (the batch's, or
// zeros), of which the first n are returned, n being the number of arguments forward() takes after self (1, 2 or
// 3; arguments past the third are accepted only when they have default values). Errors: an empty batch, bad
// offsets, a token_type_ids length unlike input_ids', or a forward() taking 0 or more than 3 arguments.
BRISK_API StatusOr<std::vector<std::vector<Tensor>>> token_inputs(const TorchScriptModel& model,
                                                                  const std::vector<PackedSequences>& batches);

struct BRISK_API TorchSensitivityOptions {
  std::string mode = "sweep";  // "sweep": each parameter pruned alone at each level; "zero": each zeroed alone
  std::vector<double> levels = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  // Parameters to analyse; empty selects every floating parameter with 2 or more dimensions.
  std::vector<std::string> parameters;
  TorchScriptMetric metric;  // required
  std::string metric_name = "output_cosine";
  Progress progress;
};

// Each point's unit and series are the parameter's name, its kind "tensor", layer and index -1. "sweep" gives one
// point per parameter and level (sparsity = the level, parameters_removed = round(level * numel) elements of lowest
// magnitude, as l1_unstructured counts), "zero" one per parameter (sparsity 1, parameters_removed = numel). The
// baseline is the metric of the unpruned model; progress is called after every evaluation ("sensitivity", done,
// parameters x levels). The work happens on one clone of the model, so the model is left unchanged.
// Errors: no metric, an unknown mode, a level outside [0, 1), an unknown parameter (the message lists the valid
// ones), a non-floating parameter named in `parameters`, or the metric's own error.
BRISK_API StatusOr<SensitivityTable> torchscript_sensitivity(const TorchScriptModel& model,
                                                             const TorchSensitivityOptions& options);

struct BRISK_API TorchPruneOptions {
  double amount = 0.0;                  // in [0, 1)
  bool global = false;                  // one magnitude ranking across the parameters, else `amount` of each
  std::vector<std::string> parameters;  // as in TorchSensitivityOptions
};

struct BRISK_API TorchPruneResult {
  std::vector<std::string> parameters;  // pruned, in module order
  int64_t pruned = 0, total = 0;        // elements
};

// L1 unstructured pruning, applied to the parameters in place (what torch.nn.utils.prune.remove leaves): `amount` of
// each selected parameter (l1_unstructured), or with `global` one ranking across them (global_unstructured).
// Errors as torchscript_sensitivity's; on an error the model is unchanged.
BRISK_API StatusOr<TorchPruneResult> torchscript_prune_unstructured(TorchScriptModel& model,
                                                                    const TorchPruneOptions& options);

}  // namespace brisk::prune
