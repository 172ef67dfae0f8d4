// Few-shot intent heads: the examples file, the fit (against scikit-learn, tests/data/make_intent_golden.py) and
// the head file.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "brisk/model/intent_head.h"
#include "brisk/model/safetensors.h"
#include "test_util.h"

using brisk::ClassificationHead;
using brisk::IntentExamples;
using brisk::IntentFitOptions;
using brisk::IntentFitStats;
using brisk::IntentHeadFile;
using brisk::Tensor;
using brisk::testing::TempDir;

namespace {

bool contains(absl::string_view s, absl::string_view part) { return absl::StrContains(s, part); }

std::string parse_error(const std::string& text) {
  auto r = brisk::parse_intent_examples(text, "intents.tsv");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

std::vector<float> probabilities(const ClassificationHead& head, const std::vector<float>& x, int64_t rows) {
  std::vector<float> logits(static_cast<size_t>(rows * head.num_labels()));
  REQUIRE(head.apply(x.data(), rows, logits.data()).ok());
  return brisk::label_probabilities(logits, head.num_labels(), head.multi_label);
}

// Points around `k` well separated unit directions, normalised: a problem every sensible fit separates.
struct Clusters {
  std::vector<float> x;
  std::vector<int32_t> y;
  std::vector<std::string> labels;
  int64_t dim = 0;
};
Clusters clusters(int k, int per_class, int64_t dim, uint32_t seed) {
  Clusters c;
  c.dim = dim;
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.15f);
  for (int label = 0; label < k; ++label) {
    c.labels.push_back("intent_" + std::to_string(label));
    for (int i = 0; i < per_class + label; ++i) {  // unbalanced: class j has per_class + j points
      std::vector<float> p(static_cast<size_t>(dim));
      for (float& v : p) v = noise(rng);
      p[static_cast<size_t>(label)] += 1.0f;
      float norm = 0;
      for (float v : p) norm += v * v;
      for (float& v : p) c.x.push_back(v / std::sqrt(norm));
      c.y.push_back(label);
    }
  }
  return c;
}

IntentHeadFile fitted_file(const Clusters& c) {
  IntentHeadFile f;
  IntentFitStats stats;
  auto head = brisk::fit_intent_head(c.x, c.dim, c.y, c.labels, {}, &stats);
  REQUIRE(head.ok());
  f.head = *std::move(head);
  f.embedding_model_id = "all-MiniLM-L6-v2:0123456789abcdef:mean:norm";
  f.unknown_threshold = 0.3f;
  f.training_stats = stats;
  return f;
}

}  // namespace

// ---- examples ---------------------------------------------------------------------------------------------------

TEST_CASE("parse_intent_examples reads label<TAB>text lines, skipping comments and blank lines", "[model][intent]") {
  const std::string text =
      "# banking intents\n"
      "card_lost\tI lost my card\r\n"
      "\n"
      "  \t  \n"
      "balance\t  what is my balance?  \n"
      "  # an indented comment\n"
      "card_lost\tmy card was stolen\t(tab inside the text)\n"
      "balance\thow much money do I have\n";
  auto r = brisk::parse_intent_examples(text, "intents.tsv");
  REQUIRE(r.ok());
  CHECK(r->labels == std::vector<std::string>{"card_lost", "balance"});
  CHECK(r->texts == std::vector<std::string>{"I lost my card", "what is my balance?",
                                             "my card was stolen\t(tab inside the text)", "how much money do I have"});
  CHECK(r->label_ids == std::vector<int32_t>{0, 1, 0, 1});
  CHECK(r->lines == std::vector<int64_t>{2, 5, 7, 8});
  CHECK(r->counts() == std::vector<int64_t>{2, 2});
  CHECK(r->text_views().size() == 4);
}

TEST_CASE("parse_intent_examples names the file and line of each mistake", "[model][intent]") {
  const std::string ok = "a\tone\na\ttwo\nb\tthree\nb\tfour\n";
  std::string m = parse_error(ok + "no tab here\n");
  CHECK(contains(m, "intents.tsv:5"));
  CHECK(contains(m, "no tab"));
  m = parse_error(ok + "  \tan empty label\n");
  CHECK((contains(m, "intents.tsv:5") && contains(m, "label") && contains(m, "empty")));
  m = parse_error(ok + "c\t   \n");
  CHECK((contains(m, "intents.tsv:5") && contains(m, "text") && contains(m, "empty")));
  m = parse_error(ok + "c\tbad \xff byte\n");
  CHECK((contains(m, "intents.tsv:5") && contains(m, "UTF-8") && contains(m, "byte 6")));
  m = parse_error(ok + "c\x01x\ttext\n");
  CHECK((contains(m, "intents.tsv:5") && contains(m, "control character")));
  m = parse_error(ok + "c\tone\n");  // the same text as line 1, labelled differently
  CHECK((contains(m, "intents.tsv:5") && contains(m, "line 1") && contains(m, "'a'")));
  m = parse_error(ok + "x\tlonely\n");
  CHECK(contains(m, "intents.tsv:5: intent 'x' has 1 example; expected at least 2 per intent"));
  m = parse_error("a\tone\na\ttwo\n");
  CHECK(contains(m, "intents.tsv has 1 intent; expected at least 2"));
  m = parse_error("# only a comment\n");
  CHECK(contains(m, "has 0 intents"));
  std::string many(static_cast<size_t>(brisk::kMaxIntentExampleLines) + 1, '\n');
  m = parse_error(ok + many);
  CHECK(contains(m, "more than 100000 lines"));
}

TEST_CASE("read_intent_examples reads a file and refuses what is not one", "[model][intent]") {
  TempDir dir;
  auto r = brisk::read_intent_examples(dir.write("ok.tsv", "a\tone\na\ttwo\nb\tthree\nb\tfour"));  // no final \n
  REQUIRE(r.ok());
  CHECK(r->size() == 4);
  auto missing = brisk::read_intent_examples(dir.file("missing.tsv"));
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(contains(missing.status().message(), "missing.tsv"));
  auto folder = brisk::read_intent_examples(dir.path.string());
  CHECK_FALSE(folder.ok());
  CHECK(contains(folder.status().message(), "not a regular file"));
  auto bad = brisk::read_intent_examples(dir.write("bad.tsv", "a\tone\na\ttwo\nb\n"));
  CHECK(contains(bad.status().message(), "bad.tsv:3"));
}

// ---- the fit ----------------------------------------------------------------------------------------------------

TEST_CASE("fit_intent_head matches scikit-learn's balanced multinomial logistic regression", "[model][intent]") {
  std::ifstream in(brisk::testing::test_data_dir() / "intent_golden.json");
  REQUIRE(in);
  const nlohmann::json golden = nlohmann::json::parse(in);
  const int64_t dim = golden["dim"].get<int64_t>();
  std::vector<float> train_x, test_x;
  for (const auto& row : golden["train_x"]) {
    for (double v : row) train_x.push_back(static_cast<float>(v));
  }
  for (const auto& row : golden["test_x"]) {
    for (double v : row) test_x.push_back(static_cast<float>(v));
  }
  const std::vector<int32_t> train_y = golden["train_y"].get<std::vector<int32_t>>();
  const int64_t n_train = static_cast<int64_t>(train_y.size()), n_test = static_cast<int64_t>(test_x.size()) / dim;
  const std::vector<std::string> labels = {"a", "b", "c", "d"};
  REQUIRE(golden["fits"].size() == 2);
  for (const auto& fit : golden["fits"]) {
    IntentFitOptions options;
    options.l2 = fit["l2"].get<double>();
    options.tolerance = 1e-8;
    options.max_iterations = 10000;
    IntentFitStats stats;
    auto head = brisk::fit_intent_head(train_x, dim, train_y, labels, options, &stats);
    REQUIRE(head.ok());
    INFO("l2 " << options.l2 << ": " << stats.iterations << " iterations, gradient " << stats.gradient_norm);
    CHECK(stats.converged);
    CHECK(head->input == ClassificationHead::Input::kSentenceEmbedding);
    REQUIRE(head->layers.size() == 1);
    CHECK(head->layers[0].activation == brisk::HeadActivation::kNone);
    CHECK(head->labels == labels);
    CHECK(stats.examples_per_label == std::vector<int64_t>{16, 12, 8, 4});
    double worst = 0;
    for (auto [x, rows, key] : {std::tuple{&train_x, n_train, "train_proba"}, {&test_x, n_test, "test_proba"}}) {
      const std::vector<float> p = probabilities(*head, *x, rows);
      const auto& want = fit[key];
      REQUIRE(static_cast<int64_t>(want.size()) == rows);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < 4; ++c) {
          worst = std::max(worst, std::abs(double(p[static_cast<size_t>(r * 4 + c)]) - want[r][c].get<double>()));
        }
      }
    }
    INFO("largest probability difference " << worst);
    CHECK(worst < 2e-6);  // measured 1.4e-7 (l2 1e-2) and 6.9e-7 (l2 1e-3): f32 rounding of the head
  }
}

TEST_CASE("fit_intent_head separates separable clusters, deterministically", "[model][intent]") {
  const Clusters c = clusters(5, 6, 24, 7);
  IntentFitStats stats;
  auto head = brisk::fit_intent_head(c.x, c.dim, c.y, c.labels, {}, &stats);
  REQUIRE(head.ok());
  CHECK(stats.converged);
  CHECK(stats.gradient_norm <= 1e-6);
  CHECK(stats.training_accuracy == 1.0);
  CHECK(stats.examples_per_label == std::vector<int64_t>{6, 7, 8, 9, 10});
  const std::vector<float> p = probabilities(*head, c.x, static_cast<int64_t>(c.y.size()));
  for (size_t i = 0; i < c.y.size(); ++i) {
    const float* row = p.data() + i * 5;
    CHECK(std::max_element(row, row + 5) - row == c.y[i]);
  }
  // The same inputs give the same bits.
  auto again = brisk::fit_intent_head(c.x, c.dim, c.y, c.labels, {}, nullptr);
  REQUIRE(again.ok());
  const Tensor& w1 = head->layers[0].weight;
  const Tensor& w2 = again->layers[0].weight;
  CHECK(std::equal(w1.data<float>(), w1.data<float>() + w1.numel(), w2.data<float>()));
  // A stronger penalty gives smaller weights and flatter probabilities.
  IntentFitOptions strong;
  strong.l2 = 1.0;
  auto flat = brisk::fit_intent_head(c.x, c.dim, c.y, c.labels, strong, nullptr);
  REQUIRE(flat.ok());
  const std::vector<float> pf = probabilities(*flat, c.x, static_cast<int64_t>(c.y.size()));
  CHECK(*std::max_element(pf.begin(), pf.end()) < *std::max_element(p.begin(), p.end()));
  // Too few iterations is not an error: the stats say so.
  IntentFitOptions short_run;
  short_run.max_iterations = 1;
  IntentFitStats short_stats;
  REQUIRE(brisk::fit_intent_head(c.x, c.dim, c.y, c.labels, short_run, &short_stats).ok());
  CHECK_FALSE(short_stats.converged);
  CHECK(short_stats.iterations == 1);
  // A tolerance below rounding noise ends when the objective stalls, well before max_iterations.
  IntentFitOptions unreachable;
  unreachable.tolerance = 1e-300;
  unreachable.max_iterations = 100000;
  IntentFitStats stalled;
  REQUIRE(brisk::fit_intent_head(c.x, c.dim, c.y, c.labels, unreachable, &stalled).ok());
  CHECK_FALSE(stalled.converged);
  CHECK(stalled.iterations < 2000);
  CHECK(stalled.gradient_norm < 1e-8);
}

TEST_CASE("fit_intent_head refuses bad inputs with a message naming them", "[model][intent]") {
  const Clusters c = clusters(3, 3, 8, 11);
  auto error = [&](std::span<const float> x, int64_t dim, std::span<const int32_t> y,
                   const std::vector<std::string>& labels, IntentFitOptions options = {}) {
    auto r = brisk::fit_intent_head(x, dim, y, labels, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  CHECK(contains(error(c.x, 7, c.y, c.labels), "expected rows x dim"));
  CHECK(contains(error(std::span(c.x).first(c.x.size() - 1), 8, c.y, c.labels), "expected rows x dim"));
  CHECK(contains(error({}, 8, {}, c.labels), "no examples"));
  std::vector<int32_t> y = c.y;
  y[4] = 3;
  CHECK(contains(error(c.x, 8, y, c.labels), "label_ids[4] is 3; expected a label id 0 to 2"));
  y[4] = -1;
  CHECK(contains(error(c.x, 8, y, c.labels), "label_ids[4] is -1"));
  CHECK(contains(error(c.x, 8, c.y, {"a", "b", "c", "d"}), "'d' (id 3) has no examples"));
  CHECK(contains(error(c.x, 8, std::vector<int32_t>(c.y.size(), 0), {"a"}), "1 labels; expected 2"));
  CHECK(contains(error(c.x, 8, c.y, {"a", "a", "c"}), "repeated"));
  std::vector<float> x = c.x;
  x[17] = NAN;
  CHECK(contains(error(x, 8, c.y, c.labels), "row 2 column 1 is nan"));
  IntentFitOptions o;
  o.l2 = 0;
  CHECK(contains(error(c.x, 8, c.y, c.labels, o), "l2 is 0"));
  o = {};
  o.tolerance = NAN;
  CHECK(contains(error(c.x, 8, c.y, c.labels, o), "tolerance"));
  o = {};
  o.max_iterations = 0;
  CHECK(contains(error(c.x, 8, c.y, c.labels, o), "max_iterations is 0"));
}

// ---- the head file ----------------------------------------------------------------------------------------------

TEST_CASE("save_intent_head and load_intent_head round-trip a fitted head", "[model][intent]") {
  TempDir dir;
  const IntentHeadFile f = fitted_file(clusters(4, 4, 12, 3));
  const std::string path = dir.file("head.safetensors");
  REQUIRE(brisk::save_intent_head(path, f).ok());
  CHECK(brisk::is_intent_head_file(path));
  auto st = brisk::SafetensorsFile::open(path);
  REQUIRE(st.ok());
  CHECK(st->tensor_names() == std::vector<std::string>{"intent_head.bias", "intent_head.weight"});
  CHECK(st->metadata().at("format") == "brisk-intent-head");
  CHECK(st->metadata().at("version") == "1");
  CHECK(st->metadata().at("labels") == R"(["intent_0","intent_1","intent_2","intent_3"])");
  CHECK(st->metadata().at("unknown_threshold") == "0.3");

  auto loaded = brisk::load_intent_head(path);
  REQUIRE(loaded.ok());
  CHECK(loaded->head.labels == f.head.labels);
  CHECK(loaded->head.input == ClassificationHead::Input::kSentenceEmbedding);
  CHECK(loaded->embedding_model_id == f.embedding_model_id);
  CHECK(loaded->unknown_threshold == 0.3f);
  CHECK(loaded->fit_options.l2 == f.fit_options.l2);
  CHECK(loaded->fit_options.max_iterations == f.fit_options.max_iterations);
  CHECK(loaded->training_stats.iterations == f.training_stats.iterations);
  CHECK(loaded->training_stats.converged == f.training_stats.converged);
  CHECK(loaded->training_stats.gradient_norm == f.training_stats.gradient_norm);
  CHECK(loaded->training_stats.examples_per_label == f.training_stats.examples_per_label);
  for (int layer_part = 0; layer_part < 2; ++layer_part) {
    const Tensor& a = layer_part == 0 ? f.head.layers[0].weight : f.head.layers[0].bias;
    const Tensor& b = layer_part == 0 ? loaded->head.layers[0].weight : loaded->head.layers[0].bias;
    REQUIRE(a.shape() == b.shape());
    CHECK(std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>()));
  }

  CHECK_FALSE(brisk::is_intent_head_file(dir.file("missing.safetensors")));
  CHECK_FALSE(brisk::is_intent_head_file(dir.write("junk", "not a safetensors file at all")));
  CHECK_FALSE(brisk::is_intent_head_file(dir.path.string()));
  const std::string plain = dir.file("plain.safetensors");
  REQUIRE(brisk::write_safetensors(plain, {{"x", f.head.layers[0].bias}}, {{"format", "pt"}}).ok());
  CHECK_FALSE(brisk::is_intent_head_file(plain));
  auto not_head = brisk::load_intent_head(plain);
  CHECK(contains(not_head.status().message(), "format is 'pt'; expected 'brisk-intent-head'"));
  CHECK(brisk::load_intent_head(dir.file("missing.safetensors")).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("load_intent_head checks every tensor and metadata entry", "[model][intent]") {
  TempDir dir;
  const IntentHeadFile f = fitted_file(clusters(3, 4, 6, 5));
  const std::string good = dir.file("good.safetensors");
  REQUIRE(brisk::save_intent_head(good, f).ok());
  auto st = brisk::SafetensorsFile::open(good);
  REQUIRE(st.ok());
  const std::map<std::string, std::string> md = st->metadata();
  const Tensor w = f.head.layers[0].weight, b = f.head.layers[0].bias;
  using Tensors = std::vector<std::pair<std::string, Tensor>>;
  const Tensors tensors = {{"intent_head.weight", w}, {"intent_head.bias", b}};
  int n = 0;
  auto error = [&](const Tensors& t, const std::map<std::string, std::string>& m) {
    const std::string path = dir.file("bad" + std::to_string(n++) + ".safetensors");
    REQUIRE(brisk::write_safetensors(path, t, m).ok());
    auto r = brisk::load_intent_head(path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    const std::string message(r.status().message());
    CHECK(contains(message, path));
    return message;
  };
  auto with = [&](const std::string& key, const std::string& value) {
    auto m = md;
    m[key] = value;
    return m;
  };
  auto without = [&](const std::string& key) {
    auto m = md;
    m.erase(key);
    return m;
  };
  CHECK(contains(error(tensors, with("version", "2")), "version is '2'; expected '1'"));
  CHECK(contains(error(tensors, without("format")), "format is absent"));
  CHECK(contains(error(tensors, with("labels", "{\"0\": \"a\"}")), "not a JSON array"));
  CHECK(contains(error(tensors, with("labels", "[\"a\", \"b\", \"c\"")), "not a JSON array"));
  CHECK(contains(error(tensors, with("labels", "[\"a\", 2, \"c\"]")), "non-string"));
  CHECK(contains(error(tensors, with("labels", "[\"a\", \"a\", \"c\"]")), "repeated"));
  CHECK(contains(error(tensors, with("labels", "[\"a\", \"b\"]")), "expected F32 [2, dim]"));
  CHECK(contains(error(tensors, with("labels", "[\"a\"]")), "has 1 labels; expected 2"));
  CHECK(contains(error({{"intent_head.weight", w}}, md), "expected exactly intent_head.weight and intent_head.bias"));
  CHECK(contains(error({{"intent_head.weight", w}, {"intent_head.bias", b}, {"extra", b}}, md), "extra"));
  auto w16 = Tensor::zeros({3, 6}, brisk::DType::kF16);
  REQUIRE(w16.ok());
  CHECK(contains(error({{"intent_head.weight", *w16}, {"intent_head.bias", b}}, md), "intent_head.weight is F16"));
  CHECK(contains(error({{"intent_head.weight", b}, {"intent_head.bias", b}}, md), "intent_head.weight is F32 [3]"));
  auto nan_w = Tensor::zeros({3, 6}, brisk::DType::kF32);
  REQUIRE(nan_w.ok());
  nan_w->data<float>()[7] = NAN;
  CHECK(contains(error({{"intent_head.weight", *nan_w}, {"intent_head.bias", b}}, md), "element 7 is nan"));
  CHECK(contains(error(tensors, without("embedding_model_id")), "embedding_model_id"));
  CHECK(contains(error(tensors, with("unknown_threshold", "1.5")), "unknown_threshold is '1.5'"));
  CHECK(contains(error(tensors, with("unknown_threshold", "0.5x")), "unknown_threshold is '0.5x'"));
  CHECK(contains(error(tensors, with("unknown_threshold", "nan")), "expected a decimal probability"));
  CHECK(contains(error(tensors, without("unknown_threshold")), "unknown_threshold is absent"));
  CHECK(contains(error(tensors, with("fit_options", "[1]")), "'fit_options' is not a JSON object"));
  CHECK(contains(error(tensors, with("fit_options", "{\"l2\": 0.01, \"tolerance\": 1e-6}")), "max_iterations"));
  CHECK(contains(error(tensors, without("training_stats")), "no 'training_stats'"));
  CHECK(contains(error(tensors, with("training_stats", "{\"iterations\": 3}")), "training_stats"));
}

TEST_CASE("save_intent_head refuses heads it cannot write faithfully", "[model][intent]") {
  TempDir dir;
  const IntentHeadFile f = fitted_file(clusters(3, 4, 6, 9));
  const std::string path = dir.file("head.safetensors");
  auto error = [&](const IntentHeadFile& file) {
    brisk::Status s = brisk::save_intent_head(path, file);
    REQUIRE_FALSE(s.ok());
    CHECK(contains(s.message(), path));
    return std::string(s.message());
  };
  IntentHeadFile g = f;
  g.unknown_threshold = 1.5f;
  CHECK(contains(error(g), "unknown_threshold is 1.5"));
  g = f;
  g.embedding_model_id.clear();
  CHECK(contains(error(g), "embedding_model_id"));
  g = f;
  g.head.input = ClassificationHead::Input::kFirstToken;
  CHECK(contains(error(g), "Input::kSentenceEmbedding"));
  g = f;
  g.head.layers.push_back(g.head.layers[0]);
  CHECK(contains(error(g), "one DenseLayer"));
  g = f;
  g.head.labels[1] = g.head.labels[0];
  CHECK(contains(error(g), "repeated"));
  CHECK_FALSE(std::filesystem::exists(path));
}
