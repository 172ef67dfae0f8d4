// Question normalisation and the word analysis behind the semantic-cache guards.
#include <utf8proc.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "brisk/cache/semantic_guards.h"
#include "brisk/core/utf8.h"
#include "semantic_text.h"

namespace brisk::cache {

namespace {

// One code point at text[pos]; -1 (and one byte) for a byte that does not start valid UTF-8.
int32_t next_cp(std::string_view text, size_t pos, size_t& len) {
  const Utf8Char c = decode_utf8(text, pos);
  len = c.ok() ? static_cast<size_t>(c.length) : 1;
  return c.ok() ? c.code_point : -1;
}

bool is_apostrophe(int32_t cp) { return cp == '\'' || cp == 0x2019 || cp == 0x2018 || cp == 0x02BC; }

bool is_space(int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f') return true;
  auto cat = utf8proc_category(cp);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

}  // namespace

StatusOr<std::string> normalize_question(std::string_view text) {
  if (const size_t pos = first_invalid_utf8(text); pos < text.size()) {
    return absl::InvalidArgumentError(absl::StrCat("question is not valid UTF-8: bad byte 0x",
                                                   absl::Hex(static_cast<unsigned char>(text[pos])), " at offset ", pos,
                                                   " (", decode_utf8(text, pos).error, "); expected UTF-8 text"));
  }
  utf8proc_uint8_t* composed = nullptr;
  utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &composed, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("question could not be normalised (", utf8proc_errmsg(n), "); expected UTF-8 text"));
  }
  std::string nfc(reinterpret_cast<const char*>(composed), static_cast<size_t>(n));
  std::free(composed);

  std::string out;
  out.reserve(nfc.size());
  bool pending_space = false;
  for (size_t pos = 0; pos < nfc.size();) {
    size_t len;
    int32_t cp = next_cp(nfc, pos, len);
    pos += len;
    if (is_space(cp)) {
      pending_space = true;
      continue;
    }
    if (utf8proc_category(cp) == UTF8PROC_CATEGORY_CC) continue;
    if (pending_space && !out.empty()) out.push_back(' ');
    pending_space = false;
    if (is_apostrophe(cp)) {
      out.push_back('\'');
    } else {
      append_utf8(out, cp);
    }
  }
  return out;
}

std::string question_key(std::string_view normalized) {
  std::string key;
  utf8proc_uint8_t* folded = nullptr;
  utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(normalized.data()), static_cast<utf8proc_ssize_t>(normalized.size()),
      &folded, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD));
  if (n >= 0) {
    key.assign(reinterpret_cast<const char*>(folded), static_cast<size_t>(n));
    std::free(folded);
  } else {  // not valid UTF-8: callers pass normalize_question() output, but stay total
    key.assign(normalized);
    for (char& ch : key)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  while (!key.empty() && (key.back() == ' ' || key.back() == '?' || key.back() == '.' || key.back() == '!'))
    key.pop_back();
  return key;
}

namespace internal {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "box-es", "church-es", "clos-es": the endings after which "es" is a suffix rather than part of the word.
bool sibilant_end(std::string_view s) {
  return ends_with(s, "s") || ends_with(s, "x") || ends_with(s, "z") || ends_with(s, "ch") || ends_with(s, "sh");
}

bool is_ascii_consonant(char ch) {
  return ch >= 'a' && ch <= 'z' && ch != 'a' && ch != 'e' && ch != 'i' && ch != 'o' && ch != 'u';
}

enum class CharKind { kWord, kSentenceEnd, kClauseBreak, kOther };

CharKind kind_of(int32_t cp) {
  if (cp < 0) return CharKind::kOther;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return CharKind::kWord;
    default: break;
  }
  switch (cp) {
    case '.':
    case '?':
    case '!':
    case 0x2026:
    case 0x3002:
    case 0xFF01:
    case 0xFF1F:
    case 0x061F: return CharKind::kSentenceEnd;
    case ',':
    case ';':
    case ':':
    case '(':
    case ')':
    case '[':
    case ']':
    case '"':
    case '\n':
    case 0x201C:
    case 0x201D:
    case 0xFF0C:
    case 0x3001:
    case 0x2014:
    case 0x2013: return CharKind::kClauseBreak;
    default: return CharKind::kOther;
  }
}

bool is_letter(int32_t cp) {
  if (cp < 0) return false;
  auto cat = utf8proc_category(cp);
  return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
}
bool is_digit(int32_t cp) { return cp >= 0 && utf8proc_category(cp) == UTF8PROC_CATEGORY_ND; }

}  // namespace

std::string stem(std::string_view lower) {
  std::string s(lower);
  bool stripped = true;
  size_t n = s.size();
  if (n > 4 && (ends_with(s, "ies") || ends_with(s, "ied"))) {
    s.resize(n - 3);
    s.push_back('y');
  } else if (ends_with(s, "ing") && n >= 6) {
    s.resize(n - 3);
  } else if (ends_with(s, "ed") && !ends_with(s, "eed") && n >= 5) {
    s.resize(n - 2);
  } else if (ends_with(s, "es") && n >= 5 && sibilant_end(std::string_view(s).substr(0, n - 2))) {
    s.resize(n - 2);
  } else if (ends_with(s, "s") && !ends_with(s, "ss") && !ends_with(s, "us") && !ends_with(s, "is") && n >= 4) {
    s.resize(n - 1);
  } else {
    stripped = false;
  }
  n = s.size();
  if (n >= 2 && s[n - 1] == s[n - 2] && is_ascii_consonant(s[n - 1]) && s[n - 1] != 's') {
    size_t min_len = s[n - 1] == 'l' ? 5 : (stripped ? 3 : 4);
    if (n - 1 >= min_len) s.pop_back();
  }
  if (s.size() >= 4 && s.back() == 'e') s.pop_back();
  return s;
}

QuestionText analyze(std::string_view text) {
  QuestionText out;
  bool pending_sentence = true, pending_clause = true;
  Word cur;
  bool in_word = false, first_cp = true;

  auto push = [&](Word w) {
    w.stem = stem(w.lower);
    out.words.push_back(std::move(w));
  };
  auto finish = [&]() {
    if (!in_word) return;
    in_word = false;
    cur.sentence_start = pending_sentence;
    cur.clause_start = pending_clause || pending_sentence;
    pending_sentence = pending_clause = false;
    // Clitics: "don't" -> "do" "n't", "it's" -> "it" "'s"; other apostrophes (O'Brien) stay inside.
    std::string clitic;
    if (cur.lower.size() > 3 && ends_with(cur.lower, "n't")) {
      clitic = "n't";
    } else if (size_t ap = cur.lower.rfind('\''); ap != std::string::npos && ap > 0) {
      std::string_view suf = std::string_view(cur.lower).substr(ap);
      if (suf == "'s" || suf == "'m" || suf == "'re" || suf == "'ve" || suf == "'d" || suf == "'ll") clitic = suf;
    }
    if (!clitic.empty()) {
      cur.lower.resize(cur.lower.size() - clitic.size());
      Word c;
      c.lower = clitic;
      c.has_alpha = true;
      c.clitic = true;
      push(std::move(cur));
      push(std::move(c));
    } else {
      push(std::move(cur));
    }
    cur = Word{};
  };

  for (size_t pos = 0; pos < text.size();) {
    size_t len;
    int32_t cp = next_cp(text, pos, len);
    pos += len;
    CharKind kind = kind_of(cp);
    if (kind == CharKind::kWord) {
      if (!in_word) {
        in_word = true;
        first_cp = true;
      }
      auto cat = utf8proc_category(cp);
      bool upper = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT;
      if (first_cp)
        cur.upper_first = upper;
      else if (upper)
        cur.upper_inner = true;
      first_cp = false;
      if (is_letter(cp)) cur.has_alpha = true;
      if (cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO)
        cur.has_digit = true;
      append_utf8(cur.lower, utf8proc_tolower(cp));
      continue;
    }
    if (in_word && pos < text.size()) {
      size_t next_len;
      int32_t next = next_cp(text, pos, next_len);
      bool join = false;
      if (cp == '-' || cp == 0x2010 || cp == 0x2011) {
        join = is_letter(next) || is_digit(next);
      } else if (is_apostrophe(cp)) {
        join = is_letter(next);
        if (join) cp = '\'';
      } else if (cp == '.' || cp == ',' || cp == ':' || cp == '/') {
        join = !cur.lower.empty() && cur.lower.back() >= '0' && cur.lower.back() <= '9' && next >= '0' && next <= '9';
      }
      if (join) {
        append_utf8(cur.lower, cp == 0x2010 || cp == 0x2011 ? '-' : cp);
        continue;
      }
    }
    finish();
    if (kind == CharKind::kSentenceEnd) pending_sentence = true;
    if (kind == CharKind::kClauseBreak) pending_clause = true;
  }
  finish();
  return out;
}

std::shared_ptr<const QuestionText> analyzed(std::string_view text) {
  if (text.size() > kMaxAnalyzedTextBytes) return std::make_shared<const QuestionText>(analyze(text));
  struct Entry {
    std::string text;
    std::shared_ptr<const QuestionText> analysis;
    uint64_t used = 0;  // 0: empty
  };
  thread_local std::array<Entry, kAnalyzedTexts> memo;
  thread_local uint64_t clock = 0;
  Entry* oldest = &memo[0];
  for (Entry& e : memo) {
    if (e.used != 0 && e.text == text) {
      e.used = ++clock;
      return e.analysis;
    }
    if (e.used < oldest->used) oldest = &e;
  }
  oldest->text.assign(text);
  oldest->analysis = std::make_shared<const QuestionText>(analyze(text));
  oldest->used = ++clock;
  return oldest->analysis;
}

}  // namespace internal
}  // namespace brisk::cache
