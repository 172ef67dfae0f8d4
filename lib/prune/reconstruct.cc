// Ridge re-fit of the projections after structured pruning. See include/brisk/prune/reconstruct.h.
#include "brisk/prune/reconstruct.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "brisk/core/parallel.h"
#include "brisk/model/weights.h"
#include "brisk/kernels/linear.h"
#include "internal/ridge.h"

namespace brisk::prune {

StatusOr<Refit> ridge_refit(const std::string& name, const Tensor& weight, const Tensor& bias,
                            const std::vector<double>& gram, const std::vector<double>& sum, int64_t tokens,
                            const std::vector<int64_t>& keep, const ReconstructOptions& options) {
  if (weight.dtype() != DType::kF32 || weight.rank() != 2 || bias.dtype() != DType::kF32 ||
      bias.numel() != weight.dim(0)) {
    return absl::InvalidArgumentError(absl::StrCat("reconstruction of ", name, ": weight ", weight.shape_string(),
                                                   " / bias ", bias.shape_string(),
                                                   "; expected f32 [out, in] and [out]"));
  }
  const int64_t out = weight.dim(0), in = weight.dim(1), k = static_cast<int64_t>(keep.size());
  if (static_cast<int64_t>(gram.size()) != in * in || static_cast<int64_t>(sum.size()) != in || tokens <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("reconstruction of ", name, ": statistics of width ", sum.size(),
                                                   " over ", tokens, " tokens; expected width ", in,
                                                   " over at least one token"));
  }
  for (int64_t c : keep) {
    if (c < 0 || c >= in) {
      return absl::InvalidArgumentError(
          absl::StrCat("reconstruction of ", name, ": kept column ", c, " is outside [0, ", in, ")"));
    }
  }
  // Normal equations of [X_S, 1] Θ ≈ X Wᵀ + 1 bᵀ: everything comes from Xᵀ X and Σ x.
  internal::NormalEquations eq;
  eq.k = k;
  eq.out = out;
  eq.tokens = tokens;
  const int64_t n = k + 1;
  eq.a.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      eq.a[static_cast<size_t>(i * n + j)] = gram[static_cast<size_t>(keep[i] * in + keep[j])];
    }
    eq.a[static_cast<size_t>(i * n + k)] = eq.a[static_cast<size_t>(k * n + i)] = sum[static_cast<size_t>(keep[i])];
  }
  eq.a[static_cast<size_t>(k * n + k)] = static_cast<double>(tokens);
  eq.rhs.assign(static_cast<size_t>(out * n), 0.0);
  const float* w = weight.data<float>();
  const float* b = bias.data<float>();
  std::vector<float> anchor(static_cast<size_t>(out * k));
  parallel_for(0, out, 4, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* wo = w + o * in;
      double* r = eq.rhs.data() + o * n;
      for (int64_t i = 0; i < k; ++i) {
        const double* g = gram.data() + keep[i] * in;
        double s = 0;
        for (int64_t j = 0; j < in; ++j) s += g[j] * wo[j];
        r[i] = s + sum[static_cast<size_t>(keep[i])] * b[o];
        anchor[static_cast<size_t>(o * k + i)] = wo[keep[i]];
      }
      double s = 0;
      for (int64_t j = 0; j < in; ++j) s += sum[static_cast<size_t>(j)] * wo[j];
      r[k] = s + static_cast<double>(tokens) * b[o];
    }
  });
  return internal::solve_ridge(name, std::move(eq), anchor.data(), options.damping, keep);
}

namespace {

// Layer-local: each pruned projection re-fitted on the unpruned model's own activations (ridge_refit).
Status refit_local(const BertConfig& config, const EncoderWeights& weights, const StructuredPlan& plan,
                   const ActivationStats& stats, const ReconstructOptions& options, PrunedModel& m) {
  const std::vector<std::string> names = layer_names(config);
  const int64_t d = config.head_dim();
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const LayerActivations& a = stats.layers[static_cast<size_t>(l)];
    const EncoderLayerWeights& before = weights.layers[static_cast<size_t>(l)];
    EncoderLayerWeights& after = m.weights.layers[static_cast<size_t>(l)];
    if (a.attn != before.attention_output_weight.dim(1) || a.ffn != before.output_weight.dim(1)) {
      return absl::InvalidArgumentError(absl::StrCat("activation statistics of layer ", l,
                                                     " do not match its widths; expected those of the unpruned model"));
    }
    if (auto it = plan.heads.find(l); it != plan.heads.end() && !it->second.empty()) {
      // The kept heads' columns, by their slots in the unpruned layer.
      const std::vector<int64_t> old_heads = kept_heads(config, l), new_heads = kept_heads(m.config, l);
      std::vector<int64_t> keep;
      for (int64_t h : new_heads) {
        const int64_t slot = std::find(old_heads.begin(), old_heads.end(), h) - old_heads.begin();
        for (int64_t i = 0; i < d; ++i) keep.push_back(slot * d + i);
      }
      BRISK_ASSIGN_OR_RETURN(
          Refit r, ridge_refit(names[static_cast<size_t>(l * 6 + 3)], before.attention_output_weight,
                               before.attention_output_bias, a.context_gram, a.context_sum, a.tokens, keep, options));
      after.attention_output_weight = r.weight;
      after.attention_output_bias = r.bias;
    }
    if (auto it = plan.neurons.find(l); it != plan.neurons.end() && !it->second.empty()) {
      std::vector<int64_t> removed = it->second;
      std::sort(removed.begin(), removed.end());
      std::vector<int64_t> keep;
      for (int64_t j = 0; j < a.ffn; ++j) {
        if (!std::binary_search(removed.begin(), removed.end(), j)) keep.push_back(j);
      }
      BRISK_ASSIGN_OR_RETURN(Refit r, ridge_refit(names[static_cast<size_t>(l * 6 + 5)], before.output_weight,
                                                  before.output_bias, a.ffn_gram, a.ffn_sum, a.tokens, keep, options));
      after.output_weight = r.weight;
      after.output_bias = r.bias;
    }
  }
  return absl::OkStatus();
}

// The inputs of some linear layers over one batch, each concatenated in token order (the FFN runs in chunks).
StatusOr<std::map<std::string, std::vector<float>>> capture(const BertEncoder& e, const PackedSequences& batch,
                                                            const std::vector<std::string>& names) {
  std::map<std::string, std::vector<float>> out;
  for (const std::string& n : names) out[n];
  std::vector<float> hidden(static_cast<size_t>(batch.total_tokens() * e.hidden_size()));
  BRISK_RETURN_IF_ERROR(
      e.forward(batch, hidden.data(), [&](std::string_view name, const float* x, int64_t rows, int64_t cols) -> Status {
        auto it = out.find(std::string(name));
        if (it != out.end()) it->second.insert(it->second.end(), x, x + rows * cols);
        return absl::OkStatus();
      }));
  return out;
}

// Sequential (Kwon et al.'s layer-wise reconstruction): layer by layer from the first pruned one, each attention-output
// and FFN-output projection of the pruned model is re-fitted on the pruned model's own inputs (earlier layers already
// re-fitted) so that projection plus residual reproduces the unpruned model's: T = X Wᵀ + b + R - R', with X, R the
// unpruned projection input and residual, R' the pruned residual. This also absorbs drift from earlier layers.
Status refit_sequential(const BertConfig& config, const EncoderWeights& weights, const StructuredPlan& plan,
                        const std::vector<PackedSequences>& batches, const ReconstructOptions& options,
                        PrunedModel& m) {
  int64_t first = config.num_hidden_layers;
  for (const auto& [l, v] : plan.heads) {
    if (!v.empty()) first = std::min(first, l);
  }
  for (const auto& [l, v] : plan.neurons) {
    if (!v.empty()) first = std::min(first, l);
  }
  const std::vector<std::string> names = layer_names(config);
  BRISK_ASSIGN_OR_RETURN(auto unpruned, BertEncoder::create(config, weights, Device::kCPU));
  const int64_t h = config.hidden_size;
  for (int64_t l = first; l < config.num_hidden_layers; ++l) {
    // (projection, residual) slots: attention output after the layer input; FFN output after the attention block.
    for (auto [proj, resid] : {std::pair<int, int>{3, 0}, std::pair<int, int>{5, 4}}) {
      const std::string& name = names[static_cast<size_t>(l * 6 + proj)];
      const std::string& resid_name = names[static_cast<size_t>(l * 6 + resid)];
      const EncoderLayerWeights& full = weights.layers[static_cast<size_t>(l)];
      EncoderLayerWeights& cur = m.weights.layers[static_cast<size_t>(l)];
      Tensor& w = proj == 3 ? cur.attention_output_weight : cur.output_weight;
      Tensor& b = proj == 3 ? cur.attention_output_bias : cur.output_bias;
      BRISK_ASSIGN_OR_RETURN(
          kernels::Linear target_proj,
          kernels::Linear::create(proj == 3 ? full.attention_output_weight : full.output_weight,
                                  proj == 3 ? full.attention_output_bias : full.output_bias, Device::kCPU));
      BRISK_ASSIGN_OR_RETURN(auto pruned, BertEncoder::create(m.config, m.weights, Device::kCPU));
      const int64_t k = w.dim(1), n1 = k + 1;
      std::vector<double> gram(static_cast<size_t>(k * k)), sum(static_cast<size_t>(k));
      std::vector<double> xty(static_cast<size_t>(k * h)), t_sum(static_cast<size_t>(h));
      int64_t tokens = 0;
      for (const PackedSequences& batch : batches) {
        BRISK_ASSIGN_OR_RETURN(auto u, capture(*unpruned, batch, {name, resid_name}));
        BRISK_ASSIGN_OR_RETURN(auto p, capture(*pruned, batch, {name, resid_name}));
        const int64_t rows = batch.total_tokens();
        std::vector<float> t(static_cast<size_t>(rows * h));
        BRISK_RETURN_IF_ERROR(target_proj.forward(u[name].data(), rows, t.data(), kernels::GemmEpilogue::kBias));
        const std::vector<float>&r = u[resid_name], &rp = p[resid_name];
        for (size_t i = 0; i < t.size(); ++i) {
          t[i] += r[i] - rp[i];
          t_sum[i % static_cast<size_t>(h)] += t[i];
        }
        BRISK_RETURN_IF_ERROR(internal::accumulate_products(p[name].data(), k, p[name].data(), k, rows, gram, &sum));
        BRISK_RETURN_IF_ERROR(internal::accumulate_products(p[name].data(), k, t.data(), h, rows, xty, nullptr));
        tokens += rows;
      }
      internal::NormalEquations eq;
      eq.k = k;
      eq.out = h;
      eq.tokens = tokens;
      eq.a.assign(static_cast<size_t>(n1 * n1), 0.0);
      for (int64_t i = 0; i < k; ++i) {
        std::copy_n(gram.data() + i * k, k, eq.a.data() + i * n1);
        eq.a[static_cast<size_t>(i * n1 + k)] = eq.a[static_cast<size_t>(k * n1 + i)] = sum[static_cast<size_t>(i)];
      }
      eq.a[static_cast<size_t>(k * n1 + k)] = static_cast<double>(tokens);
      eq.rhs.assign(static_cast<size_t>(h * n1), 0.0);
      for (int64_t o = 0; o < h; ++o) {
        for (int64_t i = 0; i < k; ++i) eq.rhs[static_cast<size_t>(o * n1 + i)] = xty[static_cast<size_t>(i * h + o)];
        eq.rhs[static_cast<size_t>(o * n1 + k)] = t_sum[static_cast<size_t>(o)];
      }
      std::vector<int64_t> columns(static_cast<size_t>(k));
      std::iota(columns.begin(), columns.end(), 0);
      BRISK_ASSIGN_OR_RETURN(Refit r,
                             internal::solve_ridge(name, std::move(eq), w.data<float>(), options.damping, columns));
      w = r.weight;
      b = r.bias;
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<PrunedModel> prune_and_reconstruct(const BertConfig& config, const EncoderWeights& weights,
                                            const StructuredPlan& plan, const ActivationStats& stats,
                                            const ReconstructOptions& options) {
  if (static_cast<int64_t>(stats.layers.size()) != config.num_hidden_layers) {
    return absl::InvalidArgumentError(absl::StrCat("activation statistics cover ", stats.layers.size(),
                                                   " layers; expected ", config.num_hidden_layers,
                                                   " (collect them from the unpruned model)"));
  }
  if (options.sequential && stats.batches.empty()) {
    return absl::InvalidArgumentError(
        "sequential reconstruction needs the calibration batches; expected stats from collect_activations()");
  }
  StructuredPlan units = plan;
  units.layers.clear();
  BRISK_ASSIGN_OR_RETURN(PrunedModel m, prune_structured(config, weights, units));
  if (options.sequential) {
    BRISK_RETURN_IF_ERROR(refit_sequential(config, weights, units, stats.batches, options, m));
  } else {
    BRISK_RETURN_IF_ERROR(refit_local(config, weights, units, stats, options, m));
  }
  if (plan.layers.empty()) return m;
  StructuredPlan layers_only;
  layers_only.layers = plan.layers;
  return prune_structured(m.config, m.weights, layers_only);
}

}  // namespace brisk::prune
