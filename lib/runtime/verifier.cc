// Semantic-cache verifiers over a cross-encoder or a classifier Runtime.
#include "brisk/runtime/verifier.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace brisk {

StatusOr<cache::SemanticVerifier> cross_encoder_verifier(const Runtime& runtime, bool raw_scores) {
  const BackendInfo& b = runtime.backend_info();
  if (b.output != BackendOutput::kLogits || b.output_dim != 1) {
    return absl::FailedPreconditionError(absl::StrCat("cross_encoder_verifier: model '", runtime.info().model_dir,
                                                      "' has ", b.output == BackendOutput::kLogits ? b.output_dim : 0,
                                                      " labels; expected a cross-encoder (one label)"));
  }
  return cache::SemanticVerifier([&runtime, raw_scores](const cache::SemanticPair& pair) -> StatusOr<float> {
    const std::string_view passages[1] = {pair.cached};
    RerankOptions o;
    o.raw_scores = raw_scores;
    BRISK_ASSIGN_OR_RETURN(std::vector<RerankResult> r, runtime.rerank(pair.incoming, passages, o));
    return r.front().score;
  });
}

StatusOr<cache::SemanticVerifier> intent_agreement_verifier(const Runtime& runtime) {
  const BackendInfo& b = runtime.backend_info();
  if (b.output != BackendOutput::kLogits || b.output_dim < 2) {
    return absl::FailedPreconditionError(absl::StrCat("intent_agreement_verifier: model '", runtime.info().model_dir,
                                                      "' is not a classifier with at least 2 labels; expected a "
                                                      "classification model or a fit-intents head"));
  }
  return cache::SemanticVerifier([&runtime](const cache::SemanticPair& pair) -> StatusOr<float> {
    const std::string_view texts[2] = {pair.incoming, pair.cached};
    const int all = static_cast<int>(runtime.backend_info().output_dim);
    BRISK_ASSIGN_OR_RETURN(auto labels, runtime.classify(texts, all));
    const int64_t cached_label = labels[1].front().id;
    for (const LabelScore& s : labels[0]) {
      if (s.id == cached_label) return s.score;
    }
    return 0.0f;
  });
}

}  // namespace brisk
