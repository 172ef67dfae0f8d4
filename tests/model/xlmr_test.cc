// XLM-RoBERTa: the tiny random models made by tests/data/make_tiny_xlmr.py with transformers 4.44.2 (an
// XLMRobertaModel with the sentence-transformers mean-pooling files, and an XLMRobertaForSequenceClassification),
// tokenized by their SentencePiece Unigram tokenizer.json. Checked: the family and its position offset, the token
// ids, the last hidden states of each text alone and inside one packed batch, the runtime's mean-pooled embeddings
// and the classifier's logits, all against transformers; and the same for texts holding a literal "<pad>" (the
// padding id inside the text, whose position is padding_idx and is not counted).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/model/encoder.h"
#include "brisk/model/loader.h"
#include "brisk/model/token_layout.h"
#include "brisk/runtime/runtime.h"
#include "golden_json.h"
#include "test_skip.h"

using brisk::testing::check_alone_and_packed;
using brisk::testing::max_abs_diff;
using brisk::testing::read_json;
using nlohmann::json;

namespace {

constexpr double kTolerance = 2e-5;  // f32 against f32: the order of summation alone (as for tiny BERT)

// The golden items with a literal "<pad>" after the ordinary ones: one packed batch of mixed lengths holds both.
json items_with_pad_texts(const json& golden) {
  json items = golden["items"];
  for (const json& item : golden["pad_items"]) items.push_back(item);
  return items;
}

}  // namespace

TEST_CASE("xlm-roberta: a literal <pad> in the text takes position padding_idx, as transformers numbers it",
          "[encoder][model][xlmr]") {
  auto m = brisk::load_model(brisk::testing::data_folder("tiny_xlmr"));
  REQUIRE(m.ok());
  const brisk::BertConfig& c = m->config;
  REQUIRE(c.positions_skip_pad_ids());
  const json golden = read_json("tiny_xlmr/golden_xlmr.json");  // alive through the loop
  brisk::PackedSequences batch;
  std::vector<int32_t> want;
  for (const json& item : golden["pad_items"]) {
    INFO("text: " << item["text"].get<std::string>());
    auto ids = m->tokenizer.encode(item["text"].get<std::string>(), m->max_seq_len);
    REQUIRE(ids.ok());
    CHECK(*ids == item["ids"].get<std::vector<int32_t>>());  // "<pad>" is the padding id 1
    batch.add(item["ids"].get<std::vector<int32_t>>());
    const auto positions = item["position_ids"].get<std::vector<int32_t>>();
    want.insert(want.end(), positions.begin(), positions.end());
  }
  for (const bool remove_padding : {true, false}) {
    INFO("remove_padding " << remove_padding);
    auto layout = brisk::make_token_layout(batch, remove_padding, static_cast<int32_t>(c.pad_token_id),
                                           static_cast<int32_t>(c.position_offset()), c.positions_skip_pad_ids());
    REQUIRE(layout.ok());
    std::vector<int32_t> got;
    for (size_t r = 0; r < layout->positions.size(); ++r) {
      if (layout->source_rows[r] >= 0) {
        got.push_back(layout->positions[r]);
      } else {
        CHECK(layout->positions[r] == c.pad_token_id);  // a pad row, as transformers numbers padding
      }
    }
    CHECK(got == want);
  }
}

TEST_CASE("xlm-roberta: the family, its position offset and its Unigram tokenizer load", "[encoder][model][xlmr]") {
  auto m = brisk::load_model(brisk::testing::data_folder("tiny_xlmr"));
  INFO(m.status().message());
  REQUIRE(m.ok());
  CHECK(m->config.family == brisk::ModelFamily::kRoberta);
  CHECK(m->config.model_type == "xlm-roberta");
  CHECK(m->config.position_offset() == 2);  // pad_token_id 1 + 1
  CHECK(m->config.type_vocab_size == 1);
  CHECK(m->tokenizer.kind() == "Unigram");
  CHECK(m->max_seq_len == 64);  // sentence_bert_config's 64 = 66 positions less the offset
  const json golden = read_json("tiny_xlmr/golden_xlmr.json");  // alive through the loop
  for (const json& item : golden["items"]) {
    INFO("text: " << item["text"].get<std::string>());
    auto ids = m->tokenizer.encode(item["text"].get<std::string>(), m->max_seq_len);
    REQUIRE(ids.ok());
    CHECK(*ids == item["ids"].get<std::vector<int32_t>>());
  }
}

TEST_CASE("xlm-roberta: hidden states match transformers alone and in one packed batch", "[encoder][model][xlmr]") {
  const bool reproducible = GENERATE(false, true);  // EncoderOptions::reproducible: the same values
  INFO("reproducible arithmetic " << reproducible);
  auto m = brisk::load_model(brisk::testing::data_folder("tiny_xlmr"));
  REQUIRE(m.ok());
  auto encoder = brisk::BertEncoder::create(m->config, std::move(m->weights), {.reproducible = reproducible});
  INFO(encoder.status().message());
  REQUIRE(encoder.ok());
  const int64_t h = (*encoder)->hidden_size();
  check_alone_and_packed(**encoder, items_with_pad_texts(read_json("tiny_xlmr/golden_xlmr.json")), kTolerance);
  // Positions start at 2: a sequence may hold 66 - 2 tokens, not 66.
  brisk::PackedSequences too_long;
  too_long.add(std::vector<int32_t>(65, 5));
  auto refused = (*encoder)->forward(too_long, std::vector<float>(65 * h).data());
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.message()), Catch::Contains("less the position offset"));
}

TEST_CASE("xlm-roberta on a GPU: hidden states match transformers in f32, f16 and bf16, packed and padded",
          "[encoder][model][xlmr][cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const json items = items_with_pad_texts(read_json("tiny_xlmr/golden_xlmr.json"));
  for (const brisk::DType activation : {brisk::DType::kF32, brisk::DType::kF16, brisk::DType::kBF16}) {
    for (const bool remove_padding : {true, false}) {
      INFO("activation " << brisk::dtype_name(activation) << ", remove_padding " << remove_padding);
      auto m = brisk::load_model(brisk::testing::data_folder("tiny_xlmr"));
      REQUIRE(m.ok());
      auto encoder = brisk::BertEncoder::create(
          m->config, std::move(m->weights), brisk::EncoderOptions{brisk::Device::kCUDA, activation, remove_padding});
      INFO(encoder.status().message());
      REQUIRE(encoder.ok());
      check_alone_and_packed(**encoder, items, brisk::testing::tolerance_for(activation));
    }
  }
}

TEST_CASE("xlm-roberta: the runtime's mean-pooled embeddings and the classifier's logits match transformers",
          "[model][xlmr]") {
  std::vector<std::string> texts;
  std::vector<std::vector<float>> pooled;
  const json golden = read_json("tiny_xlmr/golden_xlmr.json");
  for (const json& item : items_with_pad_texts(golden)) {
    texts.push_back(item["text"].get<std::string>());
    pooled.push_back(item["mean_pooled"].get<std::vector<float>>());
  }
  std::vector<std::string_view> views(texts.begin(), texts.end());
  brisk::RuntimeOptions o;
  o.model_dir = brisk::testing::data_folder("tiny_xlmr");
  o.num_threads = 1;
  auto rt = brisk::Runtime::create(o);
  INFO(rt.status().message());
  REQUIRE(rt.ok());
  auto emb = (*rt)->embed(views);
  REQUIRE(emb.ok());
  const size_t dim = static_cast<size_t>((*rt)->embedding_dim());
  for (size_t i = 0; i < texts.size(); ++i) {
    INFO("text: " << texts[i]);
    CHECK(max_abs_diff(emb->data() + i * dim, pooled[i]) <= kTolerance);
  }

  const json logits_golden = read_json("tiny_xlmr_cls/golden_logits.json");
  brisk::RuntimeOptions c;
  c.model_dir = brisk::testing::data_folder("tiny_xlmr_cls");
  c.num_threads = 1;
  auto cls = brisk::Runtime::create(c);
  INFO(cls.status().message());
  REQUIRE(cls.ok());
  std::vector<std::string> cls_texts;
  for (const json& item : logits_golden["items"]) cls_texts.push_back(item["text"].get<std::string>());
  std::vector<std::string_view> cls_views(cls_texts.begin(), cls_texts.end());
  auto logits = (*cls)->logits(cls_views);
  INFO(logits.status().message());
  REQUIRE(logits.ok());
  size_t i = 0;
  for (const json& item : logits_golden["items"]) {
    INFO("text: " << item["text"].get<std::string>());
    CHECK(max_abs_diff(logits->data() + 3 * i, item["logits"].get<std::vector<float>>()) <= kTolerance);
    ++i;
  }
  auto labels = (*cls)->classify(cls_views, 1);
  REQUIRE(labels.ok());
  CHECK((*labels)[0][0].label.size() > 0);
}
