// read_text_lines: the texts of a file, one a line (brisk/core/text_lines.h).
#include "brisk/core/text_lines.h"

#include <catch2/catch.hpp>

#include "test_util.h"

namespace {

std::string msg(const absl::Status& s) { return std::string(s.message()); }

}  // namespace

TEST_CASE("read_text_lines splits LF and CRLF lines and skips empty and comment lines", "[core][text_lines]") {
  brisk::testing::TempDir tmp;
  const std::string path = tmp.write("t.txt", "first\r\n\n# a comment\nsecond line\r\n\r\n#tag text\nlast");
  CHECK(brisk::read_text_lines(path, "--texts").value() == std::vector<std::string>{"first", "second line", "last"});
  CHECK(brisk::read_text_lines(path, "--texts", /*keep_comments=*/true).value() ==
        std::vector<std::string>{"first", "# a comment", "second line", "#tag text", "last"});
  // Tabs and inner carriage returns stay (only the line ending's \r goes).
  const std::string tsv = tmp.write("t.tsv", "q\ta\r\nx\ry\n");
  CHECK(brisk::read_text_lines(tsv, "--faq").value() == std::vector<std::string>{"q\ta", "x\ry"});
}

TEST_CASE("read_text_lines names the flag and the path when there is nothing to read", "[core][text_lines]") {
  brisk::testing::TempDir tmp;
  auto missing = brisk::read_text_lines((tmp.path / "none.txt").string(), "--calib");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(msg(missing.status()).find("--calib: ") == 0);
  CHECK(msg(missing.status()).find("none.txt") != std::string::npos);

  auto dir = brisk::read_text_lines(tmp.path.string(), "--calib");
  REQUIRE_FALSE(dir.ok());
  CHECK(msg(dir.status()).find("is a directory") != std::string::npos);

  for (const char* bytes : {"", "\n\r\n\n", "# only\n#comments\n"}) {
    auto empty = brisk::read_text_lines(tmp.write("e.txt", bytes), "--texts");
    REQUIRE_FALSE(empty.ok());
    CHECK(empty.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(msg(empty.status()).find("has no texts; expected a text file, one text a line") != std::string::npos);
  }
}
