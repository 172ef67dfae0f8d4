#!/usr/bin/env python3
"""Writes tests/data/pair_tokens_golden.json: Hugging Face sentence-pair encodings ([CLS] a [SEP] b [SEP]) with
truncation="longest_first", the reference for WordPieceTokenizer::encode_pair (tests/model/tokenizer_pair_test.cc).

"pairs": one item per pair in PAIRS (queries and passages of many lengths, accents, CJK, emoji, literal special
tokens, empty texts), with one encoding per max_length in MAX_LENGTHS:
  {"first", "second", "encodings": [{"max_length", "ids", "token_type_ids"}, ...]}
taken from the `tokenizers` Tokenizer loaded straight from tokenizer.json (padding off, truncation set to
max_length / longest_first / stride 0 / right). transformers' AutoTokenizer (the fast BertTokenizerFast) is run
on the same pair with truncation="longest_first", max_length=...; the script fails unless both agree. It is
called with one-element lists, fast([first], [second], ...), as sentence-transformers' CrossEncoder does: the
unbatched fast(first, "") drops an empty second text (a Python `if text_pair` test) and encodes a single text,
whereas `tokenizers` (and brisk's encode_pair) still give [CLS] first [SEP] [SEP].
It also fails unless the items cover every branch of the longest_first rule (see BRANCHES), judged from the
untruncated lengths that `tokenizers` reports.
Recorded too: "versions" (python, tokenizers, transformers) and "model" (the directory's name). Nothing in the file
is computed by brisk.

Usage (in the reference venv that scripts/setup creates):
    ~/.cache/brisk/pyref/bin/python tests/data/make_pair_golden.py [MODEL_DIR] [--out PATH]
MODEL_DIR defaults to $BRISK_MODEL_DIR, else ~/.cache/brisk/models/all-MiniLM-L6-v2.
"""
import argparse
import json
import os
import platform
import sys

MAX_LENGTHS = [3, 4, 5, 8, 9, 16, 17, 32, 33, 128, 512]

_BANK = (
    "Dear customer support team, my online banking account was locked after I entered the wrong password three "
    "times, and the automated phone line keeps telling me to visit a branch. The nearest branch is forty minutes "
    "away and closed on weekends. Could you explain which documents I need, whether I can verify my identity in "
    "the mobile app, and how long the unlock usually takes? "
)
_RETURNS = (
    "Items bought online can be returned within 30 days of delivery. Pack the item in its original packaging, "
    "print the prepaid label from your account page and drop the parcel at any post office. Refunds go back to "
    "the original payment method within five to seven business days after the warehouse receives the item. "
)
_CAFE = (
    "Le café de la gare ouvre à 6 h 30 en semaine ; le dimanche, il n'ouvre qu'à 9 h. Les crêpes, les croissants "
    "et le thé à la menthe sont servis toute la journée. Über die Straße gibt es eine Bäckerei mit Brötchen. "
)
_CJK = "东京是日本的首都，人口超过一千三百万。北京是中国的首都，有三千多年的历史。ソウルは韓国の首都です。"
_EMOJI = "Great service 👍🏽 but the delivery was late 😞. Package 📦 arrived on Tuesday 🗓️ instead of Monday!! "

PAIRS = [
    # Short query, short passage: usually fits.
    ("How do I reset my password?", "Open Settings, tap Security, then choose Reset password."),
    ("what is the capital of france", "Paris is the capital and most populous city of France."),
    ("refund policy", _RETURNS),
    ("Can I return an item without the receipt?", _RETURNS * 2),
    ("How long does an unlock take?", _BANK),
    ("How long does an unlock take?", _BANK * 4),
    ("bank account locked after three wrong passwords, branch closed on weekends, what to do", _BANK * 3),
    (_BANK, "Why is my account locked?"),
    (_BANK * 4, "Why is my account locked?"),
    (_RETURNS, _BANK),
    (_BANK, _RETURNS),
    (_BANK * 2, _RETURNS * 2),
    (_RETURNS * 3, _BANK * 3),
    (_BANK * 5, _BANK * 5),  # a tie that stays a tie at every budget
    (_RETURNS, _RETURNS),
    ("Where is the café?", _CAFE),
    ("Où est la gare ?", _CAFE * 2),
    (_CAFE, "Öffnungszeiten der Bäckerei"),
    ("Ça coûte combien, le crème brûlée ?", "Naïve résumé of the façade: coöperate, señor, Zürich, São Paulo."),
    ("首都是哪里？", _CJK),
    (_CJK, "What is the capital of Japan?"),
    (_CJK * 3, _CJK * 2),
    ("日本の首都は？", "東京です。"),
    ("Was the delivery late? 😞", _EMOJI),
    (_EMOJI * 2, "👍🏽👍🏽👍🏽 thanks"),
    (_EMOJI, _CAFE),
    ("", "An empty query still gets its own segment."),
    ("An empty passage still gets its [SEP].", ""),
    ("", ""),
    ("   \t\n ", "whitespace-only first text"),
    ("[MASK] is a literal special token", "so is [SEP] in the middle of the second text [CLS]"),
    ("unbelievably", "unbelievably"),
    ("antidisestablishmentarianism supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis"),
    ("Is a 5-year fixed mortgage at 4.25% a good deal?", "Rates: 1y 5.10%, 2y 4.80%, 5y 4.25%, 10y 4.60% (APR)."),
    ("wifi password?", "The guest network is 'Hotel-Guest' and the password is printed on your key card."),
    ("What time is check-out?", "Check-out is at 11:00; late check-out until 14:00 costs €25."),
    ("a b c d e f g h", "i j k l m n o p"),  # 8 and 8 tokens
    ("a b c d e f g h i", "j k l m n o p q"),  # 9 and 8
    ("a b c d e f g", "h i j k l m n o p"),  # 7 and 9
    ("a b c", "d e f g h i j k l m n o p q r s t u v w x y z"),
    ("a b c d e f g h i j k l m n o p q r s t u v w x y z", "a b c"),
    ("one two three four five six", "seven eight nine ten eleven twelve thirteen"),
    ("one two three four five six seven", "eight nine ten eleven twelve thirteen"),
    ("one two", "three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"),
    ("Tell me about returns and refunds for damaged items bought in the sale", _RETURNS),
    ("Do you ship to Canada and how much does it cost?", "We ship to Canada, the US and Mexico; shipping is $9."),
    ("How do I dispute a card payment I don't recognise?", _BANK + _RETURNS),
    (_BANK + _RETURNS, _CAFE + _EMOJI),
    (_CAFE + _CJK, _EMOJI + _BANK),
    ("Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ", "ﬁ ligature, Ⅻ numeral, ½ fraction, ℌ letter"),
    ("İstanbul'da hava nasıl?", "İstanbul bugün güneşli, ŞİMDİ 24°C."),
    ("Привет, как дела?", "Всё хорошо, спасибо! А у тебя?"),
    ("مرحبا كيف حالك", "שלום, מה שלומך?"),
    ("x" * 150, "a word over 100 characters is one [UNK]"),
    ("tokens " * 300, "words " * 300),
    ("tokens " * 300, "words " * 301),
    ("tokens " * 301, "words " * 300),
    ("short", "words " * 700),
    ("words " * 700, "short"),
    ("medium length query with about twelve tokens in it here", "words " * 40),
]

# Branches of longest_first with n1 <= n2 the shorter length, budget = max_length - 3 (tie: n1 is the first).
BRANCHES = [
    "fits",
    "only_first_truncated",
    "only_second_truncated",
    "both_truncated_odd_budget_first_longer",
    "both_truncated_odd_budget_second_longer",
    "both_truncated_odd_budget_tie",
    "both_truncated_even_budget_first_longer",
    "both_truncated_even_budget_second_longer",
    "both_truncated_even_budget_tie",
    "shorter_over_budget",
    "shorter_within_budget_over_half",
    "zero_budget",
]


def branches_of(n_first, n_second, budget):
    out = []
    if n_first + n_second <= budget:
        return ["fits"]
    if budget == 0:
        out.append("zero_budget")
    n1 = min(n_first, n_second)
    if n1 > budget:
        out.append("shorter_over_budget")
    if 2 * n1 > budget:
        if n1 <= budget:
            out.append("shorter_within_budget_over_half")
        parity = "odd" if budget % 2 else "even"
        who = "tie" if n_first == n_second else ("first_longer" if n_first > n_second else "second_longer")
        out.append(f"both_truncated_{parity}_budget_{who}")
    else:
        out.append("only_first_truncated" if n_first > n_second else "only_second_truncated")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_dir = os.environ.get("BRISK_MODEL_DIR",
                                 os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2"))
    parser.add_argument("model_dir", nargs="?", default=default_dir)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "pair_tokens_golden.json"))
    args = parser.parse_args()

    import tokenizers
    import transformers

    raw = tokenizers.Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    raw.no_padding()
    fast = transformers.AutoTokenizer.from_pretrained(args.model_dir, use_fast=True)
    if not fast.is_fast:
        sys.exit("AutoTokenizer did not give a fast tokenizer")

    items, seen, count = [], set(), 0
    for first, second in PAIRS:
        encodings = []
        raw.no_truncation()
        n_first = len(raw.encode(first, add_special_tokens=False).ids)
        n_second = len(raw.encode(second, add_special_tokens=False).ids)
        for max_length in MAX_LENGTHS:
            raw.enable_truncation(max_length=max_length, stride=0, strategy="longest_first", direction="right")
            enc = raw.encode(first, second)
            hf = fast([first], [second], truncation="longest_first", max_length=max_length)
            if hf["input_ids"][0] != enc.ids or hf["token_type_ids"][0] != enc.type_ids:
                sys.exit(f"tokenizers and transformers disagree on {first[:40]!r} / {second[:40]!r} at {max_length}")
            if len(enc.ids) > max_length:
                sys.exit(f"{len(enc.ids)} ids over max_length {max_length}")
            seen.update(branches_of(n_first, n_second, max_length - 3))
            encodings.append({"max_length": max_length, "ids": enc.ids, "token_type_ids": enc.type_ids})
            count += 1
        items.append({"first": first, "second": second, "encodings": encodings})
    missing = [b for b in BRANCHES if b not in seen]
    if missing:
        sys.exit(f"the pairs do not cover the longest_first branches {missing}")

    out = {
        "versions": {"python": platform.python_version(), "tokenizers": tokenizers.__version__,
                     "transformers": transformers.__version__},
        "model": os.path.basename(os.path.normpath(args.model_dir)),
        "truncation": "longest_first",
        "pairs": items,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {count} encodings ({len(PAIRS)} pairs x {len(MAX_LENGTHS)} max_lengths) to {args.out}; "
          f"branches covered: {sorted(seen)}", file=sys.stderr)


if __name__ == "__main__":
    main()
