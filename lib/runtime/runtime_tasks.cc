// The classification tasks of Runtime: classify() and submit_classify() over a model's labels, and rerank() and
// submit_rerank() of (query, passage) pairs by a one-label cross-encoder. All share embed()'s caches and batching
// (runtime_submit.cc).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "brisk/model/classification_head.h"
#include "runtime_impl.h"

namespace brisk {

namespace {

Status check_top_k(int top_k, size_t num_labels, std::string_view call) {
  if (top_k < 1 || static_cast<size_t>(top_k) > num_labels) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(call), ": top_k is ", top_k, "; expected 1 to ",
                                                   num_labels, " (the model's number of labels)"));
  }
  return absl::OkStatus();
}

// A strict weak order on scores, best first, with NaN (a model that overflowed) after every number.
bool better_score(float a, float b) { return std::isnan(b) ? !std::isnan(a) : a > b; }

// The top_k labels of one row of logits, by probability (or, raw, by logit), best first (ties: the lower id first).
std::vector<LabelScore> top_labels(const BackendInfo& backend, std::span<const float> logits, int top_k,
                                   bool raw = false) {
  const std::vector<float> p = raw ? std::vector<float>(logits.begin(), logits.end())
                                   : label_probabilities(logits, backend.output_dim, backend.multi_label);
  std::vector<int64_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  const auto k = static_cast<ptrdiff_t>(std::min<size_t>(static_cast<size_t>(top_k), p.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
    const float pa = p[static_cast<size_t>(a)], pb = p[static_cast<size_t>(b)];
    return better_score(pa, pb) || (!better_score(pb, pa) && a < b);
  });
  std::vector<LabelScore> out;
  out.reserve(static_cast<size_t>(k));
  for (ptrdiff_t i = 0; i < k; ++i) {
    const auto id = static_cast<size_t>(order[static_cast<size_t>(i)]);
    out.push_back(LabelScore{static_cast<int64_t>(id), backend.labels[id], p[id]});
  }
  return out;
}

}  // namespace

StatusOr<std::vector<float>> Runtime::logits(std::span<const std::string_view> texts) const {
  BRISK_RETURN_IF_ERROR(impl_->require_output(BackendOutput::kLogits, "Runtime::logits"));
  const size_t dim = impl_->output_dim;
  BRISK_ASSIGN_OR_RETURN(std::vector<TokenizedInput> inputs, impl_->tokenize_texts(texts));
  std::vector<float> out(texts.size() * dim);
  std::vector<float*> rows(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) rows[i] = out.data() + i * dim;
  BRISK_RETURN_IF_ERROR(impl_->rows_for(inputs, rows));
  return out;
}

StatusOr<std::vector<std::vector<LabelScore>>> Runtime::classify(std::span<const std::string_view> texts,
                                                                 int top_k) const {
  BRISK_RETURN_IF_ERROR(impl_->require_output(BackendOutput::kLogits, "Runtime::classify"));
  BRISK_RETURN_IF_ERROR(check_top_k(top_k, impl_->output_dim, "Runtime::classify"));
  BRISK_ASSIGN_OR_RETURN(std::vector<float> all, logits(texts));
  const size_t dim = impl_->output_dim;
  std::vector<std::vector<LabelScore>> out(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    out[i] = top_labels(impl_->backend->info(), {all.data() + i * dim, dim}, top_k);
  }
  return out;
}

StatusOr<uint64_t> Runtime::submit_classify(std::string_view text, const ClassifyRequestOptions& options,
                                            ClassifyCallback done) const {
  if (!done) return absl::InvalidArgumentError("Runtime::submit_classify: the callback is empty; expected a callable");
  return submit_classify(text, options,
                         [done = std::move(done)](uint64_t id, StatusOr<std::vector<LabelScore>> labels,
                                                  AnswerPath) mutable { done(id, std::move(labels)); });
}

StatusOr<uint64_t> Runtime::submit_classify(std::string_view text, const ClassifyRequestOptions& options,
                                            ClassifyAnswerCallback done) const {
  if (!done) return absl::InvalidArgumentError("Runtime::submit_classify: the callback is empty; expected a callable");
  BRISK_RETURN_IF_ERROR(impl_->require_output(BackendOutput::kLogits, "Runtime::submit_classify"));
  BRISK_RETURN_IF_ERROR(check_top_k(options.top_k, impl_->output_dim, "Runtime::submit_classify"));
  BRISK_ASSIGN_OR_RETURN(
      std::shared_ptr<RequestTrace> trace,
      RequestTrace::start(impl_->options.span_sink, options, "Runtime::submit_classify", "classify"));
  BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, traced_tokenize(trace.get(), [&] { return impl_->tokenize(text); }));
  const BackendInfo& backend = impl_->backend->info();
  return finish_if_refused(trace.get(),
                           impl_->submit_input(
                               TokenizedInput{std::move(ids), 0}, options,
                               [&backend, top_k = options.top_k, raw = options.raw_scores, done = std::move(done)](
                                   uint64_t id, StatusOr<std::vector<float>> logits, AnswerPath path) mutable {
                                 if (!logits.ok()) return done(id, logits.status(), path);
                                 done(id, top_labels(backend, *logits, top_k, raw), path);
                               },
                               trace));
}

StatusOr<std::vector<RerankResult>> Runtime::rerank(std::string_view query, std::span<const std::string_view> passages,
                                                    const RerankOptions& options) const {
  BRISK_RETURN_IF_ERROR(impl_->require_cross_encoder("Runtime::rerank"));
  if (passages.empty()) {
    return absl::InvalidArgumentError("Runtime::rerank: passages is empty; expected at least one passage");
  }
  std::vector<TokenizedInput> inputs(passages.size());
  for (size_t i = 0; i < passages.size(); ++i) {
    StatusOr<TokenizedInput> pair = impl_->tokenize_pair(query, passages[i]);
    if (!pair.ok()) {
      return absl::Status(pair.status().code(), absl::StrCat("passage ", i, ": ", pair.status().message()));
    }
    inputs[i] = std::move(*pair);
  }
  std::vector<float> scores(passages.size());
  std::vector<float*> rows(passages.size());
  for (size_t i = 0; i < passages.size(); ++i) rows[i] = &scores[i];
  BRISK_RETURN_IF_ERROR(impl_->rows_for(inputs, rows));
  if (!options.raw_scores) scores = label_probabilities(scores, 1, /*multi_label=*/false);
  std::vector<RerankResult> ranked(passages.size());
  for (size_t i = 0; i < passages.size(); ++i) ranked[i] = RerankResult{i, scores[i]};
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RerankResult& a, const RerankResult& b) { return better_score(a.score, b.score); });
  if (options.top_k > 0 && options.top_k < ranked.size()) ranked.resize(options.top_k);
  return ranked;
}

StatusOr<uint64_t> Runtime::submit_rerank(std::string_view query, std::string_view passage,
                                          const RerankRequestOptions& options, RerankCallback done) const {
  if (!done) return absl::InvalidArgumentError("Runtime::submit_rerank: the callback is empty; expected a callable");
  return submit_rerank(
      query, passage, options,
      [done = std::move(done)](uint64_t id, StatusOr<float> score, AnswerPath) mutable { done(id, std::move(score)); });
}

StatusOr<uint64_t> Runtime::submit_rerank(std::string_view query, std::string_view passage,
                                          const RerankRequestOptions& options, RerankAnswerCallback done) const {
  if (!done) return absl::InvalidArgumentError("Runtime::submit_rerank: the callback is empty; expected a callable");
  BRISK_RETURN_IF_ERROR(impl_->require_cross_encoder("Runtime::submit_rerank"));
  BRISK_ASSIGN_OR_RETURN(std::shared_ptr<RequestTrace> trace,
                         RequestTrace::start(impl_->options.span_sink, options, "Runtime::submit_rerank", "rerank"));
  BRISK_ASSIGN_OR_RETURN(TokenizedInput pair,
                         traced_tokenize(trace.get(), [&] { return impl_->tokenize_pair(query, passage); }));
  return finish_if_refused(
      trace.get(), impl_->submit_input(
                       std::move(pair), options,
                       [raw = options.raw_scores, done = std::move(done)](
                           uint64_t id, StatusOr<std::vector<float>> logit, AnswerPath path) mutable {
                         if (!logit.ok()) return done(id, logit.status(), path);
                         done(id, raw ? (*logit)[0] : label_probabilities(*logit, 1, /*multi_label=*/false)[0], path);
                       },
                       trace));
}

StatusOr<TokenizedInput> RuntimeImpl::tokenize_pair(std::string_view query, std::string_view passage) {
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<EncodedPair> pair = tokenizer->encode_pair(query, passage, info.max_seq_len);
  tokenize_ns.record(static_cast<uint64_t>((std::chrono::steady_clock::now() - t0).count()));
  if (!pair.ok()) return pair.status();
  return TokenizedInput{std::move(pair->ids), pair->second_start};
}

Status RuntimeImpl::require_cross_encoder(std::string_view call) const {
  BRISK_RETURN_IF_ERROR(require_output(BackendOutput::kLogits, call));
  if (output_dim == 1) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(std::string(call), ": model '", info.model_dir, "' has ",
                                                    output_dim,
                                                    " labels; expected a cross-encoder with one (num_labels 1)"));
}

}  // namespace brisk
