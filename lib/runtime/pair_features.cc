// The features PairVerifier scores a question pair by (brisk/runtime/pair_verifier.h): text features of the two
// questions, then the SBERT pair features |u - v| and u * v of their embeddings.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/cache/semantic_guards.h"
#include "brisk/runtime/pair_verifier.h"

namespace brisk {
namespace {

// A word of a question: its lower-cased form, and whether it was written with a capital past the first word or
// mixes letters and digits (a name, a product code).
struct Word {
  std::string lower;
  bool entity_like = false;
};

// Runs of letters, digits and non-ASCII bytes (one UTF-8 word stays one word); "'" inside a word is dropped
// ("don't" -> "dont"), "." "," between digits kept ("1,500.00" -> "1500.00").
std::vector<Word> words_of(std::string_view text) {
  std::vector<Word> out;
  std::string cur;
  bool upper = false, digit = false, alpha = false;
  auto flush = [&] {
    if (cur.empty()) return;
    Word w;
    w.lower = cur;
    w.entity_like = (upper && !out.empty()) || (digit && alpha);
    out.push_back(std::move(w));
    cur.clear();
    upper = digit = alpha = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const bool next_digit = i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (std::isalnum(c) || c >= 0x80) {
      if (std::isupper(c)) upper = true;
      if (std::isdigit(c)) digit = true;
      if (std::isalpha(c)) alpha = true;
      cur.push_back(static_cast<char>(std::tolower(c)));
    } else if (c == '\'' && !cur.empty() && i + 1 < text.size() &&
               std::isalpha(static_cast<unsigned char>(text[i + 1]))) {
      continue;
    } else if ((c == '.' || c == ',') && digit && !alpha && next_digit) {
      if (c == '.') cur.push_back('.');
    } else {
      flush();
    }
  }
  flush();
  return out;
}

// A number the word stands for, as text ("two" -> "2", "15:00" stays split as "15" "00"), or empty.
std::string number_of(const std::string& w) {
  static const char* const kWords[] = {"zero",     "one",      "two",      "three",   "four",    "five",
                                       "six",      "seven",    "eight",    "nine",    "ten",     "eleven",
                                       "twelve",   "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                                       "eighteen", "nineteen", "twenty"};
  for (size_t i = 0; i < std::size(kWords); ++i) {
    if (w == kWords[i]) return std::to_string(i);
  }
  if (!w.empty() &&
      std::all_of(w.begin(), w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; })) {
    std::string n = w;
    if (n.find('.') != std::string::npos) {  // 2.50 = 2.5, 3.0 = 3
      while (!n.empty() && n.back() == '0') n.pop_back();
      if (!n.empty() && n.back() == '.') n.pop_back();
    }
    const size_t first = n.find_first_not_of('0');
    return first == std::string::npos ? "0" : n.substr(first);
  }
  return {};
}

// Negation words; "n't" forms are the words_of() spelling ("don't" -> "dont").
bool is_negator(const std::string& w) {
  static const std::set<std::string> kNegators = {
      "not",     "no",      "never",  "cannot", "cant",    "dont",     "doesnt",  "didnt", "isnt",
      "arent",   "wasnt",   "werent", "wont",   "wouldnt", "shouldnt", "couldnt", "hasnt", "havent",
      "hadnt",   "without", "unable", "none",   "nothing", "nobody",   "neither", "nor",   "stop",
      "stopped", "longer",  "aint",   "mustnt", "neednt",  "mightnt",  "shant"};
  return kNegators.count(w) > 0;
}

// Function words: what a paraphrase changes freely. The content words are the rest.
bool is_function_word(const std::string& w) {
  static const std::set<std::string> kWords = {
      "a",    "an",    "the",  "i",    "my",    "me",    "you",   "your",  "we",     "our",    "is",  "are",
      "am",   "be",    "do",   "does", "did",   "can",   "could", "would", "should", "will",   "how", "what",
      "when", "where", "why",  "who",  "which", "to",    "of",    "in",    "on",     "for",    "at",  "by",
      "with", "from",  "it",   "this", "that",  "there", "and",   "or",    "if",     "please", "get", "have",
      "has",  "any",   "some", "im",   "its",   "was",   "been",  "just",  "about",  "so",     "much"};
  return kWords.count(w) > 0;
}

struct TextSummary {
  std::set<std::string> words, content, numbers, entities;
  int negators = 0;
  size_t length = 0;
};

TextSummary summarize(std::string_view text) {
  TextSummary s;
  const std::vector<Word> ws = words_of(text);
  s.length = ws.size();
  for (const Word& w : ws) {
    s.words.insert(w.lower);
    if (!is_function_word(w.lower)) s.content.insert(w.lower);
    if (std::string n = number_of(w.lower); !n.empty()) s.numbers.insert(std::move(n));
    if (w.entity_like) s.entities.insert(w.lower);
    if (is_negator(w.lower)) ++s.negators;
  }
  return s;
}

template <typename T>
size_t intersection_size(const std::set<T>& a, const std::set<T>& b) {
  size_t n = 0;
  for (const T& x : a) n += b.count(x);
  return n;
}

}  // namespace

const std::vector<std::string>& pair_text_feature_names() {
  static const std::vector<std::string> kNames = {
      "cosine",          "word_jaccard",          "incoming_only_words", "cached_only_words",
      "numbers_differ",  "numbers_shared",        "negation_differs",    "entity_difference",
      "length_ratio",    "polarity_guard",        "number_guard",        "entity_guard",
      "content_jaccard", "incoming_only_content", "cached_only_content", "one_word_substituted"};
  return kNames;
}

std::vector<float> pair_features(const cache::SemanticPair& pair) {
  const TextSummary in = summarize(pair.incoming), ca = summarize(pair.cached);
  const size_t common = intersection_size(in.words, ca.words);
  const size_t all = in.words.size() + ca.words.size() - common;
  const auto frac = [](size_t part, size_t whole) { return whole == 0 ? 0.0f : float(part) / float(whole); };
  const size_t entity_common = intersection_size(in.entities, ca.entities);
  const size_t entity_diff = in.entities.size() + ca.entities.size() - 2 * entity_common;
  static const std::vector<std::shared_ptr<const cache::SemanticGuard>> guards = cache::default_semantic_guards();

  std::vector<float> f;
  const size_t d = pair.incoming_embedding.size();
  f.reserve(pair_text_feature_names().size() + 2 * d);
  f.push_back(pair.cosine);
  f.push_back(frac(common, all));
  f.push_back(frac(in.words.size() - common, in.words.size()));
  f.push_back(frac(ca.words.size() - common, ca.words.size()));
  f.push_back(in.numbers != ca.numbers ? 1.0f : 0.0f);
  f.push_back(!in.numbers.empty() && in.numbers == ca.numbers ? 1.0f : 0.0f);
  f.push_back((in.negators % 2) != (ca.negators % 2) ? 1.0f : 0.0f);
  f.push_back(std::min(3.0f, float(entity_diff)) / 3.0f);
  f.push_back(in.length == 0 || ca.length == 0
                  ? 0.0f
                  : float(std::min(in.length, ca.length)) / float(std::max(in.length, ca.length)));
  for (const auto& g : guards) f.push_back(g->accept(pair.incoming, pair.cached) ? 0.0f : 1.0f);
  // Content words: a near-copy with one word swapped (an entity, an antonym, a number) is the typical wrong hit; a
  // paraphrase changes several.
  const size_t content_common = intersection_size(in.content, ca.content);
  const size_t in_only = in.content.size() - content_common, ca_only = ca.content.size() - content_common;
  f.push_back(frac(content_common, in.content.size() + ca.content.size() - content_common));
  f.push_back(std::min<float>(5.0f, float(in_only)) / 5.0f);
  f.push_back(std::min<float>(5.0f, float(ca_only)) / 5.0f);
  f.push_back(in_only == 1 && ca_only == 1 ? 1.0f : 0.0f);
  for (size_t i = 0; i < d && i < pair.cached_embedding.size(); ++i) {
    f.push_back(std::fabs(pair.incoming_embedding[i] - pair.cached_embedding[i]));
  }
  for (size_t i = 0; i < d && i < pair.cached_embedding.size(); ++i) {
    f.push_back(pair.incoming_embedding[i] * pair.cached_embedding[i]);
  }
  return f;
}

}  // namespace brisk
