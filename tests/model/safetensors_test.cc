// SafetensorsFile: malformed files are rejected with messages naming the file and tensor; valid files round-trip.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "brisk/model/safetensors.h"
#include "absl/strings/match.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace fs = std::filesystem;
using brisk::DType;
using brisk::SafetensorsFile;
using brisk::Tensor;

namespace {

using brisk::testing::TempDir;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string u64le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file from a raw header text and a raw data section.
std::string make_file(const std::string& header, const std::string& data) {
  return u64le(header.size()) + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Writes `bytes` as bad.safetensors, opens it, and returns the (expected non-OK) status message.
std::string open_error(const TempDir& dir, const std::string& bytes) {
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, bytes);
  auto file = SafetensorsFile::open(path);
  REQUIRE_FALSE(file.ok());
  INFO(file.status().message());
  CHECK(file.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(file.status().message());
}

bool contains(absl::string_view s, absl::string_view part) { return absl::StrContains(s, part); }

}  // namespace

TEST_CASE("safetensors rejects truncated and oversized headers", "[loading][safetensors]") {
  TempDir dir;
  SECTION("file shorter than 8 bytes") {
    const std::string msg = open_error(dir, std::string("\x05\x00\x00", 3));
    CHECK(contains(msg, "bad.safetensors"));
    CHECK(contains(msg, "at least 8 bytes"));
  }
  SECTION("empty file") { CHECK(contains(open_error(dir, ""), "bad.safetensors")); }
  SECTION("header length larger than the file") {
    const std::string msg = open_error(dir, u64le(1000) + "{}");
    CHECK(contains(msg, "bad.safetensors"));
    CHECK(contains(msg, "header length is 1000"));
  }
  SECTION("header length above the 100 MB cap") {
    const std::string msg = open_error(dir, u64le(uint64_t{1} << 40) + "{}");
    CHECK(contains(msg, "bad.safetensors"));
    CHECK(contains(msg, "expected at most"));
  }
  SECTION("header length near 2^64 does not wrap around") {
    CHECK(contains(open_error(dir, u64le(~uint64_t{0} - 3) + "{}"), "bad.safetensors"));
  }
  SECTION("header is not JSON") {
    const std::string msg = open_error(dir, make_file("{\"a\": [1, 2", ""));
    CHECK(contains(msg, "not valid JSON"));
  }
  SECTION("header is JSON but not an object") {
    CHECK(contains(open_error(dir, make_file("[1, 2, 3]", "")), "expected a JSON object"));
  }
  SECTION("empty header") { CHECK(contains(open_error(dir, make_file("", "")), "not valid JSON")); }
}

TEST_CASE("safetensors validates every tensor entry", "[loading][safetensors]") {
  TempDir dir;
  const std::string data(64, '\0');
  auto err = [&](const std::string& header) { return open_error(dir, make_file(header, data)); };

  SECTION("overlapping offsets") {
    const std::string msg = err(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})");
    CHECK(contains(msg, "bad.safetensors"));
    CHECK(contains(msg, "'b'"));
    CHECK(contains(msg, "overlaps tensor 'a'"));
  }
  SECTION("offsets beyond the data section") {
    const std::string msg = err(R"({"w":{"dtype":"F32","shape":[32],"data_offsets":[0,128]}})");
    CHECK(contains(msg, "bad.safetensors"));
    CHECK(contains(msg, "tensor 'w'"));
    CHECK(contains(msg, "holds only 64 bytes"));
  }
  SECTION("begin > end") {
    CHECK(contains(err(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[16,8]}})"), "begin > end"));
  }
  SECTION("shape x dtype does not match the byte range") {
    const std::string msg = err(R"({"encoder.layer.0.attention.self.query.weight":)"
                                R"({"dtype":"F32","shape":[384,384],"data_offsets":[0,60]}})");
    CHECK(contains(msg,
                   "bad.safetensors: tensor 'encoder.layer.0.attention.self.query.weight' has data_offsets "
                   "[0, 60] (60 bytes) but shape [384, 384] x f32 needs 589824 bytes"));
  }
  SECTION("unsupported dtype F64") {
    const std::string msg = err(R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})");
    CHECK(contains(msg, "tensor 'd'"));
    CHECK(contains(msg, "unsupported dtype 'F64'"));
  }
  SECTION("unsupported dtype BOOL") {
    CHECK(contains(err(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})"), "unsupported dtype 'BOOL'"));
  }
  SECTION("unknown dtype") {
    CHECK(contains(err(R"({"m":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})"), "unknown dtype 'Q4'"));
  }
  SECTION("negative shape") {
    const std::string msg = err(R"({"n":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}})");
    CHECK(contains(msg, "tensor 'n'"));
    CHECK(contains(msg, "non-negative"));
  }
  SECTION("huge shape whose product overflows") {
    const std::string msg = err(R"({"h":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}})");
    CHECK(contains(msg, "tensor 'h'"));
    CHECK(contains(msg, "overflows"));
  }
  SECTION("huge shape that fits 64 bits but not the file") {
    CHECK(contains(err(R"({"h":{"dtype":"F32","shape":[1000000000],"data_offsets":[0,16]}})"), "needs 4000000000"));
  }
  SECTION("shape not an array / non-integer entries") {
    CHECK(contains(err(R"({"s":{"dtype":"F32","shape":4,"data_offsets":[0,16]}})"), "non-array \"shape\""));
    CHECK(contains(err(R"({"s":{"dtype":"F32","shape":[2.5],"data_offsets":[0,16]}})"), "shape entry 0"));
  }
  SECTION("missing fields and malformed offsets") {
    CHECK(contains(err(R"({"x":{"shape":[1],"data_offsets":[0,4]}})"), "has no \"dtype\""));
    CHECK(contains(err(R"({"x":{"dtype":"F32","data_offsets":[0,4]}})"), "has no \"shape\""));
    CHECK(contains(err(R"({"x":{"dtype":"F32","shape":[1]}})"), "data_offsets missing"));
    CHECK(contains(err(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})"), "tensor 'x'"));
    CHECK(contains(err(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})"), "tensor 'x'"));
    CHECK(contains(err(R"({"x":"F32"})"), "tensor 'x' is a JSON string"));
  }
  SECTION("metadata must map strings to strings") {
    CHECK(contains(err(R"({"__metadata__":{"format":1}})"), "__metadata__ key 'format'"));
    CHECK(contains(err(R"({"__metadata__":[1]})"), "__metadata__ is a JSON array"));
  }
}

TEST_CASE("safetensors round-trips a hand-written file exactly", "[loading][safetensors]") {
  TempDir dir;
  const std::vector<float> f32 = {1.5f, -2.25f, 3.0e-8f, 1.0e30f, -0.0f, 7.0f};
  const std::vector<int64_t> i64 = {-1, 0, int64_t{1} << 40};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000};  // 1.0, -2.0
  const std::vector<int8_t> i8 = {-128, 127, 5};
  std::string data = raw(f32) + raw(i64) + raw(f16) + raw(i8);
  nlohmann::json h;
  h["__metadata__"] = {{"format", "pt"}, {"source", "unit test"}};
  h["w"] = {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}};
  h["ids"] = {{"dtype", "I64"}, {"shape", {3}}, {"data_offsets", {24, 48}}};
  h["half"] = {{"dtype", "F16"}, {"shape", {2}}, {"data_offsets", {48, 52}}};
  h["bytes"] = {{"dtype", "I8"}, {"shape", {3}}, {"data_offsets", {52, 55}}};
  h["empty"] = {{"dtype", "F32"}, {"shape", {0, 3}}, {"data_offsets", {55, 55}}};
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string path = dir.file("ok.safetensors");
  write_bytes(path, make_file(header, data));

  Tensor w;
  {
    auto file = SafetensorsFile::open(path);
    REQUIRE(file.ok());
    CHECK(file->tensor_names() == std::vector<std::string>{"bytes", "empty", "half", "ids", "w"});
    CHECK(file->metadata().at("format") == "pt");
    CHECK(file->metadata().at("source") == "unit test");
    CHECK(file->contains("w"));
    CHECK_FALSE(file->contains("__metadata__"));

    auto info = file->info("ids");
    REQUIRE(info.ok());
    CHECK(info->dtype == DType::kI64);
    CHECK(info->shape == std::vector<int64_t>{3});
    CHECK(info->data_begin == 24);
    CHECK(info->data_end == 48);
    CHECK(info->file_offset == 8 + header.size() + 24);

    auto w1 = file->get("w");
    REQUIRE(w1.ok());
    CHECK(w1->shape() == std::vector<int64_t>{2, 3});
    CHECK(w1->dtype() == DType::kF32);
    CHECK(std::memcmp(w1->raw_data(), f32.data(), 24) == 0);
    auto w2 = file->get("w");
    REQUIRE(w2.ok());
    CHECK(w1->raw_data() == w2->raw_data());  // zero-copy: both views point into the same mapping
    w = *w1;

    auto ids = file->get("ids");
    REQUIRE(ids.ok());
    CHECK(std::memcmp(ids->raw_data(), i64.data(), 24) == 0);
    auto half = file->get("half");
    REQUIRE(half.ok());
    CHECK(half->dtype() == DType::kF16);
    CHECK(half->data<uint16_t>()[1] == 0xc000);
    auto bytes = file->get("bytes");
    REQUIRE(bytes.ok());
    CHECK(bytes->data<int8_t>()[0] == -128);
    auto empty = file->get("empty");
    REQUIRE(empty.ok());
    CHECK(empty->numel() == 0);

    auto missing = file->get("nope");
    REQUIRE_FALSE(missing.ok());
    CHECK(contains(std::string(missing.status().message()), "ok.safetensors: no tensor named 'nope'"));
    CHECK_FALSE(file->info("nope").ok());
  }
  // The tensor keeps the mapping alive after the SafetensorsFile is gone.
  CHECK(w.data<float>()[0] == 1.5f);
  CHECK(w.data<float>()[5] == 7.0f);
  // Writes go to a private copy-on-write page, never to the file.
  w.data<float>()[0] = 42.0f;
  auto again = SafetensorsFile::open(path);
  REQUIRE(again.ok());
  CHECK(again->get("w")->data<float>()[0] == 1.5f);
}

TEST_CASE("safetensors copies misaligned tensors into aligned storage", "[loading][safetensors]") {
  TempDir dir;
  const std::vector<float> values = {0.5f, -1.0f, 2.0f};
  std::string header = R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[1,13]}})";  // 1-byte skew
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string path = dir.file("skew.safetensors");
  write_bytes(path, make_file(header, std::string(1, '\0') + raw(values)));
  auto file = SafetensorsFile::open(path);
  REQUIRE(file.ok());
  auto w = file->get("w");
  REQUIRE(w.ok());
  CHECK(reinterpret_cast<uintptr_t>(w->raw_data()) % alignof(float) == 0);
  CHECK(w->data<float>()[0] == 0.5f);
  CHECK(w->data<float>()[1] == -1.0f);
  CHECK(w->data<float>()[2] == 2.0f);
}

TEST_CASE("safetensors reports missing files", "[loading][safetensors]") {
  auto file = SafetensorsFile::open("/nonexistent/dir/model.safetensors");
  REQUIRE_FALSE(file.ok());
  CHECK(file.status().code() == absl::StatusCode::kNotFound);
  CHECK(contains(std::string(file.status().message()), "/nonexistent/dir/model.safetensors"));
  TempDir dir;
  auto d = SafetensorsFile::open(dir.path.string());
  REQUIRE_FALSE(d.ok());
  CHECK(contains(std::string(d.status().message()), "not a regular file"));
}

TEST_CASE("safetensors opens the real all-MiniLM-L6-v2 model", "[loading][safetensors][model]") {
  const fs::path path = brisk::testing::model_dir() / "model.safetensors";
  INFO(path << " is missing: run scripts/setup");
  REQUIRE(fs::exists(path));
  auto file = SafetensorsFile::open(path.string());
  REQUIRE(file.ok());
  CHECK(file->metadata().at("format") == "pt");
  // 5 embedding tensors, position_ids, 16 per layer, and the pooler's dense weight and bias.
  CHECK(file->tensor_names().size() == 5 + 1 + 6 * 16 + 2);
  CHECK(file->contains("pooler.dense.weight"));
  auto word = file->get("embeddings.word_embeddings.weight");
  REQUIRE(word.ok());
  CHECK(word->shape() == std::vector<int64_t>{30522, 384});
  CHECK(word->dtype() == DType::kF32);
  auto ids = file->get("embeddings.position_ids");
  REQUIRE(ids.ok());
  CHECK(ids->dtype() == DType::kI64);
  CHECK(ids->data<int64_t>()[511] == 511);
  for (int layer = 0; layer < 6; ++layer) {
    const std::string p = "encoder.layer." + std::to_string(layer) + ".";
    auto q = file->info(p + "attention.self.query.weight");
    REQUIRE(q.ok());
    CHECK(q->shape == std::vector<int64_t>{384, 384});
    auto inter = file->info(p + "intermediate.dense.weight");
    REQUIRE(inter.ok());
    CHECK(inter->shape == std::vector<int64_t>{1536, 384});
    auto out = file->info(p + "output.dense.weight");
    REQUIRE(out.ok());
    CHECK(out->shape == std::vector<int64_t>{384, 1536});
  }
  // Sanity of the values: LayerNorm gammas are finite and mostly near 1.
  auto gamma = file->get("embeddings.LayerNorm.weight");
  REQUIRE(gamma.ok());
  double sum = 0;
  for (int i = 0; i < 384; ++i) sum += gamma->data<float>()[i];
  CHECK(std::isfinite(sum));
  CHECK(sum / 384 > 0.1);
}
