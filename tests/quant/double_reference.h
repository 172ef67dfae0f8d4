// A double-precision reference of a BERT encoder's forward pass with mean pooling, written here from the model's
// definition (transformers' BertModel: word + position + token-type embeddings and a LayerNorm, then post-LN layers of
// multi-head self-attention and an erf-GeLU feed-forward) and independent of brisk's kernels: plain loops, every sum
// in double, one sequence at a time. The plan tests measure each plan, at each ISA level, against it.
//
//   const std::vector<float> exact = testing::double_reference_mean_embeddings(config, fp32_weights, batches);
//   const Fidelity f = compare_embeddings(exact, *embed_all(*encoder, batches, Pooling::kMean), config.hidden_size);
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "brisk/core/sequences.h"
#include "brisk/model/config.h"
#include "brisk/model/weights.h"

namespace brisk::testing {

namespace double_reference {

// y[r, o] = b[o] + Σ_i x[r, i] · W[o, i], W f32 [out, in].
inline std::vector<double> linear(const std::vector<double>& x, int64_t rows, const Tensor& w, const Tensor& b) {
  const int64_t out = w.dim(0), in = w.dim(1);
  const float* wv = w.data<float>();
  const float* bv = b.data<float>();
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = bv[o];
      for (int64_t i = 0; i < in; ++i) s += x[static_cast<size_t>(r * in + i)] * wv[o * in + i];
      y[static_cast<size_t>(r * out + o)] = s;
    }
  }
  return y;
}

// x = LayerNorm(x + residual) row by row (residual may be empty).
inline void add_layer_norm(std::vector<double>& x, const std::vector<double>& residual, int64_t rows, int64_t h,
                           const Tensor& gamma, const Tensor& beta, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    double* row = x.data() + r * h;
    if (!residual.empty()) {
      for (int64_t c = 0; c < h; ++c) row[c] += residual[static_cast<size_t>(r * h + c)];
    }
    double mean = 0, var = 0;
    for (int64_t c = 0; c < h; ++c) mean += row[c];
    mean /= static_cast<double>(h);
    for (int64_t c = 0; c < h; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(h);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < h; ++c) row[c] = (row[c] - mean) * inv * gamma.data<float>()[c] + beta.data<float>()[c];
  }
}

}  // namespace double_reference

// Mean-pooled last hidden states, [sequences, hidden], of every sequence of `batches` in order. BERT-family encoders
// with the erf GeLU and f32 weights (the quantizer's input).
inline std::vector<float> double_reference_mean_embeddings(const BertConfig& config, const EncoderWeights& w,
                                                           const std::vector<PackedSequences>& batches) {
  namespace ref = double_reference;
  REQUIRE(!config.is_decoder());
  REQUIRE(config.hidden_act == Activation::kGelu);
  REQUIRE(w.embeddings.word.dtype() == DType::kF32);
  const int64_t h = config.hidden_size, heads = config.num_attention_heads, d = h / heads;
  const double eps = config.layer_norm_eps;
  std::vector<float> out;
  for (const PackedSequences& batch : batches) {
    for (int64_t s = 0; s < batch.size(); ++s) {
      const int64_t begin = batch.offsets[s], len = batch.length(s);
      std::vector<double> x(static_cast<size_t>(len * h));
      for (int64_t t = 0; t < len; ++t) {
        const int64_t id = batch.input_ids[static_cast<size_t>(begin + t)];
        const int64_t type = batch.token_type_ids.empty() ? 0 : batch.token_type_ids[static_cast<size_t>(begin + t)];
        const int64_t position = t + config.position_offset();
        for (int64_t c = 0; c < h; ++c) {
          double v = double(w.embeddings.word.data<float>()[id * h + c]) +
                     w.embeddings.position.data<float>()[position * h + c];
          if (w.embeddings.token_type.defined()) v += w.embeddings.token_type.data<float>()[type * h + c];
          x[static_cast<size_t>(t * h + c)] = v;
        }
      }
      ref::add_layer_norm(x, {}, len, h, w.embeddings.ln_gamma, w.embeddings.ln_beta, eps);
      for (const EncoderLayerWeights& l : w.layers) {
        const auto q = ref::linear(x, len, l.q_weight, l.q_bias), k = ref::linear(x, len, l.k_weight, l.k_bias),
                   v = ref::linear(x, len, l.v_weight, l.v_bias);
        std::vector<double> context(static_cast<size_t>(len * h)), p(static_cast<size_t>(len));
        for (int64_t head = 0; head < heads; ++head) {
          for (int64_t i = 0; i < len; ++i) {
            double top = -INFINITY, sum = 0;
            for (int64_t j = 0; j < len; ++j) {
              double dot = 0;
              for (int64_t c = 0; c < d; ++c) dot += q[i * h + head * d + c] * k[j * h + head * d + c];
              p[j] = dot / std::sqrt(static_cast<double>(d));
              top = std::max(top, p[j]);
            }
            for (double& e : p) sum += (e = std::exp(e - top));
            for (int64_t c = 0; c < d; ++c) {
              double acc = 0;
              for (int64_t j = 0; j < len; ++j) acc += p[j] / sum * v[j * h + head * d + c];
              context[static_cast<size_t>(i * h + head * d + c)] = acc;
            }
          }
        }
        auto attention = ref::linear(context, len, l.attention_output_weight, l.attention_output_bias);
        ref::add_layer_norm(attention, x, len, h, l.attention_ln_gamma, l.attention_ln_beta, eps);
        x = std::move(attention);
        auto inner = ref::linear(x, len, l.intermediate_weight, l.intermediate_bias);
        for (double& e : inner) e = 0.5 * e * (1.0 + std::erf(e / std::sqrt(2.0)));
        auto ffn = ref::linear(inner, len, l.output_weight, l.output_bias);
        ref::add_layer_norm(ffn, x, len, h, l.output_ln_gamma, l.output_ln_beta, eps);
        x = std::move(ffn);
      }
      for (int64_t c = 0; c < h; ++c) {
        double mean = 0;
        for (int64_t t = 0; t < len; ++t) mean += x[static_cast<size_t>(t * h + c)];
        out.push_back(static_cast<float>(mean / static_cast<double>(len)));
      }
    }
  }
  return out;
}

}  // namespace brisk::testing
