// Runtime: model directory → config, tokenizer, weights and encoder; embed() tokenizes, answers what it can from
// the result cache and hands the rest to the batcher as one unit. The batched paths are in runtime_submit.cc.
#include "brisk/runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "brisk/core/allocator.h"
#include "brisk/core/device.h"
#include "brisk/core/parallel.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/tokenizer.h"
#include "brisk/model/weights.h"
#include "brisk/quant/model_file.h"
#include "runtime_impl.h"

namespace brisk {

std::string default_model_dir() {
  if (const char* env = std::getenv("BRISK_MODEL_DIR"); env != nullptr && *env != '\0') return env;
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr ? home : ".", "/.cache/brisk/models/all-MiniLM-L6-v2");
}

namespace {

// What create() needs from a model, from either of its two forms.
struct LoadedModel {
  BertConfig config;
  PoolingConfig pooling;
  WordPieceTokenizer tokenizer;
  EncoderWeights weights;
  std::string quantization;  // the plan of a quantized model file; empty for a model directory
};

StatusOr<LoadedModel> load_model_dir(const std::string& dir, bool replace_invalid_utf8) {
  BRISK_ASSIGN_OR_RETURN(BertConfig config, BertConfig::from_json_file(dir + "/config.json"));
  BRISK_ASSIGN_OR_RETURN(PoolingConfig pooling, read_pooling_config(dir));
  BRISK_ASSIGN_OR_RETURN(WordPieceTokenizer tokenizer, WordPieceTokenizer::from_model_dir(dir, replace_invalid_utf8));
  BRISK_ASSIGN_OR_RETURN(EncoderWeights weights, EncoderWeights::load(dir, config));
  return LoadedModel{std::move(config), std::move(pooling), std::move(tokenizer), std::move(weights), ""};
}

StatusOr<LoadedModel> load_model_file(const std::string& path, bool replace_invalid_utf8) {
  BRISK_ASSIGN_OR_RETURN(quant::QuantizedModel q, quant::load_quantized_model(path));
  BRISK_ASSIGN_OR_RETURN(PoolingConfig pooling, read_pooling_config_from_files(q.model_files, path));
  BRISK_ASSIGN_OR_RETURN(WordPieceTokenizer tokenizer,
                         WordPieceTokenizer::from_model_files(q.model_files, replace_invalid_utf8, path));
  q.weights.weights_file = path;
  return LoadedModel{std::move(q.config), std::move(pooling), std::move(tokenizer), std::move(q.weights),
                     q.plan.empty() ? std::string("quantized") : q.plan};
}

}  // namespace

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

StatusOr<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (options.model_dir.empty()) {
    return absl::InvalidArgumentError("RuntimeOptions::model_dir is empty; expected a Hugging Face model directory");
  }
  const bool quantized_file =
      fs::is_regular_file(options.model_dir, ec) && quant::is_quantized_model_file(options.model_dir);
  if (!quantized_file && fs::exists(options.model_dir, ec) && !fs::is_directory(options.model_dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("model path '", options.model_dir,
                                                   "' is a file but not a quantized model file (brisk quantize's "
                                                   "output); expected that, or a directory with config.json, "
                                                   "model.safetensors or pytorch_model.bin, and vocab.txt or "
                                                   "tokenizer.json"));
  }
  if (!quantized_file && !fs::is_directory(options.model_dir, ec)) {
    return absl::NotFoundError(absl::StrCat("model directory '", options.model_dir,
                                            "' does not exist; expected a directory with config.json, "
                                            "model.safetensors or pytorch_model.bin, and vocab.txt or tokenizer.json"));
  }
  if (options.max_seq_len < 0 || options.max_seq_len == 1) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::max_seq_len is ", options.max_seq_len,
                                                   "; expected 0 (the model's default) or at least 2"));
  }
  if (options.num_threads < 0 || options.num_threads > kMaxThreads) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::num_threads is ", options.num_threads,
                                                   "; expected 0 (one per core) to ", kMaxThreads));
  }
  if (options.batching.max_batch_size > kMaxBatchSize) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::batching.max_batch_size is ",
                                                   options.batching.max_batch_size, "; expected 1 to ", kMaxBatchSize));
  }
  if (options.batching.max_queue_size > kMaxQueueSize) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::batching.max_queue_size is ",
                                                   options.batching.max_queue_size, "; expected 1 to ", kMaxQueueSize));
  }
  if (options.cache.token_cache_entries > kMaxTokenCacheEntries) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::cache.token_cache_entries is ",
                                                   options.cache.token_cache_entries, "; expected 0 (off) to ",
                                                   kMaxTokenCacheEntries));
  }
  const DeviceSpec device{options.device, options.device == Device::kCPU ? 0 : options.device_index};
  if (Status s = check_device_available(device); !s.ok()) {
    return Status(s.code(), absl::StrCat("RuntimeOptions::device: ", s.message()));
  }
  if (device.index != 0) {
    return absl::UnimplementedError(absl::StrCat("RuntimeOptions::device_index is ", device.index,
                                                 "; this version of brisk runs on cuda:0 only; expected 0"));
  }
  const DType activation = runtime_activation_dtype(options);
  if (!device_runs_activation(options.device, activation)) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::activation_dtype is ", dtype_name(activation),
                                                   " on ", device_string(device),
                                                   "; expected f32 on cpu, or f32, f16 or bf16 on cuda"));
  }
  if (options.device == Device::kCUDA && options.device_memory_limit > 0) {
    BRISK_RETURN_IF_ERROR(set_device_memory_limit(Device::kCUDA, options.device_memory_limit));
  }
  const std::string dir = options.model_dir;
  BRISK_ASSIGN_OR_RETURN(LoadedModel model, quantized_file ? load_model_file(dir, options.replace_invalid_utf8)
                                                           : load_model_dir(dir, options.replace_invalid_utf8));
  BertConfig& config = model.config;
  PoolingConfig& pooling_config = model.pooling;
  WordPieceTokenizer& tokenizer = model.tokenizer;
  EncoderWeights& weights = model.weights;
  const Pooling pooling = options.pooling == Pooling::kModelDefault ? pooling_config.mode : options.pooling;
  if (pooling == Pooling::kMax) {
    const std::string who = options.pooling == Pooling::kMax ? "RuntimeOptions::pooling" : pooling_config.config_path;
    return absl::UnimplementedError(
        absl::StrCat(who,
                     " asks for max pooling, which brisk does not support; expected mean "
                     "or cls pooling (RuntimeOptions::pooling overrides the model's choice)"));
  }
  if (tokenizer.vocab_size() > config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": the tokenizer has ", tokenizer.vocab_size(),
                                                   " tokens but config.json has vocab_size = ", config.vocab_size));
  }

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  ModelInfo& info = impl->info;
  info.model_dir = dir;
  info.model_type = config.model_type;
  info.weights_file = weights.weights_file;
  info.num_parameters = weights.num_parameters;
  info.hidden_size = static_cast<int>(config.hidden_size);
  info.num_layers = static_cast<int>(config.num_hidden_layers);
  info.num_heads = static_cast<int>(config.num_attention_heads);
  info.intermediate_size = static_cast<int>(config.intermediate_size);
  info.vocab_size = static_cast<int>(config.vocab_size);
  // Like sentence-transformers: sentence_bert_config.json's max_seq_length when the model has one.
  const int model_max = static_cast<int>(config.max_position_embeddings);
  const int model_default = pooling_config.max_seq_length > 0
                                ? static_cast<int>(std::min<int64_t>(pooling_config.max_seq_length, model_max))
                                : model_max;
  info.max_seq_len = options.max_seq_len == 0 ? model_default : std::min(options.max_seq_len, model_max);
  info.pooling = pooling;
  info.normalize = options.normalize.value_or(pooling_config.normalize);
  info.device = options.device;
  info.activation_dtype = activation;
  info.quantization = model.quantization;

  impl->tokenizer = std::make_unique<WordPieceTokenizer>(std::move(tokenizer));
  {
    // Packing the weights runs OpenMP regions. On the caller's thread they would leave it an OpenMP pool of
    // its own for the rest of its life, and once libgomp manages more threads than there are cores it stops
    // spinning between regions, which made every forward pass on the batcher's thread 2.5x slower. A thread
    // that exits takes its pool with it.
    StatusOr<std::unique_ptr<BertEncoder>> encoder = absl::InternalError("encoder not created");
    std::thread([&] {
      ScopedNumThreads threads(options.num_threads);  // weights are packed with the runtime's thread count
      encoder = BertEncoder::create(config, std::move(weights),
                                    EncoderOptions{options.device, activation, options.remove_padding});
    }).join();
    if (!encoder.ok()) return encoder.status();
    impl->encoder = std::move(*encoder);
  }
  BRISK_ASSIGN_OR_RETURN(impl->caches, RuntimeCaches::create(options.cache, runtime_model_id(info),
                                                             static_cast<size_t>(info.hidden_size)));
  BRISK_RETURN_IF_ERROR(start_batcher(*impl));
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

int Runtime::embedding_dim() const { return impl_->info.hidden_size; }
uint64_t Runtime::forward_passes() const { return impl_->forward_passes.value(); }
const std::string& Runtime::cache_model_id() const { return impl_->caches->model_id(); }
StatusOr<size_t> Runtime::cache_invalidate_tag(std::string_view tag) const {
  return impl_->caches->invalidate_tag(tag);
}
std::string Runtime::cache_stats_json() const { return impl_->caches->stats_json(); }
const ModelInfo& Runtime::info() const { return impl_->info; }

StatusOr<std::vector<float>> Runtime::embed(std::span<const std::string_view> texts) const {
  std::vector<float> out(texts.size() * static_cast<size_t>(embedding_dim()));
  BRISK_RETURN_IF_ERROR(embed(texts, out));
  return out;
}

Status Runtime::embed(std::span<const std::string_view> texts, std::span<float> out) const {
  const size_t dim = static_cast<size_t>(embedding_dim());
  if (out.size() / dim < texts.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Runtime::embed: output holds ", out.size(),
                                                   " floats; expected at least ", texts.size(), " x ", dim));
  }
  std::vector<std::vector<int32_t>> ids;  // the result-cache misses
  std::vector<float*> rows;               // their rows in `out`
  for (size_t i = 0; i < texts.size(); ++i) {
    auto encoded = impl_->tokenize(texts[i]);
    if (!encoded.ok()) {
      return absl::Status(encoded.status().code(), absl::StrCat("text ", i, ": ", encoded.status().message()));
    }
    float* row = out.data() + i * dim;
    if (std::optional<std::vector<float>> hit = impl_->caches->lookup(*encoded)) {
      std::copy(hit->begin(), hit->end(), row);
      continue;
    }
    ids.push_back(std::move(*encoded));
    rows.push_back(row);
  }
  return impl_->embed_ids(ids, rows);
}

Status Runtime::Impl::encode(std::span<const std::vector<int32_t>> ids, float* out,
                             std::span<const std::vector<std::string>> cache_tags) const {
  {
    ScopedNumThreads threads(options.num_threads);
    PackedSequences packed;
    for (const std::vector<int32_t>& seq : ids) packed.add(seq);
    BRISK_RETURN_IF_ERROR(encoder->embed(packed, info.pooling, info.normalize, out));
    forward_passes.add(1);
  }
  const size_t dim = static_cast<size_t>(info.hidden_size);
  for (size_t i = 0; i < ids.size(); ++i) {
    caches->store(ids[i], {out + i * dim, dim}, i < cache_tags.size() ? cache_tags[i] : std::span<const std::string>{});
  }
  return absl::OkStatus();
}

StatusOr<std::vector<int32_t>> Runtime::Impl::tokenize(std::string_view text) {
  return caches->tokens(text, [this](std::string_view t) {
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<std::vector<int32_t>> ids = tokenizer->encode(t, info.max_seq_len);
    tokenize_ns.record(static_cast<uint64_t>((std::chrono::steady_clock::now() - t0).count()));
    return ids;
  });
}

}  // namespace brisk
