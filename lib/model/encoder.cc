// BertEncoder forward pass: embeddings + LayerNorm, then per layer a fused QKV projection, packed self-attention,
// output projection accumulated onto the residual, LayerNorm, a GeLU feed-forward accumulated the same way, and
// LayerNorm. Scratch buffers are pooled so steady-state calls do not allocate.
#include "brisk/model/encoder.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "brisk/core/parallel.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/gemm.h"
#include "brisk/kernels/layernorm.h"
#include "brisk/kernels/pooling.h"

namespace brisk {

void PackedSequences::add(std::span<const int32_t> ids) {
  input_ids.insert(input_ids.end(), ids.begin(), ids.end());
  offsets.push_back(static_cast<int64_t>(input_ids.size()));
}

namespace {

struct Layer {
  Linear qkv;  // [3 * hidden, hidden]: Q, K and V stacked
  Linear attention_output;
  Linear intermediate;
  Linear output;
  const EncoderLayerWeights* weights = nullptr;
};

// Scratch for one forward pass; grown on demand and reused.
struct Workspace {
  std::vector<float> qkv, context, intermediate, hidden;
  static void reserve(std::vector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  }
};

StatusOr<Tensor> stack_rows(const std::vector<const Tensor*>& parts) {
  int64_t rows = 0;
  for (const Tensor* p : parts) rows += p->dim(0);
  std::vector<int64_t> shape = parts[0]->shape();
  shape[0] = rows;
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(shape, DType::kF32));
  char* dst = static_cast<char*>(out.raw_data());
  for (const Tensor* p : parts) {
    std::memcpy(dst, p->raw_data(), p->nbytes());
    dst += p->nbytes();
  }
  return out;
}

// Tokens per feed-forward chunk: bounds the [chunk, intermediate] scratch (3 MB for MiniLM) whatever the batch.
constexpr int64_t kFfnChunkTokens = 512;

GemmEpilogue activation_epilogue(Activation act) {
  switch (act) {
    case Activation::kGelu: return GemmEpilogue::kBiasGeluErf;
    case Activation::kGeluTanh: return GemmEpilogue::kBiasGeluTanh;
    case Activation::kRelu: return GemmEpilogue::kBiasRelu;
  }
  return GemmEpilogue::kBiasGeluErf;
}

}  // namespace

struct BertEncoder::Impl {
  BertConfig config;
  EncoderWeights weights;
  Device device = Device::kCPU;
  std::vector<Layer> layers;
  GemmEpilogue ffn_epilogue = GemmEpilogue::kBiasGeluErf;

  mutable std::mutex pool_mu;
  mutable std::vector<std::unique_ptr<Workspace>> pool;

  std::unique_ptr<Workspace> acquire() const {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (pool.empty()) return std::make_unique<Workspace>();
    auto ws = std::move(pool.back());
    pool.pop_back();
    return ws;
  }
  // Keeps a few workspaces for reuse; more concurrent callers than that free theirs instead of pinning their
  // peak scratch forever.
  static constexpr size_t kMaxPooledWorkspaces = 4;
  void release(std::unique_ptr<Workspace> ws) const {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (pool.size() < kMaxPooledWorkspaces) pool.push_back(std::move(ws));
  }

  Status check_input(const PackedSequences& batch) const;
  void embed_tokens(const PackedSequences& batch, float* x) const;
  Status run_layers(const PackedSequences& batch, float* x, Workspace& ws) const;
};

BertEncoder::BertEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BertEncoder::~BertEncoder() = default;

const BertConfig& BertEncoder::config() const { return impl_->config; }
int64_t BertEncoder::hidden_size() const { return impl_->config.hidden_size; }

StatusOr<std::unique_ptr<BertEncoder>> BertEncoder::create(const BertConfig& config, EncoderWeights weights,
                                                           Device device) {
  BRISK_RETURN_IF_ERROR(config.validate("BertEncoder config"));
  if (static_cast<int64_t>(weights.layers.size()) != config.num_hidden_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("BertEncoder: weights have ", weights.layers.size(),
                     " layers but the config has num_hidden_layers = ", config.num_hidden_layers));
  }
  if (device != Device::kCPU) {
    return absl::UnimplementedError("BertEncoder: this build runs the encoder on cpu only; expected device cpu");
  }
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->weights = std::move(weights);
  impl->device = device;
  impl->ffn_epilogue = activation_epilogue(config.hidden_act);
  for (EncoderLayerWeights& w : impl->weights.layers) {
    Layer layer;
    layer.weights = &w;
    BRISK_ASSIGN_OR_RETURN(Tensor qkv_w, stack_rows({&w.q_weight, &w.k_weight, &w.v_weight}));
    BRISK_ASSIGN_OR_RETURN(Tensor qkv_b, stack_rows({&w.q_bias, &w.k_bias, &w.v_bias}));
    BRISK_ASSIGN_OR_RETURN(layer.qkv, Linear::create(qkv_w, qkv_b, device));
    // The stacked copy replaces them (frees owned copies, e.g. from pytorch_model.bin or f16 files).
    for (Tensor* t : {&w.q_weight, &w.k_weight, &w.v_weight, &w.q_bias, &w.k_bias, &w.v_bias}) *t = Tensor();
    BRISK_ASSIGN_OR_RETURN(layer.attention_output,
                           Linear::create(w.attention_output_weight, w.attention_output_bias, device));
    BRISK_ASSIGN_OR_RETURN(layer.intermediate, Linear::create(w.intermediate_weight, w.intermediate_bias, device));
    BRISK_ASSIGN_OR_RETURN(layer.output, Linear::create(w.output_weight, w.output_bias, device));
    impl->layers.push_back(std::move(layer));
  }
  return std::unique_ptr<BertEncoder>(new BertEncoder(std::move(impl)));
}

Status BertEncoder::Impl::check_input(const PackedSequences& batch) const {
  if (batch.offsets.empty() || batch.offsets.front() != 0 ||
      batch.total_tokens() != static_cast<int64_t>(batch.input_ids.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PackedSequences: offsets ",
        batch.offsets.empty() ? std::string("are empty")
                              : absl::StrCat("start at ", batch.offsets.front(), " and end at ", batch.offsets.back()),
        "; expected them to start at 0 and end at input_ids.size() = ", batch.input_ids.size()));
  }
  if (!batch.token_type_ids.empty() && batch.token_type_ids.size() != batch.input_ids.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PackedSequences: token_type_ids has ", batch.token_type_ids.size(),
                                                   " entries; expected 0 or ", batch.input_ids.size()));
  }
  for (int64_t i = 0; i < batch.size(); ++i) {
    const int64_t len = batch.length(i);
    if (len < 0 || len > config.max_position_embeddings) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence ", i, " has ", len,
                       " tokens; expected between 0 and max_position_embeddings = ", config.max_position_embeddings));
    }
  }
  for (size_t t = 0; t < batch.input_ids.size(); ++t) {
    if (batch.input_ids[t] < 0 || batch.input_ids[t] >= config.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", batch.input_ids[t], " at packed position ", t,
                                                     " is outside the vocabulary [0, ", config.vocab_size, ")"));
    }
  }
  const int64_t types = std::max<int64_t>(config.type_vocab_size, 1);
  for (size_t t = 0; t < batch.token_type_ids.size(); ++t) {
    if (batch.token_type_ids[t] < 0 || batch.token_type_ids[t] >= types) {
      return absl::InvalidArgumentError(absl::StrCat("token type id ", batch.token_type_ids[t], " at packed position ",
                                                     t, " is outside [0, ", types, ")"));
    }
  }
  return absl::OkStatus();
}

void BertEncoder::Impl::embed_tokens(const PackedSequences& batch, float* x) const {
  const int64_t h = config.hidden_size;
  const EmbeddingWeights& e = weights.embeddings;
  const float* word = e.word.data<float>();
  const float* pos = e.position.data<float>();
  const float* type = e.token_type.defined() && e.token_type.numel() > 0 ? e.token_type.data<float>() : nullptr;
  const std::vector<int64_t>& offsets = batch.offsets;
  // One parallel loop over all packed tokens; each chunk finds its first token's sequence, then walks on.
  parallel_for(0, batch.total_tokens(), 32, [&](int64_t t0, int64_t t1) {
    size_t b = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), t0) - offsets.begin()) - 1;
    for (int64_t t = t0; t < t1; ++t) {
      while (t >= offsets[b + 1]) ++b;
      const float* w = word + static_cast<int64_t>(batch.input_ids[t]) * h;
      const float* p = pos + (t - offsets[b]) * h;
      float* out = x + t * h;
      for (int64_t j = 0; j < h; ++j) out[j] = w[j] + p[j];
      if (type != nullptr) {
        const int64_t tt = batch.token_type_ids.empty() ? 0 : batch.token_type_ids[t];
        const float* ty = type + tt * h;
        for (int64_t j = 0; j < h; ++j) out[j] += ty[j];
      }
    }
  });
  layer_norm_bias_residual<Device::kCPU>(x, nullptr, nullptr, e.ln_gamma.data<float>(), e.ln_beta.data<float>(),
                                         static_cast<float>(config.layer_norm_eps), x, batch.total_tokens(), h);
}

Status BertEncoder::Impl::run_layers(const PackedSequences& batch, float* x, Workspace& ws) const {
  const int64_t n = batch.total_tokens();
  const int64_t h = config.hidden_size;
  const int64_t inter = config.intermediate_size;
  const float eps = static_cast<float>(config.layer_norm_eps);
  Workspace::reserve(ws.qkv, static_cast<size_t>(n * 3 * h));
  Workspace::reserve(ws.context, static_cast<size_t>(n * h));
  // The feed-forward runs in token chunks: its activation is the largest buffer of a layer, and chunking keeps it
  // small (and cache-resident between the two projections) at no measured cost in speed.
  const int64_t ffn_chunk = std::min<int64_t>(n, kFfnChunkTokens);
  Workspace::reserve(ws.intermediate, static_cast<size_t>(ffn_chunk * inter));
  for (const Layer& layer : layers) {
    const EncoderLayerWeights& w = *layer.weights;
    BRISK_RETURN_IF_ERROR(layer.qkv.forward(x, n, ws.qkv.data(), GemmEpilogue::kBias));
    BRISK_RETURN_IF_ERROR(self_attention<Device::kCPU>(ws.qkv.data(), batch.offsets.data(), batch.size(),
                                                       config.num_attention_heads, config.head_dim(),
                                                       ws.context.data()));
    BRISK_RETURN_IF_ERROR(layer.attention_output.forward(ws.context.data(), n, x, GemmEpilogue::kBiasAccumulate));
    layer_norm_bias_residual<Device::kCPU>(x, nullptr, nullptr, w.attention_ln_gamma.data<float>(),
                                           w.attention_ln_beta.data<float>(), eps, x, n, h);
    for (int64_t t = 0; t < n; t += ffn_chunk) {
      const int64_t rows = std::min(ffn_chunk, n - t);
      BRISK_RETURN_IF_ERROR(layer.intermediate.forward(x + t * h, rows, ws.intermediate.data(), ffn_epilogue));
      BRISK_RETURN_IF_ERROR(
          layer.output.forward(ws.intermediate.data(), rows, x + t * h, GemmEpilogue::kBiasAccumulate));
    }
    layer_norm_bias_residual<Device::kCPU>(x, nullptr, nullptr, w.output_ln_gamma.data<float>(),
                                           w.output_ln_beta.data<float>(), eps, x, n, h);
  }
  return absl::OkStatus();
}

Status BertEncoder::forward(const PackedSequences& batch, float* hidden_states) const {
  if (hidden_states == nullptr)
    return absl::InvalidArgumentError(
        "BertEncoder::forward: hidden_states is null; expected a buffer of total_tokens x hidden_size floats");
  BRISK_RETURN_IF_ERROR(impl_->check_input(batch));
  if (batch.total_tokens() == 0) return absl::OkStatus();
  auto ws = impl_->acquire();
  impl_->embed_tokens(batch, hidden_states);
  Status s = impl_->run_layers(batch, hidden_states, *ws);
  impl_->release(std::move(ws));
  return s;
}

Status BertEncoder::embed(const PackedSequences& batch, Pooling pooling, bool normalize, float* out) const {
  if (out == nullptr)
    return absl::InvalidArgumentError(
        "BertEncoder::embed: out is null; expected a buffer of batch.size() x hidden_size floats");
  if (pooling == Pooling::kMax) {
    return absl::UnimplementedError("BertEncoder::embed: max pooling is not supported; expected mean or cls");
  }
  BRISK_RETURN_IF_ERROR(impl_->check_input(batch));
  const int64_t h = impl_->config.hidden_size;
  auto ws = impl_->acquire();
  Workspace::reserve(ws->hidden, static_cast<size_t>(batch.total_tokens() * h));
  float* x = ws->hidden.data();
  Status s = absl::OkStatus();
  if (batch.total_tokens() > 0) {
    impl_->embed_tokens(batch, x);
    s = impl_->run_layers(batch, x, *ws);
  }
  if (s.ok()) {
    for (int64_t b = 0; b < batch.size(); ++b) {
      const int32_t len = static_cast<int32_t>(batch.length(b));
      const float* seq = x + batch.offsets[b] * h;
      if (len == 0) {
        std::fill(out + b * h, out + (b + 1) * h, 0.0f);
      } else if (pooling == Pooling::kCls) {
        cls_pool<Device::kCPU>(seq, 1, len, h, out + b * h);
      } else {
        mean_pool<Device::kCPU>(seq, &len, 1, len, h, out + b * h);
      }
    }
    if (normalize) l2_normalize<Device::kCPU>(out, batch.size(), h);
  }
  impl_->release(std::move(ws));
  return s;
}

}  // namespace brisk
