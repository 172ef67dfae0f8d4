// The one model loader (brisk/model/loader.h): a model directory and brisk's model file made from it load to the same
// config, tokenizer, weights and classification head; the maximum sequence length resolves as sentence-transformers
// does; every bad path is refused with a message naming it and what was expected.
#include "brisk/model/loader.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>

#include "brisk/model/model_file.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using brisk::LoadedModel;
using brisk::ModelLoadOptions;
using brisk::ModelSource;

std::string msg(const absl::Status& s) { return std::string(s.message()); }

// tests/data/tasks/bert_cls: a BertForSequenceClassification (3 labels, 64 positions) with its tokenizer files.
std::string classifier_dir() { return (brisk::testing::test_data_dir() / "tasks" / "bert_cls").string(); }

// The same model saved as one model file (every layer fp32), as `brisk quantize` would carry it.
std::string save_as_model_file(const std::string& dir, const fs::path& out) {
  brisk::QuantizedModel q;
  q.model_files = brisk::read_model_files(dir).value();
  q.config = brisk::BertConfig::from_json_string(q.model_files.at("config.json"), "config.json").value();
  brisk::WeightsWithTensors w = brisk::load_weights_with_tensors(dir, q.config).value();
  q.weights = std::move(w.weights);
  q.head_tensors = brisk::sequence_classification_head_tensors(w.tensors);
  q.plan = "fp32-test";
  const std::string path = (out / "model.safetensors").string();
  REQUIRE(brisk::save_quantized_model(path, q).ok());
  return path;
}

}  // namespace

TEST_CASE("load_model reads a directory and the model file made from it alike", "[model][loader]") {
  brisk::testing::TempDir tmp;
  const std::string dir = classifier_dir();
  const std::string file = save_as_model_file(dir, tmp.path);

  LoadedModel d = brisk::load_model(dir).value();
  LoadedModel f = brisk::load_model(file).value();
  CHECK(d.source == ModelSource::kDirectory);
  CHECK(f.source == ModelSource::kModelFile);
  CHECK(d.quantization.empty());
  CHECK(f.quantization == "fp32-test");
  CHECK(f.weights.weights_file == file);
  CHECK(d.config.hidden_size == f.config.hidden_size);
  CHECK(d.config.num_hidden_layers == f.config.num_hidden_layers);
  // No sentence_bert_config.json: the model's 64 positions.
  CHECK(d.max_seq_len == 64);
  CHECK(f.max_seq_len == 64);
  // The same tokenizer: the same ids for a text of the shared vocab.
  CHECK(d.tokenizer.encode("my card was lost", 16).value() == f.tokenizer.encode("my card was lost", 16).value());
  // The same classification head, its labels from config.json.
  REQUIRE(d.head.has_value());
  REQUIRE(f.head.has_value());
  CHECK(d.head->labels == std::vector<std::string>{"billing", "card_lost", "greeting"});
  CHECK(f.head->labels == d.head->labels);
  CHECK(d.head_tensors.size() == f.head_tensors.size());
  CHECK_FALSE(d.head_tensors.empty());
  // The same weights, bit for bit.
  const brisk::Tensor& a = d.weights.embeddings.word;
  const brisk::Tensor& b = f.weights.embeddings.word;
  REQUIRE(a.nbytes() == b.nbytes());
  CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);

  // The tokenizer alone, from either form.
  CHECK(brisk::load_model_tokenizer(file).value().encode("hello", 8).value() == d.tokenizer.encode("hello", 8).value());
  CHECK(brisk::load_model_tokenizer(dir).value().vocab_size() == d.tokenizer.vocab_size());
}

TEST_CASE("load_model resolves the maximum sequence length", "[model][loader]") {
  CHECK(brisk::load_model(classifier_dir(), ModelLoadOptions{.max_seq_len = 16}).value().max_seq_len == 16);
  // Capped at the model's positions.
  CHECK(brisk::load_model(classifier_dir(), ModelLoadOptions{.max_seq_len = 1000}).value().max_seq_len == 64);
  for (int bad : {-1, 1}) {
    auto r = brisk::load_model(classifier_dir(), ModelLoadOptions{.max_seq_len = bad});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(msg(r.status()).find("expected 0 (the model's default) or at least 2") != std::string::npos);
  }
  // sentence_bert_config.json's max_seq_length wins over the positions, and a request over it is still capped at
  // the positions only (as sentence-transformers: the user may ask for more than the model's default).
  brisk::BertConfig config;
  config.max_position_embeddings = 512;
  brisk::PoolingConfig pooling;
  pooling.max_seq_length = 256;
  CHECK(brisk::resolve_max_seq_len(config, pooling) == 256);
  CHECK(brisk::resolve_max_seq_len(config, pooling, 400) == 400);
  CHECK(brisk::resolve_max_seq_len(config, pooling, 600) == 512);
  pooling.max_seq_length = 0;
  CHECK(brisk::resolve_max_seq_len(config, pooling) == 512);
  pooling.max_seq_length = 1024;
  CHECK(brisk::resolve_max_seq_len(config, pooling) == 512);
}

TEST_CASE("load_model refuses a bad path, naming it and what was expected", "[model][loader]") {
  brisk::testing::TempDir tmp;
  {
    auto r = brisk::load_model((tmp.path / "missing").string());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(msg(r.status()).find("missing' does not exist; expected a directory with config.json") != std::string::npos);
  }
  {
    const fs::path text = tmp.path / "notes.txt";
    std::ofstream(text) << "not a model\n";
    auto r = brisk::load_model(text.string());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(msg(r.status()).find("is a file but not a quantized model file") != std::string::npos);
    CHECK(brisk::model_source(text.string()).status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_FALSE(brisk::load_model_tokenizer(text.string()).ok());
  }
  {
    // An empty directory: config.json is named.
    auto r = brisk::load_model(tmp.path.string());
    REQUIRE_FALSE(r.ok());
    CHECK(msg(r.status()).find("config.json") != std::string::npos);
  }
  {
    // A model file where the fp32 directory is needed (quantize, prune, sensitivity).
    const std::string file = save_as_model_file(classifier_dir(), tmp.path);
    CHECK(brisk::model_source(file).value() == ModelSource::kModelFile);
    auto r = brisk::load_model(file, ModelLoadOptions{.fp32_directory_only = true});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(msg(r.status()).find("is a quantized model file; expected the fp32 model directory") != std::string::npos);
  }
}

TEST_CASE("load_model refuses a tokenizer larger than config.json's vocabulary", "[model][loader]") {
  brisk::testing::TempDir tmp;
  for (const auto& e : fs::directory_iterator(classifier_dir())) fs::copy(e.path(), tmp.path / e.path().filename());
  std::ofstream(tmp.path / "vocab.txt", std::ios::app) << "extra1\nextra2\n";
  fs::remove(tmp.path / "tokenizer.json");  // vocab.txt is then the vocabulary
  auto r = brisk::load_model(tmp.path.string());
  REQUIRE_FALSE(r.ok());
  CHECK(msg(r.status()).find("the tokenizer has 152 tokens but config.json has vocab_size = 150") != std::string::npos);
}
