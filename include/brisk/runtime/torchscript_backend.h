// The torchscript backend: a traced or scripted PyTorch module (torch.jit.save) run through libtorch behind brisk's
// Backend interface, so that an exported model gets the runtime's tokenizer, batching, caching and metrics.
//
//   TorchScriptOptions ts;
//   ts.module = "/models/minilm/model.pt";   // forward(input_ids, attention_mask[, token_type_ids])
//   BRISK_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
//                          make_torchscript_backend(ts, Pooling::kMean, /*normalize=*/true, /*labels=*/{},
//                                                   /*multi_label=*/false));
//   // backend->info(): name "torchscript", kEmbedding, output_dim = the hidden width
//   auto rt = Runtime::create(opts, std::move(backend));   // opts.model_dir gives the tokenizer
//
// Inputs. forward()'s arguments after self decide what the module gets: two (input_ids, attention_mask) or three
// (input_ids, attention_mask, token_type_ids); arguments past those need default values. When every passed
// argument is named input_ids, attention_mask or token_type_ids, tensors go by name (any order); otherwise by
// position in that order. Each is an int64 tensor [B, T], T the batch's longest sequence, right-padded: input_ids
// with pad_token_id, attention_mask 1 for tokens and 0 for padding, token_type_ids with 0 (all 0 when the batch has
// none). Any other signature (one argument, a non-tensor argument, more than three without defaults) is refused.
//
// Output. forward() may return a tensor, or a tuple/list/dict of tensors (None entries skipped, nested ones
// flattened in order: TorchScriptModel::forward's order). TorchScriptOptions::output says which of them is the row:
//   kLastHiddenState  a [B, T, H] tensor, pooled by brisk over each sequence's real tokens: Pooling::kMean (the
//                     mean over the attention mask's 1s; kModelDefault means kMean here) or kCls (the first token),
//                     then L2-normalised when `normalize`. Rows are kEmbedding of width H.
//   kPooled           a [B, H] tensor that the module pooled itself; L2-normalised when `normalize`. kEmbedding.
//   kLogits           a [B, L] tensor of logits, copied as is. kLogits of width L; `labels` must have L names,
//                     or be empty for "LABEL_0" .. "LABEL_<L-1>".
//   kAuto             decided from a probe forward() at creation: the first [B, T, H] output is the hidden state;
//                     when there is none, the first [B, N] output is logits when `labels` is non-empty, a pooled
//                     embedding otherwise.
// output_index picks the tensor (0-based, in the flattened order); -1 takes the first of the required rank ([B, T, *]
// for the hidden state, [B, *] otherwise). With kAuto and an index, the tensor's rank decides as above.
//
// Creation loads the module, checks forward()'s arguments and runs the probe: two sequences of 3 and 2 tokens (ids
// 1, 2, 3 and 1, 2; pad_token_id after them). Errors name the module's path: NotFound (no file), InvalidArgument
// (not a TorchScript module, a signature unlike the above, a probe failure, no output of the required shape,
// output_index out of range, a label count unlike L, Pooling::kMax), Unimplemented in a build without libtorch
// (naming BRISK_WITH_TORCH).
//
// run() pads the batch as above, runs forward() under torch::NoGradGuard and writes one row per sequence. A row does
// not depend on the rest of its batch as long as the module masks its padding (attention_mask); brisk's pooling
// only reads real tokens. Errors from libtorch become InvalidArgument naming the path; a batch with an empty
// sequence, bad offsets or an output shaped unlike the probe's is InvalidArgument.
//
// estimate_activation_bytes: with P = size * max_cost padded tokens and H the hidden width (the last dimension of
// the probe's first [B, T, H] output; without one, the second dimension of the module's first floating-point
// matrix parameter, usually the word embedding table; at least the output width):
//   (P * 16 * H + size * max(H / 64, 1) * max_cost^2) * 4 bytes
// i.e. per padded token the hidden state, Q, K, V, context, residuals and a 4H FFN intermediate, plus the copies of
// the outputs; per sequence one max_cost^2 score matrix per head of 64. An estimate, not a count of allocations.
//
// Thread safety: the backend is immutable after creation; run() and estimate_activation_bytes() may be called from
// several threads at once (TorchScriptModel::forward shares the module; libtorch's executor locks its own lazy
// compilation, and each call has its own NoGradGuard and tensors).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/config.h"
#include "brisk/runtime/backend.h"

namespace brisk {

// Which of a module's outputs is the backend's row (see the header comment).
enum class TorchScriptOutput : uint8_t { kAuto, kLastHiddenState, kPooled, kLogits };

// "auto", "last_hidden_state", "pooled", "logits".
BRISK_API std::string_view torchscript_output_name(TorchScriptOutput output);

struct BRISK_API TorchScriptOptions {
  std::string module;                                   // path of the .pt file (torch.jit.save)
  TorchScriptOutput output = TorchScriptOutput::kAuto;  // which output is the row
  int output_index = -1;                                // which tensor of a tuple/list/dict output; -1: by the rule
};

// Loads options.module and probes it; see the header comment for the rules and errors. `pooling` and `normalize`
// apply to embeddings (hidden state: both; pooled: normalize only), `labels` and `multi_label` to logits.
BRISK_API StatusOr<std::unique_ptr<Backend>> make_torchscript_backend(const TorchScriptOptions& options,
                                                                      Pooling pooling, bool normalize,
                                                                      std::vector<std::string> labels, bool multi_label,
                                                                      int64_t pad_token_id = 0);

}  // namespace brisk
