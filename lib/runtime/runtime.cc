// Runtime: model directory → config, tokenizer, weights and encoder; embed() tokenizes, answers what it can from
// the result cache and hands the rest to the batcher as one unit. The batched paths are in runtime_submit.cc.
#include "brisk/runtime/runtime.h"

#include <algorithm>
#include <limits>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "absl/strings/str_join.h"
#include "brisk/core/allocator.h"
#include "brisk/core/cpu_features.h"
#include "brisk/core/device.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/core/parallel.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/tokenizer.h"
#include "brisk/model/weights.h"
#include "brisk/model/loader.h"
#include "brisk/runtime/serving_policy.h"
#include "brisk/model/classification_head.h"
#include "brisk/model/intent_head.h"
#include "native_backend.h"
#include "runtime_impl.h"

namespace brisk {

std::string default_model_dir() {
  if (const char* env = std::getenv("BRISK_MODEL_DIR"); env != nullptr && *env != '\0') return env;
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr ? home : ".", "/.cache/brisk/models/all-MiniLM-L6-v2");
}

DType runtime_activation_dtype(const RuntimeOptions& options) {
  return options.activation_dtype.value_or(options.device == Device::kCUDA ? DType::kF16 : DType::kF32);
}

namespace {

Status check_options(const RuntimeOptions& options) {
  if (options.cache.redis && options.cache.redis->signing_key.empty() && !options.cache.redis->allow_unsigned) {
    return absl::InvalidArgumentError(
        "RuntimeOptions::cache.redis.signing_key is empty; expected a secret shared by every process using the "
        "server (values read back are then authenticated), or cache.redis.allow_unsigned = true to accept "
        "unsigned values, which anyone who can write to the server can forge");
  }
  if (const std::string isa_error = cpu_isa_env_error(); !isa_error.empty()) {
    return absl::InvalidArgumentError(isa_error);
  }
  if (options.model_dir.empty()) {
    return absl::InvalidArgumentError("RuntimeOptions::model_dir is empty; expected a Hugging Face model directory");
  }
  if (options.max_seq_len < 0 || options.max_seq_len == 1) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::max_seq_len is ", options.max_seq_len,
                                                   "; expected 0 (the model's default) or at least 2"));
  }
  if (options.num_threads < 0 || options.num_threads > kMaxThreads) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::num_threads is ", options.num_threads,
                                                   "; expected 0 (the CPUs this process may use) to ", kMaxThreads));
  }
  {
    const int cores = available_cpus();
    const auto threads_of = [&](int num_threads, const batch::BatchPolicy& b) {
      return int64_t{std::max(1, b.executor_threads)} * (num_threads > 0 ? num_threads : cores);
    };
    int64_t total = threads_of(options.num_threads, options.batching);
    if (options.fallback) {
      total += threads_of(options.fallback->num_threads > 0 ? options.fallback->num_threads : options.num_threads,
                          options.fallback->batching);
    }
    if (total > kMaxComputeThreads) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RuntimeOptions: batching.executor_threads x num_threads (with the fallback's) is ", total,
          " compute threads; expected at most ", kMaxComputeThreads, " (this process may use ", cores, " CPUs)"));
    }
  }
  if (options.batching.max_queue_delay > kMaxQueueDelay) {
    return absl::InvalidArgumentError(
        absl::StrCat("RuntimeOptions::batching.max_queue_delay is ",
                     std::chrono::duration_cast<std::chrono::milliseconds>(options.batching.max_queue_delay).count(),
                     " ms; expected at most ",
                     std::chrono::duration_cast<std::chrono::milliseconds>(kMaxQueueDelay).count(), " ms"));
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
  if (options.fallback && options.fallback->model_dir.empty()) {
    return absl::InvalidArgumentError(
        "RuntimeOptions::fallback.model_dir is empty; expected a lighter model (a quantized file or a pruned model "
        "directory), or no fallback");
  }
  return absl::OkStatus();
}

Status check_device(const RuntimeOptions& options) {
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
  return absl::OkStatus();
}

// The pooling, normalisation and sequence length a runtime uses, from its options and the model's files.
Status fill_model_info(const RuntimeOptions& options, const BertConfig& config, const PoolingConfig& pooling_config,
                       ModelInfo& info) {
  const Pooling pooling = options.pooling == Pooling::kModelDefault ? pooling_config.mode : options.pooling;
  if (pooling == Pooling::kMax) {
    const std::string who = options.pooling == Pooling::kMax ? "RuntimeOptions::pooling" : pooling_config.config_path;
    return absl::UnimplementedError(
        absl::StrCat(who,
                     " asks for max pooling, which brisk does not support; expected mean, "
                     "cls or lasttoken pooling (RuntimeOptions::pooling overrides the model's choice)"));
  }
  info.model_dir = options.model_dir;
  info.model_type = config.model_type;
  info.hidden_size = static_cast<int>(config.hidden_size);
  info.num_layers = static_cast<int>(config.num_hidden_layers);
  info.num_heads = static_cast<int>(config.num_attention_heads);
  info.intermediate_size = static_cast<int>(config.intermediate_size);
  info.vocab_size = static_cast<int>(config.vocab_size);
  // Like sentence-transformers: sentence_bert_config.json's max_seq_length when the model has one.
  info.max_seq_len = resolve_max_seq_len(config, pooling_config, options.max_seq_len);
  info.pooling = pooling;
  info.normalize = options.normalize.value_or(pooling_config.normalize);
  info.prompts = pooling_config.prompts;
  info.device = options.device;
  info.activation_dtype = runtime_activation_dtype(options);
  return absl::OkStatus();
}

}  // namespace

namespace {

// The TorchScript backend over model_dir's tokenizer, with config.json's labels and the pooling files' pooling.
StatusOr<std::unique_ptr<Runtime>> create_torchscript(const RuntimeOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (options.device != Device::kCPU) {
    return absl::UnimplementedError(absl::StrCat("RuntimeOptions::torchscript runs on the cpu only; device is ",
                                                 device_string({options.device, options.device_index}),
                                                 "; expected cpu"));
  }
  LabelConfig labels;
  int64_t pad_token_id = 0;
  const std::string config_path = options.model_dir + "/config.json";
  if (fs::exists(config_path, ec)) {
    BRISK_ASSIGN_OR_RETURN(std::string text, read_text_file(config_path));
    BRISK_ASSIGN_OR_RETURN(labels, read_label_config(text, config_path));
    if (auto config = BertConfig::from_json_string(text, config_path); config.ok()) pad_token_id = config->pad_token_id;
  }
  BRISK_ASSIGN_OR_RETURN(PoolingConfig pooling, read_pooling_config(options.model_dir));
  const Pooling mode = options.pooling == Pooling::kModelDefault ? pooling.mode : options.pooling;
  BRISK_ASSIGN_OR_RETURN(
      std::unique_ptr<Backend> backend,
      make_torchscript_backend(*options.torchscript, mode, options.normalize.value_or(pooling.normalize),
                               std::move(labels.labels), labels.multi_label, pad_token_id));
  return Runtime::create(options, std::move(backend));
}

// A few-shot intent head (brisk fit-intents) over this embedding model: refused over a model with a head of its own,
// or over another model than the one it was fitted on.
StatusOr<std::optional<ClassificationHead>> load_classification_head(const std::string& path, bool model_has_head,
                                                                     const ModelInfo& info) {
  const std::string who = absl::StrCat("RuntimeOptions::classification_head '", path, "'");
  if (model_has_head) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": model '", info.model_dir,
                                                   "' is already a classification model; expected an embedding model"));
  }
  BRISK_ASSIGN_OR_RETURN(IntentHeadFile file, load_intent_head(path));
  BackendInfo embedding;
  embedding.name = "native";
  embedding.output = BackendOutput::kEmbedding;
  const std::string model_id = runtime_model_id(info, embedding);
  if (file.embedding_model_id != model_id) {
    return absl::InvalidArgumentError(absl::StrCat(who, " was fitted on the embedding model '", file.embedding_model_id,
                                                   "'; this runtime's model is '", model_id,
                                                   "' (same directory name, config, weights, max_seq_len, pooling and "
                                                   "normalisation expected); refit it with brisk fit-intents"));
  }
  if (file.head.input_size() != info.hidden_size) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": the head takes ", file.head.input_size(),
                                                   " inputs; expected the model's embedding width ", info.hidden_size));
  }
  return std::optional<ClassificationHead>(std::move(file.head));
}

}  // namespace

Runtime::Runtime(std::unique_ptr<RuntimeImpl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

StatusOr<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  if (!options.policy_path.empty()) {
    RuntimeOptions with_policy = options;
    BRISK_RETURN_IF_ERROR(load_policy_path(with_policy));
    return create(with_policy);
  }
  BRISK_RETURN_IF_ERROR(check_options(options));
  if (options.torchscript) return create_torchscript(options);
  // A bad path, then a missing device, are said before the model is read.
  BRISK_RETURN_IF_ERROR(model_source(options.model_dir).status());
  BRISK_RETURN_IF_ERROR(check_device(options));
  const std::string& dir = options.model_dir;
  BRISK_ASSIGN_OR_RETURN(LoadedModel model,
                         load_model(dir, ModelLoadOptions{options.replace_invalid_utf8, options.max_seq_len}));
  BertConfig& config = model.config;

  auto impl = std::make_unique<RuntimeImpl>();
  impl->options = options;
  ModelInfo& info = impl->info;
  BRISK_RETURN_IF_ERROR(fill_model_info(options, config, model.pooling, info));
  info.weights_file = model.weights.weights_file;
  info.num_parameters = model.weights.num_parameters;
  info.quantization = model.quantization;
  impl->tokenizer = std::make_unique<TextTokenizer>(std::move(model.tokenizer));
  impl->pair_token_types = config.type_vocab_size >= 2;
  // Packing the weights runs OpenMP regions. On the caller's thread they would leave it an OpenMP pool of its own
  // for the rest of its life, and once libgomp manages more threads than there are cores it stops spinning between
  // regions, which made every forward pass on the batcher's thread 2.5x slower. A thread that exits takes its pool
  // with it.
  StatusOr<std::unique_ptr<BertEncoder>> encoder = absl::InternalError("encoder not created");
  std::thread([&] {
    ScopedNumThreads threads(options.num_threads);  // weights are packed with the runtime's thread count
    encoder = BertEncoder::create(
        config, std::move(model.weights),
        EncoderOptions{options.device, info.activation_dtype, options.remove_padding, options.int8_attention});
  }).join();
  if (!encoder.ok()) return encoder.status();
  info.cpu_isa = cpu_isa_name(cpu_isa());
  info.linear_kernels = (*encoder)->linear_kernels();
  info.int8_attention_layers = (*encoder)->int8_attention_layers();
  if (!options.classification_head.empty()) {
    BRISK_ASSIGN_OR_RETURN(model.head,
                           load_classification_head(options.classification_head, model.head.has_value(), info));
    info.classification_head = options.classification_head;
  }
  BRISK_ASSIGN_OR_RETURN(impl->backend, make_native_backend(std::move(*encoder), std::move(model.head), info, options));
  BRISK_RETURN_IF_ERROR(finish_create(*impl));
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

StatusOr<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options, std::unique_ptr<Backend> backend) {
  if (!options.policy_path.empty()) {
    RuntimeOptions with_policy = options;
    BRISK_RETURN_IF_ERROR(load_policy_path(with_policy));
    return create(with_policy, std::move(backend));
  }
  BRISK_RETURN_IF_ERROR(check_options(options));
  if (backend == nullptr) {
    return absl::InvalidArgumentError("Runtime::create: the backend is null; expected a Backend");
  }
  BRISK_RETURN_IF_ERROR(validate_backend_info(backend->info()));
  const std::string& dir = options.model_dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("model directory '", dir,
                                            "' does not exist; expected a directory with the backend's tokenizer "
                                            "(vocab.txt or tokenizer.json)"));
  }
  BRISK_ASSIGN_OR_RETURN(TextTokenizer tokenizer, TextTokenizer::from_model_dir(dir, options.replace_invalid_utf8));
  BRISK_ASSIGN_OR_RETURN(PoolingConfig pooling, read_pooling_config(dir));
  // config.json is optional: without one, BERT's 512 positions bound the sequence length.
  BertConfig config;
  config.model_type = "";
  if (std::filesystem::exists(dir + "/config.json", ec)) {
    BRISK_ASSIGN_OR_RETURN(config, BertConfig::from_json_file(dir + "/config.json"));
  }
  auto impl = std::make_unique<RuntimeImpl>();
  impl->options = options;
  BRISK_RETURN_IF_ERROR(fill_model_info(options, config, pooling, impl->info));
  // The weights a backend computes with key its results in a shared cache: the TorchScript module's file.
  if (options.torchscript) impl->info.weights_file = options.torchscript->module;
  impl->info.device = backend->info().device;
  impl->info.activation_dtype = backend->info().activation_dtype;
  impl->tokenizer = std::make_unique<TextTokenizer>(std::move(tokenizer));
  impl->backend = std::move(backend);
  BRISK_RETURN_IF_ERROR(finish_create(*impl));
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Status finish_create(RuntimeImpl& impl) {
  const BackendInfo& backend = impl.backend->info();
  BRISK_RETURN_IF_ERROR(validate_backend_info(backend));
  ModelInfo& info = impl.info;
  info.backend = backend.name;
  info.task = backend.output == BackendOutput::kLogits ? "classification" : "embedding";
  info.labels = backend.output == BackendOutput::kLogits ? backend.labels : std::vector<std::string>{};
  info.multi_label = backend.output == BackendOutput::kLogits && backend.multi_label;
  if (backend.output == BackendOutput::kEmbedding) info.hidden_size = static_cast<int>(backend.output_dim);
  impl.output_dim = static_cast<size_t>(backend.output_dim);
  const std::string model_id = runtime_model_id(info, backend);
  BRISK_ASSIGN_OR_RETURN(
      impl.caches, RuntimeCaches::create(impl.options.cache, model_id, impl.output_dim,
                                         /*unit_norm=*/backend.output == BackendOutput::kEmbedding && info.normalize &&
                                             (backend.name == "native" || backend.name == "torchscript"),
                                         runtime_shared_model(model_id, info)));
  if (backend.output == BackendOutput::kEmbedding) {
    ModelInfo unit = info;
    unit.normalize = true;
    impl.embedding_model_id = runtime_model_id(unit, backend);
  }
  BRISK_RETURN_IF_ERROR(create_fallback(impl));
  return start_batcher(impl);
}

Status create_fallback(RuntimeImpl& impl) {
  if (!impl.options.fallback) return absl::OkStatus();
  const FallbackOptions& f = *impl.options.fallback;
  const ModelInfo& primary = impl.info;
  RuntimeOptions o = impl.options;  // the device, pooling, normalisation, sequence length and UTF-8 handling
  o.model_dir = f.model_dir;
  if (!f.classification_head.empty()) o.classification_head = f.classification_head;
  if (f.num_threads != 0) o.num_threads = f.num_threads;
  o.batching = f.batching;
  o.batching.levels = impl.options.batching.levels;  // a rerouted request keeps its priority level
  o.cache = RuntimeCacheOptions{};
  o.cache.result_cache_bytes = 0;
  o.torchscript.reset();
  o.fallback.reset();
  o.policy_path.clear();  // the policy tuned the primary; the fallback keeps FallbackOptions' batching and threads
  StatusOr<std::unique_ptr<Runtime>> fallback = Runtime::create(o);
  if (!fallback.ok()) {
    return Status(fallback.status().code(), absl::StrCat("RuntimeOptions::fallback: ", fallback.status().message()));
  }
  const ModelInfo& light = (*fallback)->info();
  const BackendInfo& light_backend = (*fallback)->backend_info();
  const BackendInfo& backend = impl.backend->info();
  auto mismatch = [&](const char* what, const std::string& got, const std::string& want) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::fallback: model '", f.model_dir, "' has ", what,
                                                   " ", got, "; expected ", want, " as model '", primary.model_dir,
                                                   "' has (the fallback must answer the same task)"));
  };
  if (light_backend.output != backend.output) {
    return mismatch("output", std::string(backend_output_name(light_backend.output)),
                    std::string(backend_output_name(backend.output)));
  }
  if (light_backend.output_dim != backend.output_dim) {
    return mismatch("output width", absl::StrCat(light_backend.output_dim), absl::StrCat(backend.output_dim));
  }
  if (light_backend.labels != backend.labels) {
    return mismatch("labels", absl::StrJoin(light_backend.labels, ","), absl::StrJoin(backend.labels, ","));
  }
  // The fallback is given the primary's token ids.
  if (light.vocab_size != primary.vocab_size) {
    return mismatch("vocab_size", absl::StrCat(light.vocab_size), absl::StrCat(primary.vocab_size));
  }
  if (light.max_seq_len != primary.max_seq_len) {
    return mismatch("max_seq_len", absl::StrCat(light.max_seq_len), absl::StrCat(primary.max_seq_len));
  }
  impl.info.fallback = f.model_dir;
  impl.fallback = std::move(*fallback);
  return absl::OkStatus();
}

std::string_view answer_path_name(AnswerPath path) {
  switch (path) {
    case AnswerPath::kModel: return "model";
    case AnswerPath::kCache: return "cache";
    case AnswerPath::kFallback: return "fallback";
    case AnswerPath::kStaleCache: return "stale";
  }
  return "unknown";
}

int Runtime::embedding_dim() const {
  return impl_->backend->info().output == BackendOutput::kEmbedding ? static_cast<int>(impl_->output_dim) : 0;
}
uint64_t Runtime::forward_passes() const { return impl_->forward_passes.value(); }
const std::string& Runtime::cache_model_id() const { return impl_->caches->model_id(); }
const std::string& Runtime::embedding_model_id() const { return impl_->embedding_model_id; }
StatusOr<size_t> Runtime::cache_invalidate_tag(std::string_view tag) const {
  return impl_->caches->invalidate_tag(tag);
}
std::string Runtime::cache_stats_json() const { return impl_->caches->stats_json(); }
const ModelInfo& Runtime::info() const { return impl_->info; }

StatusOr<size_t> Runtime::count_tokens(std::string_view text) const {
  // Through the token cache first (submit() reuses the entry); only a text that filled max_seq_len may have been
  // cut, and only that one is encoded again without the limit.
  BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, impl_->tokenize(text));
  if (ids.size() < static_cast<size_t>(impl_->info.max_seq_len)) return ids.size();
  BRISK_ASSIGN_OR_RETURN(std::vector<std::string> pieces, impl_->tokenizer->tokenize(text));
  return pieces.size() + 2;
}

StatusOr<size_t> Runtime::count_tokens(std::string_view query, std::string_view passage) const {
  BRISK_ASSIGN_OR_RETURN(EncodedPair pair,
                         impl_->tokenizer->encode_pair(query, passage, std::numeric_limits<int>::max()));
  return pair.ids.size();
}

const BackendInfo& Runtime::backend_info() const { return impl_->backend->info(); }

StatusOr<std::vector<float>> Runtime::embed(std::span<const std::string_view> texts) const {
  BRISK_RETURN_IF_ERROR(impl_->require_output(BackendOutput::kEmbedding, "Runtime::embed"));
  std::vector<float> out(texts.size() * impl_->output_dim);
  BRISK_RETURN_IF_ERROR(embed(texts, out));
  return out;
}

Status Runtime::embed(std::span<const std::string_view> texts, std::span<float> out) const {
  BRISK_RETURN_IF_ERROR(impl_->require_output(BackendOutput::kEmbedding, "Runtime::embed"));
  const size_t dim = impl_->output_dim;
  if (out.size() / dim < texts.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Runtime::embed: output holds ", out.size(),
                                                   " floats; expected at least ", texts.size(), " x ", dim));
  }
  BRISK_ASSIGN_OR_RETURN(std::vector<TokenizedInput> inputs, impl_->tokenize_texts(texts));
  std::vector<float*> rows(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) rows[i] = out.data() + i * dim;
  return impl_->rows_for(inputs, rows);
}

std::vector<int32_t> result_cache_key(const TokenizedInput& input) {
  std::vector<int32_t> key = input.ids;
  if (input.second_start > 0) key.push_back(-1 - input.second_start);
  return key;
}

TokenizedInput input_of_cache_key(std::span<const int32_t> key) {
  if (key.empty() || key.back() >= 0) return TokenizedInput{{key.begin(), key.end()}, 0};
  return TokenizedInput{{key.begin(), key.end() - 1}, -1 - key.back()};
}

Status RuntimeImpl::require_output(BackendOutput output, std::string_view call) const {
  const BackendInfo& b = backend->info();
  if (b.output == output) return absl::OkStatus();
  if (output == BackendOutput::kEmbedding) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(call), ": model '", info.model_dir, "' is a classification model (", b.output_dim,
                     " labels, backend ", b.name, "); expected an embedding model (use classify or rerank)"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(std::string(call), ": model '", info.model_dir,
                   "' is an embedding model with no classification head (backend ", b.name,
                   "); expected a *ForSequenceClassification checkpoint, or RuntimeOptions::classification_head "
                   "(brisk fit-intents)"));
}

StatusOr<std::vector<TokenizedInput>> RuntimeImpl::tokenize_texts(std::span<const std::string_view> texts) {
  std::vector<TokenizedInput> inputs(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto encoded = tokenize(texts[i]);
    if (!encoded.ok()) {
      return absl::Status(encoded.status().code(), absl::StrCat("text ", i, ": ", encoded.status().message()));
    }
    inputs[i].ids = std::move(*encoded);
  }
  return inputs;
}

StatusOr<std::vector<int32_t>> RuntimeImpl::tokenize(std::string_view text) {
  return caches->tokens(text, [this](std::string_view t) {
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<std::vector<int32_t>> ids = tokenizer->encode(t, info.max_seq_len);
    tokenize_ns.record(static_cast<uint64_t>((std::chrono::steady_clock::now() - t0).count()));
    return ids;
  });
}

StatusOr<std::string> prompt_for(const ModelInfo& info, std::string_view prompt_name) {
  if (auto it = info.prompts.find(std::string(prompt_name)); it != info.prompts.end()) return it->second;
  std::string names;
  for (const auto& [name, prompt] : info.prompts) absl::StrAppend(&names, names.empty() ? "" : ", ", "\"", name, "\"");
  return absl::InvalidArgumentError(absl::StrCat(
      "prompt_name is \"", shown_text(prompt_name), "\"; expected ",
      names.empty() ? "none: this model has no prompts (config_sentence_transformers.json)"
                    : absl::StrCat("one of the model's prompts: ", names, " (config_sentence_transformers.json)")));
}

}  // namespace brisk
