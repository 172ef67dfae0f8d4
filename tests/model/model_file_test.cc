// The quantized model file: save/load round trips (bit-identical tensors and embeddings), the loader's checks on
// corrupt files, and the tokenizer/pooling loaders over in-memory model files.
#include "brisk/model/model_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "brisk/core/half.h"
#include "brisk/model/encoder.h"
#include "brisk/model/safetensors.h"
#include "brisk/model/tokenizer.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using brisk::BertConfig;
using brisk::DType;
using brisk::EncoderWeights;
using brisk::NamedTensors;
using brisk::Precision;
using brisk::PrecisionSpec;
using brisk::QuantizedModel;
using brisk::Tensor;
using brisk::testing::TempDir;

std::string msg(const absl::Status& s) { return std::string(s.message()); }

Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed, float lo = -0.5f, float hi = 0.5f) {
  Tensor t = Tensor::empty(shape, DType::kF32).value();
  std::vector<float> v = brisk::testing::random_floats(size_t(t.numel()), lo, hi, seed);
  std::memcpy(t.raw_data(), v.data(), t.nbytes());
  return t;
}

// A BERT config wide enough for int4 groups of 32 and 64, with random weights.
constexpr const char* kWideConfig = R"({"model_type": "bert", "vocab_size": 40, "hidden_size": 64,
  "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 32,
  "type_vocab_size": 2, "hidden_act": "gelu"})";

QuantizedModel wide_model() {
  QuantizedModel m;
  m.config = BertConfig::from_json_string(kWideConfig, "wide").value();
  const int64_t h = 64, inter = 128;
  NamedTensors t;
  uint32_t seed = 1;
  t["embeddings.word_embeddings.weight"] = random_tensor({40, h}, seed++);
  t["embeddings.position_embeddings.weight"] = random_tensor({32, h}, seed++);
  t["embeddings.token_type_embeddings.weight"] = random_tensor({2, h}, seed++);
  t["embeddings.LayerNorm.weight"] = random_tensor({h}, seed++, 0.8f, 1.2f);
  t["embeddings.LayerNorm.bias"] = random_tensor({h}, seed++, -0.1f, 0.1f);
  for (int i = 0; i < 2; ++i) {
    const std::string p = absl::StrCat("encoder.layer.", i, ".");
    for (const char* n :
         {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
      t[p + n + ".weight"] = random_tensor({h, h}, seed++, -0.2f, 0.2f);
      t[p + n + ".bias"] = random_tensor({h}, seed++, -0.1f, 0.1f);
    }
    t[p + "intermediate.dense.weight"] = random_tensor({inter, h}, seed++, -0.2f, 0.2f);
    t[p + "intermediate.dense.bias"] = random_tensor({inter}, seed++, -0.1f, 0.1f);
    t[p + "output.dense.weight"] = random_tensor({h, inter}, seed++, -0.2f, 0.2f);
    t[p + "output.dense.bias"] = random_tensor({h}, seed++, -0.1f, 0.1f);
    for (const char* n : {"attention.output.LayerNorm", "output.LayerNorm"}) {
      t[p + n + ".weight"] = random_tensor({h}, seed++, 0.8f, 1.2f);
      t[p + n + ".bias"] = random_tensor({h}, seed++, -0.1f, 0.1f);
    }
  }
  m.weights = EncoderWeights::from_tensors(t, m.config, "wide").value();
  m.model_files["config.json"] = kWideConfig;
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n";
  for (int i = 4; i < 40; ++i) vocab += absl::StrCat("w", i, "\n");
  m.model_files["vocab.txt"] = vocab;
  m.model_files["1_Pooling/config.json"] = R"({"word_embedding_dimension": 64, "pooling_mode_cls_token": true})";
  m.plan = "test-mix";
  m.source_sha256 = std::string(64, 'a');
  m.report_json = R"({"layers": []})";
  return m;
}

// Quantizes one linear layer in place; an int4 layer keeps its f32 weight (save quantizes it) and the expected
// weight after loading goes to `expected`.
void quantize(QuantizedModel& m, EncoderWeights& expected, size_t slot, PrecisionSpec spec, float act = 0.0f) {
  brisk::LinearSlot s = brisk::linear_slots(m.weights, m.config)[slot];
  brisk::LinearSlot e = brisk::linear_slots(expected, m.config)[slot];
  m.precisions[s.name] = spec;
  switch (spec.precision) {
    case Precision::kBF16: *s.weight = brisk::to_bfloat16(*s.weight, s.name).value(); break;
    case Precision::kInt8Dynamic:
    case Precision::kInt8Static: {
      brisk::Int8Matrix q = brisk::quantize_int8(*s.weight, s.name).value();
      *s.weight = q.values;
      s.scales->weight_scale = q.scales;
      s.scales->activation_scale = act;
      break;
    }
    case Precision::kInt4: {
      auto q = brisk::quantize_int4(*s.weight, spec.group_size, spec.with_min, s.name).value();
      *e.weight = brisk::dequantize_int4(q).value();
      *e.bias = *s.bias;
      return;
    }
    case Precision::kF32: break;
  }
  *e.weight = *s.weight;
  *e.scales = *s.scales;
}

// The mix of the round-trip test; returns the weights a load must give back.
EncoderWeights quantize_mix(QuantizedModel& m) {
  EncoderWeights expected = m.weights;
  using P = PrecisionSpec;
  quantize(m, expected, 0, P{Precision::kInt8Dynamic});
  quantize(m, expected, 1, P{Precision::kInt8Static}, 0.05f);
  quantize(m, expected, 2, P{Precision::kBF16});
  quantize(m, expected, 3, P{Precision::kInt4, 32, false});
  quantize(m, expected, 4, P{Precision::kInt8Dynamic});
  quantize(m, expected, 5, P{Precision::kBF16});
  quantize(m, expected, 7, P{Precision::kInt8Dynamic});
  quantize(m, expected, 11, P{Precision::kInt4, 64, true});
  auto q = brisk::quantize_int4(m.weights.embeddings.word, 32, true, brisk::kWordEmbeddingsName).value();
  m.weights.embeddings.word = expected.embeddings.word = q.packed;
  m.weights.embeddings.word_scale = expected.embeddings.word_scale = q.scales;
  m.weights.embeddings.word_min = expected.embeddings.word_min = q.mins;
  m.precisions[brisk::kWordEmbeddingsName] = P{Precision::kInt4, 32, true};
  return expected;
}

// Every tensor of an EncoderWeights, labelled.
std::vector<std::pair<std::string, Tensor>> all_tensors(EncoderWeights w, const BertConfig& c) {
  const auto& e = w.embeddings;
  std::vector<std::pair<std::string, Tensor>> out = {
      {"word", e.word},         {"word_scale", e.word_scale}, {"word_min", e.word_min},
      {"position", e.position}, {"token_type", e.token_type}, {"ln_gamma", e.ln_gamma},
      {"ln_beta", e.ln_beta}};
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const auto& l = w.layers[i];
    for (const auto& [n, t] : {std::pair{"attention_ln_gamma", l.attention_ln_gamma},
                               {"attention_ln_beta", l.attention_ln_beta},
                               {"output_ln_gamma", l.output_ln_gamma},
                               {"output_ln_beta", l.output_ln_beta}}) {
      out.emplace_back(absl::StrCat(i, ".", n), t);
    }
  }
  for (const brisk::LinearSlot& s : brisk::linear_slots(w, c)) {
    out.emplace_back(s.name + ".weight", *s.weight);
    out.emplace_back(s.name + ".bias", *s.bias);
    out.emplace_back(s.name + ".weight_scale", s.scales->weight_scale);
    Tensor act = Tensor::empty({1}, DType::kF32).value();  // owned: `w` is a local copy
    act.data<float>()[0] = s.scales->activation_scale;
    out.emplace_back(s.name + ".activation_scale", act);
  }
  return out;
}

void check_identical(const EncoderWeights& a, const EncoderWeights& b, const BertConfig& c) {
  auto ta = all_tensors(a, c), tb = all_tensors(b, c);
  REQUIRE(ta.size() == tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    INFO(ta[i].first);
    const Tensor &x = ta[i].second, &y = tb[i].second;
    const bool dx = x.defined() && x.raw_data() != nullptr, dy = y.defined() && y.raw_data() != nullptr;
    REQUIRE(dx == dy);
    if (!dx) continue;
    CHECK(x.dtype() == y.dtype());
    REQUIRE(x.shape() == y.shape());
    CHECK(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0);
  }
}

std::vector<float> embed(const BertConfig& c, const EncoderWeights& w) {
  auto encoder = brisk::BertEncoder::create(c, w, brisk::Device::kCPU);
  REQUIRE(encoder.ok());
  brisk::PackedSequences batch;
  batch.add(std::vector<int32_t>{2, 7, 9, 11, 3});
  batch.add(std::vector<int32_t>{2, 13, 19, 4, 5, 6, 3});  // the tiny models have 20 ids
  std::vector<float> out(size_t(batch.size() * c.hidden_size));
  REQUIRE((*encoder)->embed(batch, brisk::Pooling::kMean, true, out.data()).ok());
  return out;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

using Tensors = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

// Rewrites a saved file with `mutate` applied to its tensors (owned copies) and metadata; returns the new path.
std::string rewrite(const TempDir& tmp, const std::string& src,
                    const std::function<void(Tensors&, Metadata&)>& mutate) {
  static int counter = 0;
  auto file = brisk::SafetensorsFile::open(src).value();
  Tensors tensors;
  for (const std::string& name : file.tensor_names()) {
    Tensor view = file.get(name).value();
    Tensor copy = Tensor::empty(view.shape(), view.dtype()).value();
    std::memcpy(copy.raw_data(), view.raw_data(), view.nbytes());
    tensors.emplace_back(name, copy);
  }
  Metadata md = file.metadata();
  mutate(tensors, md);
  const std::string dst = tmp.file(absl::StrCat("corrupt", counter++, ".safetensors"));
  REQUIRE(brisk::write_safetensors(dst, tensors, md).ok());
  return dst;
}

Tensor& find(Tensors& tensors, const std::string& name) {
  for (auto& [n, t] : tensors) {
    if (n == name) return t;
  }
  FAIL("no tensor " << name);
  static Tensor none;
  return none;
}

void drop(Tensors& tensors, const std::string& name) {
  std::erase_if(tensors, [&](const auto& e) { return e.first == name; });
}

}  // namespace

TEST_CASE("quantized model file: round trip of a mixed-precision model", "[quant][model_file]") {
  TempDir tmp;
  QuantizedModel m = wide_model();
  const EncoderWeights expected = quantize_mix(m);
  const std::string path = tmp.file("wide.brisk.safetensors");
  REQUIRE(brisk::save_quantized_model(path, m).ok());
  CHECK_FALSE(fs::exists(path + ".tmp"));
  CHECK(brisk::is_quantized_model_file(path));

  auto loaded = brisk::load_quantized_model(path);
  REQUIRE(loaded.ok());
  check_identical(expected, loaded->weights, m.config);
  CHECK(loaded->precisions == m.precisions);
  CHECK(loaded->model_files == m.model_files);
  CHECK(loaded->plan == m.plan);
  CHECK(loaded->source_sha256 == m.source_sha256);
  CHECK(loaded->report_json == m.report_json);
  CHECK(loaded->config.summary() == m.config.summary());
  CHECK(loaded->int4_linears.size() == 2);
  CHECK(loaded->weights.num_parameters == EncoderWeights::expected_num_parameters(m.config));
  // Zero-copy: an f32 tensor lives inside the mapping, not in an owned buffer of its own.
  CHECK(loaded->weights.layers[1].q_weight.dtype() == DType::kF32);

  const std::vector<float> want = embed(m.config, expected);
  const std::vector<float> got = embed(loaded->config, loaded->weights);
  REQUIRE(want.size() == got.size());
  CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);

  // Saving what was loaded writes the same file (the int4 layers keep their packed form).
  const std::string again = tmp.file("again.safetensors");
  REQUIRE(brisk::save_quantized_model(again, *loaded).ok());
  CHECK(read_bytes(again) == read_bytes(path));
}

TEST_CASE("quantized model file: int8 word embeddings on the tiny models", "[quant][model_file]") {
  for (const char* name : {"tiny_bert_st", "tiny_distilbert"}) {
    INFO(name);
    TempDir tmp;
    const fs::path dir = brisk::testing::test_data_dir() / name;
    QuantizedModel m;
    m.config = BertConfig::from_json_file((dir / "config.json").string()).value();
    m.weights = EncoderWeights::load(dir.string(), m.config).value();
    m.model_files["config.json"] = read_bytes((dir / "config.json").string());
    m.model_files["vocab.txt"] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n";
    EncoderWeights expected = m.weights;
    quantize(m, expected, 0, PrecisionSpec{Precision::kInt8Dynamic});
    quantize(m, expected, 3, PrecisionSpec{Precision::kBF16});
    quantize(m, expected, 10, PrecisionSpec{Precision::kInt8Static}, 0.125f);
    auto q = brisk::quantize_int8(m.weights.embeddings.word, brisk::kWordEmbeddingsName).value();
    m.weights.embeddings.word = expected.embeddings.word = q.values;
    m.weights.embeddings.word_scale = expected.embeddings.word_scale = q.scales;
    m.precisions[brisk::kWordEmbeddingsName] = PrecisionSpec{Precision::kInt8Dynamic};

    const std::string path = tmp.file("tiny.safetensors");
    REQUIRE(brisk::save_quantized_model(path, m).ok());
    auto loaded = brisk::load_quantized_model(path);
    REQUIRE(loaded.ok());
    check_identical(expected, loaded->weights, m.config);
    const std::vector<float> want = embed(m.config, expected), got = embed(loaded->config, loaded->weights);
    CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
    // A plain model.safetensors is not a quantized model file, nor is a directory or a missing file.
    if (fs::exists(dir / "model.safetensors"))
      CHECK_FALSE(brisk::is_quantized_model_file((dir / "model.safetensors").string()));
    CHECK_FALSE(brisk::is_quantized_model_file(dir.string()));
    CHECK_FALSE(brisk::is_quantized_model_file((dir / "absent").string()));
    auto plain = brisk::load_quantized_model((dir / "config.json").string());
    CHECK_FALSE(plain.ok());
  }
}

TEST_CASE("quantized model file: save refuses what the loader would refuse", "[quant][model_file]") {
  TempDir tmp;
  QuantizedModel m = wide_model();
  quantize_mix(m);
  QuantizedModel wrong = m;
  wrong.precisions["encoder.layer.0.attention.self.value"] = PrecisionSpec{Precision::kInt8Dynamic};  // bf16 weight
  auto s = brisk::save_quantized_model(tmp.file("x.safetensors"), wrong);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(msg(s), Catch::Contains("encoder.layer.0.attention.self.value.weight") && Catch::Contains("expected i8"));
  CHECK_FALSE(fs::exists(tmp.file("x.safetensors")));
  wrong = m;
  wrong.model_files.erase("config.json");
  CHECK_THAT(msg(brisk::save_quantized_model(tmp.file("x.safetensors"), wrong)), Catch::Contains("config.json"));
  wrong = m;
  wrong.weights.layers[0].q_scales.activation_scale = 0.5f;  // int8-dynamic with a static scale
  CHECK_THAT(msg(brisk::save_quantized_model(tmp.file("x.safetensors"), wrong)),
             Catch::Contains("encoder.layer.0.attention.self.query") && Catch::Contains("activation_scale"));
}

TEST_CASE("quantized model file: truncated and flipped files are refused", "[quant][model_file]") {
  TempDir tmp;
  QuantizedModel m = wide_model();
  quantize_mix(m);
  const std::string path = tmp.file("m.safetensors");
  REQUIRE(brisk::save_quantized_model(path, m).ok());
  const std::string bytes = read_bytes(path);

  for (size_t keep : {size_t(0), size_t(7), size_t(100), bytes.size() - 1}) {
    INFO(keep);
    write_bytes(tmp.file("cut.safetensors"), bytes.substr(0, keep));
    auto r = brisk::load_quantized_model(tmp.file("cut.safetensors"));
    REQUIRE_FALSE(r.ok());
    CHECK_FALSE(msg(r.status()).empty());
  }
  // The header's opening brace, and the first tensor entry's dtype.
  std::string flipped = bytes;
  flipped[8] ^= 0x01;
  write_bytes(tmp.file("flip.safetensors"), flipped);
  auto r = brisk::load_quantized_model(tmp.file("flip.safetensors"));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(msg(r.status()), Catch::Contains("JSON"));
  flipped = bytes;
  const size_t dtype = flipped.find("\"dtype\":\"F32\"");
  REQUIRE(dtype != std::string::npos);
  flipped[dtype + 9] = 'G';
  write_bytes(tmp.file("flip2.safetensors"), flipped);
  r = brisk::load_quantized_model(tmp.file("flip2.safetensors"));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(msg(r.status()), Catch::Contains("G32"));
}

TEST_CASE("check_quantized_model_file says why a file is not one: header, JSON, dtype, a file cut short, metadata",
          "[quant][model_file]") {
  // Issue 30: every corrupt file gave the same "is a file but not a quantized model file", hiding the reason.
  TempDir tmp;
  QuantizedModel m = wide_model();
  quantize_mix(m);
  const std::string path = tmp.file("m.safetensors");
  REQUIRE(brisk::save_quantized_model(path, m).ok());
  CHECK(brisk::check_quantized_model_file(path).ok());
  const std::string bytes = read_bytes(path);
  auto reason = [&](const std::string& corrupted) {
    write_bytes(tmp.file("bad.safetensors"), corrupted);
    const brisk::Status s = brisk::check_quantized_model_file(tmp.file("bad.safetensors"));
    CHECK_FALSE(brisk::is_quantized_model_file(tmp.file("bad.safetensors")));
    return s.ok() ? std::string("(ok)") : msg(s);
  };
  std::string huge_header = bytes;
  huge_header[6] = '\x7f';  // the header length's high bytes
  std::string json = bytes;
  json[8] ^= 0x01;  // the header's opening brace
  std::string dtype = bytes;
  dtype[dtype.find("\"dtype\":\"F32\"") + 9] = 'G';
  std::string no_format = bytes;
  no_format.replace(no_format.find("brisk.format"), 12, "brisk.formaX");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {bytes.substr(0, 5), "file is 5 bytes"},
      {huge_header, "header length is"},
      {bytes.substr(0, bytes.size() - 100), "data_offsets"},
      {json, "is not valid JSON"},
      {dtype, "unknown dtype 'G32'"},
      {no_format, "has no brisk.format"},
  };
  std::set<std::string> seen;
  for (const auto& [corrupted, words] : cases) {
    const std::string why = reason(corrupted);
    INFO(why);
    CHECK_THAT(why, Catch::Contains(words));
    seen.insert(why);
  }
  CHECK(seen.size() == cases.size());
  CHECK_THAT(msg(brisk::check_quantized_model_file(tmp.path.string())), Catch::Contains("not a regular file"));
}

TEST_CASE("quantized model file: each corruption is named", "[quant][model_file]") {
  TempDir tmp;
  QuantizedModel m = wide_model();
  quantize_mix(m);
  const std::string path = tmp.file("m.safetensors");
  REQUIRE(brisk::save_quantized_model(path, m).ok());
  const std::string q = "encoder.layer.0.attention.self.query";    // int8-dynamic
  const std::string k = "encoder.layer.0.attention.self.key";      // int8-static
  const std::string v = "encoder.layer.0.attention.self.value";    // bf16
  const std::string o = "encoder.layer.0.attention.output.dense";  // int4-g32
  const std::string word = "embeddings.word_embeddings";           // int4-g32-min
  auto set_precision = [](Metadata& md, const std::string& layer, const std::string& entry) {
    nlohmann::json p = nlohmann::json::parse(md["brisk.precisions"]);
    if (entry.empty()) {
      p.erase(layer);
    } else {
      p[layer] = nlohmann::json::parse(entry);
    }
    md["brisk.precisions"] = p.dump();
  };
  struct Case {
    const char* what;
    std::function<void(Tensors&, Metadata&)> mutate;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"int8 layer without weight_scale",
       [&](Tensors& t, Metadata&) { drop(t, q + ".weight_scale"); },
       {q + ".weight_scale", "missing", "f32 [64] or f32 [1]"}},
      {"scale shape",
       [&](Tensors& t, Metadata&) { find(t, q + ".weight_scale") = random_tensor({63}, 9, 0.1f, 1.0f); },
       {q + ".weight_scale", "f32 [63]"}},
      {"int4 group size against the scales",
       [&](Tensors&, Metadata& md) { set_precision(md, o, R"({"precision": "int4-g64"})"); },
       {o + ".weight_scale", "f16 [64, 2]", "f16 [64, 1]"}},
      {"weight dtype against the precision",
       [&](Tensors&, Metadata& md) { set_precision(md, v, R"({"precision": "int8-dynamic"})"); },
       {v + ".weight", "bf16 [64, 64]", "expected i8"}},
      {"NaN scale",
       [&](Tensors& t, Metadata&) { find(t, q + ".weight_scale").data<float>()[3] = NAN; },
       {q + ".weight_scale", "element 3", "finite positive"}},
      {"zero scale",
       [&](Tensors& t, Metadata&) { find(t, k + ".weight_scale").data<float>()[0] = 0.0f; },
       {k + ".weight_scale", "element 0"}},
      {"negative f16 group scale",
       [&](Tensors& t, Metadata&) { find(t, word + ".weight_scale").data<uint16_t>()[5] = brisk::float_to_f16(-1); },
       {word + ".weight_scale", "element 5"}},
      {"infinite group minimum",
       [&](Tensors& t, Metadata&) { find(t, word + ".weight_min").data<uint16_t>()[2] = 0x7c00; },
       {word + ".weight_min", "element 2", "finite"}},
      {"unknown precision",
       [&](Tensors&, Metadata& md) { set_precision(md, q, R"({"precision": "int3"})"); },
       {q, "int3", "int8-dynamic"}},
      {"a layer the config lacks",
       [&](Tensors&, Metadata& md) {
         set_precision(md, "encoder.layer.2.attention.self.query", R"({"precision": "bf16"})");
       },
       {"encoder.layer.2.attention.self.query", "not a layer"}},
      {"missing f32 tensor",
       [&](Tensors& t, Metadata&) { drop(t, "embeddings.LayerNorm.weight"); },
       {"embeddings.LayerNorm.weight", "missing", "f32 [64]"}},
      {"bias dtype",
       [&](Tensors& t, Metadata&) { find(t, q + ".bias") = Tensor::zeros({64}, DType::kF16).value(); },
       {q + ".bias", "f16 [64]", "f32 [64]"}},
      {"layer declared fp32 holding i8",
       [&](Tensors&, Metadata& md) { set_precision(md, q, ""); },
       {q + ".weight", "i8", "expected f32"}},
      {"scale left on a bf16 layer",
       [&](Tensors& t, Metadata&) { t.emplace_back(v + ".weight_scale", random_tensor({64}, 3, 0.1f, 1.0f)); },
       {v + ".weight_scale", "not part of the model", "bf16"}},
      {"int8-static without activation_scale",
       [&](Tensors&, Metadata& md) { set_precision(md, k, R"({"precision": "int8-static"})"); },
       {k, "activation_scale"}},
      {"negative activation_scale",
       [&](Tensors&, Metadata& md) { set_precision(md, k, R"({"precision": "int8-static", "activation_scale": -1})"); },
       {k, "activation_scale -1"}},
      {"missing brisk.format", [&](Tensors&, Metadata& md) { md.erase("brisk.format"); }, {"brisk.format", "missing"}},
      {"unknown brisk.format",
       [&](Tensors&, Metadata& md) { md["brisk.format"] = "brisk-quantized/9"; },
       {"brisk.format", "brisk-quantized/9", "brisk-quantized/1"}},
      {"invalid JSON",
       [&](Tensors&, Metadata& md) { md["brisk.precisions"] = "{\"a\": "; },
       {"brisk.precisions", "not valid JSON"}},
      {"invalid report JSON", [&](Tensors&, Metadata& md) { md["brisk.report"] = "[1,"; }, {"brisk.report"}},
      {"file outside the model",
       [&](Tensors&, Metadata& md) { md["brisk.files"] = R"({"../etc/passwd": "x"})"; },
       {"brisk.files", "../etc/passwd"}},
      {"config that does not match",
       [&](Tensors&, Metadata& md) {
         auto c = nlohmann::json::parse(md["brisk.config"]);
         c["intermediate_size"] = 96;
         md["brisk.config"] = c.dump();
       },
       {"encoder.layer.0.intermediate.dense.weight", "[128, 64]", "[96, 64]"}},
      {"missing config", [&](Tensors&, Metadata& md) { md.erase("brisk.config"); }, {"brisk.config", "missing"}},
      {"bad sha256", [&](Tensors&, Metadata& md) { md["brisk.source_sha256"] = "xyz"; }, {"brisk.source_sha256"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string bad = rewrite(tmp, path, c.mutate);
    auto r = brisk::load_quantized_model(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    for (const std::string& needle : c.needles) CHECK_THAT(msg(r.status()), Catch::Contains(needle));
  }
}

TEST_CASE("quantized model file: tokenizer and pooling from model files match the directory loaders",
          "[quant][model_file]") {
  std::vector<std::string> dirs;
  TempDir tmp;
  tmp.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nHello\n##s\nhello\n");
  tmp.write("config.json", kWideConfig);
  tmp.write("tokenizer_config.json", R"({"do_lower_case": false})");
  tmp.write("modules.json", R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "name": "1", "path": "pool/", "type": "sentence_transformers.models.Pooling"},
      {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  tmp.write("pool/config.json", R"({"word_embedding_dimension": 64, "pooling_mode_max_tokens": true})");
  tmp.write("sentence_bert_config.json", R"({"max_seq_length": 77})");
  dirs.push_back(tmp.path.string() + "/");
  if (fs::exists(brisk::testing::model_dir() / "tokenizer.json")) dirs.push_back(brisk::testing::model_dir().string());
  for (const std::string& dir : dirs) {
    INFO(dir);
    auto files = brisk::read_model_files(dir);
    REQUIRE(files.ok());
    CHECK(files->count("config.json") == 1);
    auto from_dir = brisk::WordPieceTokenizer::from_model_dir(dir);
    auto from_files = brisk::WordPieceTokenizer::from_model_files(*files, false, "m.safetensors");
    REQUIRE(from_dir.ok());
    REQUIRE(from_files.ok());
    CHECK(from_dir->vocab_size() == from_files->vocab_size());
    CHECK(from_dir->options().lowercase == from_files->options().lowercase);
    CHECK(from_dir->options().added_tokens == from_files->options().added_tokens);
    for (const char* text : {"Hellos hello HELLO", "Où est la gare? 東京 [MASK]", ""}) {
      CHECK(from_dir->encode(text, 32).value() == from_files->encode(text, 32).value());
    }
    auto pool_dir = brisk::read_pooling_config(dir);
    auto pool_files = brisk::read_pooling_config_from_files(*files, "m.safetensors");
    REQUIRE(pool_dir.ok());
    REQUIRE(pool_files.ok());
    CHECK(pool_dir->mode == pool_files->mode);
    CHECK(pool_dir->normalize == pool_files->normalize);
    CHECK(pool_dir->max_seq_length == pool_files->max_seq_length);
    CHECK(pool_dir->word_embedding_dimension == pool_files->word_embedding_dimension);
    CHECK_FALSE(pool_files->config_path.empty());
  }
  // The temporary model's files: max pooling from pool/, normalised, 77 tokens.
  auto files = brisk::read_model_files(tmp.path.string()).value();
  CHECK(files.count("pool/config.json") == 1);
  CHECK(files.count("tokenizer.json") == 0);
  auto p = brisk::read_pooling_config_from_files(files, "m.safetensors").value();
  CHECK(p.mode == brisk::Pooling::kMax);
  CHECK(p.normalize);
  CHECK(p.max_seq_length == 77);
  CHECK(p.config_path == "m.safetensors:pool/config.json");

  // Errors name the in-memory source and the file.
  files["pool/config.json"] = "{not json";
  auto broken = brisk::read_pooling_config_from_files(files, "m.safetensors");
  REQUIRE_FALSE(broken.ok());
  CHECK_THAT(msg(broken.status()), Catch::Contains("m.safetensors:pool/config.json"));
  files.erase("vocab.txt");
  auto none = brisk::WordPieceTokenizer::from_model_files(files, false, "m.safetensors");
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(msg(none.status()), Catch::Contains("m.safetensors") && Catch::Contains("vocab.txt"));
  // A model directory without a tokenizer is refused by read_model_files.
  TempDir bare;
  bare.write("config.json", kWideConfig);
  CHECK_FALSE(brisk::read_model_files(bare.path.string()).ok());
}

TEST_CASE("quantized model file: sha256 of a file", "[quant][model_file]") {
  TempDir tmp;
  auto h = brisk::file_sha256_hex(tmp.write("abc", "abc"));
  REQUIRE(h.ok());
  CHECK(*h == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK_FALSE(brisk::file_sha256_hex(tmp.file("absent")).ok());
}

TEST_CASE("quantized model file: the fuzz seeds written by make_corpus.py load", "[quant][model_file]") {
  const fs::path corpus = brisk::testing::test_data_dir() / ".." / "fuzz" / "corpus" / "fuzz_quantized_model";
  int seeds = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    INFO(entry.path().string());
    auto m = brisk::load_quantized_model(entry.path().string());
    REQUIRE(m.ok());
    CHECK(brisk::WordPieceTokenizer::from_model_files(m->model_files, false, "seed").ok());
    CHECK(brisk::read_pooling_config_from_files(m->model_files, "seed").ok());
    CHECK(brisk::BertEncoder::create(m->config, m->weights, brisk::Device::kCPU).ok());
    ++seeds;
  }
  CHECK(seeds == 2);
}
