// make_token_layout: the rows of a packed (padding removed) and a padded batch, and their index maps.
#include <catch2/catch.hpp>

#include <vector>

#include "brisk/model/token_layout.h"

namespace {

brisk::PackedSequences batch_of(const std::vector<std::vector<int32_t>>& texts) {
  brisk::PackedSequences b;
  for (const auto& t : texts) b.add(t);
  return b;
}

}  // namespace

TEST_CASE("a packed layout keeps the tokens back to back", "[model][token_layout]") {
  const auto batch = batch_of({{101, 7, 102}, {}, {101, 102}});
  auto layout = brisk::make_token_layout(batch, /*remove_padding=*/true);
  REQUIRE(layout.ok());
  CHECK(layout->packed);
  CHECK(layout->rows == 5);
  CHECK(layout->max_len == 3);
  CHECK(layout->starts == std::vector<int32_t>{0, 3, 3});
  CHECK(layout->lengths == std::vector<int32_t>{3, 0, 2});
  CHECK(layout->ids == std::vector<int32_t>{101, 7, 102, 101, 102});
  CHECK(layout->positions == std::vector<int32_t>{0, 1, 2, 0, 1});
  CHECK(layout->source_rows == std::vector<int32_t>{0, 1, 2, 3, 4});
  CHECK(layout->type_ids == std::vector<int32_t>{0, 0, 0, 0, 0});
}

TEST_CASE("a padded layout gives every text max_len rows and marks the pads", "[model][token_layout]") {
  auto batch = batch_of({{101, 7, 102}, {101, 102}});
  batch.token_type_ids = {0, 1, 1, 0, 1};
  auto layout = brisk::make_token_layout(batch, /*remove_padding=*/false, /*pad_id=*/0);
  REQUIRE(layout.ok());
  CHECK_FALSE(layout->packed);
  CHECK(layout->rows == 6);
  CHECK(layout->starts == std::vector<int32_t>{0, 3});
  CHECK(layout->lengths == std::vector<int32_t>{3, 2});
  CHECK(layout->ids == std::vector<int32_t>{101, 7, 102, 101, 102, 0});
  CHECK(layout->type_ids == std::vector<int32_t>{0, 1, 1, 0, 1, 0});
  CHECK(layout->positions == std::vector<int32_t>{0, 1, 2, 0, 1, 2});
  CHECK(layout->source_rows == std::vector<int32_t>{0, 1, 2, 3, 4, -1});
}

TEST_CASE("every real token maps to exactly one row, both ways", "[model][token_layout]") {
  const auto batch = batch_of({{1}, {1, 2, 3, 4, 5}, {}, {1, 2}, {9, 9, 9, 9}});
  for (const bool remove : {true, false}) {
    auto layout = brisk::make_token_layout(batch, remove);
    REQUIRE(layout.ok());
    std::vector<int> seen(static_cast<size_t>(batch.total_tokens()), 0);
    for (int64_t b = 0; b < layout->batch; ++b) {
      for (int32_t i = 0; i < layout->lengths[b]; ++i) {
        const int32_t row = layout->starts[b] + i;
        const int32_t t = layout->source_rows[row];
        REQUIRE(t == batch.offsets[b] + i);
        CHECK(layout->ids[row] == batch.input_ids[t]);
        ++seen[t];
      }
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == batch.total_tokens());
    const auto pads = std::count(layout->source_rows.begin(), layout->source_rows.end(), -1);
    CHECK(pads == (remove ? 0 : layout->batch * layout->max_len - batch.total_tokens()));
  }
}

TEST_CASE("a token layout refuses offsets that do not describe the batch", "[model][token_layout]") {
  brisk::PackedSequences bad;
  bad.input_ids = {1, 2, 3};
  bad.offsets = {0, 2};
  auto layout = brisk::make_token_layout(bad, true);
  REQUIRE_FALSE(layout.ok());
  CHECK(layout.status().message().find("offsets do not describe 3 tokens") != std::string::npos);
  brisk::PackedSequences types;
  types.add(std::vector<int32_t>{1, 2});
  types.token_type_ids = {0};
  CHECK_FALSE(brisk::make_token_layout(types, false).ok());
}
