// Ridge re-fit of the projections after structured pruning. See include/brisk/prune/reconstruct.h.
#include "brisk/prune/reconstruct.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "brisk/core/parallel.h"

namespace brisk::prune {

namespace {

// In-place Cholesky factorisation A = L Lᵀ of a symmetric n x n matrix (lower triangle used). Returns the first
// column whose pivot is not clearly positive, or -1: the Gram matrix is summed from f32 products, so pivots within
// ~1e-9 of the largest diagonal entry are rounding noise, not information.
int64_t cholesky(std::vector<double>& a, int64_t n) {
  double max_diag = 0;
  for (int64_t i = 0; i < n; ++i) max_diag = std::max(max_diag, a[static_cast<size_t>(i * n + i)]);
  const double tiny = 1e-9 * std::max(max_diag, 1e-300);
  for (int64_t j = 0; j < n; ++j) {
    double* rj = a.data() + j * n;
    double d = rj[j];
    for (int64_t k = 0; k < j; ++k) d -= rj[k] * rj[k];
    if (!(d > tiny)) return j;
    const double l = std::sqrt(d);
    rj[j] = l;
    parallel_for(j + 1, n, 64, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        double* ri = a.data() + i * n;
        double s = ri[j];
        for (int64_t k = 0; k < j; ++k) s -= ri[k] * rj[k];
        ri[j] = s / l;
      }
    });
  }
  return -1;
}

// Solves L Lᵀ x = b for each of the `cols` right-hand sides stored column-major in b ([cols][n]).
void cholesky_solve(const std::vector<double>& l, int64_t n, std::vector<double>& b, int64_t cols) {
  parallel_for(0, cols, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double* x = b.data() + c * n;
      for (int64_t i = 0; i < n; ++i) {
        const double* li = l.data() + i * n;
        double s = x[i];
        for (int64_t k = 0; k < i; ++k) s -= li[k] * x[k];
        x[i] = s / li[i];
      }
      for (int64_t i = n - 1; i >= 0; --i) {
        double s = x[i];
        for (int64_t k = i + 1; k < n; ++k) s -= l[static_cast<size_t>(k * n + i)] * x[k];
        x[i] = s / l[static_cast<size_t>(i * n + i)];
      }
    }
  });
}

}  // namespace

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
  if (!(options.damping >= 0.0) || !std::isfinite(options.damping)) {
    return absl::InvalidArgumentError(
        absl::StrCat("reconstruction damping is ", options.damping, "; expected a finite number >= 0"));
  }
  for (int64_t c : keep) {
    if (c < 0 || c >= in) {
      return absl::InvalidArgumentError(
          absl::StrCat("reconstruction of ", name, ": kept column ", c, " is outside [0, ", in, ")"));
    }
  }
  // Normal equations of [X_S, 1] Θ ≈ X Wᵀ + 1 bᵀ, with the ridge on the weights only.
  const int64_t n = k + 1;
  std::vector<double> a(static_cast<size_t>(n * n));
  double mean_diag = 0;
  for (int64_t i = 0; i < k; ++i) mean_diag += gram[static_cast<size_t>(keep[i] * in + keep[i])] / k;
  const double lambda = options.damping * mean_diag;
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j)
      a[static_cast<size_t>(i * n + j)] = gram[static_cast<size_t>(keep[i] * in + keep[j])];
    a[static_cast<size_t>(i * n + i)] += lambda;
    a[static_cast<size_t>(i * n + k)] = a[static_cast<size_t>(k * n + i)] = sum[static_cast<size_t>(keep[i])];
  }
  a[static_cast<size_t>(k * n + k)] = static_cast<double>(tokens);
  // Right-hand sides, one per output: [G_S: ; sᵀ] w_o + [s_S ; tokens] b_o.
  std::vector<double> rhs(static_cast<size_t>(out * n));
  const float* w = weight.data<float>();
  const float* b = bias.data<float>();
  parallel_for(0, out, 4, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* wo = w + o * in;
      double* r = rhs.data() + o * n;
      for (int64_t i = 0; i < k; ++i) {
        const double* g = gram.data() + keep[i] * in;
        double s = 0;
        for (int64_t j = 0; j < in; ++j) s += g[j] * wo[j];
        r[i] = s + sum[static_cast<size_t>(keep[i])] * b[o] + lambda * wo[keep[i]];
      }
      double s = 0;
      for (int64_t j = 0; j < in; ++j) s += sum[static_cast<size_t>(j)] * wo[j];
      r[k] = s + static_cast<double>(tokens) * b[o];
    }
  });
  const int64_t bad = cholesky(a, n);
  if (bad >= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "reconstruction of ", name, ": the least-squares system is singular at ",
        bad < k ? absl::StrCat("kept input column ", keep[static_cast<size_t>(bad)]) : std::string("the bias"), " (", k,
        " kept columns, ", tokens, " calibration tokens, damping ", options.damping,
        "); expected damping > 0, or more calibration text than kept columns"));
  }
  cholesky_solve(a, n, rhs, out);
  Refit r;
  BRISK_ASSIGN_OR_RETURN(r.weight, Tensor::empty({out, k}, DType::kF32));
  BRISK_ASSIGN_OR_RETURN(r.bias, Tensor::empty({out}, DType::kF32));
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < k; ++i)
      r.weight.data<float>()[o * k + i] = static_cast<float>(rhs[static_cast<size_t>(o * n + i)]);
    r.bias.data<float>()[o] = static_cast<float>(rhs[static_cast<size_t>(o * n + k)]);
  }
  return r;
}

StatusOr<PrunedModel> prune_and_reconstruct(const BertConfig& config, const EncoderWeights& weights,
                                            const StructuredPlan& plan, const ActivationStats& stats,
                                            const ReconstructOptions& options) {
  if (static_cast<int64_t>(stats.layers.size()) != config.num_hidden_layers) {
    return absl::InvalidArgumentError(absl::StrCat("activation statistics cover ", stats.layers.size(),
                                                   " layers; expected ", config.num_hidden_layers,
                                                   " (collect them from the unpruned model)"));
  }
  StructuredPlan units = plan;
  units.layers.clear();
  BRISK_ASSIGN_OR_RETURN(PrunedModel m, prune_structured(config, weights, units));
  EncoderWeights names_only;
  names_only.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  const std::vector<LinearSlot> slots = linear_slots(names_only, config);
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
          Refit r, ridge_refit(slots[static_cast<size_t>(l * 6 + 3)].name, before.attention_output_weight,
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
      BRISK_ASSIGN_OR_RETURN(Refit r, ridge_refit(slots[static_cast<size_t>(l * 6 + 5)].name, before.output_weight,
                                                  before.output_bias, a.ffn_gram, a.ffn_sum, a.tokens, keep, options));
      after.output_weight = r.weight;
      after.output_bias = r.bias;
    }
  }
  if (plan.layers.empty()) return m;
  StructuredPlan layers_only;
  layers_only.layers = plan.layers;
  return prune_structured(m.config, m.weights, layers_only);
}

}  // namespace brisk::prune
