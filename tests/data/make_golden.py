#!/usr/bin/env python3
"""Writes tests/data/golden_minilm.json: reference token ids and sentence embeddings computed with Hugging Face.

"items", one per sentence in SENTENCES:
  - "ids": the input ids of AutoTokenizer (BertTokenizerFast from tokenizer.json), truncated to 512 tokens;
  - "embedding": transformers' AutoModel last_hidden_state for those ids alone (no padding, token_type_ids 0,
    one torch thread), mean-pooled over the attention mask and L2-normalised here in torch, as the model's
    sentence-transformers Pooling and Normalize modules do (sentence-transformers itself is not run), each
    float rounded to 7 significant digits;
  - "slow_ids": only where the slow Python BertTokenizer gives other ids (reported on stderr too).
"token_items": 400 random texts (random.Random(20240515), characters from every class the BERT rules tell apart,
plus literal special tokens) with ids only: "ids" from AutoTokenizer, "cased_ids" from tokenizer.json with its
normalizer replaced by lowercase=False, strip_accents=False.
Also recorded: "versions" (python, torch, transformers, tokenizers, numpy), "model" (the directory's name) and
"max_seq_len" (512). brisk's tokenizer and encoder tests compare against this file; nothing in it is computed
by brisk.

Usage (in the reference venv that scripts/setup creates):
    ~/.cache/brisk/pyref/bin/python tests/data/make_golden.py [MODEL_DIR] [--out PATH]
MODEL_DIR defaults to $BRISK_MODEL_DIR, else ~/.cache/brisk/models/all-MiniLM-L6-v2.

Cross-checks: the `tokenizers` Tokenizer loaded straight from tokenizer.json must give the same ids (the script
fails otherwise); the slow Python BertTokenizer is compared too and any difference is reported and stored as
"slow_ids" (the fast tokenizer is the reference, as AutoTokenizer and sentence-transformers use it).
"""
import argparse
import json
import os
import platform
import sys

MAX_SEQ_LEN = 512

_LONG_PARAGRAPH = (
    "Dear customer support team, I am writing because my online banking account has been locked after I "
    "entered the wrong password three times, and the automated phone line keeps telling me to visit a branch. "
    "The nearest branch is forty minutes away and is closed on weekends, which is when I have time. "
    "Could you please explain what documents I need, whether I can verify my identity through the mobile app, "
    "and how long the unlock usually takes? I also noticed two pending card payments of $12.99 and $249.00 "
    "that I do not recognise; please tell me how to dispute them before they are settled. "
)

SENTENCES = [
    # Customer service: bank and shop.
    "How do I reset my online banking password?",
    "What is the daily withdrawal limit for my debit card?",
    "I lost my credit card, how can I block it?",
    "Can I open a savings account online?",
    "Why was I charged a monthly maintenance fee?",
    "How long does an international wire transfer take?",
    "What's the interest rate on a 5-year fixed mortgage?",
    "My card was declined at the store even though I have money in my account.",
    "Where is my order? It was supposed to arrive yesterday.",
    "Can I return an item without the original receipt?",
    "Do you ship to Canada and how much does it cost?",
    "I'd like to change the delivery address for order 4471.",
    "Is this jacket available in size medium?",
    "How do I apply a discount code at checkout?",
    "The product arrived damaged, I want a refund.",
    "What are your opening hours on Sunday?",
    "Can I speak to a human agent please",
    "how do i update my phone number",
    "Why can't I log in to the app after the update?",
    "Is there a fee for paying off my loan early?",
    # Accents and other Latin-script languages.
    "I'd like a café au lait and a croissant, s'il vous plaît.",
    "That was a naïve question about the coöperative.",
    "Über Eats delivered my order late again.",
    "Please attach your résumé to the application.",
    "Our office in São Paulo opens at 9.",
    "Crème brûlée, façade, Ångström, Dvořák, Straße",
    "Tiếng Việt có dấu rất khó.",
    "cafe\u0301 with a combining acute accent",
    # Other scripts.
    "我的信用卡被冻结了，怎么办？",
    "请问你们的营业时间是几点到几点？",
    "パスワードを忘れました。どうすればいいですか？",
    "계좌 잔액을 확인하고 싶어요.",
    "Привет, как проверить баланс карты?",
    "مرحبا، كيف يمكنني فتح حساب؟",
    "नमस्ते, मेरा खाता बंद हो गया है",
    "สวัสดีครับ ต้องการสอบถามยอดเงิน",
    "ΟΔΟΣ and İstanbul and ＡＢＣ１２３ fullwidth",
    "ﬁnance ligature and ½ fraction and ① circled",
    # Characters where HF's (pre-Unicode-9) tables differ from current Unicode, and an unassigned one.
    "a\u061db \u2e43 x\u166dy a\u1734b \U0002b820 \U00011938 a\u0890b \u0378",
    # Emoji.
    "I love this shop 😍👍",
    "🎉🎉 my order finally arrived!!! 📦",
    "Flags 🇺🇸🇬🇧 and a coder 👩‍💻 and skin tones 👍🏽",
    # Punctuation heavy.
    "Wait... what?!?! (seriously) -- [no] {way} <html> @#$%^&*",
    "\u201cSmart quotes\u201d and \u2018single\u2019 \u2014 em-dash \u2013 en-dash\u2026",
    "!!!!!!!!!!",
    "#blessed ##notatoken e-mail co-operate don't",
    # Numbers and currency.
    "$1,234.56 was transferred on 2024-03-15 at 10:45am.",
    "\u20ac50 / \u00a330 / \u00a51000 / \u20b9500 / 0.5% APR",
    "Order #A-12345-XYZ costs 99.99 USD (incl. 20% VAT).",
    "Call +1 (800) 555-0199 ext. 42",
    # URLs and e-mails.
    "Visit https://www.example-bank.com/help?id=42&lang=en for details.",
    "Email support@example.com or john.doe+refunds@shop.co.uk",
    # Mixed case.
    "ThIs Is MiXeD CaSe AND ALL CAPS",
    "iPhone MacBook eBay YouTube PayPal",
    # Control characters, tabs, newlines, odd spaces.
    "line one\nline two\r\nline\tthree",
    "bell\x07char and\x00nul and\x1bescape\x7fdel",
    "zero\u200bwidth space and soft\u00adhyphen",
    "non\u00a0breaking\u3000ideographic\u2028line separator",
    "   \t\n  ",
    "vertical\x0btab and form\x0cfeed",
    # Special tokens written in the text.
    "what does [MASK] mean next to [CLS] and [SEP]?",
    "lowercase [cls] is not special",
    # Very long words.
    "a" * 100,
    "b" * 101,
    "Pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "x" * 150 + " short words after",
    # Truncation: well over 512 tokens.
    _LONG_PARAGRAPH * 6,
    # Empty.
    "",
]


# Characters the random token-only texts are drawn from: every class the BERT rules tell apart.
_FUZZ_POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    " \t\n\r\x0b\x0c\x00\x07\x1b\x7f\x85\xa0\u2028\u3000\u200b\u00ad\ufeff\ufffd",
    "\xe0\xe9\xee\xf5\xfc\xc7\xd1\xdf\u0130\u0131\u03a3\u03c2\u0401\u0436\u1e9e\u01c5\ufb01\uff21\uff41",
    "\u0301\u0308\u0327\u0e31\u0e49\u093f\u0940\u05b7\u1734\u20dd",
    "\u4e00\u6211\u7684\u3042\u30a2\u30fc\uac00\ud55c\u1100\uf900\u2f00\u3400\U00020000\U0002b820\U0002b920",
    "\U0001f600\U0001f44d\U0001f3fd\u200d\U0001f1fa\u2764\ufe0f\U0001fae0",
    "\u2018\u2019\u201c\u201d\u2014\u2026\u00bf\u00a1\u3001\u3002\uff0c\u061f\u061d\u2e43\u166d\U00011b00",
    "\u0378\u0890\U00011938\U000e0001\ue000\U0010fffd",
]


def fuzz_texts(n, seed=20240515):
    """Random short texts (fixed seed) mixing the pools above, plus the literal special tokens."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 24)):
            r = rng.random()
            if r < 0.03:
                parts.append(rng.choice(["[MASK]", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[mask]"]))
            elif r < 0.25:
                parts.append(rng.choice(["the", "café", "account", "unaffable", "résumé", "##ing", "ΟΔΟΣ"]))
            else:
                parts.append(rng.choice(rng.choice(_FUZZ_POOLS)))
        out.append("".join(parts))
    return out


def versions():
    import numpy
    import tokenizers
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": numpy.__version__,
    }


def main():
    default_dir = os.environ.get("BRISK_MODEL_DIR") or os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2")
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", nargs="?", default=default_dir)
    ap.add_argument("--out", default=os.path.join(here, "golden_minilm.json"))
    args = ap.parse_args()
    if not os.path.isdir(args.model_dir):
        sys.exit(f"model directory {args.model_dir!r} does not exist; run scripts/setup or set BRISK_MODEL_DIR")

    import torch
    import tokenizers
    from transformers import AutoModel, AutoTokenizer, BertTokenizer

    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(args.model_dir)
    if not tok.is_fast:
        sys.exit("AutoTokenizer returned a slow tokenizer; expected BertTokenizerFast (is tokenizer.json there?)")
    slow = BertTokenizer.from_pretrained(args.model_dir)
    raw = tokenizers.Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    raw.no_padding()
    raw.enable_truncation(MAX_SEQ_LEN)
    model = AutoModel.from_pretrained(args.model_dir).eval()

    items = []
    slow_diffs = 0
    for text in SENTENCES:
        enc = tok(text, max_length=MAX_SEQ_LEN, truncation=True)
        ids = list(enc["input_ids"])
        raw_ids = raw.encode(text).ids
        if raw_ids != ids:
            sys.exit(f"tokenizers.Tokenizer and AutoTokenizer disagree on {text[:60]!r}: {raw_ids} vs {ids}")
        item = {"text": text, "ids": ids}
        slow_ids = slow(text, max_length=MAX_SEQ_LEN, truncation=True)["input_ids"]
        if slow_ids != ids:
            slow_diffs += 1
            item["slow_ids"] = slow_ids
            print(f"note: slow BertTokenizer differs on {text[:60]!r}", file=sys.stderr)
        with torch.no_grad():
            input_ids = torch.tensor([ids], dtype=torch.long)
            mask = torch.ones_like(input_ids)
            hidden = model(input_ids=input_ids, attention_mask=mask,
                           token_type_ids=torch.zeros_like(input_ids)).last_hidden_state.float()
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
            emb = torch.nn.functional.normalize(pooled, p=2, dim=1)[0]
        item["embedding"] = [float(f"{v:.7g}") for v in emb.tolist()]
        items.append(item)

    # Token-only items: random texts, with the uncased (model) rules and with lowercase=False, strip_accents=False.
    cased = tokenizers.Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    cased.no_padding()
    cased.enable_truncation(MAX_SEQ_LEN)
    cased.normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False)
    token_items = []
    for text in fuzz_texts(400):
        ids = list(tok(text, max_length=MAX_SEQ_LEN, truncation=True)["input_ids"])
        if raw.encode(text).ids != ids:
            sys.exit(f"tokenizers.Tokenizer and AutoTokenizer disagree on {text!r}")
        token_items.append({"text": text, "ids": ids, "cased_ids": cased.encode(text).ids})

    doc = {
        "versions": versions(),
        "model": os.path.basename(os.path.normpath(args.model_dir)),
        "max_seq_len": MAX_SEQ_LEN,
        "items": items,
    }
    # One item per line keeps the file small and its diffs readable.
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("{\n")
        for key in ("versions", "model", "max_seq_len"):
            f.write(f"  {json.dumps(key)}: {json.dumps(doc[key], ensure_ascii=False)},\n")
        f.write('  "items": [\n')
        for i, item in enumerate(items):
            sep = "," if i + 1 < len(items) else ""
            f.write("    " + json.dumps(item, ensure_ascii=False, separators=(",", ":")) + sep + "\n")
        f.write("  ],\n")
        f.write('  "token_items": [\n')
        for i, item in enumerate(token_items):
            sep = "," if i + 1 < len(token_items) else ""
            f.write("    " + json.dumps(item, ensure_ascii=False, separators=(",", ":")) + sep + "\n")
        f.write("  ]\n}\n")
    print(f"wrote {len(items)} items and {len(token_items)} token items to {args.out} "
          f"({slow_diffs} items where the slow tokenizer differs)")


if __name__ == "__main__":
    main()
