// False-hit guards for the semantic cache: cheap lexical checks that veto a nearest-question hit whose
// embedding is close but whose meaning is not. Sentence embeddings place "How do I enable notifications?" and
// "How do I disable notifications?" (or "... 500 dollars" / "... 5000 dollars", "ship to Canada" / "ship to
// Australia") within a cosine of 0.9 of each other; a cache that trusts cosine alone returns the wrong answer.
// A guard sees the incoming question and the cached one and says whether the cached answer may be reused.
//
//   auto guards = brisk::cache::default_semantic_guards();           // polarity, number, entity
//   BRISK_ASSIGN_OR_RETURN(std::string q, brisk::cache::normalize_question(raw_text));
//   for (const auto& g : guards)
//     if (!g->accept(q, cached_question)) { /* a miss: rejected by g->name() */ }
//
//   // The entity guard also flags words the embedding model does not know (rare names, product codes):
//   auto tok = brisk::WordPieceTokenizer::from_model_dir(dir);
//   auto entity = std::make_shared<brisk::cache::EntityGuard>(
//       [tok = *tok](std::string_view w) { return tok.token_to_id(w) != tok.unk_id(); });
//
// Text. Guards read questions as normalize_question() leaves them: valid UTF-8, NFC, Unicode whitespace runs
// collapsed to one ASCII space, control characters dropped, typographic apostrophes (U+2019, U+2018, U+02BC)
// mapped to "'", case KEPT (the entity guard needs it). Inside a guard, words are lower-cased per code point
// (Unicode simple case mapping, utf8proc), so "ÉTÉ" and "été" compare equal; bytes that are not valid UTF-8
// act as separators, so a guard never fails on raw input. Words are runs of letters, marks and digits;
// hyphens join words ("two-factor", "non-refundable" are one word), "." "," ":" "/" join digits ("1,500.00");
// "n't" and "'s"-style clitics split off ("don't" -> "do" "n't"). Words compare by a light suffix stem
// ("accepted" = "accept", "closes" = "close", "ATMs" = "ATM", "cancelling" = "cancel").
//
// Every rule compares the two questions; a word that only one question uses never causes a polarity or
// entity rejection on its own (paraphrases use different words), except that a cached question naming a
// capitalised entity needs the incoming question to name it too (an answer about "Canada" does not answer
// "do you ship abroad?"). Numbers are stricter: any difference rejects. The guards trade recall for
// precision: a miss costs one model call, a false hit returns a wrong answer.
//
// Thread safety: guards are immutable after construction; accept() may run concurrently from any number of
// threads. A custom guard must be safe to call concurrently too (the cache calls it under a shared lock).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk::cache {

// The text guards and the cache work on (see "Text" above). InvalidArgument, naming the byte offset, for
// invalid UTF-8.
BRISK_API StatusOr<std::string> normalize_question(std::string_view text);

// The identity of a normalised question in the cache: case-folded, trailing ". ? ! space" removed. Two
// questions with the same key are the same question ("Reset my PIN?" and "reset my pin").
BRISK_API std::string question_key(std::string_view normalized);

class BRISK_API SemanticGuard {
 public:
  virtual ~SemanticGuard();
  // A short stable name, used in miss reasons and per-guard statistics ("polarity", "number", "entity").
  virtual std::string_view name() const = 0;
  // True when an answer cached for `cached` may be returned for `query` (both normalised).
  virtual bool accept(std::string_view query, std::string_view cached) const = 0;
};

// Polarity: rejects when one question asserts what the other negates or reverses.
//  * Negation: "not", "no", "never", "n't" (and "dont", "cant", ... typed without the apostrophe), "cannot",
//    "without", "unable", "nor", "neither", "none", "nothing", "nobody", "non"/"non-". A negator flips the next three
//    content words up to a clause boundary (, ; : . ? ! and conjunctions such as "but", "and", "how").
//  * Antonyms (word lists, all inflections via the stem): enable/disable, activate/deactivate, open/close,
//    lock/unlock, accept approve allow permit grant / reject decline deny refuse block forbid prohibit ban,
//    add/remove delete, increase raise high higher/decrease reduce low lower, maximum/minimum, upgrade/downgrade,
//    start/stop, succeed success/fail failure, include/exclude, on/off, before/after, early/late, buy/sell,
//    deposit/withdraw, upload/download, import/export, send/receive, credit/debit, valid/invalid,
//    possible/impossible, correct/incorrect, complete/incomplete, eligible/ineligible, legal/illegal,
//    true/false, positive/negative, public/private, inbound/outbound, incoming/outgoing, and the extra pairs
//    given to the constructor.
//  * Prefixes: "un", "dis", "non" (with or without a hyphen) negate the rest of the word when the rest is at
//    least three letters and the word is not a known false friend ("display", "discount", "under", ...).
// Each content word maps to (canonical word, sign); the guard rejects when some canonical word occurs in
// both questions with disjoint signs ("accepted" vs "not accepted", "open" vs "closed", "subscribe" vs
// "unsubscribe", "turn on" vs "turn off"). "not a bot" in one question and no "bot" in the other is fine.
class BRISK_API PolarityGuard final : public SemanticGuard {
 public:
  PolarityGuard();
  // Extra (positive, negative) word pairs on top of the built-in lists.
  explicit PolarityGuard(std::vector<std::pair<std::string, std::string>> extra_antonyms);
  ~PolarityGuard() override;
  std::string_view name() const override { return "polarity"; }
  bool accept(std::string_view query, std::string_view cached) const override;

  struct Lexicon;  // defined in lib/cache/semantic_guards.cc
 private:
  std::shared_ptr<const Lexicon> lexicon_;
};

// Numbers: rejects when the two questions do not mention the same set of numbers. Numbers are digit runs
// (with "." "," ":" "/" between digits, a currency sign before and "%" after: "$1,500.00" = "1500"), ordinals
// written with digits ("3rd" = "3"), and number words zero..twenty, thirty..ninety, hundred, thousand,
// million, billion, dozen, hyphenated tens ("twenty-five" = "25"), so "two" = "2". "one" counts unless it is
// a pronoun: after a determiner or adjective ("a new one", "which one", "no one") or before "of" or the end
// of a clause. Words mixing letters and digits ("2FA", "S24", "10GB") are codes, left to the entity guard.
// Limits: "two hundred" is {2, 100}, not 200, and "a dozen" is {12}; such paraphrases miss.
class BRISK_API NumberGuard final : public SemanticGuard {
 public:
  std::string_view name() const override { return "number"; }
  bool accept(std::string_view query, std::string_view cached) const override;
};

// Entities and direction. An entity is a word that is
//  * strong: capitalised and not sentence-initial ("Canada", "PIN"; "I" excluded), mixed-case anywhere
//    ("iPhone", "PayPal"), or a letters+digits code anywhere ("S24", "2FA"); capitalisation is ignored in a
//    question that is mostly capitalised (title case, all caps);
//  * weak: unknown to `known_word` (called with the lower-cased word; empty function: no weak entities).
// An entity is matched when the other question has a word with the same stem, whatever its case. The guard
// rejects when (a) the cached question has an unmatched strong entity, or (b) both questions have unmatched
// entities (a substitution: "London" / "Paris", "Visa" / "Mastercard"), or (c) the questions order two words
// in opposite directions around "to"/"into" ("from savings to checking" / "from checking to savings",
// "dollars to euros" / "euros to dollars").
class BRISK_API EntityGuard final : public SemanticGuard {
 public:
  explicit EntityGuard(std::function<bool(std::string_view)> known_word = {});
  std::string_view name() const override { return "entity"; }
  bool accept(std::string_view query, std::string_view cached) const override;

 private:
  std::function<bool(std::string_view)> known_word_;
};

// PolarityGuard, NumberGuard and EntityGuard (capitalisation only), in that order.
BRISK_API std::vector<std::shared_ptr<const SemanticGuard>> default_semantic_guards();

}  // namespace brisk::cache
