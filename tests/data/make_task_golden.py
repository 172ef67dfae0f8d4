#!/usr/bin/env python3
"""Golden logits for brisk's sequence-classification and cross-encoder support, from Hugging Face transformers and
tokenizers on five tiny random models, plus TorchScript modules for brisk's TorchScript backend:

    ~/.cache/brisk/pyref/bin/python tests/data/make_task_golden.py

Writes tests/data/tasks/ (see tests/data/tasks/README.md for the layout and the JSON schemas):
  bert_cls/ bert_multilabel/ distilbert_cls/ distilbert_multilabel/ cross_encoder/
      model.safetensors, config.json (save_pretrained, safe_serialization=True), the tokenizer files of
      BertTokenizerFast.save_pretrained (vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map.json)
      and golden.json: single texts and (query, passage) pairs, their ids and token types from the fast tokenizer
      (max_length 24), and the model's logits for each sequence run alone (no padding).
  torchscript/
      encoder.pt (traced BertModel -> (last_hidden_state, pooler_output)), classifier.pt (traced
      BertForSequenceClassification -> logits), not_a_module.pt (a plain pickle), wrong_inputs.pt (scripted,
      forward(x: float tensor) -> x * 2), bert_cls's config.json and tokenizer files, and golden.json.

Every model shares one WordPiece vocab of a customer-service domain. Weights are drawn with fixed seeds and
initializer_range 0.2 (so the logits are well away from 0); everything runs in float32 under torch.no_grad on CPU.
Pairs are tokenized with the batch form of the fast tokenizer, tok([query], [passage], truncation="longest_first",
max_length=24), as sentence-transformers' CrossEncoder calls it; it equals tok(query, passage, ...) except for an
empty passage (see compare_slow).

The script asserts that a padded batch gives the same logits as the single runs (within 1e-5), that the written
folders load back (AutoTokenizer, AutoModelForSequenceClassification) to the same ids and logits, that the traced
modules follow other shapes than the one they were traced with and that classifier.pt matches bert_cls; it prints
where the slow BertTokenizer (and the fast one-pair call) disagree with the goldens' ids.

A rerun writes identical files. The .pt archives carry TorchScript debug info with this script's line numbers, so
editing the script changes their bytes (not their behaviour).
"""
import json
import os
import platform
import shutil
import tempfile

import safetensors
import tokenizers
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tasks")
MAX_LENGTH = 24
MAX_POSITIONS = 64  # max_position_embeddings of every model, and the tokenizers' model_max_length
TOLERANCE = 1e-5

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PUNCTUATION = [".", ",", "?", "!", "'", "-"]
WORDS = """
hello hi thanks thank you please sorry my i me we your it this that there
how do does did what why when where can could would will not no yes
the a an to is are was be have has of for on in at with from by and or but if since
now still again also any
card credit debit lost stolen pin code reset password login account balance transfer refund payment pay
charge fee bill money bank cash atm order help need want new block unlock cancel close open limit check app
online phone email call support agent time type wallet name number
today yesterday week month day morning night cafe purchase dollar wrong twice
receive sent arrive wait problem issue question work get go good bad
""".split()
SUFFIXES = ["##s", "##es", "##ed", "##d", "##ing", "##er", "##ly", "##n", "##y"]
VOCAB = SPECIALS + PUNCTUATION + WORDS + SUFFIXES

SINGLE_TEXTS = [
    "Hello, I lost my card!",
    "How do I RESET my Pin?",
    "Café purchase charged TWICE.",
    "my zebra xylophone quux",  # words outside the vocab -> [UNK]
    "",
    "Blocked cards, transfers and paying!?",  # ## continuation pieces
    "hello i lost my card yesterday and i need to block it please can you help me reset the pin and check "
    "my account balance today thanks",  # longer than max_length: truncated
    "What's my balance in 100 dollars, 东京?",  # "s", digits and each CJK character -> [UNK]
]

# One-token words in the vocab, used to build queries and passages of exact token lengths.
QUERY_WORDS = ("how do i reset my pin code and block the lost card since it was stolen from my wallet at the "
               "cafe this morning please help me today thanks").split()
PASSAGE_WORDS = ("to reset your pin open the app and go to card and pin and type a new code you can also "
                 "block a lost card there or call support any time of the day or night").split()
# (query tokens, passage tokens); the pair budget is MAX_LENGTH - 3 = 21 tokens.
PAIR_LENGTHS = [
    (10, 11),  # exactly 21: no truncation
    (4, 30),   # only the passage is long
    (30, 3),   # only the query is long
    (14, 9),   # 23: two tokens come off the query
    (15, 15),  # both long, 9 to remove (odd)
    (15, 16),  # both long, 10 to remove (even)
    (12, 12),  # both long, 3 to remove (odd)
    (20, 20),  # both long, 19 to remove (odd)
    (11, 30),  # query just over half, passage long
    (16, 12),  # both long, the query longer: 7 to remove
]
FIRST_PAIRS = [("How do I reset my PIN?", "Open the app, go to card.")]  # 7 + 8 tokens: no truncation
EXTRA_PAIRS = [
    ("Hello!", ""),  # empty passage
    ("Is my CAFÉ refund received?", "Refunds arrive in 3 days."),  # accents, [UNK], case
]


def versions():
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "safetensors": safetensors.__version__}


def floats(t):
    # 9 significant digits round-trip every float32 exactly.
    return [float(f"{v:.9g}") for v in t.reshape(-1).tolist()]


def rows(t):
    return [floats(r) for r in t]


def make_tokenizer(tmp):
    assert len(set(VOCAB)) == len(VOCAB), "duplicate vocab entries"
    path = os.path.join(tmp, "vocab.txt")
    with open(path, "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    fast = transformers.BertTokenizerFast(vocab_file=path, do_lower_case=True, model_max_length=MAX_POSITIONS)
    slow = transformers.BertTokenizer(vocab_file=path, do_lower_case=True, model_max_length=MAX_POSITIONS)
    return fast, slow, path


def save_tokenizer(vocab_file, path):
    # A fresh copy: a fast tokenizer that has been called with truncation keeps it, and would write it to
    # tokenizer.json.
    transformers.BertTokenizerFast(vocab_file=vocab_file, do_lower_case=True,
                                   model_max_length=MAX_POSITIONS).save_pretrained(path)


def make_pairs(fast):
    def words_for(words, n, start):  # n words from words[start:], wrapping round; each word is one token
        assert all(w in VOCAB for w in words)
        text = " ".join((words * 3)[start:start + n])
        assert len(fast(text, add_special_tokens=False)["input_ids"]) == n
        return text
    pairs = [(words_for(QUERY_WORDS, q, 3 * i), words_for(PASSAGE_WORDS, p, 4 * i))
             for i, (q, p) in enumerate(PAIR_LENGTHS, start=1)]
    return FIRST_PAIRS + pairs + EXTRA_PAIRS


def encode_pair(tok, query, passage):
    # The batch form of tok(query, passage, truncation="longest_first", max_length=24), as sentence-transformers'
    # CrossEncoder calls it. It gives the same ids as the one-pair call except for an empty passage, which the
    # one-pair call of transformers' fast tokenizer drops as if there were no pair (see compare_slow).
    enc = tok([query], [passage], truncation="longest_first", max_length=MAX_LENGTH)
    return {"input_ids": enc["input_ids"][0], "token_type_ids": enc["token_type_ids"][0]}


def bert_config(num_labels, **kwargs):
    return transformers.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=4, intermediate_size=64,
                                   max_position_embeddings=MAX_POSITIONS, type_vocab_size=2, initializer_range=0.2,
                                   num_labels=num_labels, **kwargs)


def distil_config(num_labels, **kwargs):
    return transformers.DistilBertConfig(vocab_size=len(VOCAB), dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                         max_position_embeddings=MAX_POSITIONS, activation="gelu",
                                         initializer_range=0.2, num_labels=num_labels, **kwargs)


def labels(names):
    return {"id2label": dict(enumerate(names)), "label2id": {n: i for i, n in enumerate(names)}}


MODELS = [
    # folder, seed, model class, config. Each seed was picked from the 40 after 101, 102, ... 105 so that every
    # label is the argmax of some texts (3 labels), every multi-label logit is positive for some texts and negative
    # for others, and the cross-encoder scores take both signs.
    ("bert_cls", 111, transformers.BertForSequenceClassification,
     lambda: bert_config(3, **labels(["billing", "card_lost", "greeting"]))),
    ("bert_multilabel", 117, transformers.BertForSequenceClassification,
     lambda: bert_config(4, problem_type="multi_label_classification",
                         **labels(["urgent", "complaint", "card", "transfer"]))),
    ("distilbert_cls", 134, transformers.DistilBertForSequenceClassification,
     lambda: distil_config(3, **labels(["refund", "pin_reset", "smalltalk"]))),
    ("distilbert_multilabel", 143, transformers.DistilBertForSequenceClassification,
     lambda: distil_config(4, problem_type="multi_label_classification",
                           **labels(["angry", "polite", "account", "payment"]))),
    ("cross_encoder", 116, transformers.BertForSequenceClassification,
     lambda: bert_config(1, **labels(["LABEL_0"]))),
]


def run_one(model, enc, use_types):
    kwargs = {"input_ids": torch.tensor([enc["input_ids"]])}
    if use_types:
        kwargs["token_type_ids"] = torch.tensor([enc["token_type_ids"]])
    return model(**kwargs).logits[0]


def run_batch(model, encs, use_types):
    width = max(len(e["input_ids"]) for e in encs)
    pad = lambda seq: seq + [0] * (width - len(seq))  # noqa: E731
    kwargs = {"input_ids": torch.tensor([pad(e["input_ids"]) for e in encs]),
              "attention_mask": torch.tensor([pad([1] * len(e["input_ids"])) for e in encs])}
    if use_types:
        kwargs["token_type_ids"] = torch.tensor([pad(e["token_type_ids"]) for e in encs])
    return model(**kwargs).logits


def check_batch(name, what, singles, batch):
    diff = max(float((s - b).abs().max()) for s, b in zip(singles, batch))
    assert diff <= TOLERANCE, f"{name} {what}: padded batch differs from single runs by {diff}"
    return diff


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")


def write_model(folder, seed, cls, config, fast, vocab_file, pairs):
    path = os.path.join(OUT, folder)
    os.makedirs(path, exist_ok=True)
    torch.manual_seed(seed)
    model = cls(config).eval()
    model.save_pretrained(path, safe_serialization=True)
    save_tokenizer(vocab_file, path)
    use_types = cls is not transformers.DistilBertForSequenceClassification
    golden = {"versions": versions(), "max_length": MAX_LENGTH, "uses_token_type_ids": use_types,
              "single": [], "pairs": []}
    with torch.no_grad():
        encs = [fast(t, truncation=True, max_length=MAX_LENGTH) for t in SINGLE_TEXTS]
        logits = [run_one(model, e, use_types) for e in encs]
        d1 = check_batch(folder, "single", logits, run_batch(model, encs, use_types))
        for text, e, out in zip(SINGLE_TEXTS, encs, logits):
            golden["single"].append({"text": text, "ids": e["input_ids"], "token_type_ids": e["token_type_ids"],
                                     "logits": floats(out)})
        encs = [encode_pair(fast, q, p) for q, p in pairs]
        logits = [run_one(model, e, use_types) for e in encs]
        d2 = check_batch(folder, "pairs", logits, run_batch(model, encs, use_types))
        for (q, p), e, out in zip(pairs, encs, logits):
            golden["pairs"].append({"query": q, "passage": p, "ids": e["input_ids"],
                                    "token_type_ids": e["token_type_ids"], "logits": floats(out)})
    write_json(os.path.join(path, "golden.json"), golden)
    check_reload(path, golden, use_types)
    print(f"{folder}: batch vs single max diff {max(d1, d2):.3g}")
    return model


def check_reload(path, golden, use_types):
    # What was written must reproduce the goldens when loaded back the ordinary way.
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
    assert tok.is_fast
    with torch.no_grad():
        for item in golden["single"]:
            e = tok(item["text"], truncation=True, max_length=MAX_LENGTH)
            assert e["input_ids"] == item["ids"], item["text"]
            gap = float((run_one(model, e, use_types) - torch.tensor(item["logits"])).abs().max())
            assert gap <= TOLERANCE, f"{path}: reloaded model differs by {gap}"
        for item in golden["pairs"]:
            e = encode_pair(tok, item["query"], item["passage"])
            assert e["input_ids"] == item["ids"] and e["token_type_ids"] == item["token_type_ids"]
            gap = float((run_one(model, e, use_types) - torch.tensor(item["logits"])).abs().max())
            assert gap <= TOLERANCE, f"{path}: reloaded model differs by {gap}"


class Encoder(torch.nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                        return_dict=False)
        return out[0], out[1]


class Classifier(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                          return_dict=False)[0]


class WrongInputs(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def random_batch(gen, batch, length):
    ids = torch.randint(5, len(VOCAB), (batch, length), generator=gen)
    mask = torch.ones(batch, length, dtype=torch.long)
    types = torch.zeros(batch, length, dtype=torch.long)
    for b in range(1, batch):  # right-pad the later rows, give them a second segment
        n = max(2, length - 3 * b)
        ids[b, n:] = 0
        mask[b, n:] = 0
        types[b, n // 2:n] = 1
    ids[:, 0] = 2
    return ids, mask, types


def write_torchscript(bert_cls, fast, vocab_file):
    path = os.path.join(OUT, "torchscript")
    os.makedirs(path, exist_ok=True)
    encoder, classifier = Encoder(bert_cls.bert).eval(), Classifier(bert_cls).eval()
    gen = torch.Generator().manual_seed(7)
    example = random_batch(gen, 2, 10)
    with torch.no_grad():
        traced_encoder = torch.jit.trace(encoder, example)
        traced_classifier = torch.jit.trace(classifier, example)
        for shape in [(2, 10), (1, 5), (3, 17)]:
            inputs = random_batch(gen, *shape)
            for traced, eager in [(traced_encoder, encoder), (traced_classifier, classifier)]:
                got, want = traced(*inputs), eager(*inputs)
                got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
                for g, w in zip(got, want):
                    assert g.shape == w.shape and float((g - w).abs().max()) <= TOLERANCE, f"trace differs at {shape}"
    traced_encoder.save(os.path.join(path, "encoder.pt"))
    traced_classifier.save(os.path.join(path, "classifier.pt"))
    torch.save({"w": torch.zeros(2)}, os.path.join(path, "not_a_module.pt"))
    torch.jit.script(WrongInputs().eval()).save(os.path.join(path, "wrong_inputs.pt"))
    save_tokenizer(vocab_file, path)
    shutil.copy(os.path.join(OUT, "bert_cls", "config.json"), os.path.join(path, "config.json"))

    # Reload what was written and run every text alone, then all together as one padded batch.
    encoder_pt = torch.jit.load(os.path.join(path, "encoder.pt"))
    classifier_pt = torch.jit.load(os.path.join(path, "classifier.pt"))
    texts = SINGLE_TEXTS[:3] + SINGLE_TEXTS[4:7]  # includes the empty and the truncated text
    golden = {"versions": versions(), "max_length": MAX_LENGTH, "items": []}
    singles = []
    with torch.no_grad():
        for text in texts:
            e = fast(text, truncation=True, max_length=MAX_LENGTH)
            ids = torch.tensor([e["input_ids"]])
            mask, types = torch.ones_like(ids), torch.tensor([e["token_type_ids"]])
            hidden, pooler = encoder_pt(ids, mask, types)
            logits = classifier_pt(ids, mask, types)
            mean = torch.nn.functional.normalize(hidden[0].mean(0), dim=0)
            singles.append((hidden[0], pooler[0], logits[0]))
            golden["items"].append({"text": text, "ids": e["input_ids"], "last_hidden_state": rows(hidden[0]),
                                    "mean_pooled_normalized": floats(mean), "cls_pooled": floats(hidden[0, 0]),
                                    "pooler_output": floats(pooler[0]), "logits": floats(logits[0])})
        encs = [fast(t, truncation=True, max_length=MAX_LENGTH) for t in texts]
        width = max(len(e["input_ids"]) for e in encs)
        ids = torch.tensor([e["input_ids"] + [0] * (width - len(e["input_ids"])) for e in encs])
        mask = torch.tensor([[1] * len(e["input_ids"]) + [0] * (width - len(e["input_ids"])) for e in encs])
        types = torch.zeros_like(ids)
        hidden, pooler = encoder_pt(ids, mask, types)
        logits = classifier_pt(ids, mask, types)
        diff = 0.0
        for b, (h, p, lg) in enumerate(singles):
            n = h.shape[0]
            m = mask[b].unsqueeze(-1).float()
            mean = torch.nn.functional.normalize((hidden[b] * m).sum(0) / m.sum(), dim=0)
            want_mean = torch.tensor(golden["items"][b]["mean_pooled_normalized"])
            for got, want in [(hidden[b, :n], h), (pooler[b], p), (logits[b], lg), (mean, want_mean)]:
                diff = max(diff, float((got - want).abs().max()))
        assert diff <= TOLERANCE, f"torchscript: padded batch differs from single runs by {diff}"
        # classifier.pt is bert_cls traced: its logits must match bert_cls/golden.json for the same texts.
        with open(os.path.join(OUT, "bert_cls", "golden.json")) as f:
            hf = {item["text"]: item["logits"] for item in json.load(f)["single"]}
        for item in golden["items"]:
            gap = max(abs(a - b) for a, b in zip(item["logits"], hf[item["text"]]))
            assert gap <= TOLERANCE, f"torchscript classifier differs from bert_cls for {item['text']!r} by {gap}"
    golden["batch"] = {"input_ids": ids.tolist(), "attention_mask": mask.tolist(), "token_type_ids": types.tolist(),
                       "max_abs_diff_vs_single": diff}
    write_json(os.path.join(path, "golden.json"), golden)
    print(f"torchscript: batch vs single max diff {diff:.3g}")


def compare_slow(fast, slow, pairs):
    """Prints where the slow BertTokenizer, and the one-pair call of the fast one, differ from the goldens' ids."""
    def kept(e):  # (query, passage) tokens kept, specials excluded
        types = e["token_type_ids"]
        return types.count(0) - 2, max(types.count(1) - 1, 0) if len(types) > types.count(0) else "no pair"

    differences = []
    for text in SINGLE_TEXTS:
        a = fast(text, truncation=True, max_length=MAX_LENGTH)
        b = slow(text, truncation=True, max_length=MAX_LENGTH)
        if a["input_ids"] != b["input_ids"] or a["token_type_ids"] != b["token_type_ids"]:
            differences.append(f"single {text!r}: fast {a['input_ids']} slow {b['input_ids']}")
    for q, p in pairs:
        golden = encode_pair(fast, q, p)
        lengths = tuple(len(fast(t, add_special_tokens=False)["input_ids"]) for t in (q, p))
        for name, tok in [("slow tok(q, p)", slow), ("fast tok(q, p)", fast)]:
            e = tok(q, p, truncation="longest_first", max_length=MAX_LENGTH)
            if e["input_ids"] != golden["input_ids"] or e["token_type_ids"] != golden["token_type_ids"]:
                differences.append(f"pair of {lengths} tokens: golden keeps (query, passage) {kept(golden)} "
                                   f"ids {golden['input_ids']}; {name} keeps {kept(e)} ids {e['input_ids']}")
    print("tokenizers vs the goldens' ids:", "all agree" if not differences else "")
    for d in differences:
        print("  ", d)


def main():
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fast, slow, vocab_file = make_tokenizer(tmp)
        pairs = make_pairs(fast)
        models = {}
        for folder, seed, cls, config in MODELS:
            models[folder] = write_model(folder, seed, cls, config(), fast, vocab_file, pairs)
        write_torchscript(models["bert_cls"], fast, vocab_file)
        compare_slow(fast, slow, pairs)
    print("vocab size:", len(VOCAB))
    print("versions:", versions())


if __name__ == "__main__":
    main()
