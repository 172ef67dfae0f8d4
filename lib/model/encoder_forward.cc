// BertEncoder's forward pass, written once over brisk's ops for every device and activation type: embeddings +
// LayerNorm, then per layer a fused QKV projection, self-attention, the output projection accumulated onto the
// residual, LayerNorm, a GeLU feed-forward accumulated the same way, and LayerNorm; then pooling. Inputs are laid
// out as rows by make_token_layout (packed, or padded when padding removal is off); scratch is pooled so that
// steady-state calls do not allocate.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "brisk/core/internal/reproducible.h"
#include "brisk/core/parallel.h"
#include "brisk/kernels/attention.h"
#include "brisk/kernels/copy.h"
#include "brisk/kernels/embedding.h"
#include "brisk/kernels/layernorm.h"
#include "encoder_impl.h"

namespace brisk {
namespace {

// The token layout's index arrays where the ops read them: host vectors on the CPU, one upload on a device.
struct LayoutOnDevice {
  const int32_t* ids;
  const int32_t* type_ids;
  const int32_t* positions;
  const int32_t* starts;
  const int32_t* lengths;
};

StatusOr<LayoutOnDevice> place_layout(const TokenLayout& l, Device device, EncoderWorkspace& ws) {
  if (device == Device::kCPU) {
    return LayoutOnDevice{l.ids.data(), l.type_ids.data(), l.positions.data(), l.starts.data(), l.lengths.data()};
  }
  // The kernels cannot read the table once it is on the device: it is checked here, before the upload.
  BRISK_RETURN_IF_ERROR(kernels::check_attention_rows(
      "encoder", kernels::AttentionRows{l.starts.data(), l.lengths.data(), l.batch, l.max_len}, l.rows));
  std::vector<int32_t>& s = ws.staging;
  s.clear();
  for (const std::vector<int32_t>* v : {&l.ids, &l.type_ids, &l.positions, &l.starts, &l.lengths}) {
    s.insert(s.end(), v->begin(), v->end());
  }
  BRISK_RETURN_IF_ERROR(reserve_scratch(ws.inputs, s.size() * sizeof(int32_t), device));
  BRISK_RETURN_IF_ERROR(
      kernels::copy_bytes(device, ws.inputs.raw_data(), Device::kCPU, s.data(), s.size() * sizeof(int32_t)));
  const int32_t* base = scratch<int32_t>(ws.inputs);
  const auto rows = static_cast<size_t>(l.rows), batch = static_cast<size_t>(l.batch);
  return LayoutOnDevice{base, base + rows, base + 2 * rows, base + 3 * rows, base + 3 * rows + batch};
}

}  // namespace

std::unique_ptr<EncoderWorkspace> BertEncoder::Impl::acquire() const {
  std::lock_guard<std::mutex> lock(pool_mu);
  if (pool.empty()) return std::make_unique<EncoderWorkspace>();
  auto ws = std::move(pool.back());
  pool.pop_back();
  return ws;
}

// Keeps a few workspaces for reuse; more concurrent callers than that free theirs instead of pinning their peak
// scratch forever.
void BertEncoder::Impl::release(std::unique_ptr<EncoderWorkspace> ws) const {
  constexpr size_t kMaxPooledWorkspaces = 4;
  std::lock_guard<std::mutex> lock(pool_mu);
  if (pool.size() < kMaxPooledWorkspaces) pool.push_back(std::move(ws));
}

template <typename T>
Status BertEncoder::Impl::run(const PackedSequences& batch, const Outputs& outputs, const ActivationTap* tap,
                              EncoderWorkspace& ws) const {
  const Device device = options.device;
  const int64_t h = config.hidden_size;
  const float eps = static_cast<float>(config.layer_norm_eps);
  BRISK_ASSIGN_OR_RETURN(
      const TokenLayout layout,
      make_token_layout(batch, options.remove_padding, static_cast<int32_t>(config.pad_token_id),
                        static_cast<int32_t>(config.position_offset()), config.positions_skip_pad_ids()));
  const int64_t n = layout.rows;
  BRISK_ASSIGN_OR_RETURN(const LayoutOnDevice in, place_layout(layout, device, ws));
  const kernels::AttentionRows sequences{in.starts, in.lengths, layout.batch, layout.max_len};

  // The residual stream: the caller's buffer itself when it already has the layout and type the pass works in.
  constexpr bool kF32 = std::is_same_v<T, float>;
  const bool in_place = kF32 && device == Device::kCPU && layout.packed && outputs.hidden_states != nullptr;
  T* x = nullptr;
  if (in_place) {
    x = reinterpret_cast<T*>(outputs.hidden_states);
  } else {
    BRISK_RETURN_IF_ERROR(reserve_scratch(ws.hidden, static_cast<size_t>(n * h) * sizeof(T), device));
    x = scratch<T>(ws.hidden);
  }

  // Embeddings. A quantized word table on the CPU is dequantized row by row straight into x.
  kernels::EmbeddingTables<T> tables{
      static_cast<const T*>(word_table),        static_cast<const T*>(position_table),
      static_cast<const T*>(token_type_table),  static_cast<const T*>(embedding_ln_gamma),
      static_cast<const T*>(embedding_ln_beta), h};
  if constexpr (kF32) {
    if (word_table == nullptr) {
      parallel_for(0, n, 32, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) word_row(layout.ids[static_cast<size_t>(r)], x + r * h);
      });
    }
  }
  BRISK_RETURN_IF_ERROR(kernels::embed_layer_norm(device, tables, in.ids, in.type_ids, in.positions, eps, x, n));

  auto observe = [&](const std::string& name, const T* act, int64_t rows, int64_t cols) -> Status {
    if constexpr (kF32) {
      if (tap != nullptr && *tap) return (*tap)(name, act, rows, cols);
    }
    return absl::OkStatus();
  };
  BRISK_RETURN_IF_ERROR(reserve_scratch(ws.qkv, static_cast<size_t>(n * 3 * max_attention) * sizeof(T), device));
  BRISK_RETURN_IF_ERROR(reserve_scratch(ws.context, static_cast<size_t>(n * max_attention) * sizeof(T), device));
  // On the CPU the feed-forward runs in token chunks: its activation is the largest buffer of a layer, and chunking
  // keeps it small (and cache-resident between the two projections) at no measured cost in speed. A GPU wants the
  // whole batch in one GEMM to fill its SMs.
  const int64_t ffn_chunk = device == Device::kCPU ? std::min<int64_t>(n, kFfnChunkTokens) : n;
  BRISK_RETURN_IF_ERROR(
      reserve_scratch(ws.intermediate, static_cast<size_t>(ffn_chunk * max_intermediate) * sizeof(T), device));
  T* qkv = scratch<T>(ws.qkv);
  T* context = scratch<T>(ws.context);
  T* inter = scratch<T>(ws.intermediate);
  // LayerNorm in place on rows [first, first + rows) of x, which on the CPU also quantizes them for `consumer` when
  // that is an int8 Linear, into rows [q_row, q_row + rows) of q (the Linear then skips its own pass over them).
  // Returns whether it did.
  auto layer_norm = [&](int64_t first, int64_t rows, const void* gamma, const void* beta,
                        const kernels::Linear* consumer, kernels::QuantizedInput& q, int64_t q_row) -> StatusOr<bool> {
    T* rows_x = x + first * h;
    if constexpr (kF32) {
      if (consumer != nullptr && consumer->takes_quantized_input()) {
        BRISK_RETURN_IF_ERROR(kernels::layer_norm_bias_residual_quantize(
            device, rows_x, nullptr, nullptr, static_cast<const T*>(gamma), static_cast<const T*>(beta), eps, rows_x,
            rows, h, *consumer, q, q_row));
        return true;
      }
    }
    BRISK_RETURN_IF_ERROR(kernels::layer_norm_bias_residual<T>(device, rows_x, nullptr, nullptr,
                                                               static_cast<const T*>(gamma),
                                                               static_cast<const T*>(beta), eps, rows_x, rows, h));
    return false;
  };
  bool qkv_quantized = false;  // ws.qkv_input holds this layer's input, quantized by the last layer's LayerNorm
  for (size_t l = 0; l < layers.size(); ++l) {
    const EncoderLayer& layer = layers[l];
    const int64_t attn = layer.heads * config.head_dim();
    for (const std::string& name : layer.qkv_names) BRISK_RETURN_IF_ERROR(observe(name, x, n, h));
    if (qkv_quantized) {
      BRISK_RETURN_IF_ERROR(
          layer.qkv[0].forward(ws.qkv_input, 0, n, reinterpret_cast<float*>(qkv), kernels::GemmEpilogue::kBias));
    } else if (layer.qkv.size() == 1) {
      BRISK_RETURN_IF_ERROR(layer.qkv[0].forward(x, n, qkv, kernels::GemmEpilogue::kBias));
    } else {
      for (size_t i = 0; i < layer.qkv.size(); ++i) {
        BRISK_RETURN_IF_ERROR(
            layer.qkv[i].forward(x, n, qkv + static_cast<int64_t>(i) * attn, kernels::GemmEpilogue::kBias, 3 * attn));
      }
    }
    if constexpr (kF32) {
      if (layer.int8_attention) {
        BRISK_RETURN_IF_ERROR(
            kernels::self_attention_int8(device, qkv, sequences, n, layer.heads, config.head_dim(), context));
      }
    }
    if (!kF32 || !layer.int8_attention) {
      BRISK_RETURN_IF_ERROR(
          kernels::self_attention<T>(device, qkv, nullptr, sequences, n, layer.heads, config.head_dim(), context));
    }
    BRISK_RETURN_IF_ERROR(observe(layer.attention_output_name, context, n, attn));
    BRISK_RETURN_IF_ERROR(layer.attention_output.forward(context, n, x, kernels::GemmEpilogue::kBiasAccumulate));
    // The rest of the layer is row-wise: chunk by chunk, the attention's LayerNorm, the feed-forward and the output
    // LayerNorm run while the chunk's rows are in cache, each LayerNorm quantizing the chunk for the int8 Linear
    // after it (the feed-forward's, the next layer's QKV).
    const kernels::Linear* next_qkv =
        l + 1 < layers.size() && layers[l + 1].qkv.size() == 1 ? &layers[l + 1].qkv[0] : nullptr;
    for (int64_t t = 0; t < n; t += ffn_chunk) {
      const int64_t rows = std::min(ffn_chunk, n - t);
      BRISK_ASSIGN_OR_RETURN(
          const bool ffn_quantized,
          layer_norm(t, rows, layer.attention_ln_gamma, layer.attention_ln_beta, &layer.intermediate, ws.ffn_input, 0));
      BRISK_RETURN_IF_ERROR(observe(layer.intermediate_name, x + t * h, rows, h));
      // The feed-forward's first int8 Linear quantizes its GeLU output for the second, block by block of rows; the
      // float output is written only for a tap to see (else each block stays in cache and reaches the second
      // Linear as codes only).
      const bool down_quantized = ffn_quantized && layer.output.takes_quantized_input();
      if (down_quantized) {
        const bool tapped = tap != nullptr && *tap;
        BRISK_RETURN_IF_ERROR(layer.intermediate.forward(ws.ffn_input, 0, rows,
                                                         tapped ? reinterpret_cast<float*>(inter) : nullptr,
                                                         ffn_epilogue, layer.output, ws.ffn_down_input));
      } else if (ffn_quantized) {
        BRISK_RETURN_IF_ERROR(
            layer.intermediate.forward(ws.ffn_input, 0, rows, reinterpret_cast<float*>(inter), ffn_epilogue));
      } else {
        BRISK_RETURN_IF_ERROR(layer.intermediate.forward(x + t * h, rows, inter, ffn_epilogue));
      }
      BRISK_RETURN_IF_ERROR(observe(layer.output_name, inter, rows, layer.ffn_width));
      if (down_quantized) {
        BRISK_RETURN_IF_ERROR(layer.output.forward(ws.ffn_down_input, 0, rows, reinterpret_cast<float*>(x + t * h),
                                                   kernels::GemmEpilogue::kBiasAccumulate));
      } else {
        BRISK_RETURN_IF_ERROR(layer.output.forward(inter, rows, x + t * h, kernels::GemmEpilogue::kBiasAccumulate));
      }
      BRISK_ASSIGN_OR_RETURN(
          qkv_quantized, layer_norm(t, rows, layer.output_ln_gamma, layer.output_ln_beta, next_qkv, ws.qkv_input, t));
    }
  }

  if (outputs.pooled != nullptr) {
    float* pooled = outputs.pooled;
    if (device != Device::kCPU) {
      BRISK_RETURN_IF_ERROR(reserve_scratch(ws.pooled, static_cast<size_t>(layout.batch * h) * sizeof(float), device));
      pooled = scratch<float>(ws.pooled);
    }
    const kernels::SequenceRows rows_of{in.starts, in.lengths, layout.batch};
    BRISK_RETURN_IF_ERROR(
        kernels::pool_sequences<T>(device, x, rows_of, h, outputs.pooling, outputs.normalize, pooled));
    if (pooled != outputs.pooled) {
      BRISK_RETURN_IF_ERROR(kernels::copy_bytes(Device::kCPU, outputs.pooled, device, pooled,
                                                static_cast<size_t>(layout.batch * h) * sizeof(float)));
    }
  }
  if (outputs.hidden_states != nullptr && !in_place) {
    // f32 rows on the device, then on the host, then (padded layout) each real row to its packed place.
    const float* rows_f32 = reinterpret_cast<const float*>(x);
    if constexpr (!kF32) {
      BRISK_RETURN_IF_ERROR(reserve_scratch(ws.hidden_f32, static_cast<size_t>(n * h) * sizeof(float), device));
      BRISK_RETURN_IF_ERROR((kernels::convert<T, float>(device, x, scratch<float>(ws.hidden_f32), n * h)));
      rows_f32 = scratch<float>(ws.hidden_f32);
    }
    float* dst = outputs.hidden_states;
    if (!layout.packed) {
      ws.host_rows.resize(static_cast<size_t>(n * h));
      dst = ws.host_rows.data();
    }
    BRISK_RETURN_IF_ERROR(
        kernels::copy_bytes(Device::kCPU, dst, device, rows_f32, static_cast<size_t>(n * h) * sizeof(float)));
    BRISK_RETURN_IF_ERROR(kernels::synchronize(device));
    if (!layout.packed) {
      for (int64_t r = 0; r < n; ++r) {
        const int32_t t = layout.source_rows[static_cast<size_t>(r)];
        if (t >= 0) std::memcpy(outputs.hidden_states + int64_t{t} * h, dst + r * h, static_cast<size_t>(h) * 4);
      }
    }
  }
  return kernels::synchronize(device);
}

Status BertEncoder::Impl::run_any(const PackedSequences& batch, const Outputs& outputs,
                                  const ActivationTap* tap) const {
  if (tap != nullptr && *tap && options.device != Device::kCPU) {
    return absl::UnimplementedError(absl::StrCat("BertEncoder::forward with an activation tap on ",
                                                 device_name(options.device),
                                                 "; expected a cpu encoder (calibration and pruning run on cpu)"));
  }
  const internal::ReproducibleScope reproducible(options.reproducible);
  auto ws = acquire();
  Status s;
  if (config.is_decoder()) {
    s = run_decoder(batch, outputs, tap, *ws);
  } else {
    switch (options.activation) {
      case DType::kF16: s = run<float16_t>(batch, outputs, tap, *ws); break;
      case DType::kBF16: s = run<bfloat16_t>(batch, outputs, tap, *ws); break;
      default: s = run<float>(batch, outputs, tap, *ws); break;
    }
  }
  // A failed pass may leave work queued on this thread's stream that still uses the workspace: wait for it before
  // another caller can take the workspace.
  if (!s.ok()) kernels::synchronize(options.device).IgnoreError();
  release(std::move(ws));
  return s;
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
  return impl_->run_any(batch, Impl::Outputs{hidden_states}, &tap);
}

Status BertEncoder::embed(const PackedSequences& batch, Pooling pooling, bool normalize, float* out) const {
  if (out == nullptr)
    return absl::InvalidArgumentError(
        "BertEncoder::embed: out is null; expected a buffer of batch.size() x hidden_size floats");
  if (pooling == Pooling::kMax) {
    return absl::UnimplementedError(
        "BertEncoder::embed: max pooling is not supported; expected mean, cls or lasttoken");
  }
  BRISK_RETURN_IF_ERROR(impl_->check_input(batch));
  const int64_t h = impl_->config.hidden_size;
  if (batch.total_tokens() == 0) {
    std::fill(out, out + batch.size() * h, 0.0f);
    return absl::OkStatus();
  }
  return impl_->run_any(batch, Impl::Outputs{nullptr, out, sequence_pooling(pooling), normalize}, nullptr);
}

}  // namespace brisk
