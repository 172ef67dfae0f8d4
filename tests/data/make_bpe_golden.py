#!/usr/bin/env python3
"""Golden data for brisk's byte-level BPE tokenizer (the Qwen2 / Qwen3-Embedding tokenizer.json pipeline), from
Hugging Face `tokenizers`.

    python3 -m venv ~/.cache/brisk/tokref
    ~/.cache/brisk/tokref/bin/pip install tokenizers==0.19.1 transformers==4.44.2
    ~/.cache/brisk/tokref/bin/python tests/data/make_bpe_golden.py

Steps:
  1. Builds a tokenizers.Tokenizer set up as transformers' Qwen2Converter (convert_slow_tokenizer.py, 4.44.2) and
     Qwen2/Qwen3's tokenizer.json have it:
       normalizer     NFC
       pre_tokenizer  Sequence[Split(Regex(QWEN_PATTERN), behavior=Isolated, invert=false),
                               ByteLevel(add_prefix_space=false, trim_offsets=false, use_regex=false)]
                      (0.19's Python ByteLevel ignores trim_offsets, so that flag is set through the JSON)
       model          BPE(unk_token=None, fuse_unk=False, byte_fallback=False), no dropout, no
                      continuing_subword_prefix / end_of_word_suffix (null; Qwen2's own files have "" there, which
                      is the same behaviour)
       decoder        ByteLevel() (its flags serialise as true; the ByteLevel decoder ignores them)
     and trains it with BpeTrainer(vocab_size=1200, min_frequency=2, initial_alphabet=ByteLevel.alphabet(),
     special_tokens=[<|endoftext|>, <|im_start|>, <|im_end|>]) on the FIRST 400 lines of multilingual_texts.txt
     plus every line of benchmarks/data/calibration_texts.txt (one training sequence per line). The other 205
     lines hold words and characters the model never saw (rare CJK, other scripts, math letters, newer emoji),
     so they fall apart into byte-level pieces. Training is deterministic (ties between pair counts are broken
     by the pair itself); the script is run twice and diffed to check.
     Unlike real Qwen2 checkpoints, the three specials come from the trainer, so they are ALSO in the model's vocab,
     at ids 0, 1, 2 (Qwen2 keeps them only in added_tokens, after the BPE vocab). The 256 byte symbols follow.
  2. Writes tiny_qwen_tokenizer/ (tok.save(path, pretty=False)):
       tokenizer.json          post_processor ByteLevel(trim_offsets=False)  (Qwen2: adds nothing)
       tokenizer_eos.json      post_processor TemplateProcessing(single "$A:0 <|endoftext|>:0",
                               pair "$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1")  (Qwen3-Embedding: the end token
                               appended for last-token pooling)
       tokenizer_config.json   {eos_token, pad_token: <|endoftext|>, model_max_length 32768, Qwen2TokenizerFast}
     tokenizers 0.19 stores the merges as a list of "left right" strings (0.20+ writes [left, right] pairs).
  3. Writes bpe_golden.json (UTF-8, ensure_ascii=False, compact):
       {"versions": {python, tokenizers, transformers}, "pattern": QWEN_PATTERN, "train_lines": 400,
        "vocab_size": ..., "special_ids": {...},
        "cases":      [{"text", "ids", "tokens"}]  tokenizer.json, every line of multilingual_texts.txt, then the
                                                   synthetic EDGE_CASES,
        "eos_cases":  [{"text", "ids"}]            tokenizer_eos.json, the first 50 lines + EOS_EDGE_CASES,
        "pairs":      [{"first", "second", "ids"}] tokenizer_eos.json, encode(first, second), 20 line pairs,
        "special_in_text": [{"text", "ids", "tokens", "eos_ids"}]  literal special tokens inside text (ids/tokens
                                                   with tokenizer.json, eos_ids with tokenizer_eos.json),
        "variants":   {"gpt2" | "llama3": {"pre_tokenizer", "cases": [{"text", "ids"}]}}  the same vocabulary and
                                                   merges under GPT-2's ByteLevel(use_regex, prefix space) and
                                                   Llama 3's Split pattern: every 4th line and EDGE_CASES,
        "pretokens":  [{"text", "normalized", "pieces"}]  for EDGE_CASES: normalized = normalizer.normalize_str(text)
                                                   (NFC), pieces = pre_tokenizer.pre_tokenize_str(normalized), i.e.
                                                   the byte-level-mapped strings the BPE model sees}
     All encodings use add_special_tokens=True. The script also checks that decode(ids) gives back the NFC text
     for every case (byte-level BPE is lossless).

The output is deterministic: running the script twice gives byte-identical files.
"""
import os

# One thread for the trainer's and encoder's rayon pools (the results do not depend on it; it removes doubt).
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402

import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEXTS = os.path.join(HERE, "multilingual_texts.txt")
CALIBRATION = os.path.join(ROOT, "benchmarks", "data", "calibration_texts.txt")
OUT_DIR = os.path.join(HERE, "tiny_qwen_tokenizer")
OUT_JSON = os.path.join(HERE, "bpe_golden.json")
TRAIN_LINES = 400
VOCAB_SIZE = 1200
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
EOS = "<|endoftext|>"

QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
# Llama 3's: Qwen2's with numbers in runs of one to three digits.
LLAMA3_PATTERN = QWEN_PATTERN.replace(r"|\p{N}|", r"|\p{N}{1,3}|")

EDGE_CASES = [
    "",
    " ",
    "  ",
    "\n",
    "\r\n",
    "a\nb",
    "a \n b",
    "  leading spaces",
    "trailing spaces   ",
    "tabs\t\tbetween",
    "multiple   spaces between words",
    "I'm you're he'll we'd they've it's",
    "I'M YOU'RE HE'LL",
    "don't can't won't",
    "numbers 1234567890 and 3.14159 and 1,000,000",
    "x=1+2*3/4-5",
    "email@example.com https://example.com/a?b=c&d=e",
    "code: def f(x):\n    return x ** 2\n",
    "emoji 👍🏽 👨\u200d👩\u200d👧 🇫🇷 1\ufe0f\u20e3",
    "中文测试，全角标点！",
    "日本語のテキストです。",
    "한국어 텍스트",
    "العربية نص",
    "עברית",
    "हिन्दी पाठ",
    "ไทย ข้อความ",
    "café naïve coöperate",
    "e\u0301 (decomposed)",
    "\u00a0no-break\u3000ideographic",
    "\u200bzero\u200dwidth",
    "ﬁ ligature ①②",
    "𝐀𝐁𝐂 math",
    "a" * 300,
    "\x00nul",
    "\x7fdel",
    "\x01\x02 controls",
    "   \n\n  \t",
    "'s at start",
    "end with '",
    "!!!???...",
    "$$$ 100% #1 @user",
    # a few more regex corners
    "\r\r\n\n x",
    "word\n\n\nnext",
    "a  \tb",
    "'S'T'RE'VE'M'LL'D",
    "it''s",
    "2024-01-01T12:00:00Z",
    "\u2028line\u2029para\u0085nel",
    "ＦＵＬＬ１２３ width",
    "Ⅻ ½ ² ³",
    # NFC with Unicode 9.0's tables (tokenizers' normalization crate): marks assigned since are starters there, so
    # they neither reorder nor block-and-compose as in Unicode 15, and newer compositions do not happen.
    "x\u08ce\u08d0 a\u07fd\u0301 \U00011935\U00011930 e\u0d3b\u0301 o\u0301\u1dfa\u0316",
    "\u09fe\u0c3c\u0eba\u1ac0\ua82c\U00010f46 \U0001e4ee\u0301 \u1dfa e\u0301\u0323",
]

EOS_EDGE_CASES = ["", " ", "\n", "hello", "a" * 300, "emoji 👍🏽", "  leading spaces", "trailing spaces   ",
                  "<|endoftext|>"]

SPECIAL_IN_TEXT = [
    "<|endoftext|>",
    "<|im_start|>user\nhi<|im_end|>",
    "<|endoftext|><|endoftext|>",
    "a<|im_end|>b",
    " <|endoftext|> ",
    "hello<|endoftext|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "<|ENDOFTEXT|> is not special",
    "<|endoftext|",
    "<| endoftext |>",
]


def read_lines(path, check=True):
    with open(path, encoding="utf-8", newline="\n") as f:
        text = f.read()
    assert text.endswith("\n"), path
    lines = text[:-1].split("\n")
    for i, line in enumerate(lines):
        assert line, "%s: empty line %d" % (path, i + 1)
        if check:
            assert not re.search(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]", line), \
                "%s: control char in line %d" % (path, i + 1)
    return lines


def build_untrained():
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    # tokenizers 0.19's Python pre_tokenizers.ByteLevel(...) ignores trim_offsets (it keeps the default, true); Qwen2's
    # tokenizer.json has false there. The flag only touches offsets, never ids; set it through the JSON so the
    # serialised stage reads exactly ByteLevel(add_prefix_space=false, trim_offsets=false, use_regex=false).
    tj = json.loads(tok.to_str())
    bl = tj["pre_tokenizer"]["pretokenizers"][1]
    assert bl["type"] == "ByteLevel", bl
    bl["trim_offsets"] = False
    return Tokenizer.from_str(json.dumps(tj, ensure_ascii=False))


def train(corpus):
    tok = build_untrained()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=SPECIALS,
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    return tok


def describe(tj):
    model = dict(tj["model"])
    vocab = model.pop("vocab")
    merges = model.pop("merges")
    model["vocab"] = "<%d entries>" % len(vocab)
    model["merges"] = "<%d %s, first %s>" % (len(merges), type(merges[0]).__name__ if merges else "-",
                                             json.dumps(merges[:3], ensure_ascii=False))
    return {
        "top_level_keys": list(tj.keys()),
        "version": tj.get("version"),
        "truncation": tj.get("truncation"),
        "padding": tj.get("padding"),
        "added_tokens": tj["added_tokens"],
        "normalizer": tj["normalizer"],
        "pre_tokenizer": tj["pre_tokenizer"],
        "model": model,
        "post_processor": tj["post_processor"],
        "decoder": tj["decoder"],
    }


def check_structure(tj):
    assert tj["normalizer"] == {"type": "NFC"}, tj["normalizer"]
    pt = tj["pre_tokenizer"]
    assert pt["type"] == "Sequence", pt
    split, bl = pt["pretokenizers"]
    assert split == {"type": "Split", "pattern": {"Regex": QWEN_PATTERN}, "behavior": "Isolated", "invert": False}, split
    assert bl == {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}, bl
    m = tj["model"]
    assert m["type"] == "BPE", m["type"]
    assert m["unk_token"] is None and m["dropout"] is None and not m["fuse_unk"] and not m["byte_fallback"], m
    assert m.get("continuing_subword_prefix") in (None, "") and m.get("end_of_word_suffix") in (None, ""), m
    assert not m.get("ignore_merges", False), m
    assert isinstance(m["merges"], list) and m["merges"], "no merges stored"
    assert tj["decoder"]["type"] == "ByteLevel", tj["decoder"]
    assert [t["content"] for t in tj["added_tokens"]] == SPECIALS, tj["added_tokens"]
    assert all(t["special"] and not t["normalized"] for t in tj["added_tokens"]), tj["added_tokens"]


def main():
    lines = read_lines(TEXTS)
    calibration = read_lines(CALIBRATION, check=False)
    corpus = lines[:TRAIN_LINES] + calibration

    tok = train(corpus)
    eos_id = tok.token_to_id(EOS)
    assert eos_id is not None

    os.makedirs(OUT_DIR, exist_ok=True)
    tok_path = os.path.join(OUT_DIR, "tokenizer.json")
    eos_path = os.path.join(OUT_DIR, "tokenizer_eos.json")

    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.save(tok_path, pretty=False)

    tok.post_processor = processors.TemplateProcessing(
        single="$A:0 %s:0" % EOS,
        pair="$A:0 %s:0 $B:1 %s:1" % (EOS, EOS),
        special_tokens=[(EOS, eos_id)],
    )
    tok.save(eos_path, pretty=False)

    with open(os.path.join(OUT_DIR, "tokenizer_config.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump({"eos_token": EOS, "pad_token": EOS, "model_max_length": 32768,
                   "tokenizer_class": "Qwen2TokenizerFast"}, f, ensure_ascii=False, indent=2, sort_keys=True)
        f.write("\n")

    with open(tok_path, encoding="utf-8") as f:
        tj = json.load(f)
    check_structure(tj)
    with open(eos_path, encoding="utf-8") as f:
        tj_eos = json.load(f)
    check_structure(tj_eos)
    print(json.dumps(describe(tj), ensure_ascii=False, indent=1))
    print("tokenizer_eos.json post_processor:", json.dumps(tj_eos["post_processor"], ensure_ascii=False))

    # Everything below reads the saved files back, as brisk will.
    tok = Tokenizer.from_file(tok_path)
    tok_eos = Tokenizer.from_file(eos_path)

    def nfc(text):
        return tok.normalizer.normalize_str(text)

    def check_roundtrip(t, text, e):
        got = t.decode(e.ids, skip_special_tokens=True)
        assert got == nfc(text), (text, got)

    cases = []
    for text in lines + EDGE_CASES:
        e = tok.encode(text)
        check_roundtrip(tok, text, e)
        cases.append({"text": text, "ids": e.ids, "tokens": e.tokens})

    eos_cases = []
    for text in lines[:50] + EOS_EDGE_CASES:
        e = tok_eos.encode(text)
        assert e.ids[-1] == eos_id, text
        eos_cases.append({"text": text, "ids": e.ids})

    # 20 pairs: line 31 k with line (7 * 31 k + 101) mod n, across trained and held-out lines.
    n = len(lines)
    pairs = []
    for k in range(20):
        a = lines[(31 * k) % n]
        b = lines[(7 * 31 * k + 101) % n]
        e = tok_eos.encode(a, b)
        pairs.append({"first": a, "second": b, "ids": e.ids})

    special = []
    for text in SPECIAL_IN_TEXT:
        e = tok.encode(text)
        special.append({"text": text, "ids": e.ids, "tokens": e.tokens, "eos_ids": tok_eos.encode(text).ids})

    pretokens = []
    for text in EDGE_CASES:
        norm = nfc(text)
        pieces = [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(norm)]
        pretokens.append({"text": text, "normalized": norm, "pieces": pieces})

    # The same vocabulary and merges under the other pre-tokenizers brisk knows: GPT-2's (ByteLevel with its own
    # regex and a prefix space, as GPT-2 and RoBERTa files have it) and Llama 3's Split pattern (numbers in runs of
    # up to three). tokenizer.json's pre_tokenizer is replaced in the JSON; ids for every edge case and every
    # fourth line.
    variants = {}
    for name, pre in (("gpt2", {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                "use_regex": True}),
                      ("llama3", {"type": "Sequence", "pretokenizers": [
                          {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated",
                           "invert": False},
                          {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                           "use_regex": False}]})):
        tj_variant = dict(tj)
        tj_variant["pre_tokenizer"] = pre
        t = Tokenizer.from_str(json.dumps(tj_variant, ensure_ascii=False))
        variants[name] = {"pre_tokenizer": pre, "cases": [
            {"text": text, "ids": t.encode(text).ids} for text in lines[::4] + EDGE_CASES]}

    out = {
        "versions": {
            "python": platform.python_version(),
            "tokenizers": tokenizers.__version__,
            "transformers": transformers.__version__,
        },
        "tokenizer": "tiny_qwen_tokenizer/tokenizer.json",
        "tokenizer_eos": "tiny_qwen_tokenizer/tokenizer_eos.json",
        "pattern": QWEN_PATTERN,
        "train_lines": TRAIN_LINES,
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "special_ids": {t: tok.token_to_id(t) for t in SPECIALS},
        "cases": cases,
        "eos_cases": eos_cases,
        "pairs": pairs,
        "special_in_text": special,
        "pretokens": pretokens,
        "variants": variants,
    }
    with open(OUT_JSON, "w", encoding="utf-8", newline="\n") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")

    held_out_bytes = sum(len(c["ids"]) for c in cases[TRAIN_LINES:n])
    print("vocab %d (model %d), merges %d, special ids %s" % (
        out["vocab_size"], tok.get_vocab_size(with_added_tokens=False), len(tj["model"]["merges"]),
        out["special_ids"]), file=sys.stderr)
    print("cases %d (lines %d + edge %d), eos_cases %d, pairs %d, special_in_text %d, pretokens %d; "
          "held-out lines give %d tokens" % (len(cases), n, len(EDGE_CASES), len(eos_cases), len(pairs),
                                             len(special), len(pretokens), held_out_bytes), file=sys.stderr)


if __name__ == "__main__":
    main()
