// Decoder embedders: the tiny random Qwen3 and Qwen2 models made by tests/data/make_tiny_qwen.py with transformers
// 4.51.3 (Qwen3Model as Qwen3-Embedding ships it, with its sentence-transformers files: last-token pooling, Normalize,
// the query prompt; and a Qwen2Model, gte-Qwen2's family), tokenized by their byte-level BPE tokenizer.json with
// the end-token template; and a tiny Qwen3ForSequenceClassification (the cross-encoder form of Qwen3-Reranker).
// Checked against transformers: the token ids, the last hidden states of each text alone and inside one packed batch
// (transformers' batch is left-padded), the runtime's pooled embeddings, the reranker's logits, and the config's
// refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/model/classification_head.h"
#include "brisk/model/encoder.h"
#include "brisk/model/loader.h"
#include "brisk/runtime/runtime.h"
#include "golden_json.h"

using brisk::testing::max_abs_diff;
using brisk::testing::read_json;
using nlohmann::json;

namespace {

// f32 against f32, as for tiny BERT and XLM-R. RMSNorm with gammas near 1 keeps the hidden states O(1), so this is
// an absolute bound on values of that size.
constexpr double kTolerance = 2e-5;

void check_hidden_states(const char* model, const char* golden_file, const brisk::EncoderOptions& options = {}) {
  auto m = brisk::load_model(brisk::testing::data_folder(model));
  INFO(m.status().message());
  REQUIRE(m.ok());
  auto encoder = brisk::BertEncoder::create(m->config, std::move(m->weights), options);
  INFO(encoder.status().message());
  REQUIRE(encoder.ok());
  const json golden = read_json(golden_file);
  for (const json& item : golden["items"]) {
    const auto ids = item["ids"].get<std::vector<int32_t>>();
    INFO("text: " << item["text"].get<std::string>());
    auto encoded = m->tokenizer.encode(item["text"].get<std::string>(), m->max_seq_len);
    REQUIRE(encoded.ok());
    CHECK(*encoded == ids);
    brisk::PackedSequences one;
    one.add(ids);
    std::vector<float> last(static_cast<size_t>((*encoder)->hidden_size()));
    REQUIRE((*encoder)->embed(one, brisk::Pooling::kLastToken, false, last.data()).ok());
    CHECK(max_abs_diff(last.data(), item["last_token"].get<std::vector<float>>()) <= kTolerance);
  }
  REQUIRE(golden["items"].size() >= 10);
  brisk::testing::check_alone_and_packed(**encoder, golden["items"], kTolerance);
}

}  // namespace

TEST_CASE("qwen: the families, their shapes and their BPE tokenizer load", "[encoder][model][qwen]") {
  auto q3 = brisk::load_model(brisk::testing::data_folder("tiny_qwen3"));
  INFO(q3.status().message());
  REQUIRE(q3.ok());
  CHECK(q3->config.family == brisk::ModelFamily::kQwen3);
  CHECK(q3->config.is_decoder());
  CHECK(q3->config.qk_norm());
  CHECK(q3->config.head_dim() == 16);  // config.json's head_dim, not hidden / heads = 8
  CHECK(q3->config.num_key_value_heads == 2);
  CHECK_FALSE(q3->config.attention_bias);
  CHECK(q3->config.rope_theta == 1e6);
  CHECK(q3->config.summary().find("qwen3: 2 layers, hidden 32, 4 heads (2 key/value, head_dim 16)") == 0);
  CHECK(q3->tokenizer.kind() == "BPE");
  CHECK(q3->pooling.mode == brisk::Pooling::kLastToken);
  CHECK(q3->pooling.normalize);
  CHECK(q3->pooling.prompts.at("query") ==
        "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:");
  CHECK(q3->max_seq_len == 96);

  auto q2 = brisk::load_model(brisk::testing::data_folder("tiny_qwen2"));
  INFO(q2.status().message());
  REQUIRE(q2.ok());
  CHECK(q2->config.family == brisk::ModelFamily::kQwen2);
  CHECK_FALSE(q2->config.qk_norm());
  CHECK(q2->config.attention_bias);
  CHECK(q2->config.head_dim() == 8);
}

TEST_CASE("qwen3: hidden states and last-token pooling match transformers alone and in one packed batch",
          "[encoder][model][qwen]") {
  check_hidden_states("tiny_qwen3", "tiny_qwen3/golden_qwen3.json");
}

TEST_CASE("qwen2: hidden states and last-token pooling match transformers alone and in one packed batch",
          "[encoder][model][qwen]") {
  check_hidden_states("tiny_qwen2", "tiny_qwen2/golden_qwen2.json");
}

TEST_CASE("qwen2 and qwen3 under reproducible arithmetic match transformers too", "[encoder][model][qwen]") {
  check_hidden_states("tiny_qwen3", "tiny_qwen3/golden_qwen3.json", {.reproducible = true});
  check_hidden_states("tiny_qwen2", "tiny_qwen2/golden_qwen2.json", {.reproducible = true});
}

TEST_CASE("qwen3: the runtime's normalized last-token embeddings match transformers' left-padded batch",
          "[model][qwen]") {
  const json golden = read_json("tiny_qwen3/golden_qwen3.json");
  std::vector<std::string> texts;
  for (const json& item : golden["items"]) texts.push_back(item["text"].get<std::string>());
  std::vector<std::string_view> views(texts.begin(), texts.end());
  brisk::RuntimeOptions o;
  o.model_dir = brisk::testing::data_folder("tiny_qwen3");
  o.num_threads = 1;
  auto rt = brisk::Runtime::create(o);
  INFO(rt.status().message());
  REQUIRE(rt.ok());
  CHECK((*rt)->info().pooling == brisk::Pooling::kLastToken);
  CHECK((*rt)->info().model_type == "qwen3");
  auto emb = (*rt)->embed(views);
  INFO(emb.status().message());
  REQUIRE(emb.ok());
  const size_t dim = static_cast<size_t>((*rt)->embedding_dim());
  const json& batch_last = golden["batch"]["last_token"];
  size_t i = 0;
  for (const json& item : golden["items"]) {
    INFO("text: " << texts[i]);
    CHECK(max_abs_diff(emb->data() + i * dim, item["normalized"].get<std::vector<float>>()) <= kTolerance);
    const auto want = batch_last[i].get<std::vector<float>>();
    CHECK(brisk::testing::cosine(emb->data() + i * dim, want.data(), want.size()) >= 0.99999);
    ++i;
  }
}

TEST_CASE("qwen: configs brisk cannot run exactly are refused with what is wrong named", "[model][qwen]") {
  const std::string base = brisk::testing::read_test_file("tiny_qwen3/config.json");
  auto with = [&](const std::string& key, const json& value) {
    json j = json::parse(base);
    j[key] = value;
    return brisk::BertConfig::from_json_string(j.dump(), "config.json");
  };
  REQUIRE(with("rope_theta", 1e6).ok());
  const struct {
    const char* key;
    json value;
    const char* message;
  } cases[] = {
      {"rope_scaling", json{{"type", "yarn"}, {"factor", 4.0}}, "rope_scaling"},
      {"use_sliding_window", true, "use_sliding_window"},
      {"hidden_act", "gelu", "expected \"silu\""},
      {"num_key_value_heads", 3, "num_key_value_heads"},
      {"head_dim", 15, "head dimension is 15"},
      {"rope_theta", 0.5, "rope_theta"},
      {"model_type", "llama", "\"qwen2\" and \"qwen3\""},
  };
  for (const auto& c : cases) {
    auto r = with(c.key, c.value);
    INFO(c.key << ": " << r.status().message());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(std::string(r.status().message()), Catch::Contains(c.message));
  }
  // Pooling files: last-token pooling with a prompt left out is the same pooling; mean pooling without the prompt
  // is not what brisk computes, and two modes at once are refused.
  auto pooling = [](const json& j) {
    return brisk::PoolingConfig::from_json_string(j.dump(), "1_Pooling/config.json");
  };
  auto last = pooling({{"pooling_mode_lasttoken", true}, {"include_prompt", false}});
  REQUIRE(last.ok());
  CHECK(last->mode == brisk::Pooling::kLastToken);
  auto mean = pooling({{"pooling_mode_mean_tokens", true}, {"include_prompt", false}});
  REQUIRE_FALSE(mean.ok());
  CHECK_THAT(std::string(mean.status().message()), Catch::Contains("include_prompt"));
  auto two = pooling({{"pooling_mode_mean_tokens", true}, {"pooling_mode_lasttoken", true}});
  REQUIRE_FALSE(two.ok());
  CHECK_THAT(std::string(two.status().message()), Catch::Contains("more than one"));
  // A decoder runs on the CPU in f32: a CUDA encoder is refused by name, before any upload.
  auto m = brisk::load_model(brisk::testing::data_folder("tiny_qwen3"));
  REQUIRE(m.ok());
  brisk::EncoderOptions cuda;
  cuda.device = brisk::Device::kCUDA;
  cuda.activation = brisk::DType::kF16;
  auto refused = brisk::BertEncoder::create(m->config, std::move(m->weights), cuda);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("decoder models run on the CPU"));
}

TEST_CASE("qwen3 reranker: a Qwen3ForSequenceClassification cross-encoder's logits match transformers",
          "[model][qwen]") {
  const json golden = read_json("tiny_qwen3_reranker/golden_qwen3_reranker.json");
  // config.json's pad_token_id (0, <|endoftext|>, which the template appends): transformers' head reads the last
  // token that is not it; without pad_token_id, the last token whatever its id. The goldens differ between the two.
  brisk::testing::TempDir no_pad;
  const std::string dir = brisk::testing::data_folder("tiny_qwen3_reranker");
  std::filesystem::copy(dir, no_pad.path, std::filesystem::copy_options::recursive);
  json config = json::parse(brisk::testing::read_test_file("tiny_qwen3_reranker/config.json"));
  config.erase("pad_token_id");
  std::ofstream(no_pad.path / "config.json") << config.dump();
  for (const auto& [model_dir, key] :
       {std::pair<std::string, const char*>{dir, "logit"}, {no_pad.path.string(), "logit_without_pad_token_id"}}) {
    INFO("model " << model_dir << ", golden " << key);
    brisk::RuntimeOptions o;
    o.model_dir = model_dir;
    o.num_threads = 1;
    auto rt = brisk::Runtime::create(o);
    INFO(rt.status().message());
    REQUIRE(rt.ok());
    CHECK((*rt)->info().task == "classification");
    brisk::RerankOptions raw;
    raw.raw_scores = true;
    for (const json& pair : golden["pairs"]) {
      const std::string query = pair["query"], document = pair["document"];
      INFO("query: " << query << "; document: " << document);
      const std::string_view passage = document;
      auto scored = (*rt)->rerank(query, std::span(&passage, 1), raw);
      INFO(scored.status().message());
      REQUIRE(scored.ok());
      REQUIRE(scored->size() == 1);
      CHECK(std::abs((*scored)[0].score - pair[key].get<double>()) <= kTolerance);
      // The default score is the logit's sigmoid, TEI's and sentence-transformers' CrossEncoder's.
      auto sigmoid = (*rt)->rerank(query, std::span(&passage, 1));
      REQUIRE(sigmoid.ok());
      CHECK(std::abs((*sigmoid)[0].score - 1.0 / (1.0 + std::exp(-pair[key].get<double>()))) <= kTolerance);
    }
    std::vector<std::string> texts;
    for (const json& item : golden["texts"]) texts.push_back(item["text"]);
    std::vector<std::string_view> views(texts.begin(), texts.end());
    auto logits = (*rt)->logits(views);  // one packed batch
    INFO(logits.status().message());
    REQUIRE(logits.ok());
    REQUIRE(logits->size() == texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      INFO("text: " << texts[i]);
      CHECK(std::abs((*logits)[i] - golden["texts"][i][key].get<double>()) <= kTolerance);
    }
  }
  // The head reads pad_token_id itself: a whole number (5.0 is 5), null or absent; anything else is refused by name.
  auto m = brisk::load_model(dir);
  REQUIRE(m.ok());
  const auto head_with = [&](const json& pad) {
    json c = json::parse(brisk::testing::read_test_file("tiny_qwen3_reranker/config.json"));
    c["pad_token_id"] = pad;
    return brisk::read_sequence_classification_head(m->head_tensors, c.dump(), brisk::ModelFamily::kQwen3, "cfg");
  };
  for (const auto& [pad, want] : {std::pair<json, int64_t>{0, 0}, {5.0, 5}, {nullptr, -1}}) {
    auto head = head_with(pad);
    INFO("pad_token_id " << pad.dump() << ": " << head.status().message());
    REQUIRE(head.ok());
    REQUIRE(head->has_value());
    CHECK((*head)->pad_token == want);
    CHECK((*head)->input == brisk::ClassificationHead::Input::kLastToken);
  }
  for (const json& pad : {json("0"), json(-1), json(1.5), json(1e12)}) {
    auto head = head_with(pad);
    INFO("pad_token_id " << pad.dump());
    REQUIRE_FALSE(head.ok());
    CHECK_THAT(std::string(head.status().message()), Catch::Contains("pad_token_id is"));
  }
  // input_token: the last id that is not the padding id; position 0 when all are; -1 for no tokens.
  brisk::ClassificationHead head = **head_with(7);
  CHECK(head.input_token(std::vector<int32_t>{3, 4, 7, 7}) == 1);
  CHECK(head.input_token(std::vector<int32_t>{7, 7}) == 0);
  CHECK(head.input_token(std::vector<int32_t>{}) == -1);
}
