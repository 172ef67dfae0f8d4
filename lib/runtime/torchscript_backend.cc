// The torchscript backend (brisk/runtime/torchscript_backend.h), over TorchScriptModel (brisk/model): no torch type is
// seen here, so this file builds with or without libtorch (without it, TorchScriptModel::load returns
// Unimplemented naming BRISK_WITH_TORCH and so does make_torchscript_backend).
#include "brisk/runtime/torchscript_backend.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "brisk/kernels/pooling.h"
#include "brisk/model/encoder.h"
#include "brisk/model/torchscript_model.h"

namespace brisk {
namespace {

enum class Input : uint8_t { kIds, kMask, kTypes };
constexpr std::array<std::string_view, 3> kInputNames = {"input_ids", "attention_mask", "token_type_ids"};
constexpr const char* kExpectedInputs =
    "expected forward(input_ids, attention_mask) or forward(input_ids, attention_mask, token_type_ids) taking int64 "
    "tensors [batch, seq] (further arguments need default values)";

std::optional<Input> input_by_name(std::string_view name) {
  for (size_t i = 0; i < kInputNames.size(); ++i)
    if (name == kInputNames[i]) return static_cast<Input>(i);
  return std::nullopt;
}

std::string signature(const std::vector<TorchScriptModel::Argument>& args) {
  std::vector<std::string> parts;
  for (const auto& a : args) parts.push_back(absl::StrCat(a.name, ": ", a.type, a.has_default ? " = ..." : ""));
  return absl::StrCat("forward(", absl::StrJoin(parts, ", "), ")");
}

// What forward() gets, in its argument order.
StatusOr<std::vector<Input>> plan_inputs(const std::string& path, const std::vector<TorchScriptModel::Argument>& args) {
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path, ": the module's ", signature(args),
                                                   " ", why, "; ", kExpectedInputs));
  };
  // Pass every argument without a default and every known name among the first three.
  size_t n = 0;
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].has_default || (i < 3 && input_by_name(args[i].name))) n = i + 1;
  n = std::max<size_t>(n, std::min<size_t>(args.size(), 2));
  if (n < 2) return refuse(absl::StrCat("takes ", args.size(), " argument(s)"));
  if (n > 3) return refuse(absl::StrCat("takes ", n, " arguments without default values"));
  for (size_t i = 0; i < n; ++i)
    if (!args[i].tensor) return refuse(absl::StrCat("takes '", args[i].name, "' as ", args[i].type));
  std::vector<Input> plan;
  bool by_name = true;
  for (size_t i = 0; i < n; ++i) {
    std::optional<Input> in = input_by_name(args[i].name);
    if (!in || std::find(plan.begin(), plan.end(), *in) != plan.end()) by_name = false;
    if (in) plan.push_back(*in);
  }
  if (by_name) {
    if (std::find(plan.begin(), plan.end(), Input::kIds) == plan.end() ||
        std::find(plan.begin(), plan.end(), Input::kMask) == plan.end())
      return refuse("lacks input_ids or attention_mask");
    return plan;
  }
  plan.clear();
  for (size_t i = 0; i < n; ++i) plan.push_back(static_cast<Input>(i));
  return plan;
}

std::string output_name(TorchScriptOutput output) { return std::string(torchscript_output_name(output)); }

std::string shape_str(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

std::string shapes_str(const std::vector<Tensor>& outputs) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < outputs.size(); ++i) parts.push_back(absl::StrCat(i, ": ", outputs[i].shape_string()));
  return outputs.empty() ? std::string("none") : absl::StrJoin(parts, ", ");
}

// [B, T] int64 inputs in forward()'s order.
StatusOr<std::vector<Tensor>> pad_inputs(const std::string& path, const std::vector<Input>& plan, int64_t pad_token_id,
                                         const PackedSequences& batch) {
  const int64_t b = batch.size();
  const int64_t total = static_cast<int64_t>(batch.input_ids.size());
  if (batch.offsets.front() != 0 || batch.offsets.back() != total)
    return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path, ": the batch's offsets run from ",
                                                   batch.offsets.front(), " to ", batch.offsets.back(),
                                                   "; expected 0 to ", total, " (its token count)"));
  if (!batch.token_type_ids.empty() && static_cast<int64_t>(batch.token_type_ids.size()) != total)
    return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path, ": the batch has ",
                                                   batch.token_type_ids.size(), " token_type_ids; expected ", total,
                                                   " (one per token) or none"));
  int64_t t = 0;
  for (int64_t i = 0; i < b; ++i) {
    if (batch.length(i) < 1)
      return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path, ": sequence ", i,
                                                     " of the batch has ", batch.length(i),
                                                     " tokens; expected at least one"));
    t = std::max(t, batch.length(i));
  }
  BRISK_ASSIGN_OR_RETURN(Tensor ids, Tensor::empty({b, t}, DType::kI64));
  BRISK_ASSIGN_OR_RETURN(Tensor mask, Tensor::zeros({b, t}, DType::kI64));
  BRISK_ASSIGN_OR_RETURN(Tensor types, Tensor::zeros({b, t}, DType::kI64));
  int64_t* id = ids.data<int64_t>();
  int64_t* m = mask.data<int64_t>();
  int64_t* ty = types.data<int64_t>();
  std::fill(id, id + b * t, pad_token_id);
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < batch.length(i); ++j) {
      const int64_t src = batch.offsets[i] + j, dst = i * t + j;
      id[dst] = batch.input_ids[src];
      m[dst] = 1;
      if (!batch.token_type_ids.empty()) ty[dst] = batch.token_type_ids[src];
    }
  }
  std::vector<Tensor> out;
  for (Input in : plan) out.push_back(in == Input::kIds ? ids : in == Input::kMask ? mask : types);
  return out;
}

class TorchScriptBackend final : public Backend {
 public:
  struct Config {
    std::vector<Input> inputs;
    TorchScriptOutput output = TorchScriptOutput::kLastHiddenState;  // resolved: never kAuto
    int output_index = 0;
    kernels::SequencePooling pooling = kernels::SequencePooling::kMean;
    bool normalize = false;
    int64_t pad_token_id = 0;
    int64_t width = 0;         // H or L
    int64_t hidden_width = 0;  // for the activation estimate
  };

  TorchScriptBackend(TorchScriptModel model, std::string path, Config config, BackendInfo info)
      : model_(std::move(model)), path_(std::move(path)), config_(std::move(config)), info_(std::move(info)) {}

  const BackendInfo& info() const override { return info_; }

  Status run(const PackedSequences& batch, std::span<float> out) const override {
    const int64_t b = batch.size();
    if (b < 0 || batch.offsets.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("torchscript backend: ", path_, ": the batch has no offsets; expected offsets starting at 0"));
    if (static_cast<int64_t>(out.size()) != b * config_.width)
      return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path_, ": the output buffer holds ",
                                                     out.size(), " floats; expected ", b * config_.width, " (", b,
                                                     " sequences x ", config_.width, ")"));
    if (b == 0) return absl::OkStatus();
    BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, pad_inputs(path_, config_.inputs, config_.pad_token_id, batch));
    const int64_t t = inputs[0].dim(1);
    StatusOr<std::vector<Tensor>> outputs = model_.forward(inputs);
    if (!outputs.ok())
      return Status(outputs.status().code(), absl::StrCat("torchscript backend: batch of ", b, " x ", t,
                                                          " tokens: ", outputs.status().message()));
    BRISK_ASSIGN_OR_RETURN(const Tensor* chosen, pick(*outputs, b, t));
    return write_rows(*chosen, batch, t, out);
  }

  // See the header: per padded token 16 x H floats, per sequence a T^2 score matrix per head of 64.
  size_t estimate_activation_bytes(const BatchShape& shape) const override {
    const size_t h = static_cast<size_t>(std::max<int64_t>(config_.hidden_width, 1));
    const size_t heads = std::max<size_t>(h / 64, 1);
    const size_t padded = shape.size * shape.max_cost;
    return (padded * 16 * h + shape.size * heads * shape.max_cost * shape.max_cost) * sizeof(float);
  }

 private:
  StatusOr<const Tensor*> pick(const std::vector<Tensor>& outputs, int64_t b, int64_t t) const {
    const size_t k = static_cast<size_t>(config_.output_index);
    std::vector<int64_t> expected = config_.output == TorchScriptOutput::kLastHiddenState
                                        ? std::vector<int64_t>{b, t, config_.width}
                                        : std::vector<int64_t>{b, config_.width};
    if (k >= outputs.size() || outputs[k].shape() != expected)
      return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path_, ": forward() on a batch of ", b,
                                                     " x ", t, " tokens returned ", shapes_str(outputs), "; expected ",
                                                     output_name(config_.output), " ", shape_str(expected),
                                                     " at output ", k, " as at the probe"));
    return &outputs[k];
  }

  Status write_rows(const Tensor& chosen, const PackedSequences& batch, int64_t t, std::span<float> out) const {
    const int64_t b = batch.size(), w = config_.width;
    if (config_.output == TorchScriptOutput::kLastHiddenState) {
      if (b * t > std::numeric_limits<int32_t>::max())
        return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path_, ": a batch of ", b, " x ", t,
                                                       " padded tokens; expected at most 2^31 - 1"));
      std::vector<int32_t> starts(static_cast<size_t>(b)), lengths(static_cast<size_t>(b));
      for (int64_t i = 0; i < b; ++i) {
        starts[size_t(i)] = static_cast<int32_t>(i * t);
        lengths[size_t(i)] = static_cast<int32_t>(batch.length(i));
      }
      return kernels::pool_sequences<float>(Device::kCPU, chosen.data<float>(),
                                            kernels::SequenceRows{starts.data(), lengths.data(), b}, w, config_.pooling,
                                            config_.normalize, out.data());
    }
    std::memcpy(out.data(), chosen.data<float>(), sizeof(float) * size_t(b * w));
    if (config_.output == TorchScriptOutput::kPooled && config_.normalize)
      return kernels::l2_normalize(Device::kCPU, out.data(), b, w);
    return absl::OkStatus();
  }

  TorchScriptModel model_;
  std::string path_;
  Config config_;
  BackendInfo info_;
};

// The probe batch: two sequences of 3 and 2 tokens.
PackedSequences probe_batch() {
  PackedSequences p;
  const std::vector<int32_t> a = {1, 2, 3}, b = {1, 2};
  p.add(a);
  p.add(b);
  return p;
}

// Picks the output and its meaning from the probe's outputs (batch b, longest t).
Status resolve_output(const std::string& path, const std::vector<Tensor>& outputs, int64_t b, int64_t t,
                      const TorchScriptOptions& options, bool have_labels, TorchScriptBackend::Config& config) {
  auto is_hidden = [&](const Tensor& x) { return x.rank() == 3 && x.dim(0) == b && x.dim(1) == t && x.dim(2) > 0; };
  auto is_rows = [&](const Tensor& x) { return x.rank() == 2 && x.dim(0) == b && x.dim(1) > 0; };
  auto rows_kind = [&] { return have_labels ? TorchScriptOutput::kLogits : TorchScriptOutput::kPooled; };
  const std::string got = absl::StrCat("the probe forward() on a batch of ", b, " x ", t, " tokens returned ",
                                       outputs.size(), " tensor(s) (", shapes_str(outputs), ")");
  TorchScriptOutput mode = options.output;
  if (options.output_index >= 0) {
    const size_t k = static_cast<size_t>(options.output_index);
    if (k >= outputs.size())
      return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path, ": output_index is ",
                                                     options.output_index, " but ", got, "; expected an index below ",
                                                     outputs.size()));
    const Tensor& x = outputs[k];
    if (mode == TorchScriptOutput::kAuto) {
      if (is_hidden(x))
        mode = TorchScriptOutput::kLastHiddenState;
      else if (is_rows(x))
        mode = rows_kind();
    }
    const bool fits = mode == TorchScriptOutput::kLastHiddenState ? is_hidden(x)
                      : mode == TorchScriptOutput::kAuto          ? false
                                                                  : is_rows(x);
    if (!fits)
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript backend: ", path, ": output ", k, " has shape ", x.shape_string(), "; expected ",
          mode == TorchScriptOutput::kLastHiddenState ? absl::StrCat("a last hidden state [", b, ", ", t, ", H]")
          : mode == TorchScriptOutput::kAuto          ? absl::StrCat("[", b, ", ", t, ", H] or [", b, ", N]")
                                                      : absl::StrCat(output_name(mode), " [", b, ", N]"),
          " (", got, ")"));
    config.output_index = options.output_index;
  } else {
    auto first = [&](auto pred) -> int {
      for (size_t i = 0; i < outputs.size(); ++i)
        if (pred(outputs[i])) return static_cast<int>(i);
      return -1;
    };
    int k = -1;
    if (mode == TorchScriptOutput::kAuto) {
      k = first(is_hidden);
      if (k >= 0) {
        mode = TorchScriptOutput::kLastHiddenState;
      } else {
        k = first(is_rows);
        mode = rows_kind();
      }
    } else {
      k = mode == TorchScriptOutput::kLastHiddenState ? first(is_hidden) : first(is_rows);
    }
    if (k < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "torchscript backend: ", path, ": ", got, "; expected ",
          options.output == TorchScriptOutput::kAuto    ? absl::StrCat("a [", b, ", ", t, ", H] or [", b, ", N] tensor")
          : mode == TorchScriptOutput::kLastHiddenState ? absl::StrCat("a last hidden state [", b, ", ", t, ", H]")
                                                        : absl::StrCat(output_name(mode), " [", b, ", N]")));
    config.output_index = k;
  }
  config.output = mode;
  const Tensor& chosen = outputs[size_t(config.output_index)];
  config.width = chosen.dim(chosen.rank() - 1);
  return absl::OkStatus();
}

}  // namespace

std::string_view torchscript_output_name(TorchScriptOutput output) {
  switch (output) {
    case TorchScriptOutput::kAuto: return "auto";
    case TorchScriptOutput::kLastHiddenState: return "last_hidden_state";
    case TorchScriptOutput::kPooled: return "pooled";
    case TorchScriptOutput::kLogits: return "logits";
  }
  return "unknown";
}

StatusOr<std::unique_ptr<Backend>> make_torchscript_backend(const TorchScriptOptions& options, Pooling pooling,
                                                            bool normalize, std::vector<std::string> labels,
                                                            bool multi_label, int64_t pad_token_id) {
  const std::string& path = options.module;
  if (path.empty())
    return absl::InvalidArgumentError(
        "torchscript backend: TorchScriptOptions::module is empty; expected the path of a torch.jit.save file");
  if (options.output_index < -1)
    return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path, ": output_index is ",
                                                   options.output_index,
                                                   "; expected -1 (by the output rule) or an index from 0"));
  if (pooling == Pooling::kMax)
    return absl::InvalidArgumentError(absl::StrCat(
        "torchscript backend: ", path,
        ": pooling is max; expected mean, cls or lasttoken (the torchscript backend pools as the encoder)"));
  StatusOr<TorchScriptModel> model = TorchScriptModel::load(path);
  if (!model.ok())
    return Status(model.status().code(), absl::StrCat("torchscript backend: ", model.status().message()));
  BRISK_ASSIGN_OR_RETURN(std::vector<TorchScriptModel::Argument> args, model->forward_arguments());

  TorchScriptBackend::Config config;
  BRISK_ASSIGN_OR_RETURN(config.inputs, plan_inputs(path, args));
  config.pooling = sequence_pooling(pooling);
  config.normalize = normalize;
  config.pad_token_id = pad_token_id;

  // The probe, through the same padding run() uses.
  const PackedSequences probe = probe_batch();
  BRISK_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, pad_inputs(path, config.inputs, pad_token_id, probe));
  const int64_t b = probe.size(), t = inputs[0].dim(1);
  StatusOr<std::vector<Tensor>> outputs = model->forward(inputs);
  if (!outputs.ok())
    return absl::InvalidArgumentError(absl::StrCat("torchscript backend: the probe forward() on a batch of ", b, " x ",
                                                   t, " tokens failed: ", outputs.status().message()));
  BRISK_RETURN_IF_ERROR(resolve_output(path, *outputs, b, t, options, !labels.empty(), config));

  BackendInfo info;
  info.name = "torchscript";
  info.device = Device::kCPU;
  info.activation_dtype = DType::kF32;
  info.output_dim = config.width;
  if (config.output == TorchScriptOutput::kLogits) {
    info.output = BackendOutput::kLogits;
    if (labels.empty()) {
      for (int64_t i = 0; i < config.width; ++i) labels.push_back(absl::StrCat("LABEL_", i));
    } else if (static_cast<int64_t>(labels.size()) != config.width) {
      return absl::InvalidArgumentError(absl::StrCat("torchscript backend: ", path, ": ", labels.size(), " labels (",
                                                     absl::StrJoin(labels, ", "), ") for logits of width ",
                                                     config.width, " (output ", config.output_index, "); expected ",
                                                     config.width, " labels"));
    }
    info.labels = std::move(labels);
    info.multi_label = multi_label;
  } else {
    info.output = BackendOutput::kEmbedding;
  }
  const std::string how =
      config.output == TorchScriptOutput::kLastHiddenState
          ? absl::StrCat(", ", std::string(pooling_name(pooling)), " pooling", normalize ? ", normalized" : "")
      : config.output == TorchScriptOutput::kPooled && normalize ? std::string(", normalized")
                                                                 : std::string();
  info.description =
      absl::StrCat("TorchScript module ", path, ": output ", config.output_index, " (", output_name(config.output), how,
                   "), ", info.output_dim, " floats per sequence, cpu f32");

  // The hidden width for the activation estimate.
  config.hidden_width = 0;
  for (const Tensor& x : *outputs)
    if (x.rank() == 3 && x.dim(0) == b && x.dim(1) == t) {
      config.hidden_width = x.dim(2);
      break;
    }
  if (config.hidden_width == 0) {
    for (const auto& p : model->parameter_info())
      if (p.floating && p.shape.size() == 2) {
        config.hidden_width = p.shape[1];
        break;
      }
  }
  config.hidden_width = std::max(config.hidden_width, config.width);
  return std::unique_ptr<Backend>(
      std::make_unique<TorchScriptBackend>(std::move(*model), path, std::move(config), std::move(info)));
}

}  // namespace brisk
