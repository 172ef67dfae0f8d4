// Tests for brisk/core/utf8.h: the one strict UTF-8 decoder and encoder (expected values from the Unicode
// standard's table 3-7 of well-formed byte sequences), and its maximal subparts against Python's
// errors="replace" (tests/data/utf8_replace_golden.json, made by tests/data/make_utf8_replace_golden.py).
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "brisk/core/utf8.h"
#include "test_util.h"

using brisk::append_utf8;
using brisk::decode_utf8;
using brisk::first_invalid_utf8;
using brisk::is_valid_utf8;
using brisk::utf8_maximal_subpart;

TEST_CASE("utf8: well-formed sequences of 1 to 4 bytes decode to their code points", "[core][utf8]") {
  struct Case {
    std::string bytes;
    int32_t cp;
  };
  for (const Case& c :
       {Case{"A", 0x41}, Case{"\x7F", 0x7F}, Case{"\xC2\x80", 0x80}, Case{"\xC3\xA9", 0xE9}, Case{"\xDF\xBF", 0x7FF},
        Case{"\xE0\xA0\x80", 0x800}, Case{"\xE2\x82\xAC", 0x20AC}, Case{"\xED\x9F\xBF", 0xD7FF},
        Case{"\xEE\x80\x80", 0xE000}, Case{"\xEF\xBF\xBD", 0xFFFD}, Case{"\xF0\x90\x80\x80", 0x10000},
        Case{"\xF0\x9F\x98\x80", 0x1F600}, Case{"\xF4\x8F\xBF\xBF", 0x10FFFF}}) {
    const brisk::Utf8Char d = decode_utf8(c.bytes, 0);
    CHECK(d.ok());
    CHECK(d.code_point == c.cp);
    CHECK(d.length == static_cast<int>(c.bytes.size()));
    std::string again;
    append_utf8(again, c.cp);
    CHECK(again == c.bytes);
  }
}

TEST_CASE("utf8: ill-formed sequences are refused with the reason", "[core][utf8]") {
  struct Case {
    std::string bytes;
    const char* why;
  };
  for (const Case& c :
       {Case{"\x80", "a continuation byte with no lead byte"}, Case{"\xC0\xAF", "an overlong 2-byte lead byte"},
        Case{"\xC1\xBF", "an overlong 2-byte lead byte"}, Case{"\xE0\x80\xAF", "an overlong encoding"},
        Case{"\xF0\x80\x80\xAF", "an overlong encoding"},
        Case{"\xED\xA0\x80", "an encoded UTF-16 surrogate (U+D800..U+DFFF)"},
        Case{"\xED\xBF\xBF", "an encoded UTF-16 surrogate (U+D800..U+DFFF)"},
        Case{"\xF4\x90\x80\x80", "a code point above U+10FFFF"},
        Case{"\xF5\x80\x80\x80", "a byte that never occurs in UTF-8"},
        Case{"\xFF", "a byte that never occurs in UTF-8"}, Case{"\xC3", "a truncated multi-byte sequence"},
        Case{"\xE2\x82", "a truncated multi-byte sequence"}, Case{"\xF0\x9F\x98", "a truncated multi-byte sequence"},
        Case{"\xC3\x28", "a truncated multi-byte sequence"}}) {
    const brisk::Utf8Char d = decode_utf8(c.bytes, 0);
    CHECK_FALSE(d.ok());
    REQUIRE(d.error != nullptr);
    CHECK(std::string(d.error) == c.why);
    CHECK_FALSE(is_valid_utf8(c.bytes));
  }
}

TEST_CASE("utf8: first_invalid_utf8 names the byte offset of the first bad sequence", "[core][utf8]") {
  CHECK(first_invalid_utf8("") == 0);
  CHECK(first_invalid_utf8("caf\xC3\xA9 \xE2\x82\xAC") == 9);  // all valid: the size
  CHECK(first_invalid_utf8("caf\xC3\xA9 \xE2\x82") == 6);      // truncated euro sign at offset 6
  CHECK(first_invalid_utf8("ok \xED\xA0\x80 then") == 3);      // surrogate
  CHECK(is_valid_utf8("plain ASCII"));
}

TEST_CASE("utf8: one U+FFFD per maximal subpart, as Python's errors=replace decodes", "[core][utf8]") {
  CHECK(utf8_maximal_subpart("\xE2\x82", 0) == 2);
  CHECK(utf8_maximal_subpart("\xE2\x82\x41", 0) == 2);
  CHECK(utf8_maximal_subpart("\xF0\x80\x80", 0) == 1);  // 0x80 cannot follow f0
  CHECK(utf8_maximal_subpart("\xED\xA0\x80", 0) == 1);  // nor 0xa0 follow ed
  CHECK(utf8_maximal_subpart("\xF4\x8F\xBF", 0) == 3);
  CHECK(utf8_maximal_subpart("\xC0\xAF", 0) == 1);
  CHECK(utf8_maximal_subpart("\xE2\x82\xAC", 0) == 3);  // well-formed: its length
  const nlohmann::json g = nlohmann::json::parse(brisk::testing::read_test_file("utf8_replace_golden.json"));
  size_t n = 0;
  for (const nlohmann::json& c : g["cases"]) {
    const std::string bytes = absl::HexStringToBytes(c["hex"].get<std::string>());
    INFO("bytes " << c["hex"].get<std::string>());
    std::string replaced;
    for (size_t pos = 0; pos < bytes.size();) {
      const brisk::Utf8Char d = decode_utf8(bytes, pos);
      if (d.ok()) {
        append_utf8(replaced, d.code_point);
        pos += static_cast<size_t>(d.length);
      } else {
        append_utf8(replaced, 0xFFFD);
        pos += utf8_maximal_subpart(bytes, pos);
      }
    }
    CHECK(replaced == c["text"].get<std::string>());
    ++n;
  }
  CHECK(n >= 400);
}
