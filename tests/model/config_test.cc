// BertConfig and PoolingConfig parsing: the real MiniLM config, DistilBERT's key names, and clear errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "brisk/model/config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace fs = std::filesystem;
using brisk::Activation;
using brisk::BertConfig;
using brisk::ModelFamily;
using brisk::Pooling;
using brisk::PoolingConfig;

namespace {

bool contains(absl::string_view s, absl::string_view part) { return absl::StrContains(s, part); }

nlohmann::json minilm_like() {
  return {{"model_type", "bert"},           {"vocab_size", 30522},       {"hidden_size", 384},
          {"num_hidden_layers", 6},         {"num_attention_heads", 12}, {"intermediate_size", 1536},
          {"max_position_embeddings", 512}, {"type_vocab_size", 2},      {"layer_norm_eps", 1e-12},
          {"hidden_act", "gelu"},           {"pad_token_id", 0}};
}

std::string parse_error(const nlohmann::json& j) {
  auto c = BertConfig::from_json_string(j.dump(), "config.json");
  REQUIRE_FALSE(c.ok());
  INFO(c.status().message());
  CHECK(contains(c.status().message(), "config.json"));
  return std::string(c.status().message());
}

using brisk::testing::TempDir;

}  // namespace

TEST_CASE("config parses the real all-MiniLM-L6-v2 config.json", "[loading][config][model]") {
  const fs::path dir = brisk::testing::model_dir();
  INFO(dir << " is missing: run scripts/setup");
  REQUIRE(fs::exists(dir / "config.json"));
  auto c = BertConfig::from_json_file((dir / "config.json").string());
  REQUIRE(c.ok());
  CHECK(c->model_type == "bert");
  CHECK(c->family == ModelFamily::kBert);
  CHECK(c->vocab_size == 30522);
  CHECK(c->hidden_size == 384);
  CHECK(c->num_hidden_layers == 6);
  CHECK(c->num_attention_heads == 12);
  CHECK(c->head_dim() == 32);
  CHECK(c->intermediate_size == 1536);
  CHECK(c->max_position_embeddings == 512);
  CHECK(c->type_vocab_size == 2);
  CHECK(c->layer_norm_eps == Approx(1e-12));
  CHECK(c->hidden_act == Activation::kGelu);
  CHECK(c->pad_token_id == 0);
  CHECK(contains(c->summary(), "6 layers"));

  auto pooling = brisk::read_pooling_config(dir.string());
  REQUIRE(pooling.ok());
  CHECK(pooling->mode == Pooling::kMean);
  CHECK(pooling->word_embedding_dimension == 384);
  CHECK(pooling->normalize);
  CHECK(pooling->max_seq_length == 256);
}

TEST_CASE("config errors name the key and the file", "[loading][config]") {
  SECTION("missing required key") {
    auto j = minilm_like();
    j.erase("num_attention_heads");
    const std::string msg = parse_error(j);
    CHECK(contains(msg, "missing required key \"num_attention_heads\""));
  }
  SECTION("string where an integer is expected") {
    auto j = minilm_like();
    j["hidden_size"] = "384";
    const std::string msg = parse_error(j);
    CHECK(contains(msg, "\"hidden_size\""));
    CHECK(contains(msg, "expected an integer"));
  }
  SECTION("fractional size") {
    auto j = minilm_like();
    j["intermediate_size"] = 1536.5;
    CHECK(contains(parse_error(j), "\"intermediate_size\""));
  }
  SECTION("hidden size not divisible by the heads") {
    auto j = minilm_like();
    j["num_attention_heads"] = 5;
    const std::string msg = parse_error(j);
    CHECK(contains(msg, "hidden_size 384 is not divisible by num_attention_heads 5"));
  }
  SECTION("non-positive sizes") {
    for (const char* key : {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                            "intermediate_size", "max_position_embeddings"}) {
      auto j = minilm_like();
      j[key] = 0;
      CHECK(contains(parse_error(j), std::string("\"") + key + "\" is 0; expected a positive integer"));
      j[key] = -3;
      CHECK(contains(parse_error(j), std::string("\"") + key + "\" is -3"));
    }
  }
  SECTION("unknown model type") {
    auto j = minilm_like();
    j["model_type"] = "llama";
    CHECK(contains(parse_error(j), "\"model_type\" is \"llama\""));
    CHECK(contains(parse_error(j), "\"qwen3\""));  // the families brisk reads are listed
  }
  SECTION("a RoBERTa position offset past the positions") {
    auto j = minilm_like();
    j["model_type"] = "xlm-roberta";
    j["pad_token_id"] = 600;
    j["vocab_size"] = 1000;
    CHECK(contains(parse_error(j), "the first position (pad_token_id + 1 = 601) is past max_position_embeddings"));
  }
  SECTION("unknown activation") {
    auto j = minilm_like();
    j["hidden_act"] = "swish";
    CHECK(contains(parse_error(j), "\"hidden_act\" is \"swish\""));
  }
  SECTION("relative position embeddings") {
    auto j = minilm_like();
    j["position_embedding_type"] = "relative_key";
    CHECK(contains(parse_error(j), "position_embedding_type"));
  }
  SECTION("pad token outside the vocabulary") {
    auto j = minilm_like();
    j["pad_token_id"] = 30522;
    CHECK(contains(parse_error(j), "pad_token_id"));
  }
  SECTION("not JSON / not an object") {
    auto a = BertConfig::from_json_string("{\"vocab_size\": ", "config.json");
    REQUIRE_FALSE(a.ok());
    CHECK(contains(a.status().message(), "config.json: is not valid JSON"));
    auto b = BertConfig::from_json_string("[1]", "config.json");
    REQUIRE_FALSE(b.ok());
    CHECK(contains(b.status().message(), "expected a JSON object"));
  }
  SECTION("missing file") {
    auto c = BertConfig::from_json_file("/nonexistent/config.json");
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == absl::StatusCode::kNotFound);
    CHECK(contains(c.status().message(), "/nonexistent/config.json"));
  }
}

TEST_CASE("config defaults and activations", "[loading][config]") {
  auto j = minilm_like();
  for (const char* key :
       {"model_type", "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "hidden_act", "pad_token_id"}) {
    j.erase(key);
  }
  auto c = BertConfig::from_json_string(j.dump(), "config.json");
  REQUIRE(c.ok());
  CHECK(c->model_type == "bert");
  CHECK(c->max_position_embeddings == 512);
  CHECK(c->type_vocab_size == 2);
  CHECK(c->hidden_act == Activation::kGelu);
  for (const char* act : {"gelu_new", "gelu_pytorch_tanh"}) {
    j["hidden_act"] = act;
    auto t = BertConfig::from_json_string(j.dump(), "config.json");
    REQUIRE(t.ok());
    CHECK(t->hidden_act == Activation::kGeluTanh);
    CHECK(t->hidden_act_name == act);
  }
}

TEST_CASE("config maps DistilBERT's keys", "[loading][config]") {
  nlohmann::json j = {{"model_type", "distilbert"},
                      {"vocab_size", 30522},
                      {"dim", 768},
                      {"n_layers", 6},
                      {"n_heads", 12},
                      {"hidden_dim", 3072},
                      {"max_position_embeddings", 512},
                      {"activation", "gelu"},
                      {"pad_token_id", 0}};
  auto c = BertConfig::from_json_string(j.dump(), "config.json");
  REQUIRE(c.ok());
  CHECK(c->family == ModelFamily::kDistilBert);
  CHECK(c->hidden_size == 768);
  CHECK(c->num_hidden_layers == 6);
  CHECK(c->num_attention_heads == 12);
  CHECK(c->intermediate_size == 3072);
  CHECK(c->type_vocab_size == 0);
  CHECK(c->hidden_act == Activation::kGelu);

  j["n_heads"] = 7;
  auto bad = BertConfig::from_json_string(j.dump(), "config.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(contains(bad.status().message(), "dim 768 is not divisible by n_heads 7"));
  j["n_heads"] = 12;
  j.erase("dim");
  auto missing = BertConfig::from_json_string(j.dump(), "config.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(contains(missing.status().message(), "missing required key \"dim\""));
}

TEST_CASE("pooling config from sentence-transformers files", "[loading][config]") {
  SECTION("absent files mean mean pooling") {
    TempDir dir;
    auto p = brisk::read_pooling_config(dir.path.string());
    REQUIRE(p.ok());
    CHECK(p->mode == Pooling::kMean);
    CHECK_FALSE(p->normalize);
    CHECK(p->word_embedding_dimension == 0);
  }
  SECTION("cls pooling") {
    TempDir dir;
    dir.write("1_Pooling/config.json", R"({"word_embedding_dimension": 768, "pooling_mode_cls_token": true,
                                          "pooling_mode_mean_tokens": false})");
    auto p = brisk::read_pooling_config(dir.path.string());
    REQUIRE(p.ok());
    CHECK(p->mode == Pooling::kCls);
    CHECK(p->word_embedding_dimension == 768);
  }
  SECTION("two modes at once are rejected") {
    auto p = PoolingConfig::from_json_string(R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true})",
                                             "1_Pooling/config.json");
    REQUIRE_FALSE(p.ok());
    CHECK(contains(p.status().message(), "1_Pooling/config.json"));
    CHECK(contains(p.status().message(), "more than one"));
  }
  SECTION("unsupported mode and wrong types") {
    auto a = PoolingConfig::from_json_string(R"({"pooling_mode_mean_sqrt_len_tokens": true})", "p.json");
    REQUIRE_FALSE(a.ok());
    CHECK(contains(a.status().message(), "pooling_mode_mean_sqrt_len_tokens"));
    auto b = PoolingConfig::from_json_string(R"({"pooling_mode_mean_tokens": "yes"})", "p.json");
    REQUIRE_FALSE(b.ok());
    CHECK(contains(b.status().message(), "expected true or false"));
  }
  SECTION("every prompt of config_sentence_transformers.json, by name") {
    TempDir dir;
    dir.write("config_sentence_transformers.json",
              R"({"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null})");
    auto p = brisk::read_pooling_config(dir.path.string());
    REQUIRE(p.ok());
    CHECK(p->prompts == std::map<std::string, std::string>{{"passage", "passage: "}, {"query", "query: "}});
    dir.write("config_sentence_transformers.json", R"({"prompts": {"passage": "passage: "}})");
    auto no_query = brisk::read_pooling_config(dir.path.string());
    REQUIRE(no_query.ok());
    CHECK(no_query->prompts.size() == 1);
    CHECK(no_query->prompts.count("query") == 0);
    dir.write("config_sentence_transformers.json", R"({"prompts": {"query": "q: ", "passage": 7}})");
    auto bad = brisk::read_pooling_config(dir.path.string());
    REQUIRE_FALSE(bad.ok());
    CHECK(contains(bad.status().message(), "config_sentence_transformers.json prompts"));
    CHECK(contains(bad.status().message(), "key \"passage\" is 7"));
    CHECK(contains(bad.status().message(), "expected a string"));
  }
  SECTION("malformed file is an error, not a silent default") {
    TempDir dir;
    dir.write("1_Pooling/config.json", "{not json");
    auto p = brisk::read_pooling_config(dir.path.string());
    REQUIRE_FALSE(p.ok());
    CHECK(contains(p.status().message(), "1_Pooling/config.json"));
  }
}

TEST_CASE("modules.json: Dense and unknown modules, bad entries and escaping paths are refused", "[loading][config]") {
  constexpr const char* kTransformer =
      R"({"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"})";
  constexpr const char* kPooling =
      R"({"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"})";
  auto refused = [](const std::string& modules) {
    TempDir dir;
    dir.write("modules.json", modules);
    auto p = brisk::read_pooling_config(dir.path.string());
    REQUIRE_FALSE(p.ok());
    INFO(p.status().message());
    CHECK(contains(p.status().message(), "modules.json"));
    return std::string(p.status().message());
  };
  SECTION("a Dense module is named with its path") {
    const std::string m = refused(absl::StrCat("[", kTransformer, ",", kPooling, R"(,
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])"));
    CHECK(contains(m, "Dense"));
    CHECK(contains(m, "2_Dense"));
  }
  SECTION("an unknown module type") {
    const std::string m = refused(absl::StrCat("[", kTransformer, ",", kPooling, R"(,
        {"idx": 2, "name": "2", "path": "2_LayerNorm", "type": "sentence_transformers.models.LayerNorm"}])"));
    CHECK(contains(m, "sentence_transformers.models.LayerNorm"));
    CHECK(contains(m, "expected sentence_transformers.models.Transformer, Pooling or Normalize"));
  }
  SECTION("entries of the wrong type") {
    CHECK(contains(refused(absl::StrCat("[", kTransformer, ",", kPooling, R"(, "2_Dense"])")),
                   "entry 2 is \"2_Dense\" (a JSON string); expected an object"));
    CHECK(contains(refused(absl::StrCat("[", kTransformer, R"(, {"path": "1_Pooling", "type": 7}])")),
                   "key \"type\" is 7"));
    CHECK(contains(refused(absl::StrCat("[", kTransformer, R"(, {"path": ["1_Pooling"],
                                         "type": "sentence_transformers.models.Pooling"}])")),
                   "key \"path\""));
    CHECK(contains(refused(absl::StrCat("[", kTransformer, "]")), "0 Pooling modules; expected exactly one"));
  }
  SECTION("paths outside the model directory, after normalisation") {
    for (const char* path : {"../../etc", "/etc", "1_Pooling/../../etc", "./a/../.."}) {
      INFO(path);
      const std::string m = refused(absl::StrCat("[", kTransformer, R"(, {"path": ")", path,
                                                 R"(", "type": "sentence_transformers.models.Pooling"}])"));
      CHECK(contains(m, "expected a path inside the model directory"));
    }
  }
}

TEST_CASE("modules.json names the Pooling module's directory", "[loading][config]") {
  TempDir dir;
  dir.write("modules.json", R"([
      {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "name": "1", "path": "pool/./", "type": "sentence_transformers.models.Pooling"},
      {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  dir.write("pool/config.json", R"({"word_embedding_dimension": 384, "pooling_mode_cls_token": true})");
  dir.write("1_Pooling/config.json", R"({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": true})");
  auto p = brisk::read_pooling_config(dir.path.string());
  REQUIRE(p.ok());
  CHECK(p->mode == Pooling::kCls);
  CHECK(p->normalize);
  CHECK(contains(p->config_path, "pool/config.json"));
}
