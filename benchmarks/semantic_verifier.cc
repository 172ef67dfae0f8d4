// brisk_semantic_verifier: what a verifier (SemanticCacheOptions::verifier) changes in the semantic cache's answers on
// labelled pairs (shared/data/semantic_pairs.tsv by default; --pairs FILE [--split NAME] for another, such as a split
// of benchmarks/data/verifier_pairs.tsv), embedded with the real all-MiniLM-L6-v2. Pairwise (the cached question is
// the only entry): recall on positives, false hits on negatives, per category, and the verifier's latency, for cosine
// alone and cosine + guards at the default threshold, then with the verifier at that threshold and with a lower
// cosine floor (which lets the verifier recover paraphrases below the threshold).
// The verifier is a learned pair verifier (--pair-verifier FILE, from brisk fit-verifier; its stored threshold), or a
// Runtime: a cross-encoder (--cross-encoder DIR) or a classifier's agreement (--intent-head FILE, a `brisk
// fit-intents` head over the embedding model; intent_agreement_verifier).
//
//   build/release/benchmarks/brisk_semantic_verifier --pair-verifier verifier.safetensors [--floor 0.5]
//   build/release/benchmarks/brisk_semantic_verifier --intent-head head.safetensors [--floor 0.5] [--min-score 0.5]
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "brisk/cache/semantic_cache.h"
#include "brisk/runtime/pair_verifier.h"
#include "brisk/runtime/runtime.h"
#include "brisk/runtime/verifier.h"

#ifndef BRISK_SOURCE_DIR
#define BRISK_SOURCE_DIR "."
#endif

namespace {

struct Tally {
  int hits = 0, total = 0;
};

int fail(const std::string& what) {
  std::fprintf(stderr, "brisk_semantic_verifier: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string tsv = std::string(BRISK_SOURCE_DIR) + "/../shared/data/semantic_pairs.tsv";
  std::string model_dir = brisk::default_model_dir(), cross_encoder, intent_head, pair_verifier, split;
  float floor = 0.5f, min_score = 0.5f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--pairs")
      tsv = value;
    else if (flag == "--model-dir")
      model_dir = value;
    else if (flag == "--cross-encoder")
      cross_encoder = value;
    else if (flag == "--intent-head")
      intent_head = value;
    else if (flag == "--pair-verifier")
      pair_verifier = value;
    else if (flag == "--split")
      split = value;
    else if (flag == "--floor")
      floor = std::stof(value);
    else if (flag == "--min-score")
      min_score = std::stof(value);
    else
      return fail("unknown flag " + flag);
  }
  if (int(!cross_encoder.empty()) + int(!intent_head.empty()) + int(!pair_verifier.empty()) != 1)
    return fail("give one of --pair-verifier FILE, --cross-encoder DIR or --intent-head FILE");
  auto rows = brisk::read_pair_rows(tsv);
  if (!rows.ok()) return fail(std::string(rows.status().message()));
  std::vector<brisk::PairRow> pairs;
  for (brisk::PairRow& r : *rows) {
    if (split.empty() || r.split == split) pairs.push_back(std::move(r));
  }
  if (pairs.empty()) return fail("no pair of split '" + split + "' in " + tsv);

  brisk::RuntimeOptions eo;
  eo.model_dir = model_dir;
  eo.num_threads = 2;
  auto embedder = brisk::Runtime::create(eo);
  if (!embedder.ok()) return fail(std::string(embedder.status().message()));
  brisk::cache::SemanticVerifier verifier;
  std::string verifier_name;
  std::unique_ptr<brisk::Runtime> judge;
  if (!pair_verifier.empty()) {
    auto v = brisk::PairVerifier::load(pair_verifier, (*embedder)->embedding_model_id());
    if (!v.ok()) return fail(std::string(v.status().message()));
    verifier = v->as_semantic_verifier();
    min_score = v->threshold();
    verifier_name = fmt::format("learned pair verifier {} (its threshold, for precision {:.2f})", pair_verifier,
                                v->target_precision());
  } else {
    brisk::RuntimeOptions vo = eo;
    if (!cross_encoder.empty()) vo.model_dir = cross_encoder;
    vo.classification_head = intent_head;
    auto j = brisk::Runtime::create(vo);
    if (!j.ok()) return fail(std::string(j.status().message()));
    judge = std::move(*j);
    auto v = cross_encoder.empty() ? brisk::intent_agreement_verifier(*judge) : brisk::cross_encoder_verifier(*judge);
    if (!v.ok()) return fail(std::string(v.status().message()));
    verifier = *v;
    verifier_name = fmt::format("{}; {}", judge->backend_info().description,
                                cross_encoder.empty() ? "the incoming question's probability of the cached one's intent"
                                                      : "the cross-encoder's sigmoid score");
  }

  const brisk::cache::SemanticCacheOptions defaults;
  struct Setup {
    std::string name;
    bool guards;
    bool verify;
    float cosine_floor;
  };
  const std::vector<Setup> setups = {
      {fmt::format("cosine only at {:.2f}", defaults.threshold), false, false, 0},
      {fmt::format("cosine + guards at {:.2f}", defaults.threshold), true, false, 0},
      {fmt::format("+ verifier, at {:.2f}", defaults.threshold), true, true, defaults.threshold},
      {fmt::format("+ verifier, cosine floor {:.2f}", floor), true, true, floor},
      {fmt::format("verifier without the guards, cosine floor {:.2f}", floor), false, true, floor}};
  fmt::print("| setup | paraphrases hit | false hits on negatives |");
  std::map<std::string, int> category_sizes;
  for (const brisk::PairRow& p : pairs) category_sizes[p.category]++;
  for (const auto& [category, n] : category_sizes) fmt::print(" {} ({}) |", category, n);
  fmt::print(" verifier calls | verifier p50 / p99 ms |\n|---|---|---|");
  for (size_t i = 0; i < category_sizes.size() + 2; ++i) fmt::print("---|");
  fmt::print("\n");
  for (const Setup& s : setups) {
    brisk::cache::SemanticCacheOptions o;
    o.dim = static_cast<size_t>((*embedder)->embedding_dim());
    if (!s.guards) o.guards.clear();
    if (s.verify) {
      o.verifier = verifier;
      o.verifier_threshold = min_score;
      o.verifier_cosine_floor = s.cosine_floor;
    }
    auto cache = brisk::cache::SemanticCache::create(o);
    if (!cache.ok()) return fail(std::string(cache.status().message()));
    Tally positives, negatives;
    std::map<std::string, Tally> per_category;
    for (size_t i = 0; i < pairs.size(); ++i) {
      const brisk::PairRow& p = pairs[i];
      const std::string tenant = fmt::format("pair{}", i);  // one entry per tenant: pairwise
      std::vector<std::string_view> two = {p.cached, p.incoming};
      auto e = (*embedder)->embed(two);
      if (!e.ok()) return fail(std::string(e.status().message()));
      const size_t dim = o.dim;
      if (auto st = (*cache)->insert(tenant, p.cached, std::span<const float>(e->data(), dim), "answer"); !st.ok()) {
        return fail(std::string(st.message()));
      }
      const bool hit = (*cache)->lookup(tenant, p.incoming, std::span<const float>(e->data() + dim, dim)).hit;
      Tally& t = p.label == 1 ? positives : negatives;
      t.total++;
      t.hits += hit;
      per_category[p.category].total++;
      per_category[p.category].hits += hit;
    }
    const brisk::cache::SemanticCacheStats st = (*cache)->stats();
    fmt::print("| {} | {} / {} | {} / {} |", s.name, positives.hits, positives.total, negatives.hits, negatives.total);
    for (const auto& [category, t] : per_category) fmt::print(" {} |", t.hits);
    fmt::print(" {} | {:.2f} / {:.2f} |\n", st.verifier_calls, st.verifier_latency_ns.percentile(50) * 1e-6,
               st.verifier_latency_ns.percentile(99) * 1e-6);
  }
  fmt::print("\nverifier: {}; score threshold {:.4f}; pairs: {}{}\n", verifier_name, min_score, tsv,
             split.empty() ? "" : " (split " + split + ")");
  return 0;
}
