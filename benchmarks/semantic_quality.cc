// brisk_semantic_quality: how often the semantic cache returns a right answer, a wrong one, or none, on the
// labelled question pairs of shared/data/semantic_pairs.tsv (label 1: the incoming question should hit the
// cached one; 0: it must not), embedded with the real all-MiniLM-L6-v2. Prints markdown:
//   1. per threshold: recall on positives, false hits on negatives, precision, F1; cosine only (what GPTCache
//      and RedisVL do) and with the guards;
//   2. a whole-cache run per threshold: every cached question inserted into one SemanticCache, every incoming
//      one looked up (this also counts hits on the wrong entry); its best F0.5 with guards picks the threshold;
//   3. per category, per setup, each at its chosen point: cosine only and cosine + guards at that threshold, and
//      with --pair-verifier FILE (a `brisk fit-verifier` file) the learned verifier as the answer cache runs it
//      (brisk::use_pair_verifier: from cosine 0.5, at the verifier's calibrated threshold, no guards);
//   4. per guard: negatives caught, positives wrongly rejected;
//   5. lookup/insert latency on a few thousand entries and HNSW top-1 agreement with exact search.
//
//   build/release/benchmarks/brisk_semantic_quality [TSV] [--model-dir DIR] [--threshold T] [--entries N]
//       [--pair-verifier FILE]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "brisk/core/stats.h"
#include "brisk/cache/semantic_cache.h"
#include "brisk/model/tokenizer.h"
#include "brisk/runtime/answer_cache.h"
#include "brisk/runtime/pair_verifier.h"
#include "brisk/runtime/runtime.h"
#include "test_util.h"

#ifndef BRISK_SOURCE_DIR
#define BRISK_SOURCE_DIR "."
#endif

namespace {

using namespace brisk::cache;

struct PairRow {
  int label = 0;
  std::string category, cached, incoming;
  float cosine = 0;
  std::vector<bool> guard_accepts;  // per guard in `guards`
  bool verifier_hit = false;        // with --pair-verifier: the learned verifier's setup serves the cached answer
};

using brisk::testing::cosine;

struct Score {
  int tp = 0, fp = 0, positives = 0, negatives = 0;
  double recall() const { return positives ? double(tp) / positives : 0; }
  double precision() const { return tp + fp ? double(tp) / (tp + fp) : 1; }
  double f1() const {
    double p = precision(), r = recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string tsv = std::string(BRISK_SOURCE_DIR) + "/../shared/data/semantic_pairs.tsv";
  std::string model_dir = brisk::default_model_dir();
  float chosen = -1;
  int entries = 5000;
  std::string pair_verifier;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--model-dir" && i + 1 < argc)
      model_dir = argv[++i];
    else if (a == "--threshold" && i + 1 < argc)
      chosen = std::stof(argv[++i]);
    else if (a == "--entries" && i + 1 < argc)
      entries = std::stoi(argv[++i]);
    else if (a == "--pair-verifier" && i + 1 < argc)
      pair_verifier = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::fprintf(stderr,
                   "usage: brisk_semantic_quality [TSV] [--model-dir DIR] [--threshold T] [--entries N] "
                   "[--pair-verifier FILE]\n");
      return 0;
    } else
      tsv = a;
  }

  // ---- data
  std::ifstream in(tsv);
  if (!in) {
    std::fprintf(stderr,
                 "brisk_semantic_quality: cannot open %s (expected label<TAB>category<TAB>cached<TAB>incoming)\n",
                 tsv.c_str());
    return 1;
  }
  std::vector<PairRow> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    PairRow r;
    std::string label;
    std::getline(ss, label, '\t');
    std::getline(ss, r.category, '\t');
    std::getline(ss, r.cached, '\t');
    std::getline(ss, r.incoming, '\t');
    r.label = label == "1" ? 1 : 0;
    rows.push_back(std::move(r));
  }

  brisk::RuntimeOptions ro;
  ro.model_dir = model_dir;
  ro.num_threads = 2;
  auto rt = brisk::Runtime::create(ro);
  if (!rt.ok()) {
    std::fprintf(stderr, "brisk_semantic_quality: %s\n", std::string(rt.status().message()).c_str());
    return 1;
  }
  const size_t dim = size_t((*rt)->embedding_dim());
  std::vector<std::string_view> texts;
  for (const auto& r : rows) {
    texts.push_back(r.cached);
    texts.push_back(r.incoming);
  }
  auto emb = (*rt)->embed(texts);
  if (!emb.ok()) {
    std::fprintf(stderr, "brisk_semantic_quality: embed: %s\n", std::string(emb.status().message()).c_str());
    return 1;
  }
  auto vec = [&](size_t text_index) { return std::span<const float>(emb->data() + text_index * dim, dim); };

  // ---- guards: the defaults plus the entity guard with the model's vocabulary (whole words only)
  auto tok = brisk::WordPieceTokenizer::from_model_dir(model_dir);
  std::vector<std::shared_ptr<const SemanticGuard>> guards = default_semantic_guards();
  std::vector<std::string> guard_names = {"polarity", "number", "entity (capitals)"};
  if (tok.ok()) {
    guards.push_back(
        std::make_shared<EntityGuard>([t = *tok](std::string_view w) { return t.token_to_id(w) != t.unk_id(); }));
    guard_names.push_back("entity (capitals + vocabulary)");
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    PairRow& r = rows[i];
    r.cosine = float(cosine(vec(2 * i).data(), vec(2 * i + 1).data(), dim));
    auto q = normalize_question(r.incoming), c = normalize_question(r.cached);
    for (const auto& g : guards) r.guard_accepts.push_back(q.ok() && c.ok() && g->accept(*q, *c));
  }
  // The learned verifier, pairwise as the answer cache runs it: one cache, each pair in a tenant of its own.
  std::string verifier_setup;
  if (!pair_verifier.empty()) {
    auto v = brisk::PairVerifier::load(pair_verifier, (*rt)->embedding_model_id());
    if (!v.ok()) {
      std::fprintf(stderr, "brisk_semantic_quality: %s\n", std::string(v.status().message()).c_str());
      return 1;
    }
    SemanticCacheOptions o;
    o.dim = dim;
    brisk::use_pair_verifier(*v, o);
    auto cache = SemanticCache::create(o);
    if (!cache.ok()) {
      std::fprintf(stderr, "brisk_semantic_quality: %s\n", std::string(cache.status().message()).c_str());
      return 1;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string tenant = fmt::format("pair{}", i);
      if (auto st = (*cache)->insert(tenant, rows[i].cached, vec(2 * i), "answer"); !st.ok()) {
        std::fprintf(stderr, "brisk_semantic_quality: %s\n", std::string(st.message()).c_str());
        return 1;
      }
      rows[i].verifier_hit = (*cache)->lookup(tenant, rows[i].incoming, vec(2 * i + 1)).hit;
    }
    verifier_setup =
        fmt::format("learned verifier from cosine {:.2f} at its threshold {:.4f} (target precision {:.2f})",
                    o.verifier_cosine_floor.value_or(o.threshold), v->threshold(), v->target_precision());
  }
  // "guards on" = the three defaults (indices 0..2).
  auto guards_pass = [](const PairRow& r) { return r.guard_accepts[0] && r.guard_accepts[1] && r.guard_accepts[2]; };
  auto score = [&](float t, bool with_guards, const std::string& category = "") {
    Score s;
    for (const auto& r : rows) {
      if (!category.empty() && r.category != category) continue;
      bool hit = r.cosine >= t && (!with_guards || guards_pass(r));
      (r.label ? s.positives : s.negatives)++;
      if (hit) (r.label ? s.tp : s.fp)++;
    }
    return s;
  };

  // ---- 1. sweep
  std::vector<float> sweep;
  for (int k : {40, 45, 50, 55}) sweep.push_back(float(k) / 100.0f);
  for (int k = 60; k <= 90; k += 2) sweep.push_back(float(k) / 100.0f);
  sweep.push_back(0.95f);
  float best_f1_t = 0, best_f1 = -1, zero_fp_t = 1, zero_fp_recall = -1;
  fmt::print("## Semantic cache quality on {} ({} pairs: {} positive, {} negative)\n\n",
             "shared/data/semantic_pairs.tsv", rows.size(), score(0, false).positives, score(0, false).negatives);
  fmt::print(
      "Pairwise: the cached question is the only entry; a hit is cosine >= threshold (and, with guards, every\n"
      "default guard accepts). Recall = positives hit; false hits = negatives hit.\n\n");
  fmt::print(
      "| threshold | recall, cosine only | false hits, cosine only | precision, cosine only | F1, cosine only "
      "| recall, guards | false hits, guards | precision, guards | F1, guards |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|\n");
  for (float t : sweep) {
    Score a = score(t, false), b = score(t, true);
    fmt::print("| {:.2f} | {:.3f} | {} / {} | {:.3f} | {:.3f} | {:.3f} | {} / {} | {:.3f} | {:.3f} |\n", t, a.recall(),
               a.fp, a.negatives, a.precision(), a.f1(), b.recall(), b.fp, b.negatives, b.precision(), b.f1());
    if (b.f1() > best_f1 + 1e-9) {
      best_f1 = b.f1();
      best_f1_t = t;
    }
    if (b.fp == 0 && b.recall() > zero_fp_recall) {
      zero_fp_recall = b.recall();
      zero_fp_t = t;
    }
  }
  float cosine_zero_fp_t = 1;
  double cosine_zero_fp_recall = 0;
  for (float t : sweep) {
    Score a = score(t, false);
    if (a.fp == 0 && a.recall() > cosine_zero_fp_recall) {
      cosine_zero_fp_recall = a.recall();
      cosine_zero_fp_t = t;
    }
  }
  // ---- 4. whole cache
  fmt::print(
      "\n### Whole cache: every cached question inserted into one SemanticCache, every incoming one looked "
      "up\n\n");
  fmt::print(
      "A right hit is a positive returning its own cached question; a wrong hit is any other hit (a positive\n"
      "returning another entry, or any hit for a negative). Precision = right / (right + wrong).\n\n");
  fmt::print(
      "| threshold | right hits, cosine only | wrong hits, cosine only | F1, cosine only | right hits, guards | "
      "wrong hits, guards (on negatives) | precision, guards | F1, guards | F0.5, guards |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  struct Whole {
    int right = 0, wrong = 0, wrong_neg = 0, positives = 0;
    double precision() const { return right + wrong ? double(right) / (right + wrong) : 1; }
    double recall() const { return positives ? double(right) / positives : 0; }
    double f1() const { return precision() + recall() > 0 ? 2 * precision() * recall() / (precision() + recall()) : 0; }
    // F0.5: precision counts twice as much as recall (a wrong answer costs more than a model call).
    double f05() const {
      double p = precision(), r = recall();
      return p + r > 0 ? 1.25 * p * r / (0.25 * p + r) : 0;
    }
  };
  auto whole = [&](float t, bool with_guards) {
    SemanticCacheOptions o;
    o.dim = dim;
    o.threshold = t;
    if (!with_guards) o.guards.clear();
    auto cache = SemanticCache::create(o);
    Whole w;
    if (!cache.ok()) return w;
    for (size_t i = 0; i < rows.size(); ++i) (void)(*cache)->insert("t", rows[i].cached, vec(2 * i), rows[i].cached);
    for (size_t i = 0; i < rows.size(); ++i) {
      SemanticLookup r = (*cache)->lookup("t", rows[i].incoming, vec(2 * i + 1));
      w.positives += rows[i].label;
      if (!r.hit) continue;
      bool own = question_key(*normalize_question(r.answer)) == question_key(*normalize_question(rows[i].cached));
      if (rows[i].label && own)
        ++w.right;
      else {
        ++w.wrong;
        w.wrong_neg += rows[i].label ? 0 : 1;
      }
    }
    return w;
  };
  float whole_best_t = 0, whole_f1_t = 0;
  double whole_best_f05 = -1, whole_best_f1 = -1;
  for (float t : sweep) {
    Whole a = whole(t, false), b = whole(t, true);
    fmt::print("| {:.2f} | {} / {} | {} | {:.3f} | {} / {} | {} ({}) | {:.3f} | {:.3f} | {:.3f} |\n", t, a.right,
               a.positives, a.wrong, a.f1(), b.right, b.positives, b.wrong, b.wrong_neg, b.precision(), b.f1(),
               b.f05());
    if (b.f05() > whole_best_f05 + 1e-9) {
      whole_best_f05 = b.f05();
      whole_best_t = t;
    }
    if (b.f1() > whole_best_f1 + 1e-9) {
      whole_best_f1 = b.f1();
      whole_f1_t = t;
    }
  }
  fmt::print("\nWhole cache with guards: best F0.5 {:.3f} at threshold {:.2f}; best F1 {:.3f} at {:.2f}.\n",
             whole_best_f05, whole_best_t, whole_best_f1, whole_f1_t);

  if (chosen < 0) chosen = whole_best_t;  // the default: best F0.5 of the whole-cache run with guards
  fmt::print(
      "\nPairwise with guards: best F1 {:.3f} at threshold {:.2f}; highest recall with zero false hits "
      "{:.3f} at {:.2f}.\n",
      best_f1, best_f1_t, zero_fp_recall, zero_fp_t);
  fmt::print("Pairwise cosine only: highest recall with zero false hits {:.3f} at {:.2f}.\n", cosine_zero_fp_recall,
             cosine_zero_fp_t);
  fmt::print("Threshold used below: {:.2f}.\n\n", chosen);

  // ---- 2. per category
  std::vector<std::string> categories;
  for (const auto& r : rows)
    if (std::find(categories.begin(), categories.end(), r.category) == categories.end())
      categories.push_back(r.category);
  fmt::print("### Per category and setup: cosine only and cosine + guards at threshold {:.2f}{}\n\n", chosen,
             verifier_setup.empty() ? "" : "; " + verifier_setup);
  fmt::print("| category | pairs | median cosine | hits, cosine only | hits, guards |{}\n|---|---|---|---|---|{}\n",
             verifier_setup.empty() ? "" : " hits, learned verifier |", verifier_setup.empty() ? "" : "---|");
  for (const auto& cat : categories) {
    std::vector<double> cs;
    for (const auto& r : rows)
      if (r.category == cat) cs.push_back(r.cosine);
    Score a = score(chosen, false, cat), b = score(chosen, true, cat);
    int n = a.positives + a.negatives;
    int verified = 0;
    for (const auto& r : rows) verified += r.category == cat && r.verifier_hit ? 1 : 0;
    fmt::print("| {} ({}) | {} | {:.3f} | {} | {} |{}\n", cat, a.positives ? "should hit" : "must miss", n,
               brisk::percentile(cs, 50), a.tp + a.fp, b.tp + b.fp,
               verifier_setup.empty() ? "" : fmt::format(" {} |", verified));
  }
  {
    Score a = score(chosen, false), b = score(chosen, true), v;
    for (const auto& r : rows) {
      (r.label ? v.positives : v.negatives)++;
      if (r.verifier_hit) (r.label ? v.tp : v.fp)++;
    }
    fmt::print("| **precision / recall** | {} | | {:.3f} / {:.3f} | {:.3f} / {:.3f} |{}\n", rows.size(), a.precision(),
               a.recall(), b.precision(), b.recall(),
               verifier_setup.empty() ? "" : fmt::format(" {:.3f} / {:.3f} |", v.precision(), v.recall()));
  }

  // ---- 3. per guard
  fmt::print("\n### Per guard (all pairs, whatever their cosine)\n\n");
  fmt::print(
      "| guard | negatives rejected (of {}) | by category | positives wrongly rejected (of {}) |\n"
      "|---|---|---|---|\n",
      score(0, false).negatives, score(0, false).positives);
  for (size_t g = 0; g < guards.size(); ++g) {
    int neg = 0, pos = 0;
    std::map<std::string, int> by_cat;
    for (const auto& r : rows) {
      if (r.guard_accepts[g]) continue;
      if (r.label)
        ++pos;
      else {
        ++neg;
        ++by_cat[r.category];
      }
    }
    std::string cats;
    for (const auto& [c, n] : by_cat) cats += fmt::format("{}{} {}", cats.empty() ? "" : ", ", c, n);
    fmt::print("| {} | {} | {} | {} |\n", guard_names[g], neg, cats.empty() ? "-" : cats, pos);
    for (const auto& r : rows)
      if (r.label && !r.guard_accepts[g]) fmt::print("|  | | wrongly rejected: {} / {} | |\n", r.cached, r.incoming);
  }
  {
    int neg = 0;
    for (const auto& r : rows) neg += (!r.label && !guards_pass(r)) ? 1 : 0;
    fmt::print("| all three defaults | {} | | |\n", neg);
  }

  // ---- 5. latency and HNSW agreement on synthetic entries
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  auto unit = [&]() {
    std::vector<float> v(dim);
    double ss = 0;
    for (float& x : v) {
      x = normal(rng);
      ss += double(x) * x;
    }
    for (float& x : v) x = float(x / std::sqrt(ss));
    return v;
  };
  std::vector<std::vector<float>> stored;
  std::vector<std::string> questions;
  for (int i = 0; i < entries; ++i) {
    stored.push_back(unit());
    const PairRow& r = rows[size_t(i) % rows.size()];
    questions.push_back(fmt::format("{} (variant {})", r.cached, i));
  }
  fmt::print("\n### Latency with {} entries in one tenant (dim {}, M 16, ef_construction 200)\n\n", entries, dim);
  fmt::print("| case | ef_search | median us | p99 us | top-1 = exact |\n|---|---|---|---|---|\n");
  for (int ef : {16, 32, 64, 128}) {
    SemanticCacheOptions o;
    o.dim = dim;
    o.threshold = chosen;
    o.ef_search = ef;
    o.max_entries = size_t(entries);
    auto cache = SemanticCache::create(o);
    if (!cache.ok()) return 1;
    std::vector<double> insert_us;
    for (int i = 0; i < entries; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      if (!(*cache)->insert("t", questions[size_t(i)], stored[size_t(i)], "answer").ok()) return 1;
      insert_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    if (ef == 64)
      fmt::print("| insert | - | {:.1f} | {:.1f} | - |\n", brisk::percentile(insert_us, 50),
                 brisk::percentile(insert_us, 99));
    // Hits: a stored vector plus noise (cosine about 0.9), the same question text, so every guard runs.
    std::vector<double> hit_us, miss_us;
    int agree = 0, probes = 1000;
    for (int q = 0; q < probes; ++q) {
      size_t target = size_t(rng()) % size_t(entries);
      std::vector<float> v = stored[target];
      for (float& x : v) x += 0.025f * normal(rng);
      auto t0 = std::chrono::steady_clock::now();
      SemanticLookup r = (*cache)->lookup("t", questions[target], v);
      hit_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      agree += (r.hit && r.cached_question == questions[target]) ? 1 : 0;
      std::vector<float> far = unit();
      t0 = std::chrono::steady_clock::now();
      (void)(*cache)->lookup("t", "Something unrelated?", far);
      miss_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    // Exact agreement on random queries: HNSW's nearest vs brute force (guards off, threshold -1, 1 candidate).
    SemanticCacheOptions raw = o;
    raw.threshold = -1;
    raw.guards.clear();
    raw.candidates = 1;
    auto rc = SemanticCache::create(raw);
    for (int i = 0; i < entries; ++i) (void)(*rc)->insert("t", questions[size_t(i)], stored[size_t(i)], "a");
    int exact = 0, exact_probes = 300;
    for (int q = 0; q < exact_probes; ++q) {
      std::vector<float> v = unit();
      size_t best = 0;
      double best_dot = -2;
      for (size_t i = 0; i < stored.size(); ++i) {
        double d = 0;
        for (size_t k = 0; k < dim; ++k) d += double(v[k]) * stored[i][k];
        if (d > best_dot) {
          best_dot = d;
          best = i;
        }
      }
      exact += (*rc)->lookup("t", "q", v).cached_question == questions[best] ? 1 : 0;
    }
    fmt::print("| lookup, hit (3 guards run) | {} | {:.1f} | {:.1f} | {:.3f} (near-duplicate queries) |\n", ef,
               brisk::percentile(hit_us, 50), brisk::percentile(hit_us, 99), double(agree) / probes);
    fmt::print("| lookup, miss (below threshold) | {} | {:.1f} | {:.1f} | {:.3f} (random queries) |\n", ef,
               brisk::percentile(miss_us, 50), brisk::percentile(miss_us, 99), double(exact) / exact_probes);
  }
  return 0;
}
