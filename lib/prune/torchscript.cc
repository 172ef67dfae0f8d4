// Pruning and sensitivity analysis of TorchScript modules (brisk/prune/torchscript.h) through TorchScriptModel's
// public API: a parameter is read as an f32 copy, masked there, and written back (set_parameter converts it to the
// parameter's dtype, so its kept elements keep every bit). No libtorch here: without it, loading a module is what
// fails (TorchScriptModel::load returns Unimplemented).
//
// Masks come from brisk/prune/mask.h, the same functions the native pruner uses, so both count as
// torch.nn.utils.prune does (round(amount * n), lowest magnitude first).
#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "brisk/prune/mask.h"
#include "brisk/prune/torchscript.h"

namespace brisk::prune {
namespace {

std::string shape_str(const std::vector<int64_t>& sizes) { return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]"); }

// options.parameters in module order (duplicates once), or every floating parameter of rank >= 2; an unknown or
// non-floating name is an error naming the valid ones.
StatusOr<std::vector<TorchScriptModel::ParameterInfo>> select_parameters(const TorchScriptModel& m,
                                                                         const std::vector<std::string>& names) {
  const std::vector<TorchScriptModel::ParameterInfo> all = m.parameter_info();
  for (const std::string& name : names) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& p) { return p.name == name; });
    if (it == all.end()) {
      std::vector<std::string> valid;
      for (const auto& p : all) valid.push_back(p.name);
      return absl::NotFoundError(absl::StrCat("parameter '", name, "' is not in the module; expected one of: ",
                                              valid.empty() ? std::string("(none)") : absl::StrJoin(valid, ", ")));
    }
    if (!it->floating) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", name, "' has dtype ", it->dtype, "; expected a floating-point parameter"));
    }
  }
  std::vector<TorchScriptModel::ParameterInfo> out;
  for (const auto& p : all) {
    const bool chosen = names.empty() ? (p.floating && p.shape.size() >= 2)
                                      : std::find(names.begin(), names.end(), p.name) != names.end();
    if (chosen) out.push_back(p);
  }
  if (out.empty())
    return absl::InvalidArgumentError(
        "the module has no floating-point parameter of 2 or more dimensions; expected at least one to prune "
        "(or name parameters explicitly)");
  return out;
}

// A parameter's f32 copy viewed as the [rows, cols] matrix mask.h's 2-D functions see: rows = its first dimension.
StatusOr<Tensor> as_matrix(const Tensor& value) {
  const std::vector<int64_t>& s = value.shape();
  if (s.empty()) return value.reshape({1, 1});
  if (s.size() == 1) return value.reshape({1, s[0]});
  return value.reshape({s[0], value.numel() / s[0]});
}

int64_t count_pruned(const Tensor& mask) {
  const auto* m = mask.data<uint8_t>();
  return std::count(m, m + mask.numel(), uint8_t{0});
}

// Element (i, j) of an integer [rows, cols] mask tensor (i64 or i32, contiguous).
int64_t mask_at(const Tensor& mask, int64_t i, int64_t j) {
  const int64_t k = i * mask.dim(1) + j;
  return mask.dtype() == DType::kI64 ? mask.data<int64_t>()[k] : mask.data<int32_t>()[k];
}

// Rows of an output for the cosine metric: [rows, features], mean-pooled over an attention mask when there is one.
StatusOr<Tensor> cosine_rows(const Tensor& output, const std::vector<Tensor>& inputs) {
  const bool pooled = output.rank() == 3 && inputs.size() >= 2 && inputs[1].rank() == 2 && inputs[1].is_contiguous() &&
                      inputs[1].device() == Device::kCPU &&
                      (inputs[1].dtype() == DType::kI64 || inputs[1].dtype() == DType::kI32) &&
                      inputs[1].dim(0) == output.dim(0) && inputs[1].dim(1) == output.dim(1);
  if (!pooled) {
    if (output.rank() == 0) return output.reshape({1, 1});
    if (output.rank() == 1) return output.reshape({1, output.dim(0)});
    return output.reshape({output.dim(0), output.numel() / std::max<int64_t>(output.dim(0), 1)});
  }
  const int64_t b = output.dim(0), t = output.dim(1), h = output.dim(2);
  BRISK_ASSIGN_OR_RETURN(Tensor rows, Tensor::zeros({b, h}, DType::kF32));
  for (int64_t i = 0; i < b; ++i) {
    float* row = rows.data<float>() + i * h;
    int64_t count = 0;
    for (int64_t j = 0; j < t; ++j) {
      if (mask_at(inputs[1], i, j) == 0) continue;
      ++count;
      const float* x = output.data<float>() + (i * t + j) * h;
      for (int64_t k = 0; k < h; ++k) row[k] += x[k];
    }
    for (int64_t k = 0; k < h && count > 0; ++k) row[k] /= float(count);
  }
  return rows;
}

double row_cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  if (aa == 0 && bb == 0) return 1.0;
  if (aa == 0 || bb == 0) return 0.0;
  return ab / std::sqrt(aa * bb);
}

}  // namespace

// ---- inputs and the metric ----

StatusOr<std::vector<std::vector<Tensor>>> token_inputs(const TorchScriptModel& model,
                                                        const std::vector<PackedSequences>& batches) {
  BRISK_ASSIGN_OR_RETURN(std::vector<TorchScriptModel::Argument> args, model.forward_arguments());
  size_t n = args.size();
  if (n > 3 && std::all_of(args.begin() + 3, args.end(), [](const auto& a) { return a.has_default; })) n = 3;
  if (n < 1 || n > 3) {
    std::vector<std::string> names;
    for (const auto& a : args) names.push_back(a.name);
    return absl::InvalidArgumentError(absl::StrCat(
        "forward() takes ", args.size(), " argument(s) after self (", absl::StrJoin(names, ", "),
        "); expected 1, 2 or 3: input_ids, attention_mask, token_type_ids (arguments past the third need defaults)"));
  }
  std::vector<std::vector<Tensor>> out;
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    const PackedSequences& batch = batches[bi];
    const int64_t b = batch.size();
    if (b < 1) return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " is empty; expected a sequence"));
    if (batch.offsets.front() != 0 || batch.offsets.back() != static_cast<int64_t>(batch.input_ids.size()))
      return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " has offsets from ", batch.offsets.front(), " to ",
                                                     batch.offsets.back(), "; expected 0 to ", batch.input_ids.size(),
                                                     " (its token count)"));
    if (!batch.token_type_ids.empty() && batch.token_type_ids.size() != batch.input_ids.size())
      return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " has ", batch.token_type_ids.size(),
                                                     " token_type_ids; expected ", batch.input_ids.size(),
                                                     " (one per token) or none"));
    int64_t t = 0;
    for (int64_t i = 0; i < b; ++i) {
      if (batch.length(i) < 0)
        return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " sequence ", i, " has length ", batch.length(i),
                                                       "; expected offsets that grow"));
      t = std::max(t, batch.length(i));
    }
    if (t == 0)
      return absl::InvalidArgumentError(absl::StrCat("batch ", bi, " has only empty sequences; expected a token"));
    BRISK_ASSIGN_OR_RETURN(Tensor ids, Tensor::zeros({b, t}, DType::kI64));
    BRISK_ASSIGN_OR_RETURN(Tensor mask, Tensor::zeros({b, t}, DType::kI64));
    BRISK_ASSIGN_OR_RETURN(Tensor types, Tensor::zeros({b, t}, DType::kI64));
    for (int64_t i = 0; i < b; ++i) {
      for (int64_t j = 0; j < batch.length(i); ++j) {
        const int64_t src = batch.offsets[i] + j, dst = i * t + j;
        ids.data<int64_t>()[dst] = batch.input_ids[src];
        mask.data<int64_t>()[dst] = 1;
        if (!batch.token_type_ids.empty()) types.data<int64_t>()[dst] = batch.token_type_ids[src];
      }
    }
    std::vector<Tensor> set = {ids, mask, types};
    set.resize(n);
    out.push_back(std::move(set));
  }
  return out;
}

StatusOr<TorchScriptMetric> output_cosine_metric(const TorchScriptModel& reference,
                                                 std::vector<std::vector<Tensor>> inputs) {
  if (inputs.empty())
    return absl::InvalidArgumentError("output_cosine_metric has no input sets; expected at least one");
  struct Case {
    std::vector<Tensor> inputs;
    std::vector<int64_t> shape;  // of the reference's first output
    Tensor rows;                 // the reference's rows
  };
  auto cases = std::make_shared<std::vector<Case>>();
  for (size_t i = 0; i < inputs.size(); ++i) {
    BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, reference.forward(inputs[i]));
    if (outputs.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("the reference's forward() on input set ", i, " returned no tensor; expected one"));
    BRISK_ASSIGN_OR_RETURN(Tensor rows, cosine_rows(outputs[0], inputs[i]));
    cases->push_back({std::move(inputs[i]), outputs[0].shape(), rows});
  }
  return TorchScriptMetric([cases](const TorchScriptModel& candidate) -> StatusOr<double> {
    double sum = 0;
    int64_t count = 0;
    for (size_t i = 0; i < cases->size(); ++i) {
      const Case& c = (*cases)[i];
      BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, candidate.forward(c.inputs));
      if (outputs.empty() || outputs[0].shape() != c.shape)
        return absl::InvalidArgumentError(
            absl::StrCat("the candidate's first output on input set ", i, " has shape ",
                         outputs.empty() ? std::string("(none)") : outputs[0].shape_string(), "; expected ",
                         shape_str(c.shape), " like the reference's"));
      BRISK_ASSIGN_OR_RETURN(Tensor rows, cosine_rows(outputs[0], c.inputs));
      const int64_t n = rows.dim(0), f = rows.dim(1);
      for (int64_t r = 0; r < n; ++r) sum += row_cosine(rows.data<float>() + r * f, c.rows.data<float>() + r * f, f);
      count += n;
    }
    return count > 0 ? sum / double(count) : 1.0;
  });
}

// ---- sensitivity and pruning ----

StatusOr<SensitivityTable> torchscript_sensitivity(const TorchScriptModel& model,
                                                   const TorchSensitivityOptions& options) {
  if (!options.metric)
    return absl::InvalidArgumentError(
        "torchscript_sensitivity has no metric; expected options.metric "
        "(e.g. output_cosine_metric)");
  if (options.mode != "sweep" && options.mode != "zero")
    return absl::InvalidArgumentError(
        absl::StrCat("sensitivity mode is '", options.mode, "'; expected \"sweep\" or \"zero\""));
  const bool sweep = options.mode == "sweep";
  if (sweep) {
    if (options.levels.empty())
      return absl::InvalidArgumentError("sensitivity sweep has no levels; expected fractions in [0, 1)");
    for (double level : options.levels) BRISK_RETURN_IF_ERROR(check_amount(level, "sensitivity level"));
  }
  BRISK_ASSIGN_OR_RETURN(std::vector<TorchScriptModel::ParameterInfo> selected,
                         select_parameters(model, options.parameters));

  SensitivityTable table;
  table.mode = options.mode;
  table.metric_name = options.metric_name;
  BRISK_ASSIGN_OR_RETURN(table.baseline, options.metric(model));

  BRISK_ASSIGN_OR_RETURN(TorchScriptModel work, model.clone());
  const int64_t per_parameter = sweep ? static_cast<int64_t>(options.levels.size()) : 1;
  const int64_t total = per_parameter * static_cast<int64_t>(selected.size());
  int64_t done = 0;
  for (const TorchScriptModel::ParameterInfo& s : selected) {
    BRISK_ASSIGN_OR_RETURN(const Tensor original, work.parameter(s.name));
    const int64_t numel = original.numel();
    BRISK_ASSIGN_OR_RETURN(const Tensor matrix, as_matrix(original));
    Tensor scores;
    if (sweep && numel > 0) {
      BRISK_ASSIGN_OR_RETURN(scores, element_scores(matrix, {}));
    }
    for (int64_t k = 0; k < per_parameter; ++k) {
      SensitivityPoint point;
      point.unit = point.series = s.name;
      point.kind = "tensor";
      BRISK_ASSIGN_OR_RETURN(Tensor candidate, Tensor::zeros(original.shape(), DType::kF32));
      if (sweep) {
        point.sparsity = options.levels[size_t(k)];
        if (numel > 0) {
          std::copy_n(original.data<float>(), numel, candidate.data<float>());
          BRISK_ASSIGN_OR_RETURN(Tensor view, as_matrix(candidate));
          BRISK_ASSIGN_OR_RETURN(Tensor mask, unstructured_mask(scores, point.sparsity));
          BRISK_RETURN_IF_ERROR(apply_mask(view, mask));
          point.parameters_removed = count_pruned(mask);
        }
      } else {
        point.sparsity = 1.0;
        point.parameters_removed = numel;
      }
      BRISK_RETURN_IF_ERROR(work.set_parameter(s.name, candidate));
      StatusOr<double> metric = options.metric(work);
      if (!metric.ok())
        return Status(metric.status().code(), absl::StrCat("the metric with parameter '", s.name, "' at sparsity ",
                                                           point.sparsity, " failed: ", metric.status().message()));
      point.metric = *metric;
      table.points.push_back(std::move(point));
      ++done;
      if (options.progress) options.progress("sensitivity", done, total);
    }
    BRISK_RETURN_IF_ERROR(work.set_parameter(s.name, original));
  }
  return table;
}

StatusOr<TorchPruneResult> torchscript_prune_unstructured(TorchScriptModel& model, const TorchPruneOptions& options) {
  BRISK_RETURN_IF_ERROR(check_amount(options.amount, "torchscript_prune_unstructured"));
  BRISK_ASSIGN_OR_RETURN(std::vector<TorchScriptModel::ParameterInfo> selected,
                         select_parameters(model, options.parameters));
  // Every mask first, then the writes: an error leaves the model as it was.
  std::vector<Tensor> values(selected.size()), scores(selected.size());
  std::vector<size_t> scored;  // indices into selected with elements
  for (size_t i = 0; i < selected.size(); ++i) {
    if (selected[i].numel() == 0) continue;
    BRISK_ASSIGN_OR_RETURN(const Tensor value, model.parameter(selected[i].name));
    BRISK_ASSIGN_OR_RETURN(values[i], as_matrix(value));
    BRISK_ASSIGN_OR_RETURN(scores[i], element_scores(values[i], {}));
    scored.push_back(i);
  }
  std::vector<Tensor> masks(selected.size());
  if (options.global) {
    std::vector<Tensor> group;
    for (size_t i : scored) group.push_back(scores[i]);
    BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> group_masks, global_unstructured_masks(group, options.amount));
    for (size_t j = 0; j < scored.size(); ++j) masks[scored[j]] = group_masks[j];
  } else {
    for (size_t i : scored) {
      BRISK_ASSIGN_OR_RETURN(masks[i], unstructured_mask(scores[i], options.amount));
    }
  }
  TorchPruneResult result;
  for (size_t i = 0; i < selected.size(); ++i) {
    result.parameters.push_back(selected[i].name);
    result.total += selected[i].numel();
    if (selected[i].numel() == 0) continue;
    BRISK_RETURN_IF_ERROR(apply_mask(values[i], masks[i]));
    BRISK_ASSIGN_OR_RETURN(const Tensor shaped, values[i].reshape(selected[i].shape));
    BRISK_RETURN_IF_ERROR(model.set_parameter(selected[i].name, shaped));
    result.pruned += count_pruned(masks[i]);
  }
  return result;
}

}  // namespace brisk::prune
