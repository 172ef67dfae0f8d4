#!/usr/bin/python3
"""Writes a tiny random BERT checkpoint in two formats for brisk's model-loading tests.

    /usr/bin/python3 tests/data/make_tiny_checkpoint.py      # rewrites tests/data/tiny_bert{,_st}/

Outputs (same weights, fixed seed):
  tiny_bert/config.json, tiny_bert/pytorch_model.bin   torch.save'd state dict (zip format), written the way
      a Hugging Face BertForMaskedLM checkpoint is: "bert." prefix, old "LayerNorm.gamma"/"LayerNorm.beta" names
      in the embeddings, a pooler and an MLM head (cls.*) that the loader must ignore, position_ids buffer.
  tiny_bert_st/config.json, tiny_bert_st/model.safetensors   the BertModel names without prefix, written by
      the small pure-Python safetensors writer below (no safetensors package needed).
  tiny_bert/README.md   the generator's versions.
  bad_checkpoints/*.bin   malformed torch.save-style zip archives (truncated pickle, unknown opcode, missing
      storage record, strides outside the storage, a broadcast view far larger than its storage) that the C++
      reader must reject without crashing or allocating.

Shapes: hidden 8, 2 heads, 2 layers, intermediate 16, vocab 20, max_position 16, type_vocab 2.
"""
import collections
import io
import json
import os
import pickle
import struct
import sys
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 1234
CONFIG = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "vocab_size": 20,
    "hidden_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 16,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
}


def bert_model_state(gen):
    """name -> tensor, BertModel naming (no prefix), in BertModel.state_dict() order."""
    c = CONFIG
    h, inter = c["hidden_size"], c["intermediate_size"]

    def rnd(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32) * 0.5

    s = collections.OrderedDict()
    s["embeddings.position_ids"] = torch.arange(c["max_position_embeddings"], dtype=torch.int64).unsqueeze(0)
    s["embeddings.word_embeddings.weight"] = rnd(c["vocab_size"], h)
    s["embeddings.position_embeddings.weight"] = rnd(c["max_position_embeddings"], h)
    s["embeddings.token_type_embeddings.weight"] = rnd(c["type_vocab_size"], h)
    s["embeddings.LayerNorm.weight"] = 1.0 + rnd(h) * 0.1
    s["embeddings.LayerNorm.bias"] = rnd(h) * 0.1
    for i in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            s[p + f"attention.self.{n}.weight"] = rnd(h, h)
            s[p + f"attention.self.{n}.bias"] = rnd(h)
        s[p + "attention.output.dense.weight"] = rnd(h, h)
        s[p + "attention.output.dense.bias"] = rnd(h)
        s[p + "attention.output.LayerNorm.weight"] = 1.0 + rnd(h) * 0.1
        s[p + "attention.output.LayerNorm.bias"] = rnd(h) * 0.1
        s[p + "intermediate.dense.weight"] = rnd(inter, h)
        s[p + "intermediate.dense.bias"] = rnd(inter)
        s[p + "output.dense.weight"] = rnd(h, inter)
        s[p + "output.dense.bias"] = rnd(h)
        s[p + "output.LayerNorm.weight"] = 1.0 + rnd(h) * 0.1
        s[p + "output.LayerNorm.bias"] = rnd(h) * 0.1
    s["pooler.dense.weight"] = rnd(h, h)
    s["pooler.dense.bias"] = rnd(h)
    return s


def as_masked_lm_checkpoint(state, gen):
    """The same weights as a BertForMaskedLM state dict would name them (old gamma/beta in the embeddings)."""
    out = collections.OrderedDict()
    for name, t in state.items():
        if name == "embeddings.LayerNorm.weight":
            name = "embeddings.LayerNorm.gamma"
        elif name == "embeddings.LayerNorm.bias":
            name = "embeddings.LayerNorm.beta"
        out["bert." + name] = t
    h, v = CONFIG["hidden_size"], CONFIG["vocab_size"]
    out["cls.predictions.bias"] = torch.zeros(v)
    out["cls.predictions.transform.dense.weight"] = torch.randn(h, h, generator=gen)
    out["cls.predictions.transform.dense.bias"] = torch.zeros(h)
    out["cls.predictions.transform.LayerNorm.weight"] = torch.ones(h)
    out["cls.predictions.transform.LayerNorm.bias"] = torch.zeros(h)
    out["cls.predictions.decoder.weight"] = out["bert.embeddings.word_embeddings.weight"]  # tied, as in HF
    # A real state_dict() carries a `_metadata` attribute (module versions); keep it so the C++ reader sees it.
    out._metadata = collections.OrderedDict([("", {"version": 1}), ("bert", {"version": 1})])
    return out


SAFETENSORS_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
                      torch.int32: "I32", torch.int8: "I8", torch.uint8: "U8"}


def write_safetensors(path, tensors, metadata):
    """Minimal safetensors writer: u64 LE header length, JSON header padded with spaces to 8 bytes, raw data."""
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = t.contiguous()
        raw = t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": SAFETENSORS_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


class _FakeStorage:
    """Pickled through persistent_id as torch.save does: ('storage', torch.FloatStorage, key, 'cpu', numel)."""

    def __init__(self, key, numel):
        self.key, self.numel = key, numel


class _FakeTensor:
    """Pickles as torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...) with any size/stride."""

    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2,
                (self.storage, self.offset, self.size, self.stride, False, collections.OrderedDict()))


class _StatePickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _FakeStorage):
            return ("storage", torch.FloatStorage, obj.key, "cpu", obj.numel)
        return None


def _archive(path, pkl, records):
    """A torch.save-style zip: <name>/data.pkl, <name>/data/<key>, <name>/version (stored, uncompressed)."""
    name = os.path.splitext(os.path.basename(path))[0]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(f"{name}/data.pkl", pkl)
        for key, data in records.items():
            z.writestr(f"{name}/data/{key}", data)
        z.writestr(f"{name}/version", "3\n")


def write_bad_checkpoints(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    four_floats = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)

    def pickled(state):
        buf = io.BytesIO()
        _StatePickler(buf, protocol=2).dump(state)
        return buf.getvalue()

    good = pickled(collections.OrderedDict(w=_FakeTensor(_FakeStorage("0", 4), 0, (4,), (1,))))
    _archive(os.path.join(out_dir, "good.bin"), good, {"0": four_floats})
    _archive(os.path.join(out_dir, "truncated_pickle.bin"), good[: len(good) // 2], {"0": four_floats})
    _archive(os.path.join(out_dir, "unknown_opcode.bin"), good[:2] + b"\xff" + good[2:], {"0": four_floats})
    _archive(os.path.join(out_dir, "missing_record.bin"), good, {})
    strided = pickled(collections.OrderedDict(w=_FakeTensor(_FakeStorage("0", 4), 1, (4,), (100,))))
    _archive(os.path.join(out_dir, "bad_strides.bin"), strided, {"0": four_floats})
    # A broadcast (stride-0) view of 2^24 x 64 elements over one stored float: must be refused, not materialized.
    broadcast = pickled(collections.OrderedDict(w=_FakeTensor(_FakeStorage("0", 1), 0, (1 << 24, 64), (0, 0))))
    _archive(os.path.join(out_dir, "broadcast_view.bin"), broadcast, {"0": struct.pack("<f", 1.0)})


def main():
    gen = torch.Generator().manual_seed(SEED)
    state = bert_model_state(gen)
    bin_dir = os.path.join(HERE, "tiny_bert")
    st_dir = os.path.join(HERE, "tiny_bert_st")
    os.makedirs(bin_dir, exist_ok=True)
    os.makedirs(st_dir, exist_ok=True)
    for d in (bin_dir, st_dir):
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(CONFIG, f, indent=2)
            f.write("\n")
    torch.save(as_masked_lm_checkpoint(state, gen), os.path.join(bin_dir, "pytorch_model.bin"))
    versions = {"generator": "tests/data/make_tiny_checkpoint.py", "seed": str(SEED), "torch": torch.__version__,
                "python": sys.version.split()[0], "format": "pt"}
    write_safetensors(os.path.join(st_dir, "model.safetensors"), state, versions)
    with open(os.path.join(bin_dir, "README.md"), "w") as f:
        f.write("# tiny_bert\n\nA tiny random BERT (hidden 8, 2 heads, 2 layers, intermediate 16, vocab 20,\n"
                "max_position 16, type_vocab 2) for brisk's loading tests. `pytorch_model.bin` and\n"
                "`../tiny_bert_st/model.safetensors` hold the same weights. Regenerate with\n"
                "`/usr/bin/python3 tests/data/make_tiny_checkpoint.py`.\n\n")
        for k, v in versions.items():
            f.write(f"- {k}: {v}\n")
    write_bad_checkpoints(os.path.join(HERE, "bad_checkpoints"))
    print("wrote", bin_dir, st_dir, "and bad_checkpoints/")


if __name__ == "__main__":
    main()
