// Verifiers for the semantic cache (brisk/cache/semantic_cache.h, SemanticCacheOptions::verifier) built on a Runtime:
// a candidate hit is served only when a second, more precise model agrees that the incoming question is the cached
// one.
//
//   BRISK_ASSIGN_OR_RETURN(auto reranker, brisk::Runtime::create({.model_dir = "/models/ms-marco-MiniLM-L-6-v2"}));
//   brisk::cache::SemanticCacheOptions opts;
//   opts.dim = 384;
//   BRISK_ASSIGN_OR_RETURN(opts.verifier, brisk::cross_encoder_verifier(*reranker));
//   opts.verifier_threshold = 0.5f;   // on the cross-encoder's sigmoid score
//
// cross_encoder_verifier: the score is rerank(incoming, {cached}), a sigmoid in [0, 1] (or the raw logit).
// intent_agreement_verifier: with a classification model (e.g. a `brisk fit-intents` head), the score is the
// probability the model gives the incoming question for the cached question's top label: two questions that route to
// different intents are not the same question, however close their embeddings.
// Both refuse, at creation, a runtime of the wrong task (FAILED_PRECONDITION naming it). The verifiers' calls are
// batched and cached by the runtime like any other request.
//
// Thread safety: the verifiers may be called from several threads at once; the runtime must outlive them.
#pragma once

#include "brisk/cache/semantic_cache.h"
#include "brisk/core/export.h"
#include "brisk/runtime/runtime.h"

namespace brisk {

BRISK_API StatusOr<cache::SemanticVerifier> cross_encoder_verifier(const Runtime& runtime, bool raw_scores = false);
BRISK_API StatusOr<cache::SemanticVerifier> intent_agreement_verifier(const Runtime& runtime);

}  // namespace brisk
