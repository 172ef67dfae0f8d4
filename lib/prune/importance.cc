// Unit importance and amount-based plans. See include/brisk/prune/importance.h.
#include "brisk/prune/importance.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "brisk/model/weights.h"
#include "brisk/prune/mask.h"
#include "brisk/prune/structured.h"
#include "internal/ridge.h"

namespace brisk::prune {

namespace {

// Round half to even, as torch counts pruned units.
int64_t round_count(double amount, int64_t n) { return static_cast<int64_t>(std::nearbyint(amount * n)); }

// The `count` lowest scores' indices (ties: lower index first).
std::vector<int64_t> lowest(const std::vector<double>& scores, int64_t count) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
  order.resize(static_cast<size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

double norm_of(const float* p, int64_t n, int64_t stride, Importance imp) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = p[i * stride];
    s += imp == Importance::kL1 ? std::fabs(v) : v * v;
  }
  return s;
}

}  // namespace

StatusOr<ActivationStats> collect_activations(const BertEncoder& encoder, const std::vector<PackedSequences>& batches) {
  const BertConfig& c = encoder.config();
  BRISK_RETURN_IF_ERROR(check_prunable(c, "collect_activations"));
  const std::vector<std::string> names = layer_names(c);
  ActivationStats stats;
  stats.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  std::map<std::string, std::pair<LayerActivations*, bool>> taps;  // name -> (layer, is the ffn output)
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerActivations& a = stats.layers[static_cast<size_t>(l)];
    a.attn = c.layer_heads(l) * c.head_dim();
    a.ffn = c.layer_intermediate_size(l);
    a.context_gram.assign(static_cast<size_t>(a.attn * a.attn), 0.0);
    a.context_sum.assign(static_cast<size_t>(a.attn), 0.0);
    a.ffn_gram.assign(static_cast<size_t>(a.ffn * a.ffn), 0.0);
    a.ffn_sum.assign(static_cast<size_t>(a.ffn), 0.0);
    taps[names[static_cast<size_t>(l * 6 + 3)]] = {&a, false};
    taps[names[static_cast<size_t>(l * 6 + 5)]] = {&a, true};
  }
  const ActivationTap tap = [&](std::string_view name, const float* x, int64_t rows, int64_t cols) -> Status {
    auto it = taps.find(std::string(name));
    if (it == taps.end()) return absl::OkStatus();
    LayerActivations& a = *it->second.first;
    if (it->second.second) return internal::accumulate_products(x, cols, x, cols, rows, a.ffn_gram, &a.ffn_sum);
    a.tokens += rows;
    return internal::accumulate_products(x, cols, x, cols, rows, a.context_gram, &a.context_sum);
  };
  std::vector<float> hidden;
  for (const PackedSequences& batch : batches) {
    hidden.resize(static_cast<size_t>(batch.total_tokens() * c.hidden_size));
    BRISK_RETURN_IF_ERROR(encoder.forward(batch, hidden.data(), tap));
  }
  stats.batches = batches;
  return stats;
}

std::string_view importance_name(Importance importance) {
  switch (importance) {
    case Importance::kL1: return "l1";
    case Importance::kL2: return "l2";
    case Importance::kActivation: return "activation";
  }
  return "?";
}

StatusOr<Importance> parse_importance(std::string_view name) {
  for (Importance i : {Importance::kL1, Importance::kL2, Importance::kActivation}) {
    if (name == importance_name(i)) return i;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("importance is \"", std::string(name), "\"; expected l1, l2 or activation"));
}

StatusOr<UnitScores> score_units(const BertConfig& c, const EncoderWeights& w, Importance imp,
                                 const ActivationStats* stats) {
  BRISK_RETURN_IF_ERROR(check_prunable(c, "score_units"));
  const int64_t d = c.head_dim(), h = c.hidden_size;
  if (imp == Importance::kActivation &&
      (stats == nullptr || static_cast<int64_t>(stats->layers.size()) != c.num_hidden_layers)) {
    return absl::InvalidArgumentError(
        "activation importance needs the activation statistics of this model; expected collect_activations() of it");
  }
  UnitScores s;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const EncoderLayerWeights& x = w.layers[static_cast<size_t>(l)];
    const int64_t heads = c.layer_heads(l), ffn = c.layer_intermediate_size(l), attn = heads * d;
    if (x.attention_output_weight.dtype() != DType::kF32 || x.output_weight.dtype() != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat("layer ", l, " is quantized; expected f32 weights"));
    }
    const float* wo = x.attention_output_weight.data<float>();  // [h, attn]
    const float* wout = x.output_weight.data<float>();          // [h, ffn]
    std::vector<double> head_scores(static_cast<size_t>(heads)), neuron_scores(static_cast<size_t>(ffn));
    if (imp == Importance::kActivation) {
      const LayerActivations& a = stats->layers[static_cast<size_t>(l)];
      if (a.attn != attn || a.ffn != ffn) {
        return absl::InvalidArgumentError(absl::StrCat("activation statistics of layer ", l, " have widths ", a.attn,
                                                       " and ", a.ffn, "; expected ", attn, " and ", ffn,
                                                       " (collected from another model?)"));
      }
      for (int64_t hd = 0; hd < heads; ++hd) {  // tr(W_oh G_hh W_ohᵀ)
        double e = 0;
        for (int64_t r = 0; r < h; ++r) {
          const float* row = wo + r * attn + hd * d;
          for (int64_t i = 0; i < d; ++i) {
            const double* g = a.context_gram.data() + (hd * d + i) * attn + hd * d;
            double gi = 0;
            for (int64_t j = 0; j < d; ++j) gi += g[j] * row[j];
            e += row[i] * gi;
          }
        }
        head_scores[static_cast<size_t>(hd)] = std::sqrt(std::max(e, 0.0));
      }
      for (int64_t j = 0; j < ffn; ++j) {
        const double col = norm_of(wout + j, h, ffn, Importance::kL2);
        neuron_scores[static_cast<size_t>(j)] = std::sqrt(a.ffn_gram[static_cast<size_t>(j * ffn + j)] * col);
      }
    } else {
      for (int64_t hd = 0; hd < heads; ++hd) {
        double e = 0;
        for (const Tensor* t : {&x.q_weight, &x.k_weight, &x.v_weight}) {
          e += norm_of(t->data<float>() + hd * d * h, d * h, 1, imp);
        }
        for (const Tensor* t : {&x.q_bias, &x.k_bias, &x.v_bias}) e += norm_of(t->data<float>() + hd * d, d, 1, imp);
        for (int64_t r = 0; r < h; ++r) e += norm_of(wo + r * attn + hd * d, d, 1, imp);
        head_scores[static_cast<size_t>(hd)] = imp == Importance::kL2 ? std::sqrt(e) : e;
      }
      const float* wi = x.intermediate_weight.data<float>();
      for (int64_t j = 0; j < ffn; ++j) {
        double e = norm_of(wi + j * h, h, 1, imp) + norm_of(x.intermediate_bias.data<float>() + j, 1, 1, imp) +
                   norm_of(wout + j, h, ffn, imp);
        neuron_scores[static_cast<size_t>(j)] = imp == Importance::kL2 ? std::sqrt(e) : e;
      }
    }
    s.heads.push_back(std::move(head_scores));
    s.neurons.push_back(std::move(neuron_scores));
  }
  return s;
}

LayerAmounts uniform(const BertConfig& config, double heads, double ffn) {
  const size_t n = static_cast<size_t>(config.num_hidden_layers);
  return {std::vector<double>(n, heads), std::vector<double>(n, ffn)};
}

StatusOr<StructuredPlan> plan_by_amounts(const BertConfig& c, const UnitScores& scores, const LayerAmounts& amounts) {
  const size_t n = static_cast<size_t>(c.num_hidden_layers);
  if (amounts.heads.size() != n || amounts.ffn.size() != n || scores.heads.size() != n || scores.neurons.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("amounts and scores need one entry per layer; expected ", n));
  }
  StructuredPlan plan;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const size_t i = static_cast<size_t>(l);
    BRISK_RETURN_IF_ERROR(check_amount(amounts.heads[i], absl::StrCat("layer ", l, " heads")));
    BRISK_RETURN_IF_ERROR(check_amount(amounts.ffn[i], absl::StrCat("layer ", l, " ffn")));
    const std::vector<double>& hs = scores.heads[i];
    const int64_t heads = static_cast<int64_t>(hs.size());
    const int64_t remove_heads = std::min(round_count(amounts.heads[i], heads), heads - 1);
    const std::vector<int64_t> kept = kept_heads(c, l);
    for (int64_t slot : lowest(hs, remove_heads)) plan.heads[l].push_back(kept[static_cast<size_t>(slot)]);
    const std::vector<double>& ns = scores.neurons[i];
    const int64_t ffn = static_cast<int64_t>(ns.size());
    const int64_t remove_neurons = std::min(round_count(amounts.ffn[i], ffn), ffn - 1);
    if (remove_neurons > 0) plan.neurons[l] = lowest(ns, remove_neurons);
  }
  return plan;
}

}  // namespace brisk::prune
