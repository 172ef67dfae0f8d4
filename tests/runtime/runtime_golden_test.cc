// End-to-end accuracy of brisk::Runtime against Hugging Face transformers (tests/data/golden_minilm.json, made by
// tests/data/make_golden.py): same token ids, same mean-pooled normalised embeddings, and embeddings that do
// not depend on the batch a sentence is in.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "test_util.h"

namespace {

struct GoldenItem {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<float> embedding;
};

std::vector<GoldenItem> load_golden() {
  std::ifstream in(brisk::testing::test_data_dir() / "golden_minilm.json");
  REQUIRE(in.good());
  nlohmann::json j = nlohmann::json::parse(in);
  std::vector<GoldenItem> items;
  for (const auto& it : j.at("items")) {
    items.push_back({it.at("text").get<std::string>(), it.at("ids").get<std::vector<int32_t>>(),
                     it.at("embedding").get<std::vector<float>>()});
  }
  return items;
}

// Caches off: every embedding below comes from a forward pass.
std::unique_ptr<brisk::Runtime> make_runtime(size_t max_batch_size = 32) {
  brisk::RuntimeOptions opts = brisk::testing::uncached_runtime_options();
  opts.batching.max_batch_size = max_batch_size;
  opts.max_seq_len = 512;  // the golden data is transformers' truncation at 512, not sentence-transformers' 256
  auto rt = brisk::Runtime::create(opts);
  INFO("model dir " << opts.model_dir << ": " << rt.status().message() << " (run scripts/setup)");
  REQUIRE(rt.ok());
  return std::move(*rt);
}

}  // namespace

TEST_CASE("embeddings match Hugging Face transformers", "[runtime][golden]") {
  const auto golden = load_golden();
  REQUIRE(golden.size() >= 60);
  auto rt = make_runtime();
  const size_t dim = static_cast<size_t>(rt->embedding_dim());
  REQUIRE(dim == 384);
  double worst_cos = 1.0, worst_diff = 0.0;
  for (const auto& item : golden) {
    std::string_view text = item.text;
    auto emb = rt->embed(std::span<const std::string_view>(&text, 1));
    REQUIRE(emb.ok());
    REQUIRE(item.embedding.size() == dim);
    const double cos = brisk::testing::cosine(emb->data(), item.embedding.data(), dim);
    double max_diff = 0;
    for (size_t i = 0; i < dim; ++i) max_diff = std::max(max_diff, double(std::fabs((*emb)[i] - item.embedding[i])));
    INFO("text: " << item.text.substr(0, 80));
    CHECK(cos >= 0.9999);
    CHECK(max_diff <= 2e-4);
    worst_cos = std::min(worst_cos, cos);
    worst_diff = std::max(worst_diff, max_diff);
  }
  WARN("worst cosine " << worst_cos << ", worst max|diff| " << worst_diff);
}

TEST_CASE("an embedding is the same alone and inside a mixed-length batch", "[runtime][golden]") {
  const auto golden = load_golden();
  auto rt = make_runtime(/*max_batch_size=*/16);
  const size_t dim = static_cast<size_t>(rt->embedding_dim());
  std::vector<std::string_view> texts;
  for (const auto& g : golden) texts.push_back(g.text);
  const uint64_t passes_before = rt->forward_passes();
  auto batch = rt->embed(texts);
  REQUIRE(batch.ok());
  // At least ceil(n / 16) passes (the padded-token budget may split one), each of mixed lengths.
  CHECK(rt->forward_passes() - passes_before >= (texts.size() + 15) / 16);
  for (size_t i = 0; i < texts.size(); ++i) {
    const uint64_t before = rt->forward_passes();
    auto single = rt->embed(std::span<const std::string_view>(&texts[i], 1));
    REQUIRE(single.ok());
    REQUIRE(rt->forward_passes() == before + 1);  // computed alone, not answered by a cache
    INFO("text " << i << ": " << golden[i].text.substr(0, 80));
    CHECK(brisk::testing::cosine(single->data(), batch->data() + i * dim, dim) >= 0.99999);
  }
}
