// BertEncoder construction: the checks of a config against its weights, the layers' Linears, and the non-linear
// parameters placed on the encoder's device (encoder_forward.cc runs the pass).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "brisk/core/device.h"
#include "brisk/core/internal/finite.h"
#include "brisk/core/internal/reproducible.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/copy.h"
#include "encoder_impl.h"

namespace brisk {

namespace {

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

// Per-channel scales of an i8 weight with `rows` output channels (a per-tensor scale repeated).
StatusOr<Tensor> per_channel_scales(const kernels::QuantScales& scales, int64_t rows) {
  if (scales.weight_scale.numel() == rows) return scales.weight_scale;
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty({rows}, DType::kF32));
  const float s = scales.weight_scale.numel() == 1 ? scales.weight_scale.data<float>()[0] : 0.0f;
  std::fill(out.data<float>(), out.data<float>() + rows, s);
  return out;
}

// Linears that read one input (shared_input_linears) can share one Linear when their weights have one dtype and,
// for i8, one activation scheme.
bool can_stack(const std::vector<const LinearSlot*>& parts) {
  const DType d = parts[0]->weight->dtype();
  const kernels::QuantScales& first = *parts[0]->scales;
  for (const LinearSlot* p : parts) {
    if (p->weight->dtype() != d) return false;
    if (d != DType::kI8) continue;
    // SmoothQuant divisors must be one vector: the parts share their input.
    const Tensor& t = p->scales->input_scale;
    const Tensor& q = first.input_scale;
    const bool same_input_scale =
        t.defined() == q.defined() &&
        (!t.defined() || (t.numel() == q.numel() && std::memcmp(t.raw_data(), q.raw_data(), t.nbytes()) == 0));
    if (p->scales->activation_scale != first.activation_scale || !p->scales->weight_scale.defined() ||
        !same_input_scale) {
      return false;
    }
  }
  return true;
}

// The parts as one Linear whose output columns are theirs side by side (can_stack), else one Linear each.
StatusOr<std::vector<kernels::Linear>> make_stacked(const std::vector<const LinearSlot*>& parts, Device device,
                                                    DType activation) {
  std::vector<kernels::Linear> out;
  if (can_stack(parts)) {
    std::vector<const Tensor*> weights, biases;
    std::vector<Tensor> channel_scales;
    for (const LinearSlot* p : parts) {
      weights.push_back(p->weight);
      biases.push_back(p->bias);
    }
    BRISK_ASSIGN_OR_RETURN(Tensor w, stack_rows(weights));
    BRISK_ASSIGN_OR_RETURN(Tensor b, stack_rows(biases));
    kernels::QuantScales scales;
    if (w.dtype() == DType::kI8) {
      for (const LinearSlot* p : parts) {
        BRISK_ASSIGN_OR_RETURN(channel_scales.emplace_back(), per_channel_scales(*p->scales, p->weight->dim(0)));
      }
      std::vector<const Tensor*> scale_parts;
      for (const Tensor& t : channel_scales) scale_parts.push_back(&t);
      BRISK_ASSIGN_OR_RETURN(scales.weight_scale, stack_rows(scale_parts));
      scales.activation_scale = parts[0]->scales->activation_scale;
      scales.input_scale = parts[0]->scales->input_scale;
    }
    BRISK_ASSIGN_OR_RETURN(kernels::Linear stacked, kernels::Linear::create(w, b, device, scales, activation));
    out.push_back(std::move(stacked));
  } else {
    for (const LinearSlot* p : parts) {
      BRISK_ASSIGN_OR_RETURN(kernels::Linear part,
                             kernels::Linear::create(*p->weight, *p->bias, device, *p->scales, activation));
      out.push_back(std::move(part));
    }
  }
  // The Linears hold what they need (a stacked copy, or shared references): drop the loaded tensors.
  for (const LinearSlot* p : parts) {
    *p->weight = Tensor();
    *p->bias = Tensor();
  }
  return out;
}

// The weights must have the shapes the config gives the layer (pruned models differ from layer to layer).
Status check_layer_shapes(const std::vector<LinearSlot>& slots, size_t first, size_t count, size_t layer) {
  for (size_t i = first; i < first + count; ++i) {
    const LinearSlot& s = slots[i];
    const Tensor& t = *s.weight;
    if (t.rank() != 2 || t.dim(0) != s.out_features || t.dim(1) != s.in_features) {
      return absl::InvalidArgumentError(absl::StrCat("BertEncoder: layer ", layer, " ", s.name, " weight has shape ",
                                                     t.shape_string(), "; expected [", s.out_features, ", ",
                                                     s.in_features, "] as the config gives this layer"));
    }
  }
  return absl::OkStatus();
}

kernels::GemmEpilogue activation_epilogue(Activation act) {
  switch (act) {
    case Activation::kGelu: return kernels::GemmEpilogue::kBiasGeluErf;
    case Activation::kGeluTanh: return kernels::GemmEpilogue::kBiasGeluTanh;
    case Activation::kRelu: return kernels::GemmEpilogue::kBiasRelu;
    case Activation::kSilu: return kernels::GemmEpilogue::kBias;  // the decoders' SwiGLU applies it (silu_mul)
  }
  return kernels::GemmEpilogue::kBiasGeluErf;
}

}  // namespace

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
    word_int4 = Int4Matrix{e.word, e.word_scale, e.word_min, h / e.word_scale.dim(1)};
    return check_int4_matrix(word_int4, kWordEmbeddingsName);
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
    case DType::kU8: dequantize_int4_row(word_int4, id, out); return;
    default: {
      const float* w = weights.embeddings.word.data<float>() + static_cast<int64_t>(id) * h;
      std::copy(w, w + h, out);
    }
  }
}

BertEncoder::BertEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BertEncoder::~BertEncoder() = default;

const BertConfig& BertEncoder::config() const { return impl_->config; }
const EncoderOptions& BertEncoder::options() const { return impl_->options; }

int64_t BertEncoder::int8_attention_layers() const {
  return std::count_if(impl_->layers.begin(), impl_->layers.end(),
                       [](const EncoderLayer& l) { return l.int8_attention; });
}
int64_t BertEncoder::hidden_size() const { return impl_->config.hidden_size; }

std::vector<std::string> BertEncoder::linear_kernels() const {
  std::vector<std::string> kernels;
  const auto add = [&](const kernels::Linear& linear) {
    const std::string entry = absl::StrCat(dtype_name(linear.weight_dtype()), ": ", linear.kernel_name());
    if (std::find(kernels.begin(), kernels.end(), entry) == kernels.end()) kernels.push_back(entry);
  };
  for (const EncoderLayer& layer : impl_->layers) {
    for (const kernels::Linear& qkv : layer.qkv) add(qkv);
    add(layer.attention_output);
    if (layer.gate_up.empty()) add(layer.intermediate);
    for (const kernels::Linear& part : layer.gate_up) add(part);
    add(layer.output);
  }
  return kernels;
}

StatusOr<const void*> BertEncoder::Impl::place(const Tensor& host_f32) {
  if (options.device == Device::kCPU) return host_f32.raw_data();
  const int64_t n = host_f32.numel();
  const float* src = host_f32.data<float>();
  BRISK_ASSIGN_OR_RETURN(Tensor dev, Tensor::empty({n}, options.activation, options.device));
  if (options.activation == DType::kF32) {
    BRISK_RETURN_IF_ERROR(kernels::copy_bytes(options.device, dev.raw_data(), Device::kCPU, src, host_f32.nbytes()));
    BRISK_RETURN_IF_ERROR(kernels::synchronize(options.device));  // host_f32 may be a temporary (the dense word table)
  } else {
    // Converted on the host (once, at load) so that the upload moves 2-byte elements.
    std::vector<uint16_t> host(static_cast<size_t>(n));
    if (options.activation == DType::kF16) {
      BRISK_RETURN_IF_ERROR(kernels::convert(Device::kCPU, src, reinterpret_cast<float16_t*>(host.data()), n));
    } else {
      BRISK_RETURN_IF_ERROR(kernels::convert(Device::kCPU, src, reinterpret_cast<bfloat16_t*>(host.data()), n));
    }
    BRISK_RETURN_IF_ERROR(
        kernels::copy_bytes(options.device, dev.raw_data(), Device::kCPU, host.data(), host.size() * 2));
    BRISK_RETURN_IF_ERROR(kernels::synchronize(options.device));  // `host` dies here
  }
  device_parameters.push_back(dev);
  return static_cast<const void*>(dev.raw_data());
}

Status BertEncoder::Impl::place_parameters() {
  const EmbeddingWeights& e = weights.embeddings;
  if (config.is_decoder()) {  // the CPU only: the parameters are used where they are
    final_norm_gamma = weights.final_norm_gamma.data<float>();
    for (size_t l = 0; l < layers.size(); ++l) {
      const EncoderLayerWeights& w = weights.layers[l];
      layers[l].attention_ln_gamma = w.attention_ln_gamma.raw_data();
      layers[l].output_ln_gamma = w.output_ln_gamma.raw_data();
      if (config.qk_norm()) {
        layers[l].q_norm_gamma = w.q_norm_gamma.data<float>();
        layers[l].k_norm_gamma = w.k_norm_gamma.data<float>();
      }
    }
    return absl::OkStatus();
  }
  if (word_dtype == DType::kF32) {
    BRISK_ASSIGN_OR_RETURN(word_table, place(e.word));
  } else if (options.device != Device::kCPU) {
    // A device gathers from a dense table: the quantized rows are dequantized once, here.
    const int64_t v = config.vocab_size, h = config.hidden_size;
    BRISK_ASSIGN_OR_RETURN(Tensor dense, Tensor::empty({v, h}, DType::kF32));
    for (int64_t id = 0; id < v; ++id) word_row(static_cast<int32_t>(id), dense.data<float>() + id * h);
    BRISK_ASSIGN_OR_RETURN(word_table, place(dense));
  }
  BRISK_ASSIGN_OR_RETURN(position_table, place(e.position));
  if (e.token_type.defined() && e.token_type.numel() > 0) {
    BRISK_ASSIGN_OR_RETURN(token_type_table, place(e.token_type));
  }
  BRISK_ASSIGN_OR_RETURN(embedding_ln_gamma, place(e.ln_gamma));
  BRISK_ASSIGN_OR_RETURN(embedding_ln_beta, place(e.ln_beta));
  for (size_t l = 0; l < layers.size(); ++l) {
    const EncoderLayerWeights& w = weights.layers[l];
    EncoderLayer& layer = layers[l];
    BRISK_ASSIGN_OR_RETURN(layer.attention_ln_gamma, place(w.attention_ln_gamma));
    BRISK_ASSIGN_OR_RETURN(layer.attention_ln_beta, place(w.attention_ln_beta));
    BRISK_ASSIGN_OR_RETURN(layer.output_ln_gamma, place(w.output_ln_gamma));
    BRISK_ASSIGN_OR_RETURN(layer.output_ln_beta, place(w.output_ln_beta));
  }
  return kernels::synchronize(options.device);
}

StatusOr<std::unique_ptr<BertEncoder>> BertEncoder::create(const BertConfig& config, EncoderWeights weights,
                                                           Device device) {
  return create(config, std::move(weights),
                EncoderOptions{device, device == Device::kCPU ? DType::kF32 : DType::kF16, true});
}

namespace {

// A NaN or an infinity in an f32 parameter would reach every output (and, unchecked, the caches): refused at load,
// naming the tensor and the element.
Status check_finite_f32(const Tensor& t, const std::string& name) {
  if (!t.defined() || t.dtype() != DType::kF32 || t.device() != Device::kCPU) return absl::OkStatus();
  const float* v = t.data<float>();
  if (const int64_t i = first_non_finite(v, t.numel()); i >= 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", name, " ", t.shape_string(), " holds ", v[i],
                                                   " at element ", i, "; expected finite values"));
  }
  return absl::OkStatus();
}

Status check_finite_weights(EncoderWeights& w, const BertConfig& config) {
  BRISK_RETURN_IF_ERROR(check_finite_f32(w.embeddings.word, "embeddings.word_embeddings.weight"));
  BRISK_RETURN_IF_ERROR(check_finite_f32(w.embeddings.word_scale, "embeddings.word_embeddings.scale"));
  for (const LinearSlot& slot : linear_slots(w, config)) {
    BRISK_RETURN_IF_ERROR(check_finite_f32(*slot.weight, slot.name + ".weight"));
    BRISK_RETURN_IF_ERROR(check_finite_f32(*slot.bias, slot.name + ".bias"));
    BRISK_RETURN_IF_ERROR(check_finite_f32(slot.scales->input_scale, slot.name + ".input_scale"));
  }
  // The LayerNorms (RMSNorms), position and token-type tables.
  for (const F32TensorSlot& t : f32_tensors(w, config)) BRISK_RETURN_IF_ERROR(check_finite_f32(*t.tensor, t.name));
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<BertEncoder>> BertEncoder::create(const BertConfig& config, EncoderWeights weights,
                                                           const EncoderOptions& options) {
  BRISK_RETURN_IF_ERROR(config.validate("BertEncoder config"));
  if (static_cast<int64_t>(weights.layers.size()) != config.num_hidden_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("BertEncoder: weights have ", weights.layers.size(),
                     " layers but the config has num_hidden_layers = ", config.num_hidden_layers));
  }
  const DType act = options.activation;
  if (config.is_decoder() && (options.device != Device::kCPU || act != DType::kF32)) {
    return absl::UnimplementedError(absl::StrCat("BertEncoder: a ", config.model_type, " model on ",
                                                 device_name(options.device), " with ", dtype_name(act),
                                                 " activations; expected cpu with f32 (decoder models run on the "
                                                 "CPU for now)"));
  }
  if (options.reproducible && options.device != Device::kCPU) {
    return absl::InvalidArgumentError(
        absl::StrCat("EncoderOptions::reproducible is set on ", device_name(options.device), "; expected cpu"));
  }
  BRISK_RETURN_IF_ERROR(check_device_available(DeviceSpec{options.device, 0}));
  if (!device_runs_activation(options.device, act)) {
    return absl::InvalidArgumentError(absl::StrCat("EncoderOptions::activation is ", dtype_name(act), " on ",
                                                   device_name(options.device),
                                                   "; expected f32 (cpu), or f32, f16 or bf16 (cuda)"));
  }
  BRISK_RETURN_IF_ERROR(check_finite_weights(weights, config));
  const internal::ReproducibleScope reproducible(options.reproducible);  // the kernels the Linears pick at create()
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->weights = std::move(weights);
  impl->options = options;
  impl->ffn_epilogue = activation_epilogue(config.hidden_act);
  BRISK_RETURN_IF_ERROR(impl->init_word_embeddings());
  const std::vector<LinearSlot> slots = linear_slots(impl->weights, config);
  const std::vector<std::vector<size_t>> shared_input = shared_input_linears(config);
  size_t slot = 0;
  for (EncoderLayerWeights& w : impl->weights.layers) {
    EncoderLayer layer;
    const auto index = static_cast<int64_t>(impl->layers.size());
    layer.heads = config.layer_heads(index);
    layer.kv_heads = config.layer_kv_heads(index);
    layer.ffn_width = config.layer_intermediate_size(index);
    impl->max_attention = std::max(impl->max_attention, layer.heads * config.head_dim());
    impl->max_intermediate = std::max(impl->max_intermediate, layer.ffn_width);
    const auto per_layer = static_cast<size_t>(linears_per_layer(config));
    BRISK_RETURN_IF_ERROR(check_layer_shapes(slots, slot, per_layer, impl->layers.size()));
    const size_t first = slot;
    auto group = [&](size_t g) {
      std::vector<const LinearSlot*> parts;
      for (size_t role : shared_input[g]) parts.push_back(&slots[first + role]);
      return parts;
    };
    for (int i = 0; i < 3; ++i) layer.qkv_names.push_back(slots[slot++].name);
    layer.attention_output_name = slots[slot++].name;
    layer.intermediate_name = slots[slot++].name;
    layer.output_name = slots[slot++].name;
    if (config.is_decoder()) layer.gate_name = slots[slot++].name;
    const Device d = options.device;
    BRISK_ASSIGN_OR_RETURN(layer.qkv, make_stacked(group(0), d, act));
    layer.int8_attention = options.int8_attention && d == Device::kCPU && !config.is_decoder() &&
                           kernels::int8_attention_preferred() &&
                           std::all_of(layer.qkv.begin(), layer.qkv.end(),
                                       [](const kernels::Linear& l) { return l.weight_dtype() == DType::kI8; });
    BRISK_ASSIGN_OR_RETURN(
        layer.attention_output,
        kernels::Linear::create(w.attention_output_weight, w.attention_output_bias, d, w.attention_output_scales, act));
    if (config.is_decoder()) {
      BRISK_ASSIGN_OR_RETURN(layer.gate_up, make_stacked(group(1), d, act));  // gate's columns, then up's
    } else {
      BRISK_ASSIGN_OR_RETURN(layer.intermediate, kernels::Linear::create(w.intermediate_weight, w.intermediate_bias, d,
                                                                         w.intermediate_scales, act));
    }
    BRISK_ASSIGN_OR_RETURN(layer.output,
                           kernels::Linear::create(w.output_weight, w.output_bias, d, w.output_scales, act));
    // As for Q, K and V: an int8 weight lives on only in its Linear's packed copy, not twice.
    for (Tensor* t : {&w.attention_output_weight, &w.attention_output_bias, &w.intermediate_weight,
                      &w.intermediate_bias, &w.output_weight, &w.output_bias}) {
      *t = Tensor();
    }
    impl->layers.push_back(std::move(layer));
  }
  BRISK_RETURN_IF_ERROR(impl->place_parameters());
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
    const int64_t max_len = config.max_position_embeddings - config.position_offset();
    if (len < 0 || len > max_len) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence ", i, " has ", len, " tokens; expected between 0 and ", max_len, " (max_position_embeddings ",
          config.max_position_embeddings, config.position_offset() > 0 ? " less the position offset" : "", ")"));
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

}  // namespace brisk
