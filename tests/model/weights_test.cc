// EncoderWeights: loading MiniLM and the tiny checkpoints, name mapping, dtype conversion, and clear errors for
// missing tensors, wrong shapes and bad checkpoints.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "brisk/model/config.h"
#include "brisk/model/safetensors.h"
#include "brisk/model/weights.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace fs = std::filesystem;
using brisk::BertConfig;
using brisk::DType;
using brisk::EncoderWeights;
using brisk::NamedTensors;
using brisk::Tensor;

namespace {

bool contains(absl::string_view s, absl::string_view part) { return absl::StrContains(s, part); }

using brisk::testing::TempDir;

// Writes tensors (any supported dtype, contiguous) as a safetensors file.
void write_safetensors(const fs::path& path, const NamedTensors& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, t] : tensors) {
    const size_t begin = data.size();
    data.append(static_cast<const char*>(t.raw_data()), t.nbytes());
    header[name] = {{"dtype", std::string(brisk::safetensors_dtype_name(t.dtype()))},
                    {"shape", t.shape()},
                    {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((uint64_t(text.size()) >> (8 * i)) & 0xff);
  std::ofstream out(path, std::ios::binary);
  out << len << text << data;
}

fs::path tiny_st_dir() { return brisk::testing::test_data_dir() / "tiny_bert_st"; }
fs::path tiny_bin_dir() { return brisk::testing::test_data_dir() / "tiny_bert"; }

BertConfig tiny_config() {
  auto c = BertConfig::from_json_file((tiny_st_dir() / "config.json").string());
  REQUIRE(c.ok());
  return *c;
}

NamedTensors tiny_tensors() {
  auto t = brisk::read_safetensors_tensors((tiny_st_dir() / "model.safetensors").string());
  REQUIRE(t.ok());
  return *t;
}

// A model directory holding `tensors` as model.safetensors plus `config`.
void write_model_dir(const fs::path& dir, const NamedTensors& tensors, const nlohmann::json& config) {
  write_safetensors(dir / "model.safetensors", tensors);
  std::ofstream(dir / "config.json") << config.dump(2);
}

nlohmann::json tiny_config_json() {
  std::ifstream in(tiny_st_dir() / "config.json");
  return nlohmann::json::parse(in);
}

// Every tensor of the struct with a readable name, for element-wise comparisons.
std::vector<std::pair<std::string, const Tensor*>> all_tensors(const EncoderWeights& w) {
  std::vector<std::pair<std::string, const Tensor*>> out = {{"word", &w.embeddings.word},
                                                            {"position", &w.embeddings.position},
                                                            {"token_type", &w.embeddings.token_type},
                                                            {"ln_gamma", &w.embeddings.ln_gamma},
                                                            {"ln_beta", &w.embeddings.ln_beta}};
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const auto& l = w.layers[i];
    const std::string p = "layer" + std::to_string(i) + ".";
    for (const auto& [n, t] :
         std::vector<std::pair<const char*, const Tensor*>>{{"q_weight", &l.q_weight},
                                                            {"q_bias", &l.q_bias},
                                                            {"k_weight", &l.k_weight},
                                                            {"k_bias", &l.k_bias},
                                                            {"v_weight", &l.v_weight},
                                                            {"v_bias", &l.v_bias},
                                                            {"attention_output_weight", &l.attention_output_weight},
                                                            {"attention_output_bias", &l.attention_output_bias},
                                                            {"attention_ln_gamma", &l.attention_ln_gamma},
                                                            {"attention_ln_beta", &l.attention_ln_beta},
                                                            {"intermediate_weight", &l.intermediate_weight},
                                                            {"intermediate_bias", &l.intermediate_bias},
                                                            {"output_weight", &l.output_weight},
                                                            {"output_bias", &l.output_bias},
                                                            {"output_ln_gamma", &l.output_ln_gamma},
                                                            {"output_ln_beta", &l.output_ln_beta}}) {
      out.emplace_back(p + n, t);
    }
  }
  return out;
}

void require_identical(const EncoderWeights& a, const EncoderWeights& b) {
  auto ta = all_tensors(a);
  auto tb = all_tensors(b);
  REQUIRE(ta.size() == tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    INFO(ta[i].first);
    const Tensor& x = *ta[i].second;
    const Tensor& y = *tb[i].second;
    REQUIRE(x.defined() == y.defined());
    if (!x.defined()) continue;
    REQUIRE(x.shape() == y.shape());
    REQUIRE(x.dtype() == DType::kF32);
    REQUIRE(y.dtype() == DType::kF32);
    CHECK(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0);
  }
  CHECK(a.num_parameters == b.num_parameters);
}

std::string load_error(const NamedTensors& tensors, const nlohmann::json& config) {
  TempDir dir;
  write_model_dir(dir.path, tensors, config);
  auto c = BertConfig::from_json_file((dir.path / "config.json").string());
  REQUIRE(c.ok());
  auto w = EncoderWeights::load(dir.path.string(), *c);
  REQUIRE_FALSE(w.ok());
  INFO(w.status().message());
  CHECK(contains(w.status().message(), "model.safetensors"));
  return std::string(w.status().message());
}

}  // namespace

TEST_CASE("weights load all-MiniLM-L6-v2 with the right shapes and parameter count", "[loading][weights][model]") {
  const fs::path dir = brisk::testing::model_dir();
  INFO(dir << " is missing: run scripts/setup");
  REQUIRE(fs::exists(dir / "model.safetensors"));
  auto config = BertConfig::from_json_file((dir / "config.json").string());
  REQUIRE(config.ok());
  auto w = EncoderWeights::load(dir.string(), *config);
  REQUIRE(w.ok());
  CHECK(w->weights_file == (dir / "model.safetensors").string());
  const int64_t V = 30522, P = 512, T = 2, H = 384, I = 1536, L = 6;
  CHECK(w->embeddings.word.shape() == std::vector<int64_t>{V, H});
  CHECK(w->embeddings.position.shape() == std::vector<int64_t>{P, H});
  CHECK(w->embeddings.token_type.shape() == std::vector<int64_t>{T, H});
  CHECK(w->embeddings.ln_gamma.shape() == std::vector<int64_t>{H});
  REQUIRE(w->layers.size() == size_t(L));
  for (const auto& l : w->layers) {
    CHECK(l.q_weight.shape() == std::vector<int64_t>{H, H});
    CHECK(l.v_bias.shape() == std::vector<int64_t>{H});
    CHECK(l.attention_output_weight.shape() == std::vector<int64_t>{H, H});
    CHECK(l.intermediate_weight.shape() == std::vector<int64_t>{I, H});
    CHECK(l.intermediate_bias.shape() == std::vector<int64_t>{I});
    CHECK(l.output_weight.shape() == std::vector<int64_t>{H, I});
    CHECK(l.output_ln_beta.shape() == std::vector<int64_t>{H});
  }
  // Independent count: embeddings (word, position, token type, LayerNorm) + per layer (Q, K, V, attention output
  // with biases, two LayerNorms, the two feed-forward Linears with biases). The pooler is not part of it.
  const int64_t embeddings = V * H + P * H + T * H + 2 * H;
  const int64_t layer = 4 * (H * H + H) + (I * H + I) + (H * I + H) + 2 * 2 * H;
  CHECK(w->num_parameters == embeddings + L * layer);
  CHECK(w->num_parameters == 22565376);  // 22.71M with the pooler's 147,840, as the model card counts
  CHECK(EncoderWeights::expected_num_parameters(*config) == w->num_parameters);

  // The values are the file's own (zero-copy f32 views of the mapping).
  auto file = brisk::SafetensorsFile::open((dir / "model.safetensors").string());
  REQUIRE(file.ok());
  auto q3 = file->get("encoder.layer.3.attention.self.query.weight");
  REQUIRE(q3.ok());
  CHECK(std::memcmp(q3->raw_data(), w->layers[3].q_weight.raw_data(), q3->nbytes()) == 0);
  CHECK(w->layers[3].q_weight.dtype() == DType::kF32);
}

TEST_CASE("weights: the torch checkpoint equals the safetensors file", "[loading][weights][torch]") {
  const BertConfig config = tiny_config();
  auto st = EncoderWeights::load(tiny_st_dir().string(), config);
  REQUIRE(st.ok());
  CHECK(st->num_parameters == EncoderWeights::expected_num_parameters(config));
  auto bin = EncoderWeights::load(tiny_bin_dir().string(), config);
  if (!brisk::torch_checkpoints_supported()) {
    REQUIRE_FALSE(bin.ok());
    CHECK(bin.status().code() == absl::StatusCode::kUnimplemented);
    CHECK(contains(bin.status().message(), "lacks libtorch"));
    CHECK(contains(bin.status().message(), "safetensors"));
    return;
  }
  REQUIRE(bin.ok());
  CHECK(contains(bin->weights_file, "pytorch_model.bin"));
  require_identical(*st, *bin);  // "bert." prefix, LayerNorm.gamma/beta, cls.* head and pooler handled

  auto raw = brisk::read_torch_checkpoint((tiny_bin_dir() / "pytorch_model.bin").string());
  REQUIRE(raw.ok());
  CHECK(raw->count("bert.embeddings.LayerNorm.gamma") == 1);
  CHECK(raw->count("cls.predictions.decoder.weight") == 1);  // tied to the word embeddings
  CHECK(std::memcmp(raw->at("cls.predictions.decoder.weight").raw_data(),
                    raw->at("bert.embeddings.word_embeddings.weight").raw_data(), 20 * 8 * 4) == 0);
  const Tensor& ids = raw->at("bert.embeddings.position_ids");
  REQUIRE(ids.dtype() == DType::kI64);
  REQUIRE(ids.shape() == std::vector<int64_t>{1, 16});
  CHECK(ids.data<int64_t>()[15] == 15);
}

TEST_CASE("weights: bad torch checkpoints give errors, not crashes", "[loading][weights][torch]") {
  if (!brisk::torch_checkpoints_supported())
    BRISK_SKIP("brisk was built without libtorch (BRISK_WITH_TORCH=OFF): no .bin checkpoints");
  TempDir dir;
  const fs::path bin = dir.path / "pytorch_model.bin";
  std::ifstream in(tiny_bin_dir() / "pytorch_model.bin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t cut : {size_t{0}, size_t{3}, size_t{100}, bytes.size() / 2, bytes.size() - 10}) {
    std::ofstream(bin, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(cut));
    auto t = brisk::read_torch_checkpoint(bin.string());
    INFO("cut at " << cut);
    REQUIRE_FALSE(t.ok());
    CHECK(contains(t.status().message(), "pytorch_model.bin"));
  }
  std::ofstream(bin, std::ios::binary | std::ios::trunc) << std::string("\x80\x02}q\x00.", 6);  // legacy pickle
  auto legacy = brisk::read_torch_checkpoint(bin.string());
  REQUIRE_FALSE(legacy.ok());
  CHECK(contains(legacy.status().message(), "not a zip archive"));
  for (const char* name :
       {"truncated_pickle.bin", "unknown_opcode.bin", "missing_record.bin", "bad_strides.bin", "broadcast_view.bin"}) {
    const fs::path p = brisk::testing::test_data_dir() / "bad_checkpoints" / name;
    INFO(name);
    REQUIRE(fs::exists(p));
    auto t = brisk::read_torch_checkpoint(p.string());
    REQUIRE_FALSE(t.ok());
    CHECK(contains(t.status().message(), name));
  }
  auto good = brisk::read_torch_checkpoint((brisk::testing::test_data_dir() / "bad_checkpoints" / "good.bin").string());
  REQUIRE(good.ok());
  REQUIRE(good->at("w").shape() == std::vector<int64_t>{4});
  CHECK(good->at("w").data<float>()[3] == 4.0f);
  auto missing = brisk::read_torch_checkpoint((dir.path / "absent.bin").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
}

namespace {

// A zip archive of uncompressed (stored) records, as torch.save writes them: enough for PyTorchStreamReader.
uint32_t crc32(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& records) {
  const auto le = [](std::string& out, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; ++k) out += char((v >> (8 * k)) & 0xFF);
  };
  std::string zip, central;
  for (const auto& [name, data] : records) {
    const uint32_t crc = crc32(data), offset = uint32_t(zip.size());
    le(zip, 0x04034b50, 4), le(zip, 20, 2), le(zip, 0, 2), le(zip, 0, 2), le(zip, 0, 4);  // stored, no flags
    le(zip, crc, 4), le(zip, data.size(), 4), le(zip, data.size(), 4), le(zip, name.size(), 2), le(zip, 0, 2);
    zip += name + data;
    le(central, 0x02014b50, 4), le(central, 20, 2), le(central, 20, 2), le(central, 0, 2), le(central, 0, 2);
    le(central, 0, 4), le(central, crc, 4), le(central, data.size(), 4), le(central, data.size(), 4);
    le(central, name.size(), 2), le(central, 0, 2), le(central, 0, 2), le(central, 0, 2), le(central, 0, 2);
    le(central, 0, 4), le(central, offset, 4);
    central += name;
  }
  const uint32_t central_offset = uint32_t(zip.size());
  zip += central;
  le(zip, 0x06054b50, 4), le(zip, 0, 2), le(zip, 0, 2), le(zip, records.size(), 2), le(zip, records.size(), 2);
  le(zip, central.size(), 4), le(zip, central_offset, 4), le(zip, 0, 2);
  return zip;
}

// tests/data/bad_checkpoints/good.bin's data.pkl (protocol 2): OrderedDict(w=<4 floats in storage "0">), whose
// last byte is STOP; `junk` goes in front of it, with the dict on top of the stack.
std::string state_dict_pickle(const std::string& junk) {
  static const std::string good(
      "\x80\x02"
      "ccollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00wq\x02"
      "ctorch._utils\n_rebuild_tensor_v2\n"
      "q\x03((X\x07\x00\x00\x00storageq\x04"
      "ctorch\nFloatStorage\nq\x05X\x01\x00\x00\x00"
      "0q\x06X\x03\x00\x00\x00"
      "cpuq\x07K\x04tq\x08QK\x00K\x04\x85q\tK\x01\x85q\n\x89h\x00)Rq\x0btq\x0cRq\rs.",
      165);
  return good.substr(0, good.size() - 1) + junk + ".";
}

// "junk": [None] * n, set on the state dict: one byte of pickle per value.
std::string none_list_item(size_t n) { return std::string("X\x04\x00\x00\x00junk](", 11) + std::string(n, 'N') + "es"; }

}  // namespace

TEST_CASE("weights: a hostile pickle cannot make the reader hold more than 64x data.pkl", "[loading][weights][torch]") {
  if (!brisk::torch_checkpoints_supported())
    BRISK_SKIP("brisk was built without libtorch (BRISK_WITH_TORCH=OFF): no .bin checkpoints");
  TempDir dir;
  const fs::path bin = dir.path / "pytorch_model.bin";
  const std::string four_floats("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40", 16);
  const auto write = [&](const std::string& pkl) {
    const std::string zip =
        stored_zip({{"archive/data.pkl", pkl}, {"archive/data/0", four_floats}, {"archive/version", "3\n"}});
    std::ofstream(bin, std::ios::binary | std::ios::trunc).write(zip.data(), std::streamsize(zip.size()));
  };
  // A state dict with a small junk list loads: the bound leaves room for real pickles.
  write(state_dict_pickle(none_list_item(1000)));
  auto small = brisk::read_torch_checkpoint(bin.string());
  REQUIRE(small.ok());
  CHECK(small->at("w").data<float>()[3] == 4.0f);
  // 300k one-byte None opcodes (~300 KB of pickle) would hold one ~200-byte arena value each, ~60 MB, and then
  // load as if nothing happened. The bound (64 x 300 KB + 1 MiB ~ 20 MB) refuses it, naming the bound.
  const std::string bomb = state_dict_pickle(none_list_item(300000));
  write(bomb);
  auto refused = brisk::read_torch_checkpoint(bin.string());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  INFO(refused.status().message());
  CHECK(contains(refused.status().message(), "pytorch_model.bin"));
  CHECK(contains(refused.status().message(), absl::StrCat("data.pkl (", bomb.size(), " bytes)")));
  CHECK(contains(refused.status().message(), "at most 64 x the size of data.pkl + 1048576 bytes"));
}

// Found by fuzz_torch_checkpoint (tests/fuzz/regressions/fuzz_torch_checkpoint/oom-0c1fdae3...): libtorch 1.13
// allocates a record's declared uncompressed size before reading it, so a 1 KB archive declaring a 4 GB record
// made it allocate 4 GB.
TEST_CASE("weights: a zip record declaring more bytes than the archive is refused before libtorch allocates it",
          "[loading][weights][torch]") {
  if (!brisk::torch_checkpoints_supported())
    BRISK_SKIP("brisk was built without libtorch (BRISK_WITH_TORCH=OFF): no .bin checkpoints");
  TempDir dir;
  const fs::path bin = dir.path / "pytorch_model.bin";
  const std::string four_floats(16, '\0');
  std::string zip = stored_zip(
      {{"archive/data.pkl", state_dict_pickle("")}, {"archive/data/0", four_floats}, {"archive/version", "3\n"}});
  std::ofstream(bin, std::ios::binary | std::ios::trunc).write(zip.data(), std::streamsize(zip.size()));
  REQUIRE(brisk::read_torch_checkpoint(bin.string()).ok());
  // The central directory entry of archive/version (the last one) now declares 0xFFFFFFFE uncompressed bytes.
  const size_t entry = zip.rfind(std::string("PK\x01\x02", 4));
  REQUIRE(entry != std::string::npos);
  for (int k = 0; k < 4; ++k) zip[entry + 24 + k] = char(k == 0 ? 0xFE : 0xFF);
  std::ofstream(bin, std::ios::binary | std::ios::trunc).write(zip.data(), std::streamsize(zip.size()));
  auto t = brisk::read_torch_checkpoint(bin.string());
  REQUIRE_FALSE(t.ok());
  INFO(t.status().message());
  CHECK(t.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(t.status().message(),
                 "pytorch_model.bin: has a zip record 'archive/version' that declares 4294967294 "
                 "bytes, more than the whole archive"));
  // The fuzzer's input itself (1132 bytes), which libtorch accepted up to the 4 GB allocation.
  const fs::path found = brisk::testing::test_data_dir() / "bad_checkpoints" / "declared_4gb_record.bin";
  REQUIRE(fs::exists(found));
  auto f = brisk::read_torch_checkpoint(found.string());
  REQUIRE_FALSE(f.ok());
  INFO(f.status().message());
  CHECK(contains(f.status().message(),
                 "declared_4gb_record.bin: has a zip record 'archive/version' that declares "
                 "4294967294 bytes, more than the whole archive (1132 bytes)"));
}

TEST_CASE("weights: a missing tensor, a wrong shape or dtype is a clear error", "[loading][weights]") {
  const nlohmann::json config = tiny_config_json();
  SECTION("missing tensor") {
    NamedTensors t = tiny_tensors();
    t.erase("encoder.layer.1.attention.self.key.bias");
    const std::string msg = load_error(t, config);
    CHECK(contains(msg, "missing tensor 'encoder.layer.1.attention.self.key.bias'"));
    CHECK(contains(msg, "expected shape [8]"));
  }
  SECTION("missing LayerNorm lists both spellings") {
    NamedTensors t = tiny_tensors();
    t.erase("encoder.layer.0.output.LayerNorm.weight");
    const std::string msg = load_error(t, config);
    CHECK(contains(msg, "'encoder.layer.0.output.LayerNorm.weight' or 'encoder.layer.0.output.LayerNorm.gamma'"));
  }
  SECTION("wrong shape") {
    NamedTensors t = tiny_tensors();
    auto reshaped = t.at("encoder.layer.0.intermediate.dense.weight").reshape({8, 16});
    REQUIRE(reshaped.ok());
    t["encoder.layer.0.intermediate.dense.weight"] = *reshaped;
    const std::string msg = load_error(t, config);
    CHECK(contains(msg, "tensor 'encoder.layer.0.intermediate.dense.weight' has shape [8, 16]; expected [16, 8]"));
  }
  SECTION("integer dtype") {
    NamedTensors t = tiny_tensors();
    auto i32 = Tensor::zeros({8}, DType::kI32);
    REQUIRE(i32.ok());
    t["embeddings.LayerNorm.bias"] = *i32;
    CHECK(contains(load_error(t, config), "tensor 'embeddings.LayerNorm.bias' has dtype i32"));
  }
  SECTION("config declares fewer layers than the checkpoint has") {
    nlohmann::json c = config;
    c["num_hidden_layers"] = 1;
    const std::string msg = load_error(tiny_tensors(), c);
    CHECK(contains(msg, "encoder.layer.1."));
    CHECK(contains(msg, "declares 1 layers"));
  }
  SECTION("config hidden size differs from the checkpoint") {
    nlohmann::json c = config;
    c["hidden_size"] = 16;
    const std::string msg = load_error(tiny_tensors(), c);
    CHECK(contains(msg, "tensor 'embeddings.word_embeddings.weight' has shape [20, 8]; expected [20, 16]"));
  }
  SECTION("not a BERT checkpoint at all") {
    NamedTensors t;
    t["classifier.weight"] = tiny_tensors().at("embeddings.LayerNorm.weight");
    CHECK(contains(load_error(t, config), "no tensor named 'embeddings.word_embeddings.weight'"));
  }
  SECTION("no weights file") {
    TempDir dir;
    auto w = EncoderWeights::load(dir.path.string(), tiny_config());
    REQUIRE_FALSE(w.ok());
    CHECK(w.status().code() == absl::StatusCode::kNotFound);
    CHECK(contains(w.status().message(), "neither model.safetensors nor pytorch_model.bin"));
    auto nodir = EncoderWeights::load("/nonexistent/model", tiny_config());
    REQUIRE_FALSE(nodir.ok());
    CHECK(nodir.status().code() == absl::StatusCode::kNotFound);
  }
}

TEST_CASE("weights: prefixes and old LayerNorm names map to the same struct", "[loading][weights]") {
  const BertConfig config = tiny_config();
  auto reference = EncoderWeights::load(tiny_st_dir().string(), config);
  REQUIRE(reference.ok());
  for (const std::string prefix : {"bert.", "0.auto_model."}) {
    NamedTensors renamed;
    for (auto& [name, t] : tiny_tensors()) {
      std::string n = name;
      const std::string w = "LayerNorm.weight", b = "LayerNorm.bias";
      if (n.size() > w.size() && n.compare(n.size() - w.size(), w.size(), w) == 0) n.replace(n.size() - 6, 6, "gamma");
      if (n.size() > b.size() && n.compare(n.size() - b.size(), b.size(), b) == 0) n.replace(n.size() - 4, 4, "beta");
      renamed[prefix + n] = t;
    }
    renamed["cls.predictions.bias"] = renamed.at(prefix + "embeddings.LayerNorm.beta");  // ignored head
    auto w = EncoderWeights::from_tensors(renamed, config, "renamed");
    INFO(prefix);
    REQUIRE(w.ok());
    require_identical(*reference, *w);
  }
}

TEST_CASE("weights: f16 and bf16 tensors are converted to f32", "[loading][weights]") {
  SECTION("to_float32 bit patterns") {
    std::vector<uint16_t> half = {0x3c00, 0xc000, 0x7c00, 0x0001, 0x3555, 0x0000, 0x8000, 0x7bff};
    auto f = brisk::to_float32(Tensor::borrow(half.data(), {8}, DType::kF16));
    REQUIRE(f.ok());
    const float* v = f->data<float>();
    CHECK(v[0] == 1.0f);
    CHECK(v[1] == -2.0f);
    CHECK(std::isinf(v[2]));
    CHECK(v[3] == std::ldexp(1.0f, -24));
    CHECK(v[4] == Approx(0.33325195f));
    CHECK(v[5] == 0.0f);
    CHECK(std::signbit(v[6]));
    CHECK(v[7] == 65504.0f);
    std::vector<uint16_t> bf = {0x3f80, 0xc0a0};
    auto g = brisk::to_float32(Tensor::borrow(bf.data(), {2}, DType::kBF16));
    REQUIRE(g.ok());
    CHECK(g->data<float>()[0] == 1.0f);
    CHECK(g->data<float>()[1] == -5.0f);
    std::vector<int32_t> ints = {1};
    CHECK_FALSE(brisk::to_float32(Tensor::borrow(ints.data(), {1}, DType::kI32)).ok());
  }
  SECTION("a bf16 checkpoint loads as the truncated f32 values") {
    const BertConfig config = tiny_config();
    NamedTensors f32 = tiny_tensors();
    NamedTensors bf16, truncated;
    for (const auto& [name, t] : f32) {
      if (t.dtype() != DType::kF32) continue;
      auto b = Tensor::empty(t.shape(), DType::kBF16);
      auto r = Tensor::empty(t.shape(), DType::kF32);
      REQUIRE(b.ok());
      REQUIRE(r.ok());
      for (int64_t i = 0; i < t.numel(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, t.data<float>() + i, 4);
        b->data<uint16_t>()[i] = uint16_t(bits >> 16);
        bits &= 0xffff0000u;
        std::memcpy(r->data<float>() + i, &bits, 4);
      }
      bf16[name] = *b;
      truncated[name] = *r;
    }
    TempDir dir;
    write_model_dir(dir.path, bf16, tiny_config_json());
    auto w = EncoderWeights::load(dir.path.string(), config);
    REQUIRE(w.ok());
    auto expected = EncoderWeights::from_tensors(truncated, config, "truncated");
    REQUIRE(expected.ok());
    require_identical(*expected, *w);
    CHECK(w->layers[0].q_weight.dtype() == DType::kF32);
  }
}

TEST_CASE("weights: DistilBERT names map to the same struct", "[loading][weights]") {
  const BertConfig bert = tiny_config();
  auto reference = EncoderWeights::load(tiny_st_dir().string(), bert);
  REQUIRE(reference.ok());
  const std::vector<std::pair<std::string, std::string>> map = {{"attention.self.query", "attention.q_lin"},
                                                                {"attention.self.key", "attention.k_lin"},
                                                                {"attention.self.value", "attention.v_lin"},
                                                                {"attention.output.dense", "attention.out_lin"},
                                                                {"attention.output.LayerNorm", "sa_layer_norm"},
                                                                {"intermediate.dense", "ffn.lin1"},
                                                                {"output.dense", "ffn.lin2"},
                                                                {"output.LayerNorm", "output_layer_norm"}};
  NamedTensors distil;
  for (const auto& [name, t] : tiny_tensors()) {
    if (name.rfind("embeddings.token_type", 0) == 0 || name.rfind("pooler.", 0) == 0) continue;
    std::string n = name;
    if (n.rfind("encoder.layer.", 0) == 0) {
      n.replace(0, 7, "transformer");
      for (const auto& [from, to] : map) {
        const size_t at = n.find(from);
        if (at != std::string::npos && n.find('.', at + from.size()) == at + from.size()) {
          n.replace(at, from.size(), to);
          break;
        }
      }
    }
    distil["distilbert." + n] = t;
  }
  REQUIRE(distil.count("distilbert.transformer.layer.1.ffn.lin2.weight") == 1);
  REQUIRE(distil.count("distilbert.transformer.layer.0.output_layer_norm.bias") == 1);
  nlohmann::json config = {{"model_type", "distilbert"},
                           {"vocab_size", 20},
                           {"dim", 8},
                           {"n_layers", 2},
                           {"n_heads", 2},
                           {"hidden_dim", 16},
                           {"max_position_embeddings", 16},
                           {"activation", "gelu"}};
  TempDir dir;
  write_model_dir(dir.path, distil, config);
  auto c = BertConfig::from_json_file((dir.path / "config.json").string());
  REQUIRE(c.ok());
  auto w = EncoderWeights::load(dir.path.string(), *c);
  REQUIRE(w.ok());
  CHECK_FALSE(w->embeddings.token_type.defined());
  CHECK(w->num_parameters == reference->num_parameters - 2 * 8);
  CHECK(w->num_parameters == EncoderWeights::expected_num_parameters(*c));
  // Same values field by field, except the token-type table DistilBERT does not have.
  auto a = all_tensors(*reference);
  auto b = all_tensors(*w);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first == "token_type") continue;
    INFO(a[i].first);
    REQUIRE(a[i].second->shape() == b[i].second->shape());
    CHECK(std::memcmp(a[i].second->raw_data(), b[i].second->raw_data(), a[i].second->nbytes()) == 0);
  }
  // A BERT config over DistilBERT weights says what it found.
  auto mismatch = EncoderWeights::load(dir.path.string(), bert);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(contains(mismatch.status().message(), "looks like DistilBERT"));
}
