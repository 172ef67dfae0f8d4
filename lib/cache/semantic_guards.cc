// The built-in semantic-cache guards (brisk/cache/semantic_guards.h): a small word analyser over UTF-8
// (utf8proc for categories and case), then one comparison per guard.
#include "brisk/cache/semantic_guards.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "semantic_text.h"

namespace brisk::cache {

SemanticGuard::~SemanticGuard() = default;

namespace {

using internal::QuestionText;
using internal::Word;

bool in(std::string_view w, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), w) != list.end();
}

// Closed-class words: they carry no polarity and do not consume a negation's scope.
bool is_stopword(std::string_view w) {
  static const absl::flat_hash_set<std::string_view> kStop = {
      "a",    "an",    "the",    "to",    "of",   "for",   "in",    "at",     "by",    "with",  "from",
      "into", "about", "as",     "up",    "my",   "your",  "our",   "their",  "his",   "her",   "its",
      "i",    "you",   "we",     "they",  "he",   "she",   "it",    "me",     "us",    "them",  "do",
      "does", "did",   "is",     "are",   "was",  "were",  "be",    "been",   "being", "am",    "have",
      "has",  "had",   "can",    "could", "will", "would", "shall", "should", "may",   "might", "must",
      "ca",   "wo",    "sha",    "this",  "that", "these", "those", "there",  "here",  "'s",    "'m",
      "'re",  "'ve",   "'d",     "'ll",   "any",  "some",  "all",   "please", "just",  "also",  "very",
      "too",  "still", "really", "again", "ever", "yet",   "one",   "get",    "got"};
  return kStop.contains(w);
}

// Words that end a negation's scope (besides punctuation).
bool is_scope_break(std::string_view w) {
  return in(w, {"but",   "and", "or",   "so",   "because", "how",      "what",   "why", "when",    "where", "who",
                "which", "if",  "then", "than", "while",   "although", "though", "yet", "whether", "unless"});
}

bool is_negator(std::string_view w) {
  return in(w,
            {"not",     "no",       "never", "n't",    "cannot", "without", "nor",    "neither", "none",    "nothing",
             "nobody",  "nowhere",  "non",   "unable", "dont",   "doesnt",  "didnt",  "cant",    "couldnt", "wont",
             "wouldnt", "shouldnt", "isnt",  "arent",  "wasnt",  "werent",  "havent", "hasnt",   "hadnt",   "mustnt"});
}

// "un"/"dis"/"non" words whose rest is a different word, not the negation of one.
bool is_prefix_false_friend(std::string_view w) {
  return in(w, {"display",  "discount", "discover", "dispatch", "distribute", "discard",    "discharge", "dismiss",
                "dispose",  "disclose", "dispute",  "distance", "district",   "discuss",    "disk",      "dish",
                "disc",     "distinct", "dissolve", "disaster", "under",      "understand", "undergo",   "underneath",
                "union",    "unique",   "unit",     "unite",    "united",     "universe",   "universal", "university",
                "until",    "uniform",  "unicode",  "unix",     "none",       "nonce",      "undo",      "unless",
                "disguise", "disgust",  "dismal"});
}

const std::vector<std::pair<std::vector<std::string_view>, std::vector<std::string_view>>>& antonym_groups() {
  static const auto* groups = new std::vector<std::pair<std::vector<std::string_view>, std::vector<std::string_view>>>{
      {{"enable"}, {"disable"}},
      {{"activate"}, {"deactivate"}},
      {{"open"}, {"close"}},
      {{"lock"}, {"unlock"}},
      {{"accept", "approve", "allow", "permit", "grant"},
       {"reject", "decline", "deny", "refuse", "block", "forbid", "prohibit", "ban"}},
      {{"add"}, {"remove", "delete"}},
      {{"increase", "raise", "high", "higher"}, {"decrease", "reduce", "low", "lower"}},
      {{"maximum", "max"}, {"minimum", "min"}},
      {{"upgrade"}, {"downgrade"}},
      {{"start"}, {"stop"}},
      {{"succeed", "success", "successful"}, {"fail", "failure"}},
      {{"include"}, {"exclude"}},
      {{"on"}, {"off"}},
      {{"before"}, {"after"}},
      {{"early"}, {"late"}},
      {{"buy"}, {"sell"}},
      {{"deposit"}, {"withdraw"}},
      {{"upload"}, {"download"}},
      {{"import"}, {"export"}},
      {{"send"}, {"receive"}},
      {{"credit"}, {"debit"}},
      {{"valid"}, {"invalid"}},
      {{"possible"}, {"impossible"}},
      {{"correct"}, {"incorrect"}},
      {{"complete"}, {"incomplete"}},
      {{"eligible"}, {"ineligible"}},
      {{"legal"}, {"illegal"}},
      {{"true"}, {"false"}},
      {{"positive"}, {"negative"}},
      {{"public"}, {"private"}},
      {{"inbound"}, {"outbound"}},
      {{"incoming"}, {"outgoing"}},
  };
  return *groups;
}

}  // namespace

// Stem -> (canonical stem, sign).
struct PolarityGuard::Lexicon {
  absl::flat_hash_map<std::string, std::pair<std::string, int>> antonyms;

  void add(std::string_view positive_canonical, std::string_view word, int sign) {
    antonyms.try_emplace(internal::stem(word), internal::stem(positive_canonical), sign);
  }

  // The polarity-bearing core of a word: antonym lists first, then the un-/dis-/non- prefixes (recursively,
  // so "unblock" = not "block" = "accept").
  std::pair<std::string, int> canonical(const std::string& lower, const std::string& stemmed, int depth = 0) const {
    if (auto it = antonyms.find(stemmed); it != antonyms.end()) return it->second;
    if (depth < 2 && !is_prefix_false_friend(lower)) {
      for (std::string_view prefix : {"non-", "non", "dis", "un"}) {
        if (lower.size() >= prefix.size() + 3 && std::string_view(lower).substr(0, prefix.size()) == prefix) {
          std::string rest = lower.substr(prefix.size());
          auto [canon, sign] = canonical(rest, internal::stem(rest), depth + 1);
          return {canon, -sign};
        }
      }
    }
    return {stemmed, 1};
  }
};

PolarityGuard::PolarityGuard() : PolarityGuard(std::vector<std::pair<std::string, std::string>>{}) {}

PolarityGuard::PolarityGuard(std::vector<std::pair<std::string, std::string>> extra_antonyms) {
  auto lex = std::make_shared<Lexicon>();
  for (const auto& [pos, neg] : antonym_groups()) {
    for (auto w : pos) lex->add(pos[0], w, +1);
    for (auto w : neg) lex->add(pos[0], w, -1);
  }
  for (const auto& [pos, neg] : extra_antonyms) {
    lex->add(pos, pos, +1);
    lex->add(pos, neg, -1);
  }
  lexicon_ = std::move(lex);
}

PolarityGuard::~PolarityGuard() = default;

namespace {

// canonical word -> bit 1: asserted, bit 2: negated.
absl::flat_hash_map<std::string, int> polarity_signs(const QuestionText& text, const PolarityGuard::Lexicon& lex) {
  absl::flat_hash_map<std::string, int> signs;
  int scope = 0;  // content words the last negator still covers
  for (const Word& w : text.words) {
    if (w.clause_start) scope = 0;
    if (is_scope_break(w.lower)) {
      scope = 0;
      continue;
    }
    if (is_negator(w.lower)) {
      scope = 3;
      continue;
    }
    auto [canon, sign] = lex.canonical(w.lower, w.stem);
    bool polar = canon != w.stem || sign < 0;  // an antonym-list or prefixed word
    if (!polar && (is_stopword(w.lower) || w.lower.size() < 2)) continue;
    if (scope > 0) {
      sign = -sign;
      --scope;
    }
    signs[canon] |= sign > 0 ? 1 : 2;
  }
  return signs;
}

}  // namespace

bool PolarityGuard::accept(std::string_view query, std::string_view cached) const {
  const auto q = internal::analyzed(query), c = internal::analyzed(cached);
  auto sq = polarity_signs(*q, *lexicon_), sc = polarity_signs(*c, *lexicon_);
  for (const auto& [canon, bits] : sq) {
    auto it = sc.find(canon);
    if (it != sc.end() && (it->second & bits) == 0) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------- numbers

namespace {

int number_word_value(std::string_view w) {
  static const absl::flat_hash_map<std::string_view, int> kWords = {
      {"zero", 0},      {"one", 1},         {"two", 2},           {"three", 3},
      {"four", 4},      {"five", 5},        {"six", 6},           {"seven", 7},
      {"eight", 8},     {"nine", 9},        {"ten", 10},          {"eleven", 11},
      {"twelve", 12},   {"thirteen", 13},   {"fourteen", 14},     {"fifteen", 15},
      {"sixteen", 16},  {"seventeen", 17},  {"eighteen", 18},     {"nineteen", 19},
      {"twenty", 20},   {"thirty", 30},     {"forty", 40},        {"fifty", 50},
      {"sixty", 60},    {"seventy", 70},    {"eighty", 80},       {"ninety", 90},
      {"hundred", 100}, {"thousand", 1000}, {"million", 1000000}, {"billion", 1000000000},
      {"dozen", 12}};
  auto it = kWords.find(w);
  return it == kWords.end() ? -1 : it->second;
}

// "1,500.00" -> "1500", "0.50" -> "0.5", "007" -> "7"; times and dates ("3:30", "3/4") are kept as written.
std::string canonical_number(std::string_view digits) {
  if (digits.find_first_of(":/") != std::string_view::npos) return std::string(digits);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    char ch = digits[i];
    if (ch == ',') {
      // A thousands separator is followed by exactly three digits; otherwise it is a decimal comma.
      size_t j = i + 1;
      while (j < digits.size() && digits[j] >= '0' && digits[j] <= '9') ++j;
      if (j - (i + 1) != 3) s.push_back('.');
      continue;
    }
    s.push_back(ch);
  }
  size_t dot = s.find('.');
  std::string ip = s.substr(0, dot), fp = dot == std::string::npos ? "" : s.substr(dot + 1);
  if (fp.find('.') != std::string::npos) return s;  // "1.2.3": a version, compare as written
  ip.erase(0, std::min(ip.find_first_not_of('0'), ip.size()));
  if (ip.empty()) ip.push_back('0');
  while (!fp.empty() && fp.back() == '0') fp.pop_back();
  if (!fp.empty()) {
    ip.push_back('.');
    ip.append(fp);
  }
  return ip;
}

bool is_pronoun_one(const QuestionText& text, size_t i) {
  const Word& w = text.words[i];
  if (i > 0 && !w.clause_start &&
      in(text.words[i - 1].lower,
         {"a",    "an",      "the",   "this",    "that",   "which",    "each",      "every",  "any",
          "no",   "another", "new",   "old",     "same",   "other",    "only",      "right",  "wrong",
          "last", "next",    "first", "good",    "better", "best",     "different", "single", "little",
          "big",  "current", "such",  "someone", "anyone", "everyone", "no-one"}))
    return true;
  if (i + 1 >= text.words.size() || text.words[i + 1].clause_start) return true;
  return in(text.words[i + 1].lower, {"of", "another", "or", "and"});
}

absl::flat_hash_set<std::string> numbers_of(const QuestionText& text) {
  absl::flat_hash_set<std::string> out;
  for (size_t i = 0; i < text.words.size(); ++i) {
    const Word& w = text.words[i];
    if (w.has_digit) {
      if (!w.has_alpha) {
        out.insert(canonical_number(w.lower));
        continue;
      }
      // Ordinals written with digits; other letter+digit words are codes.
      size_t n = w.lower.size();
      if (n >= 3 && std::all_of(w.lower.begin(), w.lower.end() - 2, [](char ch) { return ch >= '0' && ch <= '9'; }) &&
          in(std::string_view(w.lower).substr(n - 2), {"st", "nd", "rd", "th"}))
        out.insert(canonical_number(std::string_view(w.lower).substr(0, n - 2)));
      continue;
    }
    if (w.lower.find('-') != std::string::npos) {  // "twenty-five"
      int total = 0;
      bool all = true;
      size_t start = 0;
      while (start <= w.lower.size()) {
        size_t end = w.lower.find('-', start);
        if (end == std::string::npos) end = w.lower.size();
        int v = number_word_value(std::string_view(w.lower).substr(start, end - start));
        if (v < 0 || v >= 100) {
          all = false;
          break;
        }
        total += v;
        start = end + 1;
      }
      if (all) out.insert(std::to_string(total));
      continue;
    }
    int v = number_word_value(w.lower);
    if (v < 0) continue;
    if (v == 1 && is_pronoun_one(text, i)) continue;
    out.insert(std::to_string(v));
  }
  return out;
}

}  // namespace

bool NumberGuard::accept(std::string_view query, std::string_view cached) const {
  return numbers_of(*internal::analyzed(query)) == numbers_of(*internal::analyzed(cached));
}

// ---------------------------------------------------------------------------------------------- entities

namespace {

bool is_determiner(std::string_view w) {
  return in(w, {"the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "this", "that", "some"});
}

struct Entities {
  std::vector<std::string> strong, weak;                                // stems
  absl::flat_hash_set<std::string> stems;                               // every word, for matching
  absl::flat_hash_set<std::pair<std::string, std::string>> directions;  // (x, y) from "x to y"
};

Entities entities_of(const QuestionText& text, const std::function<bool(std::string_view)>& known_word) {
  Entities e;
  // Capitalisation means nothing in a question that is mostly capitalised (title case, all caps).
  size_t non_initial = 0, capitalised = 0;
  for (const Word& w : text.words) {
    if (w.sentence_start || !w.has_alpha || w.lower == "i") continue;
    ++non_initial;
    capitalised += w.upper_first ? 1 : 0;
  }
  bool case_informative = !(non_initial >= 3 && capitalised * 2 > non_initial);

  for (size_t i = 0; i < text.words.size(); ++i) {
    const Word& w = text.words[i];
    e.stems.insert(w.stem);
    if (!w.has_alpha || w.clitic) continue;
    bool strong = false;
    if (w.has_digit) {
      strong = true;  // a code: "S24", "2FA", "10GB"
    } else if (case_informative && w.lower != "i") {
      if (w.upper_inner)
        strong = true;  // "iPhone", "PayPal", "ATM" anywhere
      else if (w.upper_first && !w.sentence_start)
        strong = true;  // "Canada"
    }
    if (strong) {
      e.strong.push_back(w.stem);
      continue;
    }
    if (known_word && !is_stopword(w.lower)) {
      bool known = true;
      size_t start = 0;
      while (start <= w.lower.size() && known) {
        size_t end = w.lower.find('-', start);
        if (end == std::string::npos) end = w.lower.size();
        if (end > start) known = known_word(std::string_view(w.lower).substr(start, end - start));
        start = end + 1;
      }
      if (!known) e.weak.push_back(w.stem);
    }
  }

  // Directions: x = the word before "to"/"into", y = the word after it (past determiners), both content words.
  for (size_t i = 1; i + 1 < text.words.size(); ++i) {
    const Word& t = text.words[i];
    if ((t.lower != "to" && t.lower != "into") || t.clause_start) continue;
    const Word& x = text.words[i - 1];
    size_t j = i + 1;
    while (j < text.words.size() && !text.words[j].clause_start && is_determiner(text.words[j].lower)) ++j;
    if (j >= text.words.size() || text.words[j].clause_start) continue;
    const Word& y = text.words[j];
    if (is_stopword(x.lower) || is_stopword(y.lower) || x.stem == y.stem) continue;
    e.directions.emplace(x.stem, y.stem);
  }
  return e;
}

bool has_unmatched(const std::vector<std::string>& mine, const Entities& other) {
  for (const std::string& s : mine)
    if (!other.stems.contains(s)) return true;
  return false;
}

}  // namespace

EntityGuard::EntityGuard(std::function<bool(std::string_view)> known_word) : known_word_(std::move(known_word)) {}

bool EntityGuard::accept(std::string_view query, std::string_view cached) const {
  Entities q = entities_of(*internal::analyzed(query), known_word_);
  Entities c = entities_of(*internal::analyzed(cached), known_word_);
  // (a) the cached answer is about something the query does not name.
  if (has_unmatched(c.strong, q)) return false;
  // (b) each names something the other does not: a substitution.
  bool q_unmatched = has_unmatched(q.strong, c) || has_unmatched(q.weak, c);
  bool c_unmatched = has_unmatched(c.weak, q);
  if (q_unmatched && c_unmatched) return false;
  // (c) opposite directions.
  for (const auto& [x, y] : q.directions)
    if (c.directions.contains({y, x}) && !c.directions.contains({x, y}) && !q.directions.contains({y, x})) return false;
  return true;
}

std::vector<std::shared_ptr<const SemanticGuard>> default_semantic_guards() {
  return {std::make_shared<PolarityGuard>(), std::make_shared<NumberGuard>(), std::make_shared<EntityGuard>()};
}

}  // namespace brisk::cache
