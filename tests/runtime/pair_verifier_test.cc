// PairVerifier (brisk/runtime/pair_verifier.h): its text features on pairs whose answers are known by hand, its
// file (a round trip, another model's file refused, hostile files refused), and the calibration: on a synthetic set
// whose two classes overlap by construction, the threshold chosen for a target precision holds on fresh pairs.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "brisk/cache/semantic_guards.h"
#include "brisk/model/safetensors.h"
#include "brisk/runtime/pair_verifier.h"
#include "runtime/pair_logistic.h"
#include "test_util.h"

using brisk::LabelledPair;
using brisk::PairVerifier;
using brisk::cache::SemanticPair;

namespace {

float feature(const std::vector<float>& f, const std::string& name) {
  const auto& names = brisk::pair_text_feature_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return f[i];
  }
  FAIL("no feature " << name);
  return 0.0f;
}

std::vector<float> text_features(const char* incoming, const char* cached) {
  const std::vector<float> u{1.0f, 0.0f}, v{0.0f, 1.0f};
  return brisk::pair_features(SemanticPair{incoming, cached, u, v, 0.25f});
}

std::vector<float> unit(std::vector<float> v) {
  double n = 0.0;
  for (float x : v) n += double(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

// Pairs in `dim` dimensions whose cosine depends on the label: each side is a shared direction plus noise, more of
// it for the different questions, so the two classes' cosines overlap (a known, imperfect separation).
std::vector<LabelledPair> synthetic_pairs(size_t n, size_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<LabelledPair> out;
  for (size_t i = 0; i < n; ++i) {
    LabelledPair p;
    p.label = i % 3 == 0 ? 0 : 1;
    p.category = p.label ? "paraphrase" : "different_intent";
    p.cached = "cached question " + std::to_string(i);
    p.incoming = "incoming question " + std::to_string(i);
    std::vector<float> base(dim), a(dim), b(dim);
    for (float& x : base) x = g(rng);
    const float noise = p.label ? 0.45f : 0.8f;
    for (size_t j = 0; j < dim; ++j) {
      a[j] = base[j] + noise * g(rng);
      b[j] = base[j] + noise * g(rng);
    }
    p.cached_embedding = unit(a);
    p.incoming_embedding = unit(b);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

TEST_CASE("pair verifier text features: overlap, numbers, negation, entities, length and the guards",
          "[runtime][verifier]") {
  // The guard features follow default_semantic_guards(), in this order.
  const auto guards = brisk::cache::default_semantic_guards();
  REQUIRE(guards.size() == 3);
  CHECK(guards[0]->name() == "polarity");
  CHECK(guards[1]->name() == "number");
  CHECK(guards[2]->name() == "entity");

  const auto same = text_features("How do I reset my PIN?", "how do i reset my pin");
  CHECK(feature(same, "cosine") == 0.25f);
  CHECK(feature(same, "word_jaccard") == 1.0f);
  CHECK(feature(same, "incoming_only_words") == 0.0f);
  CHECK(feature(same, "length_ratio") == 1.0f);
  CHECK(feature(same, "numbers_differ") == 0.0f);
  CHECK(feature(same, "negation_differs") == 0.0f);

  // Words {can, i, open, close, my, account}: 4 of the 6 are shared (can, i, my, account).
  const auto intent = text_features("Can I open my account?", "Can I close my account?");
  CHECK(feature(intent, "word_jaccard") == Approx(4.0 / 6.0));
  CHECK(feature(intent, "incoming_only_words") == Approx(1.0 / 5.0));
  CHECK(feature(intent, "polarity_guard") == 1.0f);  // open / close
  // Content words (function words left out): {open, account} and {close, account}, one word swapped.
  CHECK(feature(intent, "content_jaccard") == Approx(1.0 / 3.0));
  CHECK(feature(intent, "incoming_only_content") == Approx(1.0 / 5.0));
  CHECK(feature(intent, "one_word_substituted") == 1.0f);
  const auto paraphrase = text_features("I forgot my internet banking password", "How do I reset my online password?");
  CHECK(feature(paraphrase, "one_word_substituted") == 0.0f);
  CHECK(feature(paraphrase, "incoming_only_content") == Approx(3.0 / 5.0));  // forgot, internet, banking

  const auto amount = text_features("Can I send 500 pounds abroad?", "Can I send 5,000 pounds abroad?");
  CHECK(feature(amount, "numbers_differ") == 1.0f);
  CHECK(feature(amount, "number_guard") == 1.0f);
  const auto spelled = text_features("I have two cards", "I have 2 cards");
  CHECK(feature(spelled, "numbers_differ") == 0.0f);
  CHECK(feature(spelled, "numbers_shared") == 1.0f);

  const auto negated = text_features("Do I need a PIN?", "Don't I need a PIN?");
  CHECK(feature(negated, "negation_differs") == 1.0f);

  const auto entity = text_features("Do you ship to Canada?", "Do you ship to Australia?");
  CHECK(feature(entity, "entity_difference") == Approx(2.0 / 3.0));
  CHECK(feature(entity, "length_ratio") == 1.0f);
  CHECK(feature(text_features("PIN reset", "How do I reset the PIN on my card?"), "length_ratio") == Approx(2.0 / 9.0));

  // Then |u - v| and u * v.
  const std::vector<float> u{0.6f, 0.8f}, v{0.8f, 0.6f};
  const auto f = brisk::pair_features(SemanticPair{"a", "b", u, v, 0.96f});
  const size_t t = brisk::pair_text_feature_names().size();
  REQUIRE(f.size() == t + 4);
  CHECK(f[t] == Approx(0.2f));
  CHECK(f[t + 1] == Approx(0.2f));
  CHECK(f[t + 2] == Approx(0.48f));
  CHECK(f[t + 3] == Approx(0.48f));
}

TEST_CASE("pair verifier fit matches scikit-learn's balanced binary logistic regression", "[runtime][verifier]") {
  std::ifstream in(brisk::testing::test_data_dir() / "pair_logistic_golden.json");
  REQUIRE(in);
  const nlohmann::json golden = nlohmann::json::parse(in);
  const size_t n_features = golden["n_features"].get<size_t>();
  const size_t first_embedding = golden["first_embedding"].get<size_t>();
  std::vector<float> train_x, test_x;
  for (const auto& row : golden["train_x"]) {
    for (double v : row) train_x.push_back(static_cast<float>(v));
  }
  for (const auto& row : golden["test_x"]) {
    for (double v : row) test_x.push_back(static_cast<float>(v));
  }
  const std::vector<int32_t> train_y = golden["train_y"].get<std::vector<int32_t>>();
  std::vector<size_t> rows(train_y.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  REQUIRE(golden["fits"].size() == 3);
  for (const auto& fit : golden["fits"]) {
    brisk::IntentFitOptions o;
    o.tolerance = 1e-8;
    o.max_iterations = 10000;
    auto m = brisk::fit_pair_logistic(train_x, n_features, train_y, rows, fit["l2"].get<double>(), first_embedding,
                                      fit["embedding_weight"].get<double>(), o);
    REQUIRE(m.ok());
    double worst = 0.0;
    for (auto [x, key] : {std::pair{&train_x, "train_score"}, {&test_x, "test_score"}}) {
      const auto& want = fit[key];
      REQUIRE(want.size() * n_features == x->size());
      for (size_t r = 0; r < want.size(); ++r) {
        worst = std::max(worst, std::abs(double(m->score(&(*x)[r * n_features])) - want[r].get<double>()));
      }
    }
    INFO("l2 " << fit["l2"] << ", embedding weight " << fit["embedding_weight"] << ": largest score difference "
               << worst);
    CHECK(worst < 2e-6);
    if (fit["embedding_weight"].get<double>() == 0.0) {
      for (size_t j = first_embedding; j < n_features; ++j) CHECK(m->weight[j] == 0.0f);
    }
  }
}

TEST_CASE("pair verifier calibration holds its target precision on fresh pairs of a known overlap",
          "[runtime][verifier]") {
  const std::vector<LabelledPair> train = synthetic_pairs(900, 8, 1);
  brisk::PairVerifierFitOptions o;
  o.target_precision = 0.9f;
  brisk::PairVerifierFitReport report;
  auto v = brisk::fit_pair_verifier(train, "model-a", o, &report);
  INFO(v.status().ToString());
  REQUIRE(v.ok());
  CHECK(report.target_met);
  CHECK(report.precision >= 0.9);
  CHECK(report.recall > 0.3);  // the classes overlap, but not entirely
  CHECK(report.recall < 1.0);
  CHECK(v->threshold() == report.threshold);

  // Fresh pairs from the same distributions: the precision at the stored threshold stays near the target.
  const std::vector<LabelledPair> fresh = synthetic_pairs(3000, 8, 2);
  std::vector<float> scores;
  std::vector<int> labels;
  for (const LabelledPair& p : fresh) {
    auto s = v->score(p.pair());
    REQUIRE(s.ok());
    CHECK((*s >= 0.0f && *s <= 1.0f));
    scores.push_back(*s);
    labels.push_back(p.label);
  }
  const brisk::PrecisionRecall pr = brisk::precision_recall(scores, labels, v->threshold());
  INFO("fresh precision " << pr.precision << " recall " << pr.recall);
  CHECK(pr.precision >= 0.86);
  CHECK(pr.recall > 0.25);
  // A higher target gives a higher threshold.
  o.target_precision = 0.97f;
  auto strict = brisk::fit_pair_verifier(train, "model-a", o);
  REQUIRE(strict.ok());
  CHECK(strict->threshold() > v->threshold());
}

TEST_CASE("pair verifier file: a round trip, another model's file and hostile files are refused",
          "[runtime][verifier]") {
  brisk::testing::TempDir tmp;
  const std::vector<LabelledPair> train = synthetic_pairs(300, 4, 3);
  brisk::PairVerifierFitOptions logistic;  // the logistic file's tensors (trees: pair_trees_test.cc)
  logistic.try_trees = false;
  auto v = brisk::fit_pair_verifier(train, "model-a", logistic);
  REQUIRE(v.ok());
  const std::string path = tmp.file("verifier.safetensors");
  REQUIRE(v->save(path).ok());
  auto back = PairVerifier::load(path, "model-a");
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CHECK(back->threshold() == v->threshold());
  CHECK(back->dim() == 4);
  CHECK(back->fit_report_json() == v->fit_report_json());
  const LabelledPair& p = train.front();
  const SemanticPair pair{p.incoming, p.cached, p.incoming_embedding, p.cached_embedding, 0.5f};
  CHECK(*back->score(pair) == *v->score(pair));
  // The cache's verifier is the same scorer.
  CHECK(*back->as_semantic_verifier()(pair) == *v->score(pair));
  // Embeddings of another length are an error, not a score.
  const std::vector<float> three{1.0f, 0.0f, 0.0f};
  CHECK(back->score(SemanticPair{"a", "b", three, three, 1.0f}).status().code() == absl::StatusCode::kInvalidArgument);

  // Fitted for another embedding model: refused, naming both.
  auto other = PairVerifier::load(path, "model-b");
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(other.status().message()), Catch::Contains("model-a") && Catch::Contains("model-b"));

  // Hostile files: each names what is wrong.
  auto file = brisk::SafetensorsFile::open(path);
  REQUIRE(file.ok());
  std::map<std::string, std::string> md = file->metadata();
  std::vector<std::pair<std::string, brisk::Tensor>> tensors;
  for (const std::string& name : file->tensor_names()) tensors.emplace_back(name, file->get(name).value());
  const auto refused = [&](std::map<std::string, std::string> m, std::vector<std::pair<std::string, brisk::Tensor>> t,
                           const std::string& why) {
    const std::string bad = tmp.file("bad.safetensors");
    REQUIRE(brisk::write_safetensors(bad, t, m).ok());
    auto r = PairVerifier::load(bad, "model-a");
    INFO(why << ": " << r.status().ToString());
    CHECK_FALSE(r.ok());
    CHECK_THAT(std::string(r.status().message()), Catch::Contains(why));
  };
  auto with = [&](const std::string& key, const std::string& value) {
    auto m = md;
    m[key] = value;
    return m;
  };
  refused(with("format", "brisk-intent-head"), tensors, "format");
  refused(with("version", "2"), tensors, "version");
  refused(with("dim", "5"), tensors, "pair_verifier.mean");
  refused(with("dim", "-1"), tensors, "dim");
  refused(with("threshold", "1.5"), tensors, "threshold");
  refused(with("bias", "nan"), tensors, "bias");
  refused(with("features", "[\"cosine\"]"), tensors, "text features");
  refused(with("fit_report", "[1, 2"), tensors, "fit_report");
  std::vector<float> nan_weight(tensors[2].second.numel(), 0.0f);
  nan_weight[3] = NAN;
  auto t = tensors;
  for (auto& [name, tensor] : t) {
    if (name == "pair_verifier.weight")
      tensor = brisk::Tensor::borrow(nan_weight.data(), tensor.shape(), brisk::DType::kF32);
  }
  refused(md, t, "weight[3]");
  refused(md, {tensors[0], tensors[1]}, "tensors");
  CHECK(PairVerifier::load(tmp.file("missing.safetensors")).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("pair verifier fit refuses what it cannot fit", "[runtime][verifier]") {
  std::vector<LabelledPair> pairs = synthetic_pairs(30, 4, 4);
  CHECK_FALSE(brisk::fit_pair_verifier({}, "m", {}).ok());
  auto one_label = pairs;
  for (auto& p : one_label) p.label = 1;
  CHECK_THAT(std::string(brisk::fit_pair_verifier(one_label, "m", {}).status().message()),
             Catch::Contains("expected both labels"));
  auto bad_label = pairs;
  bad_label[2].label = 2;
  CHECK_THAT(std::string(brisk::fit_pair_verifier(bad_label, "m", {}).status().message()),
             Catch::Contains("pair 2 has label 2"));
  auto short_embedding = pairs;
  short_embedding[5].cached_embedding.pop_back();
  CHECK_THAT(std::string(brisk::fit_pair_verifier(short_embedding, "m", {}).status().message()),
             Catch::Contains("pair 5"));
  brisk::PairVerifierFitOptions o;
  o.target_precision = 1.5f;
  CHECK_FALSE(brisk::fit_pair_verifier(pairs, "m", o).ok());
  o = {};
  o.folds = 1;
  CHECK_FALSE(brisk::fit_pair_verifier(pairs, "m", o).ok());
  CHECK_FALSE(brisk::fit_pair_verifier(pairs, "", {}).ok());  // no model id
}

TEST_CASE("pairs file: the header, labels, fields and the split column, with errors naming file and line",
          "[runtime][verifier]") {
  auto rows = brisk::parse_pair_rows(
      "label\tcategory\tcached\tincoming\tsplit\n1\tparaphrase\tHow do I reset my PIN?\tI forgot my PIN\ttrain\r\n\n"
      "0\tnumber_change\tSend 500 pounds\tSend 5000 pounds\theldout\n",
      "pairs.tsv");
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].label == 1);
  CHECK((*rows)[0].incoming == "I forgot my PIN");
  CHECK((*rows)[0].split == "train");
  CHECK((*rows)[1].category == "number_change");
  CHECK((*rows)[1].line == 4);
  const auto four = brisk::parse_pair_rows("label\tcategory\tcached\tincoming\n0\tnegation\tcan I\tcan't I\n", "p");
  REQUIRE(four.ok());
  CHECK((*four)[0].split.empty());

  const auto error = [](std::string_view text) {
    return std::string(brisk::parse_pair_rows(text, "pairs.tsv").status().message());
  };
  CHECK_THAT(error("cached\tincoming\n"), Catch::Contains("pairs.tsv:1: the header"));
  CHECK_THAT(error("label\tcategory\tcached\tincoming\n2\tx\ty\tz\n"),
             Catch::Contains("pairs.tsv:2: label is '2'; expected 0 or 1"));
  CHECK_THAT(error("label\tcategory\tcached\tincoming\n1\tx\ty\n"),
             Catch::Contains("pairs.tsv:2: has 3 tab-separated fields; expected 4"));
  CHECK_THAT(error("label\tcategory\tcached\tincoming\n1\tx\t\tz\n"), Catch::Contains("field 3 is empty"));
  CHECK_THAT(error("label\tcategory\tcached\tincoming\n1\tx\t\xff\tz\n"), Catch::Contains("not valid UTF-8"));
  CHECK_THAT(error(""), Catch::Contains("empty; expected a header"));
  CHECK(brisk::read_pair_rows("/nonexistent/pairs.tsv").status().code() == absl::StatusCode::kNotFound);
}
