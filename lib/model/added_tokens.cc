// tokenizer.json's added tokens (added_tokens.h): reading them and splitting a text around them.
#include "added_tokens.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "brisk/core/utf8.h"
#include "json_describe.h"
#include "token_id.h"
#include "tokenizer_unicode.h"

namespace brisk::detail {

StatusOr<std::vector<AddedTokenEntry>> parse_added_tokens(const nlohmann::json& j, std::string_view source) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": ", what));
  };
  std::vector<AddedTokenEntry> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return bad(absl::StrCat("added_tokens is ", describe_json(j), "; expected an array"));
  for (const nlohmann::json& a : j) {
    auto content = a.is_object() ? a.find("content") : a.end();
    auto id = a.is_object() ? a.find("id") : a.end();
    if (!a.is_object() || content == a.end() || !content->is_string() || id == a.end() || !id->is_number_integer()) {
      return bad(absl::StrCat("an added_tokens entry is ", describe_json(a),
                              "; expected an object with a string \"content\" and an integer \"id\""));
    }
    auto flag = [&](const char* key, bool fallback) {
      auto it = a.find(key);
      return it != a.end() && it->is_boolean() ? it->get<bool>() : fallback;
    };
    AddedTokenEntry e;
    e.token.content = content->get<std::string>();
    const int64_t token_id = id->get<int64_t>();
    if (e.token.content.empty() || !is_valid_utf8(e.token.content)) {
      return bad(absl::StrCat("the added token with id ", token_id,
                              " has an empty or non-UTF-8 content; expected a non-empty UTF-8 string"));
    }
    if (!is_token_id(token_id)) {
      return bad(absl::StrCat("added token ", describe_json(*content), " has id ", token_id,
                              ", an id out of range; expected an id in [0, 2^30)"));
    }
    if (flag("single_word", false)) {
      return bad(absl::StrCat("added token ", describe_json(*content),
                              " has single_word true, which is not supported; expected single_word false"));
    }
    e.id = static_cast<int32_t>(token_id);
    e.token.special = flag("special", false);
    e.token.normalized = flag("normalized", !e.token.special);
    e.token.lstrip = flag("lstrip", false);
    e.token.rstrip = flag("rstrip", false);
    out.push_back(std::move(e));
  }
  return out;
}

void sort_longest_first(std::vector<AddedPattern>& patterns) {
  std::stable_sort(patterns.begin(), patterns.end(),
                   [](const AddedPattern& a, const AddedPattern& b) { return a.text.size() > b.text.size(); });
}

std::vector<AddedSegment> split_added(std::string_view text, std::span<const AddedPattern> patterns) {
  std::vector<AddedSegment> segments;
  size_t done = 0;
  for (size_t pos = 0; pos < text.size();) {
    const AddedPattern* match = nullptr;
    for (const AddedPattern& p : patterns) {
      if (text.compare(pos, p.text.size(), p.text) == 0) {
        match = &p;
        break;
      }
    }
    if (match == nullptr) {
      pos += static_cast<size_t>(std::max(decode_utf8(text, pos).length, 1));
      continue;
    }
    // As tokenizers' find_matches: the matches are found first, then each takes its whitespace. So the search goes
    // on from where the match ends, not from where its rstrip ends, and a match in that whitespace (a normalised CJK
    // token's leading space) still counts: its segment overlaps the last one unless it strips left.
    const size_t match_end = pos + match->text.size();
    const size_t begin = match->lstrip ? std::max(white_space_before(text, pos, done), done) : pos;
    const size_t end = std::max(match->rstrip ? white_space_after(text, match_end) : match_end, begin);
    if (done < begin) segments.push_back({done, begin, -1});
    segments.push_back({begin, end, match->id});
    done = end;
    pos = match_end;
  }
  if (done < text.size()) segments.push_back({done, text.size(), -1});
  return segments;
}

}  // namespace brisk::detail
