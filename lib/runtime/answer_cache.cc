// AnswerCache (brisk/runtime/answer_cache.h): the runtime's embeddings into a SemanticCache with a pair verifier.
#include "brisk/runtime/answer_cache.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "brisk/cache/cache_metrics.h"
#include "brisk/metrics/prometheus.h"

namespace brisk {

void use_pair_verifier(const PairVerifier& verifier, cache::SemanticCacheOptions& options, float cosine_floor) {
  options.verifier = verifier.as_semantic_verifier();
  options.verifier_threshold = verifier.threshold();
  options.verifier_cosine_floor = cosine_floor;
  options.guards.clear();
}

struct AnswerCache::Impl {
  const Runtime* runtime = nullptr;
  std::unique_ptr<cache::SemanticCache> cache;
  float verifier_threshold = 0.0f;
  float verifier_target_precision = 0.0f;
};

AnswerCache::AnswerCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AnswerCache::~AnswerCache() = default;

StatusOr<std::unique_ptr<AnswerCache>> AnswerCache::create(const Runtime& runtime, AnswerCacheOptions options) {
  const auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("AnswerCache: ", what));
  };
  const int dim = runtime.embedding_dim();
  if (dim <= 0) {
    return bad(absl::StrCat("the runtime's model (", std::string(runtime.info().model_type),
                            ") gives no embeddings; expected an embedding model"));
  }
  if (options.semantic.dim == 0) options.semantic.dim = static_cast<size_t>(dim);
  if (options.semantic.dim != static_cast<size_t>(dim)) {
    return bad(absl::StrCat("semantic.dim is ", options.semantic.dim, "; expected the model's embedding width ", dim));
  }
  if (options.semantic.embedding_model_id.empty()) options.semantic.embedding_model_id = runtime.embedding_model_id();
  if (options.semantic.embedding_model_id != runtime.embedding_model_id()) {
    return bad(absl::StrCat("semantic.embedding_model_id is '", options.semantic.embedding_model_id,
                            "'; expected the runtime's embedding_model_id() '", runtime.embedding_model_id(), "'"));
  }
  auto impl = std::make_unique<Impl>();
  impl->runtime = &runtime;
  if (!options.verifier_path.empty()) {
    if (options.semantic.verifier) {
      return bad("both verifier_path and semantic.verifier are set; expected one verifier");
    }
    if (!(options.verifier_cosine_floor >= -1.0f && options.verifier_cosine_floor <= options.semantic.threshold)) {
      return bad(absl::StrCat("verifier_cosine_floor is ", options.verifier_cosine_floor, "; expected [-1, ",
                              options.semantic.threshold, "] (semantic.threshold)"));
    }
    BRISK_ASSIGN_OR_RETURN(PairVerifier v, PairVerifier::load(options.verifier_path, runtime.embedding_model_id()));
    if (v.dim() != dim) {
      return bad(
          absl::StrCat(options.verifier_path, " was fitted on embeddings of ", v.dim(), " values; expected ", dim));
    }
    use_pair_verifier(v, options.semantic, options.verifier_cosine_floor);
    impl->verifier_threshold = v.threshold();
    impl->verifier_target_precision = v.target_precision();
  }
  BRISK_ASSIGN_OR_RETURN(impl->cache, cache::SemanticCache::create(std::move(options.semantic)));
  return std::unique_ptr<AnswerCache>(new AnswerCache(std::move(impl)));
}

namespace {

StatusOr<std::vector<float>> embed_question(const Runtime& rt, std::string_view question) {
  const std::string_view texts[] = {question};
  return rt.embed(texts);
}

}  // namespace

StatusOr<cache::SemanticLookup> AnswerCache::lookup(std::string_view tenant, std::string_view question) const {
  BRISK_ASSIGN_OR_RETURN(std::vector<float> e, embed_question(*impl_->runtime, question));
  return impl_->cache->lookup(tenant, question, e);
}

Status AnswerCache::insert(std::string_view tenant, std::string_view question, std::string answer,
                           const cache::PutOptions& options) const {
  BRISK_RETURN_IF_ERROR(impl_->cache->admit_tenant(tenant));  // before paying for the embedding
  BRISK_ASSIGN_OR_RETURN(std::vector<float> e, embed_question(*impl_->runtime, question));
  return impl_->cache->insert(tenant, question, e, std::move(answer), options);
}

cache::SemanticCache& AnswerCache::semantic_cache() const { return *impl_->cache; }
cache::SemanticCacheStats AnswerCache::stats() const { return impl_->cache->stats(); }

std::string AnswerCache::metrics_prometheus() const {
  metrics::PrometheusWriter w;
  cache::write_prometheus(w, stats(), "brisk_answer_cache", {});
  return w.str();
}
bool AnswerCache::has_verifier() const { return static_cast<bool>(impl_->cache->options().verifier); }
float AnswerCache::verifier_threshold() const { return impl_->verifier_threshold; }
float AnswerCache::verifier_target_precision() const { return impl_->verifier_target_precision; }

}  // namespace brisk
