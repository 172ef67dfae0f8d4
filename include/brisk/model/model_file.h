// brisk's model file, written by the quantizer and read by the model (brisk/model/loader.h): one self-contained
// safetensors file holding a quantized encoder's weights, its config.json, the small files of its source model
// directory (tokenizer, pooling) and how each layer was quantized. A runtime needs nothing else; the file is
// memory-mapped and most tensors are zero-copy views into the mapping.
//
//   QuantizedModel m;
//   BRISK_ASSIGN_OR_RETURN(m.model_files, read_model_files(dir));
//   ... fill m.config, m.weights (quantized by brisk/quant/quantizer.h), m.precisions, m.plan, m.source_sha256 ...
//   BRISK_RETURN_IF_ERROR(save_quantized_model("minilm.int8.safetensors", m));
//   BRISK_ASSIGN_OR_RETURN(QuantizedModel back, load_quantized_model("minilm.int8.safetensors"));
//   BRISK_ASSIGN_OR_RETURN(auto encoder, BertEncoder::create(back.config, back.weights, Device::kCPU));
//   BRISK_ASSIGN_OR_RETURN(auto tok, WordPieceTokenizer::from_model_files(back.model_files, false, path));
//
// Tensors, under the source model's names without a prefix ("encoder.layer.0.attention.self.query.weight"):
//   <linear>.weight         f32 (fp32), bf16 (bf16), i8 (int8-*), u8 [out, in/2] (int4-gN, packed nibbles)
//   <linear>.bias           f32 [out]
//   <linear>.weight_scale   int8: f32 [out] or [1]; int4: f16 [out, in/N]
//   <linear>.weight_min     int4-gN-min only: f16 [out, in/N]
//   embeddings.word_embeddings.weight (+ .weight_scale f32 [vocab] for int8, f16 [vocab, hidden/N] for int4, and
//                           .weight_min for int4-gN-min), and every other tensor of the encoder in f32 (position and
//                           token-type embeddings, LayerNorms).
//   classifier.*, pre_classifier.*, bert.pooler.dense.*  a sequence-classification head, f32, as in the source.
// Metadata (the safetensors "__metadata__", string to string):
//   brisk.format         "brisk-quantized/1" (required; what is_quantized_model_file looks for)
//   brisk.config         config.json's text (required)
//   brisk.files          JSON object: relative path -> text of the source model's other small files (required)
//   brisk.precisions     JSON object: layer -> {"precision": "int8-static", "activation_scale": 0.0123}; the
//                        activation scale only for int8-static; layers not listed are fp32 (required)
//   brisk.plan, brisk.source_sha256 (64 hex digits or empty), brisk.report (JSON or empty)   (optional)
//
// load_quantized_model checks everything before it returns: the format, the metadata's JSON, every layer name
// against the config, every precision's tensors (presence, dtype, shape, group size against the scales' shape,
// finite positive scales), no tensor left over. Its errors name the file and the tensor or metadata key.
// save_quantized_model runs the same checks on what it is about to write, so it never writes a file that the loader
// refuses.
//
// int4 linear layers are weight-only: load dequantizes them to an f32 weight in `weights` and keeps the packed form in
// `int4_linears`; save writes `int4_linears[layer]` when present, else quantizes the f32 weight.
//
// Thread safety: the functions may run concurrently (save to distinct paths); a QuantizedModel is a value type whose
// tensors may be read from any number of threads.
#pragma once

#include <map>
#include <string>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/config.h"
#include "brisk/model/weights.h"
#include "brisk/kernels/precision.h"
#include "brisk/kernels/quant_format.h"

namespace brisk {

inline constexpr const char* kQuantizedFormat = "brisk-quantized/1";

struct BRISK_API QuantizedModel {
  BertConfig config;
  // Small files of the source model directory by relative path: config.json, tokenizer.json, vocab.txt,
  // tokenizer_config.json, special_tokens_map.json, modules.json, the Pooling module's config.json,
  // sentence_bert_config.json (whichever exist). config.json is required by save.
  std::map<std::string, std::string> model_files;
  EncoderWeights weights;                           // as quantized (dtypes per the precisions)
  std::map<std::string, PrecisionSpec> precisions;  // by layer name (linear slots + kWordEmbeddingsName); missing: fp32
  std::map<std::string, Int4Matrix> int4_linears;   // packed int4 linear layers by name (see above)
  std::string plan;                                 // the plan it was made with
  std::string source_sha256;                        // hex SHA-256 of the source weights file
  std::string report_json;                          // the per-layer report (opaque JSON text), may be empty
  // A sequence-classification model's head, unquantized under its Hugging Face names
  // (sequence_classification_head_tensors); empty for an embedding model. config.json gives its labels.
  NamedTensors head_tensors;
};

BRISK_API Status save_quantized_model(const std::string& path, const QuantizedModel& model);
BRISK_API StatusOr<QuantizedModel> load_quantized_model(const std::string& path);

// True for a regular file that opens as safetensors and whose metadata has brisk.format.
BRISK_API bool is_quantized_model_file(const std::string& path);
// OK when is_quantized_model_file(path); otherwise why not, precisely: not a regular file, a safetensors error (its
// header length, JSON, a tensor's dtype, shape or data_offsets, a file cut short), or no brisk.format metadata.
BRISK_API Status check_quantized_model_file(const std::string& path);

}  // namespace brisk
