// BertEncoder: the forward pass of a BERT-family encoder (BERT, MiniLM, DistilBERT configs) on brisk's kernels,
// from token ids to pooled sentence embeddings. Sequences are packed back to back (no padding), so a batch of
// mixed lengths costs only its real tokens, and a sentence's embedding does not depend on its batch.
//
//   BRISK_ASSIGN_OR_RETURN(auto encoder, BertEncoder::create(config, std::move(weights), Device::kCPU));
//   PackedSequences batch;
//   batch.add(tokenizer.encode("hello world", 128).value());
//   std::vector<float> out(batch.size() * encoder->hidden_size());
//   BRISK_RETURN_IF_ERROR(encoder->embed(batch, Pooling::kMean, /*normalize=*/true, out.data()));
//
// The weights may be quantized (bf16 or i8 linear layers, i8 or int4 word embeddings; see brisk/quant/): each
// layer runs in the precision its weights are stored in.
//
// On a GPU the same forward pass runs over the ops' CUDA twins (one code path, brisk/kernels/):
//   EncoderOptions opts{.device = Device::kCUDA, .activation = DType::kF16};
//   BRISK_ASSIGN_OR_RETURN(auto gpu, BertEncoder::create(config, std::move(weights), opts));
// Weights are uploaded once (f32 / bf16 converted to the activation dtype; word tables dequantized); inputs and
// outputs stay host memory. The dense layers see the batch's real tokens only (remove_padding) or every text padded
// to the longest; attention rebuilds the padding it needs either way.
//
// Thread safety: a BertEncoder is immutable after create(); forward() and embed() may run concurrently (on CUDA,
// each calling thread's work goes on its own stream).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <span>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/sequences.h"
#include "brisk/core/status.h"
#include "brisk/core/tensor.h"
#include "brisk/kernels/pooling.h"
#include "brisk/model/config.h"
#include "brisk/model/weights.h"

namespace brisk {

// Sees the input of every linear layer during a tapped forward(): the layer's name in the model file (see
// linear_slots), and its rows x cols activations. Calibration uses it; an error stops the pass.
using ActivationTap =
    std::function<Status(std::string_view linear_name, const float* activations, int64_t rows, int64_t cols)>;

class BertEncoder;

// The pooling kernel of a concrete Pooling mode (mean, cls, lasttoken); kMax and kModelDefault have none and give
// kMean (callers refuse max first).
inline kernels::SequencePooling sequence_pooling(Pooling pooling) {
  switch (pooling) {
    case Pooling::kCls: return kernels::SequencePooling::kCls;
    case Pooling::kLastToken: return kernels::SequencePooling::kLast;
    default: return kernels::SequencePooling::kMean;
  }
}

// A user's accuracy metric (the quantizer's auto plan, the pruner's sensitivity analysis): a score of the candidate
// encoder, higher is better.
using AccuracyMetric = std::function<StatusOr<double>(const BertEncoder& candidate)>;

// Progress of a long step (calibration, a sensitivity sweep): `stage` names it, done of total units.
using Progress = std::function<void(std::string_view stage, int64_t done, int64_t total)>;

struct EncoderOptions {
  Device device = Device::kCPU;
  // The activations' dtype: kF32 on the CPU; kF32, kF16 or kBF16 on CUDA.
  DType activation = DType::kF32;
  // Dense layers on the real tokens only (EFF-FT's padding removal); false: every text padded to the batch's
  // longest, as frameworks without it run. Results agree either way; only the speed differs.
  bool remove_padding = true;
  // On the CPU, a layer whose Q, K and V projections all have i8 weights runs int8 self-attention
  // (self_attention_int8) where int8_attention_preferred() says it is the faster: avx_vnni and the AVX-512 levels.
  // false keeps float attention everywhere (the int8 plan's accuracy then comes from its linears alone).
  bool int8_attention = true;
  // CPU only: every op on its scalar kernel and the f32 GEMMs on brisk's fixed-order GEMM instead of oneDNN, so
  // that the hidden states are the same bits on every x86-64 CPU, at every BRISK_ISA cap and thread count
  // (brisk/core/internal/reproducible.h). Slower than the CPU's best path; the quantizer calibrates on it, so that
  // `brisk quantize` writes the same file on every CPU.
  bool reproducible = false;
};

class BRISK_API BertEncoder {
 public:
  static StatusOr<std::unique_ptr<BertEncoder>> create(const BertConfig& config, EncoderWeights weights,
                                                       const EncoderOptions& options);
  // EncoderOptions{device}, with f16 activations on CUDA.
  static StatusOr<std::unique_ptr<BertEncoder>> create(const BertConfig& config, EncoderWeights weights, Device device);
  ~BertEncoder();

  const BertConfig& config() const;
  const EncoderOptions& options() const;
  int64_t hidden_size() const;
  // What computes its Linear layers: one "<weight dtype>: <kernel>" entry per distinct pair, in layer order, e.g.
  // "i8: avx2 vpmaddwd", "f32: oneDNN brg:avx512_core" (Linear::kernel_name()).
  std::vector<std::string> linear_kernels() const;
  // How many layers run int8 self-attention (EncoderOptions::int8_attention); the rest run it in the activation
  // dtype.
  int64_t int8_attention_layers() const;

  // Last hidden states, [total_tokens, hidden] f32 in host memory, row t for packed token t.
  Status forward(const PackedSequences& batch, float* hidden_states) const;
  // With a tap (cpu only: on CUDA a tap is UNIMPLEMENTED).
  Status forward(const PackedSequences& batch, float* hidden_states, const ActivationTap& tap) const;
  // Pooled embeddings, [batch.size(), hidden] f32 in host memory; mean pooling over each sequence or its first
  // token.
  Status embed(const PackedSequences& batch, Pooling pooling, bool normalize, float* out) const;

  struct Impl;

 private:
  explicit BertEncoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk
