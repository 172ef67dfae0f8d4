// Pruning masks: torch's counts (round half to even), the pruned elements being the lowest scores (ties lowest flat
// index first), the global ranking against a brute-force sort, 2:4 masks and their check, Wanda scores, apply_mask.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include "brisk/prune/mask.h"
#include "test_util.h"

using namespace brisk;
using namespace brisk::prune;

namespace {

Tensor f32(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t = Tensor::empty(std::move(shape), DType::kF32).value();
  REQUIRE(static_cast<size_t>(t.numel()) == values.size());
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<uint8_t> bytes(const Tensor& mask) {
  REQUIRE(mask.dtype() == DType::kU8);
  const uint8_t* p = mask.data<uint8_t>();
  return std::vector<uint8_t>(p, p + mask.numel());
}

int64_t zeros(const Tensor& mask) {
  const std::vector<uint8_t> b = bytes(mask);
  return std::count(b.begin(), b.end(), uint8_t{0});
}

// 0, 1, ..., n-1 in a random order: element i is pruned iff its score is below the pruned count.
std::vector<float> permutation(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

}  // namespace

TEST_CASE("check_amount accepts 0 <= amount < 1 and names what it checks", "[prune][mask]") {
  CHECK(check_amount(0.0, "x").ok());
  CHECK(check_amount(0.999, "x").ok());
  for (double bad : {-0.1, 1.0, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    const Status s = check_amount(bad, "layer q");
    INFO(bad << ": " << s.message());
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(s.message()).find("layer q: amount is ") == 0);
    CHECK(std::string(s.message()).find("expected a fraction in [0, 1)") != std::string::npos);
  }
}

TEST_CASE("unstructured_mask prunes exactly round(amount * n), half to even, lowest scores", "[prune][mask]") {
  // Expected counts are Python's round(amount * n), worked out by hand (n * amount in doubles, then half to even).
  struct Case {
    double amount;
    int64_t n, pruned;
  };
  const Case cases[] = {{0.5, 5, 2},   {0.25, 10, 2}, {0.35, 10, 4}, {0.45, 10, 4},     {0.15, 10, 2}, {0.3, 10, 3},
                        {0.125, 4, 0}, {0.375, 4, 2}, {0.5, 7, 4},   {0.9, 9, 8},       {0.0, 10, 0},  {0.5, 1, 0},
                        {0.7, 5, 4},   {0.1, 25, 2},  {0.05, 30, 2}, {0.999, 1000, 999}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    INFO("amount " << c.amount << " of " << c.n);
    const std::vector<float> scores = permutation(c.n, seed++);
    auto mask = unstructured_mask(f32({c.n}, scores), c.amount);
    REQUIRE(mask.ok());
    CHECK(mask->shape() == std::vector<int64_t>{c.n});
    const std::vector<uint8_t> m = bytes(*mask);
    CHECK(zeros(*mask) == c.pruned);
    for (size_t i = 0; i < m.size(); ++i) CHECK(m[i] == (scores[i] < static_cast<float>(c.pruned) ? 0 : 1));
  }
  SECTION("a 2-D tensor counts all its elements") {
    auto mask = unstructured_mask(f32({4, 5}, permutation(20, 7)), 0.35);  // 7.0 -> 7
    REQUIRE(mask.ok());
    CHECK(mask->shape() == std::vector<int64_t>({4, 5}));
    CHECK(zeros(*mask) == 7);
  }
}

TEST_CASE("ties are pruned lowest flat index first", "[prune][mask]") {
  auto all_equal = unstructured_mask(f32({5}, {1, 1, 1, 1, 1}), 0.4);  // 2 pruned
  REQUIRE(all_equal.ok());
  CHECK(bytes(*all_equal) == std::vector<uint8_t>({0, 0, 1, 1, 1}));
  auto mixed = unstructured_mask(f32({2, 3}, {3, 1, 2, 1, 1, 0}), 0.5);  // 3 pruned: the 0, then the first two 1s
  REQUIRE(mixed.ok());
  CHECK(bytes(*mixed) == std::vector<uint8_t>({1, 0, 1, 0, 1, 0}));
}

TEST_CASE("unstructured_mask on random scores equals a full sort", "[prune][mask]") {
  const std::vector<float> s = testing::random_floats(1000, -1.0f, 1.0f, 42);
  auto mask = unstructured_mask(f32({25, 40}, s), 0.37);  // 370
  REQUIRE(mask.ok());
  std::vector<int> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return std::tie(s[a], a) < std::tie(s[b], b); });
  std::vector<uint8_t> want(s.size(), 1);
  for (int i = 0; i < 370; ++i) want[static_cast<size_t>(order[static_cast<size_t>(i)])] = 0;
  CHECK(bytes(*mask) == want);
}

TEST_CASE("global masks equal a brute-force ranking over all tensors", "[prune][mask]") {
  const std::vector<std::vector<int64_t>> shapes = {{3, 7}, {10}, {4, 4, 2}, {1}};  // 64 elements
  std::vector<Tensor> scores;
  uint32_t seed = 100;
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v = testing::random_floats(static_cast<size_t>(n), 0.0f, 1.0f, seed++);
    for (float& x : v) x = std::round(x * 10) / 10;  // a coarse grid: many ties, within and across tensors
    scores.push_back(f32(shape, v));
  }
  // Expected counts: round(amount * 64) by hand.
  for (auto [amount, pruned] : std::vector<std::pair<double, int64_t>>{{0.0, 0}, {0.3, 19}, {0.55, 35}, {0.9, 58}}) {
    INFO("amount " << amount);
    auto masks = global_unstructured_masks(scores, amount);
    REQUIRE(masks.ok());
    REQUIRE(masks->size() == scores.size());
    std::vector<std::tuple<float, size_t, int64_t>> triples;
    for (size_t t = 0; t < scores.size(); ++t) {
      CHECK((*masks)[t].shape() == scores[t].shape());
      for (int64_t i = 0; i < scores[t].numel(); ++i) triples.emplace_back(scores[t].data<float>()[i], t, i);
    }
    std::sort(triples.begin(), triples.end());
    std::vector<std::vector<uint8_t>> want;
    for (const Tensor& s : scores) want.emplace_back(static_cast<size_t>(s.numel()), 1);
    for (int64_t k = 0; k < pruned; ++k) {
      const auto& [score, t, i] = triples[static_cast<size_t>(k)];
      want[t][static_cast<size_t>(i)] = 0;
    }
    int64_t total_zeros = 0;
    for (size_t t = 0; t < scores.size(); ++t) {
      CHECK(bytes((*masks)[t]) == want[t]);
      total_zeros += zeros((*masks)[t]);
    }
    CHECK(total_zeros == pruned);
  }
  CHECK(!global_unstructured_masks(scores, 1.0).ok());
}

TEST_CASE("2:4 masks keep the two largest of every group of four", "[prune][mask]") {
  const int64_t rows = 8, cols = 16;
  const std::vector<float> w = testing::random_floats(rows * cols, -1.0f, 1.0f, 9);
  Tensor weight = f32({rows, cols}, w);
  auto scores = element_scores(weight, {});
  REQUIRE(scores.ok());
  auto mask = n_m_mask(*scores);
  REQUIRE(mask.ok());
  CHECK(validate_n_m(*mask).ok());
  const std::vector<uint8_t> m = bytes(*mask);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < cols; g += 4) {
      std::vector<int64_t> idx = {0, 1, 2, 3};
      const float* grp = w.data() + r * cols + g;
      std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return std::fabs(grp[a]) > std::fabs(grp[b]); });
      INFO("row " << r << " group " << g / 4);
      CHECK(m[static_cast<size_t>(r * cols + g + idx[0])] == 1);
      CHECK(m[static_cast<size_t>(r * cols + g + idx[1])] == 1);
      CHECK(m[static_cast<size_t>(r * cols + g + idx[2])] == 0);
      CHECK(m[static_cast<size_t>(r * cols + g + idx[3])] == 0);
    }
  }
  REQUIRE(apply_mask(weight, *mask).ok());
  CHECK(validate_n_m(weight).ok());
  CHECK(sparsity(weight) == 0.5);
}

TEST_CASE("validate_n_m names the first bad row and group", "[prune][mask]") {
  // Row 0 is 2:4; row 1's group 0 is too, its group 1 has three non-zeros.
  const Tensor w = f32({2, 8}, {1, 0, 2, 0, 0, 3, 0, 4,  //
                                5, 6, 0, 0, 7, 8, 9, 0});
  const Status s = validate_n_m(w);
  INFO(s.message());
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("row 1 group 1") != std::string::npos);
  CHECK(std::string(s.message()).find("has 3 non-zeros") != std::string::npos);
  CHECK(validate_n_m(w, 3, 4).ok());
}

TEST_CASE("N:M needs rows whose length is a multiple of m", "[prune][mask]") {
  const Tensor w = f32({2, 6}, std::vector<float>(12, 1.0f));
  auto mask = n_m_mask(w);
  REQUIRE_FALSE(mask.ok());
  CHECK(std::string(mask.status().message()).find("expected a multiple of m = 4") != std::string::npos);
  CHECK(!validate_n_m(w).ok());
  CHECK(!n_m_mask(w, 3, 2).ok());                             // n > m
  CHECK(!n_m_mask(f32({8}, std::vector<float>(8, 1))).ok());  // not 2-D
}

TEST_CASE("element_scores: magnitude and Wanda's |w| * input norm", "[prune][mask]") {
  const Tensor w = f32({2, 3}, {1, -2, 3, -4, 5, -0.5f});
  auto magnitude = element_scores(w, {});
  REQUIRE(magnitude.ok());
  const float* m = magnitude->data<float>();
  CHECK(std::vector<float>(m, m + 6) == std::vector<float>({1, 2, 3, 4, 5, 0.5f}));
  const std::vector<float> norms = {2, 0.5f, 10};
  auto wanda = element_scores(w, norms);
  REQUIRE(wanda.ok());
  const float* s = wanda->data<float>();
  CHECK(std::vector<float>(s, s + 6) == std::vector<float>({2, 1, 30, 8, 2.5f, 5}));
  // Half of six: magnitude prunes 0.5, 1, 2; Wanda prunes 1, 2, 2.5 -- a different set.
  CHECK(bytes(unstructured_mask(*magnitude, 0.5).value()) == std::vector<uint8_t>({0, 0, 1, 1, 1, 0}));
  CHECK(bytes(unstructured_mask(*wanda, 0.5).value()) == std::vector<uint8_t>({0, 0, 1, 1, 0, 1}));

  const std::vector<float> two = {1, 2};
  auto wrong = element_scores(w, two);
  REQUIRE_FALSE(wrong.ok());
  CHECK(std::string(wrong.status().message()).find("input_norms has 2 entries") != std::string::npos);
  CHECK(!element_scores(f32({6}, {1, 2, 3, 4, 5, 6}), {}).ok());  // not 2-D
}

TEST_CASE("apply_mask zeroes where the mask is 0 and checks shape and dtype", "[prune][mask]") {
  Tensor w = f32({2, 2}, {1, 2, 3, 4});
  Tensor mask = Tensor::empty({2, 2}, DType::kU8).value();
  const uint8_t keep[] = {1, 0, 0, 1};
  std::memcpy(mask.raw_data(), keep, 4);
  REQUIRE(apply_mask(w, mask).ok());
  CHECK(std::vector<float>(w.data<float>(), w.data<float>() + 4) == std::vector<float>({1, 0, 0, 4}));

  Tensor wrong_shape = Tensor::zeros({4}, DType::kU8).value();
  const Status shape = apply_mask(w, wrong_shape);
  CHECK(shape.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(shape.message()).find("mask has shape [4]; expected the weight's [2, 2]") != std::string::npos);

  const Tensor f32_mask = f32({2, 2}, {1, 1, 1, 1});
  const Status dtype = apply_mask(w, f32_mask);
  CHECK(std::string(dtype.message()).find("mask is f32; expected u8") != std::string::npos);
  Tensor i8 = Tensor::zeros({2, 2}, DType::kI8).value();
  CHECK(std::string(apply_mask(i8, mask).message()).find("weight is i8; expected f32") != std::string::npos);
}

TEST_CASE("sparsity counts exact zeros", "[prune][mask]") {
  CHECK(sparsity(f32({8}, {0, 1, -0.0f, 2, 3, 0, 4, 1e-30f})) == 0.375);
  CHECK(sparsity(f32({2}, {1, 2})) == 0.0);
}

TEST_CASE("empty tensors give empty masks", "[prune][mask]") {
  const Tensor empty = Tensor::empty({0, 4}, DType::kF32).value();
  auto mask = unstructured_mask(empty, 0.5);
  REQUIRE(mask.ok());
  CHECK(mask->numel() == 0);
  auto masks = global_unstructured_masks({empty, f32({4}, {4, 3, 2, 1})}, 0.5);
  REQUIRE(masks.ok());
  CHECK(bytes((*masks)[1]) == std::vector<uint8_t>({1, 1, 0, 0}));
  CHECK(n_m_mask(empty).ok());
}
