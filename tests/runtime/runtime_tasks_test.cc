// Sequence classification and cross-encoder reranking against Hugging Face transformers' logits on tiny random
// models (tests/data/make_task_golden.py), alone and inside mixed-length batches, and the tasks' bad inputs.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <filesystem>

#include "brisk/core/allocator.h"
#include "brisk/model/classification_head.h"
#include "brisk/model/tokenizer.h"
#include "brisk/prune/structured.h"
#include "brisk/quant/model_file.h"
#include "brisk/runtime/runtime.h"
#include "runtime_test_util.h"
#include "test_util.h"

namespace {

using brisk::Runtime;
using brisk::RuntimeOptions;
using nlohmann::json;

constexpr float kTolerance = 1e-4f;

std::string task_dir(const std::string& model) { return (brisk::testing::test_data_dir() / "tasks" / model).string(); }

json golden(const std::string& model) {
  std::ifstream in(task_dir(model) + "/golden.json");
  REQUIRE(in.good());
  return json::parse(in);
}

RuntimeOptions task_options(const std::string& model, int max_seq_len) {
  RuntimeOptions o;
  o.model_dir = task_dir(model);
  o.max_seq_len = max_seq_len;
  o.num_threads = brisk::testing::compute_threads();
  o.cache.result_cache_bytes = 0;  // every answer from the model
  return o;
}

void require_close(std::span<const float> got, const json& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::abs(got[i] - want[i].get<float>()) <= kTolerance);
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

TEST_CASE("tasks: classification logits equal transformers', alone and in one mixed-length batch") {
  for (const std::string model : {"bert_cls", "bert_multilabel", "distilbert_cls", "distilbert_multilabel"}) {
    INFO(model);
    const json g = golden(model);
    auto rt = brisk::testing::make_runtime(task_options(model, g["max_length"].get<int>()));
    REQUIRE(rt->info().task == "classification");
    REQUIRE(rt->embedding_dim() == 0);
    std::vector<std::string> texts;
    for (const json& item : g["single"]) texts.push_back(item["text"].get<std::string>());
    std::vector<std::string_view> views(texts.begin(), texts.end());
    const size_t labels = g["single"][0]["logits"].size();
    REQUIRE(rt->info().labels.size() == labels);

    auto tok = brisk::WordPieceTokenizer::from_model_dir(task_dir(model));
    REQUIRE(tok.ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      auto ids = tok->encode(texts[i], g["max_length"].get<int>());
      REQUIRE(ids.ok());
      REQUIRE(*ids == g["single"][i]["ids"].get<std::vector<int32_t>>());
      auto alone = rt->logits(std::span(views).subspan(i, 1));
      REQUIRE(alone.ok());
      require_close(*alone, g["single"][i]["logits"], "alone: " + texts[i]);
    }
    auto batch = rt->logits(views);
    REQUIRE(batch.ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      require_close(std::span<const float>(*batch).subspan(i * labels, labels), g["single"][i]["logits"],
                    "in a batch: " + texts[i]);
    }
    REQUIRE(rt->forward_passes() == texts.size() + 1);

    // Probabilities: a softmax over the labels, or a sigmoid per label for multi-label models.
    auto top = rt->classify(views, static_cast<int>(labels));
    REQUIRE(top.ok());
    const bool multi = model.find("multilabel") != std::string::npos;
    REQUIRE(rt->info().multi_label == multi);
    for (size_t i = 0; i < texts.size(); ++i) {
      const json& want = g["single"][i]["logits"];
      std::vector<float> p(labels);
      float sum = 0;
      for (size_t k = 0; k < labels; ++k)
        sum += (p[k] = multi ? sigmoid(want[k].get<float>()) : std::exp(want[k].get<float>()));
      if (!multi)
        for (float& v : p) v /= sum;
      const auto& got = (*top)[i];
      REQUIRE(got.size() == labels);
      for (size_t k = 0; k < labels; ++k) {
        REQUIRE(got[k].label == rt->info().labels[static_cast<size_t>(got[k].id)]);
        REQUIRE(std::abs(got[k].score - p[static_cast<size_t>(got[k].id)]) <= 1e-4f);
        if (k > 0) REQUIRE(got[k - 1].score >= got[k].score);
      }
    }
  }
}

TEST_CASE("tasks: labels come from config.json's id2label") {
  auto rt = brisk::testing::make_runtime(task_options("bert_cls", 24));
  REQUIRE(rt->info().labels == std::vector<std::string>{"billing", "card_lost", "greeting"});
  std::vector<std::string_view> texts = {"my card is lost"};
  auto top = rt->classify(texts, 1);
  REQUIRE(top.ok());
  REQUIRE((*top)[0].size() == 1);
}

TEST_CASE("tasks: cross-encoder pairs equal transformers' token ids and logits, and rerank sorts them") {
  const json g = golden("cross_encoder");
  const int max_len = g["max_length"].get<int>();
  auto rt = brisk::testing::make_runtime(task_options("cross_encoder", max_len));
  auto tok = brisk::WordPieceTokenizer::from_model_dir(task_dir("cross_encoder"));
  REQUIRE(tok.ok());
  std::vector<std::string> passages;
  for (const json& pair : g["pairs"]) passages.push_back(pair["passage"].get<std::string>());
  std::vector<std::string_view> all(passages.begin(), passages.end());
  for (size_t i = 0; i < g["pairs"].size(); ++i) {
    const json& pair = g["pairs"][i];
    const std::string query = pair["query"].get<std::string>();
    INFO(query << " | " << passages[i]);
    auto encoded = tok->encode_pair(query, passages[i], max_len);
    REQUIRE(encoded.ok());
    REQUIRE(encoded->ids == pair["ids"].get<std::vector<int32_t>>());
    REQUIRE(encoded->token_type_ids() == pair["token_type_ids"].get<std::vector<int32_t>>());

    brisk::RerankOptions raw;
    raw.raw_scores = true;
    auto alone = rt->rerank(query, std::span(all).subspan(i, 1), raw);
    REQUIRE(alone.ok());
    REQUIRE(std::abs((*alone)[0].score - pair["logits"][0].get<float>()) <= kTolerance);
    // The same pair among every other passage: one mixed-length batch, sorted by score.
    auto ranked = rt->rerank(query, all, raw);
    REQUIRE(ranked.ok());
    REQUIRE(ranked->size() == all.size());
    bool found = false;
    for (size_t k = 0; k < ranked->size(); ++k) {
      if (k > 0) REQUIRE((*ranked)[k - 1].score >= (*ranked)[k].score);
      if ((*ranked)[k].index == i) {
        found = true;
        REQUIRE(std::abs((*ranked)[k].score - pair["logits"][0].get<float>()) <= kTolerance);
      }
    }
    REQUIRE(found);
    auto scored = rt->rerank(query, std::span(all).subspan(i, 1));
    REQUIRE(scored.ok());
    REQUIRE(std::abs((*scored)[0].score - sigmoid(pair["logits"][0].get<float>())) <= 1e-5f);
  }
}

TEST_CASE("tasks: a pair and a single text with the same ids do not share a cache entry") {
  RuntimeOptions o = task_options("cross_encoder", 24);
  o.cache.result_cache_bytes = 1 << 20;
  auto cached = brisk::testing::make_runtime(o);
  auto fresh = brisk::testing::make_runtime(task_options("cross_encoder", 24));
  brisk::RerankOptions raw;
  raw.raw_scores = true;
  std::vector<std::string_view> passage = {"lost card"};
  REQUIRE(cached->rerank("my pin", passage, raw).ok());
  // "[SEP]" written in a text is the special token: the same ids as the pair, with token types all 0.
  std::vector<std::string_view> single = {"my pin [SEP] lost card"};
  auto from_cache = cached->logits(single);
  auto from_model = fresh->logits(single);
  REQUIRE(from_cache.ok());
  REQUIRE(from_model.ok());
  REQUIRE((*from_cache)[0] == Approx((*from_model)[0]).margin(1e-6));
  auto pair = cached->rerank("my pin", passage, raw);
  REQUIRE(pair.ok());
  REQUIRE(std::abs((*pair)[0].score - (*from_model)[0]) > 1e-4f);  // token types matter: not served the single's
}

TEST_CASE("tasks: bad input gets a clear error") {
  auto cls = brisk::testing::make_runtime(task_options("bert_cls", 24));
  std::vector<std::string_view> texts = {"hello"};
  SECTION("top_k out of range") {
    for (int k : {0, -1, 4}) {
      auto r = cls->classify(texts, k);
      REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
      REQUIRE_THAT(std::string(r.status().message()),
                   Catch::Contains("top_k is") && Catch::Contains("expected 1 to 3"));
    }
  }
  SECTION("embed on a classification model") {
    auto r = cls->embed(texts);
    REQUIRE(r.status().code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("classification model"));
  }
  SECTION("rerank needs one label") {
    auto r = cls->rerank("q", texts);
    REQUIRE(r.status().code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("has 3 labels"));
  }
  SECTION("classify on an embedding model") {
    RuntimeOptions o;
    o.model_dir = brisk::default_model_dir();  // all-MiniLM-L6-v2, an embedding model
    auto emb = brisk::testing::make_runtime(o);
    auto r = emb->classify(texts, 1);
    REQUIRE(r.status().code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("no classification head"));
    REQUIRE(emb->rerank("q", texts).status().code() == absl::StatusCode::kFailedPrecondition);
  }
  SECTION("rerank with no passages, and with 10,000 (batched, not refused)") {
    auto ce = brisk::testing::make_runtime(task_options("cross_encoder", 24));
    auto none = ce->rerank("q", {});
    REQUIRE(none.status().code() == absl::StatusCode::kInvalidArgument);
    REQUIRE_THAT(std::string(none.status().message()), Catch::Contains("passages is empty"));
    std::vector<std::string> many;
    for (int i = 0; i < 10000; ++i) many.push_back("card number " + std::to_string(i % 97) + " lost");
    std::vector<std::string_view> views(many.begin(), many.end());
    auto ranked = ce->rerank("lost card", views);
    REQUIRE(ranked.ok());
    REQUIRE(ranked->size() == 10000);
    REQUIRE(ce->forward_passes() >= 10000 / 32);
    brisk::RerankOptions top;
    top.top_k = 5;
    auto best = ce->rerank("lost card", views, top);
    REQUIRE(best.ok());
    REQUIRE(best->size() == 5);
    REQUIRE((*best)[0].score == (*ranked)[0].score);
  }
  SECTION("invalid UTF-8 names the passage") {
    auto ce = brisk::testing::make_runtime(task_options("cross_encoder", 24));
    std::vector<std::string_view> bad = {"fine", "bad \xff byte"};
    auto r = ce->rerank("q", bad);
    REQUIRE(r.status().code() == absl::StatusCode::kInvalidArgument);
    REQUIRE_THAT(std::string(r.status().message()), Catch::Contains("passage 1"));
  }
}

TEST_CASE("tasks: a quantized model file and a pruned model directory keep the classification head") {
  const json g = golden("bert_cls");
  const std::string dir = task_dir("bert_cls");
  auto config = brisk::BertConfig::from_json_file(dir + "/config.json");
  REQUIRE(config.ok());
  auto tensors = brisk::read_weights_file(dir + "/model.safetensors");
  REQUIRE(tensors.ok());
  auto weights = brisk::EncoderWeights::from_tensors(*tensors, *config, "model.safetensors");
  REQUIRE(weights.ok());
  const brisk::NamedTensors head = brisk::sequence_classification_head_tensors(*tensors);
  REQUIRE(head.size() == 4);
  const auto tmp = std::filesystem::temp_directory_path() / ("brisk_tasks_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);

  // Every layer left in f32: the file must answer exactly as the directory does.
  brisk::quant::QuantizedModel q;
  q.config = *config;
  auto files = brisk::quant::read_model_files(dir);
  REQUIRE(files.ok());
  q.model_files = *files;
  q.weights = *weights;
  q.head_tensors = head;
  const std::string file = (tmp / "bert_cls.safetensors").string();
  REQUIRE(brisk::quant::save_quantized_model(file, q).ok());

  brisk::prune::PrunedModel p{*config, *weights, head};
  const std::string pruned_dir = (tmp / "pruned").string();
  REQUIRE(brisk::prune::save_pruned_model(p, dir, pruned_dir).ok());

  for (const std::string& model : {file, pruned_dir}) {
    INFO(model);
    RuntimeOptions o = task_options("bert_cls", g["max_length"].get<int>());
    o.model_dir = model;
    auto rt = brisk::testing::make_runtime(o);
    REQUIRE(rt->info().labels == std::vector<std::string>{"billing", "card_lost", "greeting"});
    for (const json& item : g["single"]) {
      const std::string text = item["text"].get<std::string>();
      std::vector<std::string_view> one = {text};
      auto logits = rt->logits(one);
      REQUIRE(logits.ok());
      require_close(*logits, item["logits"], text);
    }
  }
  std::filesystem::remove_all(tmp);
}

TEST_CASE("tasks: on cuda:0 the classification head serves the GPU encoder's output", "[runtime][cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const json g = golden("bert_cls");
  for (const brisk::DType dtype : {brisk::DType::kF32, brisk::DType::kF16}) {
    RuntimeOptions o = task_options("bert_cls", g["max_length"].get<int>());
    o.device = brisk::Device::kCUDA;
    o.activation_dtype = dtype;
    auto rt = brisk::testing::make_runtime(o);
    const float tolerance = dtype == brisk::DType::kF32 ? 1e-4f : 2e-2f;
    for (const json& item : g["single"]) {
      const std::string text = item["text"].get<std::string>();
      std::vector<std::string_view> one = {text};
      auto logits = rt->logits(one);
      REQUIRE(logits.ok());
      for (size_t k = 0; k < logits->size(); ++k) {
        REQUIRE(std::abs((*logits)[k] - item["logits"][k].get<float>()) <= tolerance);
      }
    }
  }
}
