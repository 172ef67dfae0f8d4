#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets: tests/fuzz/corpus/<target>/<seed> (a few small files each).

  tests/fuzz/make_corpus.py            rewrite every corpus folder (deterministic: the same bytes each run)

Needs only the Python standard library (no torch, no xxhash): the checkpoint seeds are pickled through stand-in
torch modules, and the checksum fields of the semantic-cache and envelope seeds are left zero because those two
targets recompute them before parsing (see their banners). Inputs made of several files use the split of their
target: NUL bytes between config.json, 1_Pooling/config.json, modules.json and sentence_bert_config.json
(fuzz_config), between tokenizer.json, vocab.txt and tokenizer_config.json (fuzz_tokenizer_load), between label
value, help, metric name and label name (fuzz_prometheus); newlines between texts (fuzz_capi_embed).
"""
import base64
import collections
import io
import json
import os
import pickle
import shutil
import struct
import sys
import types
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
OUT = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- safetensors -------------------------------------------------------------------------------------------------
def safetensors(tensors, metadata=None, pad_to=8):
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad_to:
        text += b" " * (-len(text) % pad_to)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def safetensors_seeds():
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    write("fuzz_safetensors", "two_f32.safetensors",
          safetensors({"a.weight": ("F32", [2, 3], f32), "a.bias": ("F32", [3], f32[:12])}, {"format": "pt"}))
    write("fuzz_safetensors", "mixed_dtypes.safetensors",
          safetensors({"h": ("F16", [4], b"\x00\x3c" * 4), "b": ("BF16", [2, 2], b"\x80\x3f" * 4),
                       "i": ("I64", [2], struct.pack("<2q", 7, -1)), "u": ("U8", [3], b"\x01\x02\x03"),
                       "s": ("F32", [0], b"")}))
    write("fuzz_safetensors", "unaligned.safetensors",
          safetensors({"x": ("F32", [2], struct.pack("<2f", 0.5, -0.5))}, pad_to=0))
    write("fuzz_safetensors", "empty_header.safetensors", safetensors({}))


# ---- quantized model file (brisk-quantized/1) ---------------------------------------------------------------------
def f32s(n, seed):
    return struct.pack(f"<{n}f", *[(((i + seed) * 37) % 17 - 8) / 64.0 for i in range(n)])


def quantized_model(config, word, linears, precisions, extra_files=None, distil=False):
    """A loadable brisk quantized model: `word` and `linears` give each layer's tensors (name -> (dtype, shape,
    bytes)); the f32 tensors the config implies are added here."""
    h, layers = config.get("dim", config.get("hidden_size")), config.get("n_layers", config.get("num_hidden_layers"))
    t = dict(word)
    t["embeddings.position_embeddings.weight"] = ("F32", [config["max_position_embeddings"], h],
                                                  f32s(config["max_position_embeddings"] * h, 1))
    if not distil:
        t["embeddings.token_type_embeddings.weight"] = ("F32", [config["type_vocab_size"], h],
                                                        f32s(config["type_vocab_size"] * h, 2))
    t["embeddings.LayerNorm.weight"] = ("F32", [h], struct.pack(f"<{h}f", *[1.0] * h))
    t["embeddings.LayerNorm.bias"] = ("F32", [h], f32s(h, 3))
    for i in range(layers):
        p = f"transformer.layer.{i}." if distil else f"encoder.layer.{i}."
        for ln in (["sa_layer_norm", "output_layer_norm"] if distil
                   else ["attention.output.LayerNorm", "output.LayerNorm"]):
            t[p + ln + ".weight"] = ("F32", [h], struct.pack(f"<{h}f", *[1.0] * h))
            t[p + ln + ".bias"] = ("F32", [h], f32s(h, 4))
    t.update(linears)
    size = {"F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I8": 1, "U8": 1}
    ordered = dict(sorted(t.items(), key=lambda kv: (-size[kv[1][0]], kv[0])))
    files = {"vocab.txt": "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n##s\nworld\n.\n",
             "1_Pooling/config.json": json.dumps({"word_embedding_dimension": h, "pooling_mode_mean_tokens": True})}
    files.update(extra_files or {})
    meta = {"brisk.format": "brisk-quantized/1", "brisk.config": json.dumps(config), "brisk.files": json.dumps(files),
            "brisk.precisions": json.dumps(precisions), "brisk.plan": "seed", "brisk.source_sha256": "",
            "brisk.report": json.dumps({"layers": list(precisions)})}
    return safetensors(ordered, meta)


def quantized_model_seeds():
    h, inter, vocab = 32, 64, 8
    config = {"model_type": "bert", "vocab_size": vocab, "hidden_size": h, "num_hidden_layers": 1,
              "num_attention_heads": 2, "intermediate_size": inter, "max_position_embeddings": 4,
              "type_vocab_size": 1}
    f16_pos, f16_neg = b"\x00\x2c", b"\x00\xac"  # 0.0625, -0.0625
    word = {"embeddings.word_embeddings.weight": ("U8", [vocab, h // 2], bytes(range(vocab * h // 2))),
            "embeddings.word_embeddings.weight_scale": ("F16", [vocab, 1], f16_pos * vocab),
            "embeddings.word_embeddings.weight_min": ("F16", [vocab, 1], f16_neg * vocab)}
    p = "encoder.layer.0."
    lin = {}
    for name, (o, i) in {"attention.self.query": (h, h), "attention.self.key": (h, h), "attention.self.value": (h, h),
                         "attention.output.dense": (h, h), "intermediate.dense": (inter, h),
                         "output.dense": (h, inter)}.items():
        lin[p + name + ".bias"] = ("F32", [o], f32s(o, 5))
    lin[p + "attention.self.query.weight"] = ("I8", [h, h], bytes((k * 7) % 256 for k in range(h * h)))
    lin[p + "attention.self.query.weight_scale"] = ("F32", [h], struct.pack(f"<{h}f", *[0.01] * h))
    lin[p + "attention.self.key.weight"] = ("BF16", [h, h], b"\x00\x3c" * (h * h))
    lin[p + "attention.self.value.weight"] = ("U8", [h, h // 2], bytes((k * 13) % 256 for k in range(h * h // 2)))
    lin[p + "attention.self.value.weight_scale"] = ("F16", [h, 1], f16_pos * h)
    lin[p + "attention.output.dense.weight"] = ("I8", [h, h], bytes((k * 3) % 256 for k in range(h * h)))
    lin[p + "attention.output.dense.weight_scale"] = ("F32", [1], struct.pack("<f", 0.02))
    lin[p + "intermediate.dense.weight"] = ("F32", [inter, h], f32s(inter * h, 6))
    lin[p + "output.dense.weight"] = ("U8", [h, inter // 2], bytes((k * 5) % 256 for k in range(h * inter // 2)))
    lin[p + "output.dense.weight_scale"] = ("F16", [h, 2], f16_pos * (2 * h))
    lin[p + "output.dense.weight_min"] = ("F16", [h, 2], f16_neg * (2 * h))
    precisions = {"embeddings.word_embeddings": {"precision": "int4-g32-min"},
                  p + "attention.self.query": {"precision": "int8-dynamic"},
                  p + "attention.self.key": {"precision": "bf16"},
                  p + "attention.self.value": {"precision": "int4-g32"},
                  p + "attention.output.dense": {"precision": "int8-static", "activation_scale": 0.05},
                  p + "output.dense": {"precision": "int4-g32-min"}}
    write("fuzz_quantized_model", "bert_mixed.safetensors", quantized_model(config, word, lin, precisions))

    # DistilBERT names, all f32 linears, int8 word embeddings with one scale a row.
    d, hidden = 8, 16
    dconfig = {"model_type": "distilbert", "vocab_size": vocab, "dim": d, "n_layers": 1, "n_heads": 2,
               "hidden_dim": hidden, "max_position_embeddings": 4, "activation": "relu"}
    dword = {"embeddings.word_embeddings.weight": ("I8", [vocab, d], bytes(range(vocab * d))),
             "embeddings.word_embeddings.weight_scale": ("F32", [vocab], struct.pack(f"<{vocab}f", *[0.5] * vocab))}
    dlin = {}
    for name, (o, i) in {"attention.q_lin": (d, d), "attention.k_lin": (d, d), "attention.v_lin": (d, d),
                         "attention.out_lin": (d, d), "ffn.lin1": (hidden, d), "ffn.lin2": (d, hidden)}.items():
        dlin["transformer.layer.0." + name + ".weight"] = ("F32", [o, i], f32s(o * i, 7))
        dlin["transformer.layer.0." + name + ".bias"] = ("F32", [o], f32s(o, 8))
    write("fuzz_quantized_model", "distilbert_int8_word.safetensors",
          quantized_model(dconfig, dword, dlin, {"embeddings.word_embeddings": {"precision": "int8"}},
                          {"modules.json": json.dumps([
                              {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                              {"idx": 1, "name": "1", "path": "1_Pooling",
                               "type": "sentence_transformers.models.Pooling"}])},
                          distil=True))


# ---- pytorch_model.bin -------------------------------------------------------------------------------------------
def install_fake_torch():
    """Stand-in torch modules so that pickle writes the globals torch.save writes, without torch installed."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*args):
        raise NotImplementedError

    def _rebuild_parameter(*args):
        raise NotImplementedError

    for f in (_rebuild_tensor_v2, _rebuild_parameter):
        f.__module__ = "torch._utils"
        f.__qualname__ = f.__name__
        setattr(utils, f.__name__, f)
    for n in ("FloatStorage", "HalfStorage", "LongStorage"):
        cls = type(n, (), {})
        cls.__module__ = "torch"
        setattr(torch, n, cls)
    torch._utils = utils
    sys.modules["torch"] = torch
    sys.modules["torch._utils"] = utils
    return torch, utils


class Storage:
    def __init__(self, kind, key, numel):
        self.kind, self.key, self.numel = kind, key, numel


class Tensor:
    def __init__(self, storage, offset, size, stride, parameter=False):
        self.storage, self.offset, self.size, self.stride, self.parameter = storage, offset, size, stride, parameter

    def __reduce__(self):
        torch = sys.modules["torch"]
        t = Tensor(self.storage, self.offset, self.size, self.stride)
        if self.parameter:
            return (torch._utils._rebuild_parameter, (t, False, collections.OrderedDict()))
        return (torch._utils._rebuild_tensor_v2,
                (self.storage, self.offset, self.size, self.stride, False, collections.OrderedDict()))


def checkpoint(state, records, protocol):
    torch = sys.modules["torch"]

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, Storage):
                return ("storage", getattr(torch, obj.kind), obj.key, "cpu", obj.numel)
            return None

    buf = io.BytesIO()
    P(buf, protocol=protocol).dump(state)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
        def put(name, data):  # a fixed timestamp keeps the seeds byte-identical between runs
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
        put("archive/data.pkl", buf.getvalue())
        put("archive/byteorder", "little")
        for key, data in records.items():
            put(f"archive/data/{key}", data)
        put("archive/version", "3\n")
    return out.getvalue()


def torch_seeds():
    install_fake_torch()
    six = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    s0 = Storage("FloatStorage", "0", 6)
    state = collections.OrderedDict([("w", Tensor(s0, 0, (2, 3), (3, 1))), ("wt", Tensor(s0, 0, (3, 2), (1, 3))),
                                     ("b", Tensor(Storage("HalfStorage", "1", 2), 0, (2,), (1,), parameter=True)),
                                     ("ids", Tensor(Storage("LongStorage", "2", 2), 1, (1,), (1,)))])
    records = {"0": six, "1": b"\x00\x3c\x00\xc0", "2": struct.pack("<2q", 3, 4)}
    write("fuzz_torch_checkpoint", "protocol2.bin", checkpoint(state, records, 2))
    write("fuzz_torch_checkpoint", "protocol4.bin", checkpoint(state, records, 4))
    write("fuzz_torch_checkpoint", "wrapped_state_dict.bin",
          checkpoint({"state_dict": state, "epoch": 3, "lr": 0.5, "tags": ["a", b"b", None, True]}, records, 2))
    for name in ("good.bin", "bad_strides.bin"):
        shutil.copy(os.path.join(DATA, "bad_checkpoints", name), os.path.join(OUT, "fuzz_torch_checkpoint", name))


# ---- config files ------------------------------------------------------------------------------------------------
def config_seeds():
    bert = {"model_type": "bert", "vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
            "num_attention_heads": 12, "intermediate_size": 1536, "max_position_embeddings": 512,
            "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "pad_token_id": 0}
    distil = {"model_type": "distilbert", "vocab_size": 100, "dim": 64, "n_layers": 2, "n_heads": 4,
              "hidden_dim": 128, "activation": "relu", "max_position_embeddings": 64}
    pooling = {"word_embedding_dimension": 384, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
               "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    sbert = {"max_seq_length": 256, "do_lower_case": False}
    j = lambda v: json.dumps(v, indent=1)
    write("fuzz_config", "minilm", "\0".join([j(bert), j(pooling), j(modules), j(sbert)]))
    write("fuzz_config", "distilbert_cls", "\0".join([j(distil), j(dict(pooling, pooling_mode_cls_token=True,
                                                                        pooling_mode_mean_tokens=False))]))
    write("fuzz_config", "bert_only", j({k: bert[k] for k in list(bert)[1:6]}))
    write("fuzz_config", "gelu_new_max", "\0".join([j(dict(bert, hidden_act="gelu_new")),
                                                    j(dict(pooling, pooling_mode_max_tokens=True,
                                                           pooling_mode_mean_tokens=False)), j(modules[:2]), "{}"]))
    # Qwen3-Embedding's layout: a decoder config, last-token pooling, Normalize, and the query prompt.
    with open(os.path.join(DATA, "tiny_qwen3", "config.json"), encoding="utf-8") as f:
        qwen3 = json.load(f)
    write("fuzz_config", "qwen3_lasttoken", "\0".join([
        j(qwen3), j(dict(pooling, pooling_mode_lasttoken=True, pooling_mode_mean_tokens=False, include_prompt=True)),
        j(modules), j(sbert), j({"prompts": {"query": "Instruct: find\nQuery:", "document": ""}})]))
    # Qwen3-Reranker's cross-encoder form: a one-label sequence classifier whose head skips the padding id.
    with open(os.path.join(DATA, "tiny_qwen3_reranker", "config.json"), encoding="utf-8") as f:
        write("fuzz_config", "qwen3_reranker", f.read())


# ---- tokenizer loading -------------------------------------------------------------------------------------------
VOCAB = (["[PAD]"] + [f"[unused{i}]" for i in range(3)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
         list("abcdefghijklmnopqrstuvwxyz.,!?'") + ["##s", "##ing", "##ed", "hello", "world", "the", "un", "##aff",
                                                   "##able", "é", "日", "本", "語", "##ö"])


def tokenizer_json(vocab, lowercase=True, strip_accents=None):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": vocab.index(t), "special": True, "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False} for t in specials],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": strip_accents, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing"},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(vocab)}},
    }, ensure_ascii=False)


def tokenizer_load_seeds():
    vocab_txt = "\n".join(VOCAB) + "\n"
    config = json.dumps({"do_lower_case": True, "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                         "cls_token": "[CLS]", "mask_token": "[MASK]", "tokenize_chinese_chars": True,
                         "strip_accents": None, "tokenizer_class": "BertTokenizer", "model_max_length": 512})
    write("fuzz_tokenizer_load", "all_three", "\0".join([tokenizer_json(VOCAB), vocab_txt, config]))
    write("fuzz_tokenizer_load", "cased_strip_accents",
          "\0".join([tokenizer_json(VOCAB, lowercase=False, strip_accents=True), vocab_txt]))
    write("fuzz_tokenizer_load", "vocab_and_config_only", "\0".join(["", vocab_txt, config]))
    write("fuzz_tokenizer_load", "vocab_only_crlf", "\0".join(["", vocab_txt.replace("\n", "\r\n")]))


# ---- tokenizer encode (first byte: max_seq_len - 2) ---------------------------------------------------------------
def tokenizer_encode_seeds():
    texts = {
        "english": "Hello, world! How do I reset my password?",
        "accents_cjk": "Café déjà vu — 日本語のテキスト, naïve RÉSUMÉ",
        "specials": "[CLS] question [SEP] answer [MASK] [UNK] [PAD]",
        "long_word": "pneumonoultramicroscopicsilicovolcanoconiosis " * 3 + "x" * 120,
        "controls_emoji": "tab\there\r\nnul\x00end \u200b zero-width 😀👍🏽 \ufffd",
    }
    for i, (name, text) in enumerate(texts.items()):
        write("fuzz_tokenizer_encode", name, bytes([[14, 254, 6, 30, 0][i]]) + text.encode("utf-8"))
    write("fuzz_tokenizer_encode", "invalid_utf8", b"\x40ok \xc3\x28 then \xed\xa0\x80 surrogate \xf4\x90 end \xff")
    write("fuzz_tokenizer_encode", "truncated_utf8", b"\x08abc \xe6\x97")


# ---- tokenizer.json beyond WordPiece: a Unigram pipeline (tokenizer.json NUL text NUL second text) --------------
def charsmap(pairs):
    """A SentencePiece precompiled charsmap: a darts-clone double array over single-byte keys, each leaf's value the
    offset of its NUL-terminated replacement. Root at unit 0 with offset 1; key byte c at unit 1 ^ c, its leaf at
    (1 ^ c) ^ 1 = c."""
    strings, units = b"", [0] * 256
    units[0] = 1 << 10
    for key, replacement in pairs:
        c = key[0]
        units[1 ^ c] = (1 << 10) | (1 << 8) | c
        units[c] = (1 << 31) | len(strings)
        strings += replacement.encode("utf-8") + b"\0"
    trie = b"".join(struct.pack("<I", u) for u in units)
    return base64.b64encode(struct.pack("<I", len(trie)) + trie + strings).decode("ascii")


def unigram_json(blob, prepend="always", extra_normalizers=()):
    vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["\u2581", -2.0], ["\u2581hello", -3.0],
             ["h", -5.0], ["e", -5.0], ["l", -5.0], ["o", -5.0], ["w", -5.0], ["r", -5.0], ["d", -5.0], ["lo", -4.0],
             ["\u2581w", -4.5], ["or", -4.2], ["\u65e5", -6.0], ["\u672c", -6.0]]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>"])]
    added.append({"id": len(vocab), "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": False,
                  "normalized": True, "special": True})
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": blob}, {"type": "Strip", "strip_left": False,
                                                                    "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}, *extra_normalizers]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": prepend, "split": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                                              "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": prepend, "split": True},
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False},
    }, ensure_ascii=False)


def byte_level_bpe_json(pre_tokenizer, post_processor):
    """A byte-level BPE: the 256 characters of GPT-2's bytes_to_unicode, a few merges, Qwen-style specials."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars, extra = {}, 256
    for b in range(256):
        chars[b] = chr(b) if b in printable else chr(extra)
        extra += 0 if b in printable else 1
    vocab = {chars[b]: b for b in range(256)}
    merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("i", "n"), ("\u0120", "w")]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    added = [{"id": len(vocab) + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(["<|endoftext|>", "<|im_start|>"])]
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"}, "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }, ensure_ascii=False)


QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")


def hf_tokenizer_seeds():
    qwen = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": QWEN_PATTERN}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}
    end = {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                                    {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
           "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [261], "tokens": ["<|endoftext|>"]}}}
    write("fuzz_hf_tokenizer", "bpe_qwen",
          "\0".join([byte_level_bpe_json(qwen, end), "<|im_start|>user\nthe WINE's 12345  in\r\n\tthe end  ",
                      "I'M fine \U0001F44D"]))
    write("fuzz_hf_tokenizer", "bpe_gpt2",
          "\0".join([byte_level_bpe_json({"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                           "use_regex": True},
                                          {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                           "use_regex": True}),
                      "they're here,   the 3 tinned\n", ""]))
    mapped = charsmap([(b"A", "a"), (b"H", "h"), (b"\t", " "), (b"Z", "")])
    write("fuzz_hf_tokenizer", "unigram_charsmap",
          "\0".join([unigram_json(mapped), "Hello  World\t<mask> ZZ \u65e5\u672c \U0001F44D\U0001F3FD", "w\u00f6rld"]))
    write("fuzz_hf_tokenizer", "unigram_empty_trie_first_nfkc",
          "\0".join([unigram_json(base64.b64encode(b"\0\0\0\0").decode(), "first", [{"type": "NFKC"}]),
                      "</s>x <s>\u3000\uff48\uff45\uff4c\uff4c\uff4f", ""]))
    write("fuzz_hf_tokenizer", "invalid_utf8_text", unigram_json(mapped).encode() + b"\0ab\xc3(\0\xff")


# ---- semantic cache file (dim 8; payload size and checksum are fixed up by the target) -----------------------------
def semantic_cache_seeds():
    def entry(tenant, q, a, tags, ttl, emb):
        b = b"".join(struct.pack("<I", len(s)) + s for s in (tenant, q, a))
        b += struct.pack("<I", len(tags)) + b"".join(struct.pack("<I", len(t)) + t for t in tags)
        return b + struct.pack("<q", ttl) + struct.pack("<8f", *emb)

    def file(entries, dim=8, model_id=None):  # model_id None: version 1, without one
        payload = b"".join(entries)
        if model_id is not None:
            payload = struct.pack("<I", len(model_id)) + model_id + payload
        version = 1 if model_id is None else 2
        return b"BRSKSEMC" + struct.pack("<IIQQQ", version, dim, len(entries), len(payload), 0) + payload

    unit = [1, 0, 0, 0, 0, 0, 0, 0]
    half = [0.5] * 4 + [0.0] * 4
    never = (1 << 63) - 1
    write("fuzz_semantic_cache_file", "two_entries", file([
        entry(b"", b"what is brisk?", b"an inference library", [b"faq"], never, unit),
        entry(b"acme", b"how do i reset my password?", b"use the link", [b"faq", b"v2"], 3_600_000_000_000, half)]))
    write("fuzz_semantic_cache_file", "expired_entry", file([entry(b"t", b"old question", b"stale", [], 0, unit)]))
    write("fuzz_semantic_cache_file", "empty", file([]))
    write("fuzz_semantic_cache_file", "v2_model_id", file([entry(b"", b"what is brisk?", b"a library", [], never, unit)],
                                                         model_id=b"all-MiniLM-L6-v2-0123456789abcdef-mean-n"))
    write("fuzz_semantic_cache_file", "bad_embedding", file([entry(b"", b"q", b"a", [], never, [0.0] * 8)]))


# ---- value envelope (format 2, codec 7, key KEY; the checksum is fixed up by the target) --------------------------
ENVELOPE_KEY = b"brisk:fuzz:key"  # the key fuzz_value_envelope expects


def envelope(codec, tags, payload, key=ENVELOPE_KEY, version=2, flags=0, mac=b""):
    block = b"".join(struct.pack("<I", len(t)) + t for t in tags)
    header = (b"BRKV" + bytes([version, flags, 0, 0]) + struct.pack("<IIII", codec, len(key), len(block), 0) +
              struct.pack("<Q", len(payload)) + b"\0" * 8)
    return header + key + block + payload + mac


def envelope_seeds():
    write("fuzz_value_envelope", "float_vector", envelope(7, [b"faq", b"model:minilm"], struct.pack("<4f", 1, 2, 3, 4)))
    write("fuzz_value_envelope", "no_tags", envelope(7, [], b"plain payload"))
    write("fuzz_value_envelope", "empty", envelope(7, [b""], b""))
    write("fuzz_value_envelope", "other_codec", envelope(9, [b"x"], b"y"))
    write("fuzz_value_envelope", "other_key", envelope(7, [b"x"], b"y", key=b"brisk:fuzz:other"))
    write("fuzz_value_envelope", "signed_bad_mac", envelope(7, [b"t"], b"payload", flags=1, mac=b"\xaa" * 32))
    write("fuzz_value_envelope", "format1", envelope(7, [b"t"], b"payload", version=1))


def prometheus_seeds():
    write("fuzz_prometheus", "plain", "minilm\0Requests completed.\0brisk_requests_total\0model")
    write("fuzz_prometheus", "escapes", 'a "quoted" \\ back\nslash\0line one\nline \\two\0brisk_x\0stage')
    write("fuzz_prometheus", "utf8_and_invalid", "Grüße 日本 \xff\0help \xc3\0brisk_y:z\0__reserved")
    write("fuzz_prometheus", "bad_names", "v\0h\09bad name\0le")


# ---- C API embed (texts separated by newlines) --------------------------------------------------------------------
def capi_seeds():
    write("fuzz_capi_embed", "two_texts", "How do I reset my password?\nWhere is my order?")
    write("fuzz_capi_embed", "unicode", "Café déjà vu — 日本語\n😀\n")
    write("fuzz_capi_embed", "invalid_utf8", b"fine\nbroken \xc3\x28 text")
    write("fuzz_capi_embed", "long", "word " * 200)


# ---- few-shot intent heads: examples files and head files (brisk-intent-head/1) ------------------------------------
def intent_head(labels, dim, metadata_overrides=None, weight_dtype="F32"):
    k = len(labels)
    metadata = {"format": "brisk-intent-head", "version": "1", "labels": json.dumps(labels),
                "embedding_model_id": "all-MiniLM-L6-v2:0123456789abcdef:mean:norm", "unknown_threshold": "0.35",
                "fit_options": json.dumps({"l2": 0.01, "max_iterations": 1000, "tolerance": 1e-6}),
                "training_stats": json.dumps({"iterations": 12, "converged": True, "objective": 0.25,
                                              "gradient_norm": 5e-7, "training_accuracy": 1.0,
                                              "examples_per_label": [2] * k})}
    metadata.update(metadata_overrides or {})
    weight = f32s(k * dim, 3) if weight_dtype == "F32" else b"\x00\x3c" * (k * dim)
    return safetensors({"intent_head.weight": (weight_dtype, [k, dim], weight),
                        "intent_head.bias": ("F32", [k], f32s(k, 4))}, metadata)


def intent_seeds():
    write("fuzz_intent_examples", "banking", "# intents\ncard_lost\tI lost my card\ncard_lost\tmy card was stolen\n"
          "balance\twhat is my balance?\r\nbalance\thow much money do I have\n\n")
    write("fuzz_intent_examples", "one_example", "a\tone\na\ttwo\nb\tthree\n")
    write("fuzz_intent_examples", "no_tab", "a\tone\na two\n")
    write("fuzz_intent_examples", "conflict", "a\tsame\na\tother\nb\tsame\nb\tmore\n")
    write("fuzz_intent_examples", "unicode", "café\tdéjà vu 日本\ncafé\t😀\nthé\ta\tb\nthé\tc\n".encode() + b"x\t\xff\n")
    write("fuzz_intent_head", "three_labels.safetensors", intent_head(["card_lost", "balance", "refund"], 4))
    write("fuzz_intent_head", "unicode_labels.safetensors", intent_head(["café", "日本"], 2))
    write("fuzz_intent_head", "f16_weight.safetensors", intent_head(["a", "b"], 3, weight_dtype="F16"))
    write("fuzz_intent_head", "bad_threshold.safetensors", intent_head(["a", "b"], 3, {"unknown_threshold": "1.5"}))
    write("fuzz_intent_head", "label_mismatch.safetensors", intent_head(["a", "b"], 3, {"labels": '["a"]'}))


# ---- semantic-cache pair verifiers (brisk-pair-verifier/1) and labelled pairs files --------------------------------
PAIR_TEXT_FEATURES = ["cosine", "word_jaccard", "incoming_only_words", "cached_only_words", "numbers_differ",
                      "numbers_shared", "negation_differs", "entity_difference", "length_ratio", "polarity_guard",
                      "number_guard", "entity_guard", "content_jaccard", "incoming_only_content",
                      "cached_only_content", "one_word_substituted"]


def pair_verifier(dim, metadata_overrides=None, scale_value=1.0):
    n = len(PAIR_TEXT_FEATURES) + 2 * dim
    metadata = {"format": "brisk-pair-verifier", "version": "1",
                "embedding_model_id": "all-MiniLM-L6-v2:0123456789abcdef:mean:norm", "dim": str(dim),
                "features": json.dumps(PAIR_TEXT_FEATURES, separators=(",", ":")), "bias": "-0.5",
                "threshold": "0.9", "target_precision": "0.95", "fit_report": json.dumps({"l2": 0.1})}
    metadata.update(metadata_overrides or {})
    return safetensors({"pair_verifier.mean": ("F32", [n], f32s(n, 5)),
                        "pair_verifier.scale": ("F32", [n], struct.pack(f"<{n}f", *([scale_value] * n))),
                        "pair_verifier.weight": ("F32", [n], f32s(n, 6))}, metadata)


def pair_verifier_trees(feature, left, right, threshold, value, roots, metadata_overrides=None):
    """A trees verifier (model "trees"): node arrays as brisk::PairTrees holds them."""
    metadata = {"format": "brisk-pair-verifier", "version": "1", "model": "trees",
                "embedding_model_id": "all-MiniLM-L6-v2:0123456789abcdef:mean:norm", "dim": "2",
                "features": json.dumps(PAIR_TEXT_FEATURES, separators=(",", ":")), "bias": "0.25",
                "threshold": "0.5", "target_precision": "0.95", "fit_report": json.dumps({"model": "trees"})}
    metadata.update(metadata_overrides or {})
    ints = lambda v: ("I32", [len(v)], struct.pack(f"<{len(v)}i", *v))
    floats = lambda v: ("F32", [len(v)], struct.pack(f"<{len(v)}f", *v))
    return safetensors({"pair_verifier.tree_feature": ints(feature), "pair_verifier.tree_left": ints(left),
                        "pair_verifier.tree_right": ints(right), "pair_verifier.tree_roots": ints(roots),
                        "pair_verifier.tree_threshold": floats(threshold),
                        "pair_verifier.tree_value": floats(value)}, metadata)


def pair_verifier_seeds():
    # Two trees: a split on the cosine (feature 0) with two leaves, and a single leaf.
    write("fuzz_pair_verifier", "trees.safetensors",
          pair_verifier_trees([0, -1, -1, -1], [1, -1, -1, -1], [2, -1, -1, -1], [0.8, 0, 0, 0],
                              [0, -0.5, 0.7, 0.1], [0, 3]))
    write("fuzz_pair_verifier", "trees_cycle.safetensors",
          pair_verifier_trees([0, -1, -1], [0, -1, -1], [2, -1, -1], [0.8, 0, 0], [0, -0.5, 0.7], [0]))
    write("fuzz_pair_verifier", "dim4.safetensors", pair_verifier(4))
    write("fuzz_pair_verifier", "dim1.safetensors", pair_verifier(1))
    write("fuzz_pair_verifier", "zero_scale.safetensors", pair_verifier(2, scale_value=0.0))
    write("fuzz_pair_verifier", "dim_mismatch.safetensors", pair_verifier(2, {"dim": "3"}))
    write("fuzz_pair_verifier", "bad_threshold.safetensors", pair_verifier(2, {"threshold": "nan"}))
    write("fuzz_pair_rows", "five_columns", "label\tcategory\tcached\tincoming\tsplit\n"
          "1\tparaphrase\tHow do I reset my PIN?\tI forgot my PIN\ttrain\n"
          "0\tnumber_change\tSend 500 pounds\tSend 5000 pounds\theldout\r\n\n")
    write("fuzz_pair_rows", "four_columns", "label\tcategory\tcached\tincoming\n0\tnegation\tcan I\tcan't I\n")
    write("fuzz_pair_rows", "bad_label", "label\tcategory\tcached\tincoming\n2\tx\ty\tz\n")
    write("fuzz_pair_rows", "ragged", "label\tcategory\tcached\tincoming\n1\tx\ty\n")
    write("fuzz_pair_rows", "unicode", "label\tcategory\tcached\tincoming\n1\tparaphrase\tcafé ?\t日本 😀\n".encode()
          + b"1\tx\t\xff\ty\n")


# ---- traceparent: W3C Trace Context level 1, section 3.2.3's example and the rules of 3.2.2 and 3.2.4 -------------
def traceparent_seeds():
    tid, pid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    write("fuzz_traceparent", "spec_sampled", f"00-{tid}-{pid}-01")
    write("fuzz_traceparent", "spec_not_sampled", f"00-{tid}-{pid}-00")
    write("fuzz_traceparent", "zero_trace_id", f"00-{'0' * 32}-{pid}-01")
    write("fuzz_traceparent", "zero_parent_id", f"00-{tid}-{'0' * 16}-01")
    write("fuzz_traceparent", "version_ff", f"ff-{tid}-{pid}-01")
    write("fuzz_traceparent", "uppercase", f"00-{tid.upper()}-{pid}-01")
    write("fuzz_traceparent", "future_version", f"cc-{tid}-{pid}-01-what-the-future-will-be-like")
    write("fuzz_traceparent", "future_bad_tail", f"cc-{tid}-{pid}-01.x")
    write("fuzz_traceparent", "v00_too_long", f"00-{tid}-{pid}-01-")
    write("fuzz_traceparent", "control_bytes", b"00-\n\x01\xff" + b"a" * 60)
def capacity_curve_seeds():
    write("fuzz_capacity_curve", "minilm.json", json.dumps(
        {"model": "all-MiniLM-L6-v2", "seq": 16, "threads": 2, "device": "cpu", "jitter_cv": 0.04,
         "batch_ms": {str(b): round(1.9 + 0.45 * (b - 1), 3) for b in range(1, 33)}}, indent=2))
    write("fuzz_capacity_curve", "one_size.json", '{"batch_ms":{"1":5}}')
    write("fuzz_capacity_curve", "negative.json", '{"batch_ms":{"1":1,"2":-1}}')
    write("fuzz_capacity_curve", "decreasing.json", '{"batch_ms":{"1":3,"2":2}}')
    write("fuzz_capacity_curve", "gap.json", '{"batch_ms":{"1":1,"3":2}}')
    write("fuzz_capacity_curve", "bad_types.json", '{"seq":"x","batch_ms":{"1":"fast"},"jitter_cv":null}')
    write("fuzz_capacity_curve", "extremes.json", '{"jitter_cv":10,"batch_ms":{"1":1e-300,"2":1e300}}')


def text_lines_seeds():
    write("fuzz_text_lines", "lf", "first text\nsecond text\n")
    write("fuzz_text_lines", "crlf_no_final_newline", "first\r\nsecond\r\nlast")
    write("fuzz_text_lines", "comments_and_blanks", "# header\n\n\r\ntext\n#tag\n  # indented\n")
    write("fuzz_text_lines", "only_comments", "# a\n#b\n")
    write("fuzz_text_lines", "empty", "")
    write("fuzz_text_lines", "tsv_and_cr_inside", "q\ta\r\nx\ry\r\r\n\r")
    write("fuzz_text_lines", "binary", b"\x00\xff\n\xc3\x28\n\x00")


# ---- cgroup v2 cpu.max: "$MAX $PERIOD" (the kernel's Documentation/admin-guide/cgroup-v2.rst) ----------------------
def cgroup_cpu_max_seeds():
    write("fuzz_cgroup_cpu_max", "no_quota", "max 100000\n")
    write("fuzz_cgroup_cpu_max", "one_and_a_half", "150000 100000\n")
    write("fuzz_cgroup_cpu_max", "half", "50000 100000\n")
    write("fuzz_cgroup_cpu_max", "huge_quota", "9223372036854775807 1000\n")
    write("fuzz_cgroup_cpu_max", "overflow", "99999999999999999999999 100000\n")
    write("fuzz_cgroup_cpu_max", "zero_period", "max 0\n")
    write("fuzz_cgroup_cpu_max", "no_period", "max")


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    safetensors_seeds()
    quantized_model_seeds()
    torch_seeds()
    config_seeds()
    tokenizer_load_seeds()
    tokenizer_encode_seeds()
    hf_tokenizer_seeds()
    semantic_cache_seeds()
    envelope_seeds()
    prometheus_seeds()
    capi_seeds()
    intent_seeds()
    pair_verifier_seeds()
    traceparent_seeds()
    capacity_curve_seeds()
    text_lines_seeds()
    cgroup_cpu_max_seeds()
    n = sum(len(fs) for _, _, fs in os.walk(OUT))
    print(f"wrote {n} seeds under {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
