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
#include "brisk/quant/scheme.h"

namespace brisk {

void PackedSequences::add(std::span<const int32_t> ids) {
  input_ids.insert(input_ids.end(), ids.begin(), ids.end());
  offsets.push_back(static_cast<int64_t>(input_ids.size()));
}

namespace {

struct Layer {
  // Q, K and V stacked into one [3 * hidden, hidden] Linear when they share a precision; otherwise three that
  // write their columns of the same [tokens, 3 * hidden] buffer.
  std::vector<Linear> qkv;
  std::vector<std::string> qkv_names;  // the model file's names, for activation taps
  std::string attention_output_name, intermediate_name, output_name;
  Linear attention_output;
  Linear intermediate;
  Linear output;
  const EncoderLayerWeights* weights = nullptr;
  int64_t heads = 0;      // kept after pruning (config.layer_heads)
  int64_t ffn_width = 0;  // config.layer_intermediate_size
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
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(shape, parts[0]->dtype()));
  char* dst = static_cast<char*>(out.raw_data());
  for (const Tensor* p : parts) {
    std::memcpy(dst, p->raw_data(), p->nbytes());
    dst += p->nbytes();
  }
  return out;
}

// Tokens per feed-forward chunk: bounds the [chunk, intermediate] scratch (3 MB for MiniLM) whatever the batch.
constexpr int64_t kFfnChunkTokens = 512;

// Per-channel scales of an i8 weight with `rows` output channels (a per-tensor scale repeated).
StatusOr<Tensor> per_channel_scales(const QuantScales& scales, int64_t rows) {
  if (scales.weight_scale.numel() == rows) return scales.weight_scale;
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty({rows}, DType::kF32));
  const float s = scales.weight_scale.numel() == 1 ? scales.weight_scale.data<float>()[0] : 0.0f;
  std::fill(out.data<float>(), out.data<float>() + rows, s);
  return out;
}

// Q, K and V can share one Linear when their weights have one dtype and, for i8, one activation scheme.
bool can_stack_qkv(const EncoderLayerWeights& w) {
  const DType d = w.q_weight.dtype();
  if (w.k_weight.dtype() != d || w.v_weight.dtype() != d) return false;
  if (d != DType::kI8) return true;
  const float a = w.q_scales.activation_scale;
  // SmoothQuant divisors must be one vector: the three share their input.
  auto same_input_scale = [&](const Tensor& t) {
    const Tensor& q = w.q_scales.input_scale;
    if (t.defined() != q.defined()) return false;
    return !t.defined() || (t.numel() == q.numel() && std::memcmp(t.raw_data(), q.raw_data(), t.nbytes()) == 0);
  };
  return w.k_scales.activation_scale == a && w.v_scales.activation_scale == a && w.q_scales.weight_scale.defined() &&
         w.k_scales.weight_scale.defined() && w.v_scales.weight_scale.defined() &&
         same_input_scale(w.k_scales.input_scale) && same_input_scale(w.v_scales.input_scale);
}

StatusOr<std::vector<Linear>> make_qkv(EncoderLayerWeights& w, Device device) {
  std::vector<Linear> out;
  if (can_stack_qkv(w)) {
    BRISK_ASSIGN_OR_RETURN(Tensor qkv_w, stack_rows({&w.q_weight, &w.k_weight, &w.v_weight}));
    BRISK_ASSIGN_OR_RETURN(Tensor qkv_b, stack_rows({&w.q_bias, &w.k_bias, &w.v_bias}));
    QuantScales scales;
    if (qkv_w.dtype() == DType::kI8) {
      const int64_t h = w.q_weight.dim(0);
      BRISK_ASSIGN_OR_RETURN(Tensor qs, per_channel_scales(w.q_scales, h));
      BRISK_ASSIGN_OR_RETURN(Tensor ks, per_channel_scales(w.k_scales, h));
      BRISK_ASSIGN_OR_RETURN(Tensor vs, per_channel_scales(w.v_scales, h));
      BRISK_ASSIGN_OR_RETURN(scales.weight_scale, stack_rows({&qs, &ks, &vs}));
      scales.activation_scale = w.q_scales.activation_scale;
      scales.input_scale = w.q_scales.input_scale;
    }
    BRISK_ASSIGN_OR_RETURN(Linear qkv, Linear::create(qkv_w, qkv_b, device, scales));
    out.push_back(std::move(qkv));
  } else {
    for (auto [weight, bias, scales] :
         {std::tuple{&w.q_weight, &w.q_bias, &w.q_scales}, std::tuple{&w.k_weight, &w.k_bias, &w.k_scales},
          std::tuple{&w.v_weight, &w.v_bias, &w.v_scales}}) {
      BRISK_ASSIGN_OR_RETURN(Linear part, Linear::create(*weight, *bias, device, *scales));
      out.push_back(std::move(part));
    }
  }
  // The Linears hold what they need (a stacked copy, or shared references): drop the loaded tensors.
  for (Tensor* t : {&w.q_weight, &w.k_weight, &w.v_weight, &w.q_bias, &w.k_bias, &w.v_bias}) *t = Tensor();
  return out;
}

// The weights must have the shapes the config gives the layer (pruned models differ from layer to layer).
Status check_layer_shapes(const EncoderLayerWeights& w, size_t layer, int64_t attn, int64_t inter, int64_t h) {
  const struct {
    const char* name;
    const Tensor& t;
    int64_t rows, cols;
  } expected[] = {{"query", w.q_weight, attn, h},
                  {"key", w.k_weight, attn, h},
                  {"value", w.v_weight, attn, h},
                  {"attention output", w.attention_output_weight, h, attn},
                  {"intermediate", w.intermediate_weight, inter, h},
                  {"output", w.output_weight, h, inter}};
  for (const auto& e : expected) {
    if (e.t.rank() != 2 || e.t.dim(0) != e.rows || e.t.dim(1) != e.cols) {
      return absl::InvalidArgumentError(absl::StrCat("BertEncoder: layer ", layer, " ", e.name, " weight has shape ",
                                                     e.t.shape_string(), "; expected [", e.rows, ", ", e.cols,
                                                     "] as the config gives this layer"));
    }
  }
  return absl::OkStatus();
}

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
  int64_t max_attention = 0, max_intermediate = 0;  // the widest layer, for scratch sizes

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

  // The word-embedding table as stored (see EmbeddingWeights::word): f32 rows, i8 rows with a scale each, or int4
  // groups; quantized rows are dequantized as tokens look them up.
  DType word_dtype = DType::kF32;
  quant::Int4Matrix word_int4;

  Status init_word_embeddings();
  void word_row(int32_t id, float* out) const;
  Status check_input(const PackedSequences& batch) const;
  void embed_tokens(const PackedSequences& batch, float* x) const;
  Status run_layers(const PackedSequences& batch, float* x, Workspace& ws, const ActivationTap* tap) const;
};

Status BertEncoder::Impl::init_word_embeddings() {
  const EmbeddingWeights& e = weights.embeddings;
  const int64_t v = config.vocab_size, h = config.hidden_size;
  word_dtype = e.word.dtype();
  auto fail = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("BertEncoder: ", kWordEmbeddingsName, " ", what));
  };
  if (word_dtype == DType::kF32) {
    if (e.word.shape() != std::vector<int64_t>{v, h}) {
      return fail(absl::StrCat("has shape ", e.word.shape_string(), "; expected [", v, ", ", h, "]"));
    }
    return absl::OkStatus();
  }
  if (word_dtype == DType::kI8) {
    if (e.word.shape() != std::vector<int64_t>{v, h} || !e.word_scale.defined() ||
        e.word_scale.dtype() != DType::kF32 || e.word_scale.shape() != std::vector<int64_t>{v}) {
      return fail(absl::StrCat("is i8 ", e.word.shape_string(), " with scales ",
                               e.word_scale.defined() ? e.word_scale.shape_string() : std::string("missing"),
                               "; expected i8 [", v, ", ", h, "] with f32 scales [", v, "]"));
    }
    return absl::OkStatus();
  }
  if (word_dtype == DType::kU8 && e.word_scale.defined() && e.word_scale.rank() == 2 && e.word_scale.dim(1) > 0 &&
      h % e.word_scale.dim(1) == 0 && e.word.shape() == std::vector<int64_t>{v, h / 2}) {
    word_int4 = quant::Int4Matrix{e.word, e.word_scale, e.word_min, h / e.word_scale.dim(1)};
    return quant::check_int4_matrix(word_int4, kWordEmbeddingsName);
  }
  return fail(absl::StrCat("is ", dtype_name(word_dtype), " ", e.word.shape_string(), "; expected f32 or i8 [", v, ", ",
                           h, "], or int4 groups u8 [", v, ", ", h / 2, "] with f16 scales"));
}

void BertEncoder::Impl::word_row(int32_t id, float* out) const {
  const int64_t h = config.hidden_size;
  switch (word_dtype) {
    case DType::kI8: {
      const int8_t* q = weights.embeddings.word.data<int8_t>() + static_cast<int64_t>(id) * h;
      const float s = weights.embeddings.word_scale.data<float>()[id];
      for (int64_t j = 0; j < h; ++j) out[j] = static_cast<float>(q[j]) * s;
      return;
    }
    case DType::kU8: quant::dequantize_int4_row(word_int4, id, out); return;
    default: {
      const float* w = weights.embeddings.word.data<float>() + static_cast<int64_t>(id) * h;
      std::copy(w, w + h, out);
    }
  }
}

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
  BRISK_RETURN_IF_ERROR(impl->init_word_embeddings());
  const std::vector<LinearSlot> slots = linear_slots(impl->weights, config);
  size_t slot = 0;
  for (EncoderLayerWeights& w : impl->weights.layers) {
    Layer layer;
    layer.weights = &w;
    layer.heads = config.layer_heads(static_cast<int64_t>(impl->layers.size()));
    layer.ffn_width = config.layer_intermediate_size(static_cast<int64_t>(impl->layers.size()));
    impl->max_attention = std::max(impl->max_attention, layer.heads * config.head_dim());
    impl->max_intermediate = std::max(impl->max_intermediate, layer.ffn_width);
    BRISK_RETURN_IF_ERROR(check_layer_shapes(w, impl->layers.size(), layer.heads * config.head_dim(), layer.ffn_width,
                                             config.hidden_size));
    for (int i = 0; i < 3; ++i) layer.qkv_names.push_back(slots[slot++].name);
    layer.attention_output_name = slots[slot++].name;
    layer.intermediate_name = slots[slot++].name;
    layer.output_name = slots[slot++].name;
    BRISK_ASSIGN_OR_RETURN(layer.qkv, make_qkv(w, device));
    BRISK_ASSIGN_OR_RETURN(layer.attention_output, Linear::create(w.attention_output_weight, w.attention_output_bias,
                                                                  device, w.attention_output_scales));
    BRISK_ASSIGN_OR_RETURN(layer.intermediate,
                           Linear::create(w.intermediate_weight, w.intermediate_bias, device, w.intermediate_scales));
    BRISK_ASSIGN_OR_RETURN(layer.output, Linear::create(w.output_weight, w.output_bias, device, w.output_scales));
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
  const float* pos = e.position.data<float>();
  const float* type = e.token_type.defined() && e.token_type.numel() > 0 ? e.token_type.data<float>() : nullptr;
  const std::vector<int64_t>& offsets = batch.offsets;
  // One parallel loop over all packed tokens; each chunk finds its first token's sequence, then walks on.
  parallel_for(0, batch.total_tokens(), 32, [&](int64_t t0, int64_t t1) {
    size_t b = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), t0) - offsets.begin()) - 1;
    for (int64_t t = t0; t < t1; ++t) {
      while (t >= offsets[b + 1]) ++b;
      const float* p = pos + (t - offsets[b]) * h;
      float* out = x + t * h;
      word_row(batch.input_ids[t], out);
      for (int64_t j = 0; j < h; ++j) out[j] += p[j];
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

Status BertEncoder::Impl::run_layers(const PackedSequences& batch, float* x, Workspace& ws,
                                     const ActivationTap* tap) const {
  auto observe = [&](const std::string& name, const float* in, int64_t rows, int64_t cols) {
    return tap != nullptr && *tap ? (*tap)(name, in, rows, cols) : absl::OkStatus();
  };
  const int64_t n = batch.total_tokens();
  const int64_t h = config.hidden_size;
  const float eps = static_cast<float>(config.layer_norm_eps);
  Workspace::reserve(ws.qkv, static_cast<size_t>(n * 3 * max_attention));
  Workspace::reserve(ws.context, static_cast<size_t>(n * max_attention));
  // The feed-forward runs in token chunks: its activation is the largest buffer of a layer, and chunking keeps it
  // small (and cache-resident between the two projections) at no measured cost in speed.
  const int64_t ffn_chunk = std::min<int64_t>(n, kFfnChunkTokens);
  Workspace::reserve(ws.intermediate, static_cast<size_t>(ffn_chunk * max_intermediate));
  for (const Layer& layer : layers) {
    const EncoderLayerWeights& w = *layer.weights;
    const int64_t attn = layer.heads * config.head_dim(), inter = layer.ffn_width;
    for (const std::string& name : layer.qkv_names) BRISK_RETURN_IF_ERROR(observe(name, x, n, h));
    if (layer.qkv.size() == 1) {
      BRISK_RETURN_IF_ERROR(layer.qkv[0].forward(x, n, ws.qkv.data(), GemmEpilogue::kBias));
    } else {
      for (size_t i = 0; i < layer.qkv.size(); ++i) {
        BRISK_RETURN_IF_ERROR(
            layer.qkv[i].forward(x, n, ws.qkv.data() + static_cast<int64_t>(i) * attn, GemmEpilogue::kBias, 3 * attn));
      }
    }
    BRISK_RETURN_IF_ERROR(self_attention<Device::kCPU>(ws.qkv.data(), batch.offsets.data(), batch.size(), layer.heads,
                                                       config.head_dim(), ws.context.data()));
    BRISK_RETURN_IF_ERROR(observe(layer.attention_output_name, ws.context.data(), n, attn));
    BRISK_RETURN_IF_ERROR(layer.attention_output.forward(ws.context.data(), n, x, GemmEpilogue::kBiasAccumulate));
    layer_norm_bias_residual<Device::kCPU>(x, nullptr, nullptr, w.attention_ln_gamma.data<float>(),
                                           w.attention_ln_beta.data<float>(), eps, x, n, h);
    for (int64_t t = 0; t < n; t += ffn_chunk) {
      const int64_t rows = std::min(ffn_chunk, n - t);
      BRISK_RETURN_IF_ERROR(observe(layer.intermediate_name, x + t * h, rows, h));
      BRISK_RETURN_IF_ERROR(layer.intermediate.forward(x + t * h, rows, ws.intermediate.data(), ffn_epilogue));
      BRISK_RETURN_IF_ERROR(observe(layer.output_name, ws.intermediate.data(), rows, inter));
      BRISK_RETURN_IF_ERROR(
          layer.output.forward(ws.intermediate.data(), rows, x + t * h, GemmEpilogue::kBiasAccumulate));
    }
    layer_norm_bias_residual<Device::kCPU>(x, nullptr, nullptr, w.output_ln_gamma.data<float>(),
                                           w.output_ln_beta.data<float>(), eps, x, n, h);
  }
  return absl::OkStatus();
}

Status BertEncoder::forward(const PackedSequences& batch, float* hidden_states) const {
  return forward(batch, hidden_states, ActivationTap());
}

Status BertEncoder::forward(const PackedSequences& batch, float* hidden_states, const ActivationTap& tap) const {
  if (hidden_states == nullptr)
    return absl::InvalidArgumentError(
        "BertEncoder::forward: hidden_states is null; expected a buffer of total_tokens x hidden_size floats");
  BRISK_RETURN_IF_ERROR(impl_->check_input(batch));
  if (batch.total_tokens() == 0) return absl::OkStatus();
  auto ws = impl_->acquire();
  impl_->embed_tokens(batch, hidden_states);
  Status s = impl_->run_layers(batch, hidden_states, *ws, &tap);
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
    s = impl_->run_layers(batch, x, *ws, nullptr);
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
