// Structured pruning against Hugging Face's own head pruning (tests/data/make_pruned_golden.py: prune_heads, then
// save_pretrained and from_pretrained), the removed-equals-masked property, layer removal, saving, and bad plans.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "brisk/model/encoder.h"
#include "brisk/model/safetensors.h"
#include "brisk/prune/structured.h"
#include "brisk/quant/model_file.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

using namespace brisk;
using namespace brisk::prune;

namespace {

struct Golden {
  std::vector<PackedSequences> sequences;  // one sequence each
  std::vector<std::vector<float>> hidden;
  nlohmann::json pruned_heads;
};

Golden load_golden(const std::string& folder) {
  std::ifstream in(testing::test_data_dir() / folder / "golden_hidden.json");
  REQUIRE(in.good());
  const auto j = nlohmann::json::parse(in);
  Golden g;
  g.pruned_heads = j.at("pruned_heads");
  for (const auto& item : j.at("items")) {
    PackedSequences p;
    p.add(item.at("ids").get<std::vector<int32_t>>());
    p.token_type_ids = item.at("token_type_ids").get<std::vector<int32_t>>();
    g.sequences.push_back(p);
    std::vector<float> h;
    for (const auto& row : item.at("hidden")) {
      for (float v : row.get<std::vector<float>>()) h.push_back(v);
    }
    g.hidden.push_back(h);
  }
  return g;
}

struct Model {
  BertConfig config;
  EncoderWeights weights;
};

Model load(const std::string& dir) {
  auto config = BertConfig::from_json_file(dir + "/config.json");
  INFO(config.status().message());
  REQUIRE(config.ok());
  auto weights = EncoderWeights::load(dir, *config);
  INFO(weights.status().message());
  REQUIRE(weights.ok());
  return {*config, *weights};
}

std::string data(const std::string& folder) { return (testing::test_data_dir() / folder).string(); }

std::vector<float> forward(const BertConfig& c, const EncoderWeights& w, const PackedSequences& p) {
  auto encoder = BertEncoder::create(c, w, Device::kCPU);
  INFO(encoder.status().message());
  REQUIRE(encoder.ok());
  std::vector<float> out(static_cast<size_t>(p.total_tokens() * c.hidden_size));
  REQUIRE((*encoder)->forward(p, out.data()).ok());
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

void check_against(const Golden& g, const BertConfig& c, const EncoderWeights& w, double tol) {
  for (size_t i = 0; i < g.sequences.size(); ++i) {
    CHECK(max_abs_diff(forward(c, w, g.sequences[i]), g.hidden[i]) < tol);
  }
}

StructuredPlan hf_plan() {
  StructuredPlan plan;
  plan.heads = {{0, {1, 3}}, {2, {0}}};  // make_pruned_golden.py's PRUNED_HEADS
  return plan;
}

}  // namespace

TEST_CASE("brisk loads a directory that transformers' prune_heads saved, and matches its outputs") {
  const Model m = load(data("tiny_bert4_pruned_hf"));
  CHECK(m.config.layer_heads(0) == 2);
  CHECK(m.config.layer_heads(1) == 4);
  CHECK(m.config.layer_heads(2) == 3);
  CHECK(m.weights.layers[0].q_weight.shape() == std::vector<int64_t>{8, 16});
  check_against(load_golden("tiny_bert4_pruned_hf"), m.config, m.weights, 2e-5);
}

TEST_CASE("brisk's head pruning equals transformers' prune_heads: outputs, tensors and config") {
  const Model full = load(data("tiny_bert4"));
  check_against(load_golden("tiny_bert4"), full.config, full.weights, 2e-5);
  auto pruned = prune_structured(full.config, full.weights, hf_plan());
  INFO(pruned.status().message());
  REQUIRE(pruned.ok());
  check_against(load_golden("tiny_bert4_pruned_hf"), pruned->config, pruned->weights, 2e-5);

  const std::string out = (std::filesystem::temp_directory_path() / "brisk_pruned_heads_test").string();
  std::filesystem::remove_all(out);
  // save_pruned_model copies the tokenizer files; the tiny model has none, so give it a vocab.
  const std::string src = (std::filesystem::temp_directory_path() / "brisk_pruned_heads_src").string();
  std::filesystem::remove_all(src);
  std::filesystem::create_directories(src);
  std::filesystem::copy(data("tiny_bert4"), src, std::filesystem::copy_options::recursive);
  std::ofstream(src + "/vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n";
  auto saved = save_pruned_model(*pruned, src, out);
  INFO(saved.message());
  REQUIRE(saved.ok());
  std::ifstream cfg(out + "/config.json");
  const auto j = nlohmann::json::parse(cfg);
  CHECK(j.at("pruned_heads") == load_golden("tiny_bert4_pruned_hf").pruned_heads);
  CHECK(j.at("num_hidden_layers") == 3);
  CHECK_FALSE(j.contains("brisk_intermediate_sizes"));
  CHECK(std::filesystem::exists(out + "/vocab.txt"));

  // Tensor for tensor what transformers saved.
  auto ours = SafetensorsFile::open(out + "/model.safetensors");
  auto theirs = SafetensorsFile::open(data("tiny_bert4_pruned_hf") + "/model.safetensors");
  REQUIRE(ours.ok());
  REQUIRE(theirs.ok());
  for (const std::string& name : theirs->tensor_names()) {
    INFO(name);
    auto a = ours->get(name);
    REQUIRE(a.ok());
    const Tensor b = theirs->get(name).value();
    REQUIRE(a->shape() == b.shape());
    CHECK(std::memcmp(a->raw_data(), b.raw_data(), b.nbytes()) == 0);
  }
  const Model back = load(out);
  check_against(load_golden("tiny_bert4_pruned_hf"), back.config, back.weights, 2e-5);

  // The same model as one brisk model file (the quantizer's format, fp32 layers).
  const std::string file = out + ".safetensors";
  auto written = save_pruned_model_file(*pruned, src, src + "/model.safetensors", file);
  INFO(written.message());
  REQUIRE(written.ok());
  auto q = quant::load_quantized_model(file);
  INFO(q.status().message());
  REQUIRE(q.ok());
  CHECK(q->config.pruned_heads == pruned->config.pruned_heads);
  CHECK(q->plan == "pruned");
  check_against(load_golden("tiny_bert4_pruned_hf"), q->config, q->weights, 2e-5);
}

TEST_CASE("a structured-pruned model computes what the masked model computes, in a smaller shape") {
  const Model full = load(data("tiny_bert4"));
  StructuredPlan plan;
  plan.heads = {{1, {0, 2}}};
  plan.neurons = {{0, {0, 5, 31}}, {2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}};
  auto pruned = prune_structured(full.config, full.weights, plan);
  REQUIRE(pruned.ok());
  auto masked = mask_structured(full.config, full.weights, plan);
  REQUIRE(masked.ok());
  CHECK(pruned->weights.layers[0].intermediate_weight.dim(0) == 29);
  CHECK(pruned->weights.layers[2].output_weight.dim(1) == 22);
  CHECK(pruned->config.intermediate_sizes == std::vector<int64_t>{29, 32, 22});
  CHECK(pruned->weights.num_parameters < full.weights.num_parameters);
  const Golden g = load_golden("tiny_bert4");
  for (const PackedSequences& p : g.sequences) {
    const auto a = forward(pruned->config, pruned->weights, p);
    CHECK(max_abs_diff(a, forward(full.config, *masked, p)) < 1e-5);
    CHECK(max_abs_diff(a, forward(full.config, full.weights, p)) > 1e-3);  // pruning changed something
  }
  // The loaded source stays untouched.
  CHECK(full.weights.layers[0].intermediate_weight.dim(0) == 32);
}

TEST_CASE("removing layers renumbers the rest and keeps their pruned heads and widths") {
  const Model full = load(data("tiny_bert4"));
  StructuredPlan plan = hf_plan();
  plan.neurons = {{2, {0, 1}}};
  plan.layers = {1};
  auto pruned = prune_structured(full.config, full.weights, plan);
  INFO(pruned.status().message());
  REQUIRE(pruned.ok());
  CHECK(pruned->config.num_hidden_layers == 2);
  CHECK(pruned->config.pruned_heads == std::map<int64_t, std::vector<int64_t>>{{0, {1, 3}}, {1, {0}}});
  CHECK(pruned->config.intermediate_sizes == std::vector<int64_t>{32, 30});
  auto json =
      pruned_config_json(R"({"model_type": "bert", "num_hidden_layers": 3, "intermediate_size": 32})", pruned->config);
  REQUIRE(json.ok());
  auto reparsed = nlohmann::json::parse(*json);
  CHECK(reparsed.at("num_hidden_layers") == 2);
  CHECK(reparsed.at("brisk_intermediate_sizes") == nlohmann::json::array({32, 30}));
  CHECK(reparsed.at("pruned_heads") == nlohmann::json::parse(R"({"0": [1, 3], "1": [0]})"));
  const Golden g = load_golden("tiny_bert4");
  CHECK(forward(pruned->config, pruned->weights, g.sequences[0]).size() == g.hidden[0].size());
}

TEST_CASE("unit names parse into a plan, and bad plans are refused with a clear error") {
  const Model full = load(data("tiny_bert4"));
  auto plan = parse_units(
      full.config, {"encoder.layer.2", "encoder.layer.0.attention.head.3", "encoder.layer.1.intermediate.neuron.7"});
  REQUIRE(plan.ok());
  CHECK(plan->layers == std::vector<int64_t>{2});
  CHECK(plan->heads.at(0) == std::vector<int64_t>{3});
  CHECK(plan->neurons.at(1) == std::vector<int64_t>{7});
  CHECK(head_unit_name(full.config, 0, 3) == "encoder.layer.0.attention.head.3");
  CHECK(neuron_unit_name(full.config, 1, 7) == "encoder.layer.1.intermediate.neuron.7");

  auto message = [&](const StructuredPlan& p) {
    auto r = prune_structured(full.config, full.weights, p);
    REQUIRE_FALSE(r.ok());
    return std::string(r.status().message());
  };
  for (const char* name :
       {"encoder.layer.9", "encoder.layer.0.attention.head", "decoder.layer.0", "encoder.layer.0.output.neuron.1"}) {
    auto bad = parse_units(full.config, {name});
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(std::string(bad.status().message()), Catch::Contains("is unknown; expected"));
  }
  StructuredPlan all_heads;
  all_heads.heads[1] = {0, 1, 2, 3};
  CHECK_THAT(message(all_heads), Catch::Contains("pruning all 4 remaining heads of layer 1 is refused"));
  StructuredPlan bad_head;
  bad_head.heads[0] = {4};
  CHECK_THAT(message(bad_head), Catch::Contains("layer 0 head 4 does not exist; expected 0 to 3"));
  StructuredPlan all_neurons;
  for (int64_t i = 0; i < 32; ++i) all_neurons.neurons[0].push_back(i);
  CHECK_THAT(message(all_neurons), Catch::Contains("pruning all 32 neurons of layer 0 is refused"));
  StructuredPlan all_layers;
  all_layers.layers = {0, 1, 2};
  CHECK_THAT(message(all_layers), Catch::Contains("removing all 3 layers is refused"));

  // A head already pruned (by transformers) cannot be pruned again; the others keep their original numbers.
  const Model hf = load(data("tiny_bert4_pruned_hf"));
  CHECK(kept_heads(hf.config, 0) == std::vector<int64_t>{0, 2});
  StructuredPlan again;
  again.heads[0] = {1};
  auto r = prune_structured(hf.config, hf.weights, again);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("layer 0 head 1 is already pruned"));
}

TEST_CASE("config.json: pruned_heads and brisk_intermediate_sizes are validated") {
  auto parse = [](const std::string& extra) {
    return BertConfig::from_json_string(
        R"({"vocab_size": 20, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 32)" +
            extra + "}",
        "config.json");
  };
  auto ok = parse(R"(, "pruned_heads": {"1": [3, 0]}, "brisk_intermediate_sizes": [32, 7])");
  REQUIRE(ok.ok());
  CHECK(ok->layer_heads(1) == 2);
  CHECK(ok->pruned_heads.at(1) == std::vector<int64_t>{0, 3});
  CHECK(ok->layer_intermediate_size(1) == 7);
  CHECK_THAT(ok->summary(), Catch::Contains("pruned: 2 of 8 heads, 25 of 64 ffn neurons"));
  BertConfig programmatic = *ok;
  programmatic.intermediate_sizes = {32, 0};
  CHECK_THAT(std::string(programmatic.validate("built in code").message()),
             Catch::Contains("brisk_intermediate_sizes holds 0; expected widths 1 to intermediate_size 32"));
  for (const auto& [extra, what] : std::vector<std::pair<std::string, std::string>>{
           {R"(, "pruned_heads": {"2": [0]})", "layer key \"2\""},
           {R"(, "pruned_heads": {"0": [4]})", "expected head numbers 0 to 3"},
           {R"(, "pruned_heads": {"0": [0, 1, 2, 3]})", "keeps at least one head"},
           {R"(, "pruned_heads": [1])", "expected an object"},
           {R"(, "brisk_intermediate_sizes": [32])", "expected a list of 2 feed-forward widths"},
           {R"(, "brisk_intermediate_sizes": [32, 0])", "expected widths 1 to intermediate_size 32"}}) {
    auto bad = parse(extra);
    INFO(extra);
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(std::string(bad.status().message()), Catch::Contains(what));
  }
}
