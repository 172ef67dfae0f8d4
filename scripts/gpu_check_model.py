#!/usr/bin/env python3
"""The model file that scripts/gpu-check carries to a GPU machine, and its rebuild there.

    gpu_check_model.py pack SRC.safetensors DST.safetensors.gz [--pure]
        fp32 -> fp16, except the word-embedding table ("*word_embeddings.weight"), which becomes int8 with one fp32
        scale per row (symmetric: scale = max|row| / 127, q = round-half-even(x / scale) in [-127, 127]) plus a
        "<name>.gpu_check_row_scale" tensor. Each fp16 tensor is stored as its low bytes, then its high bytes (sign,
        exponent: these compress), and the file is gzipped. all-MiniLM-L6-v2: 90.9 MB -> 30.0 MB (its fp16 copy is
        45.4 MB; without the gzip 33.8 MB). The metadata records the rows' cosine against the fp32 rows (mean and
        worst) as rebuilt below.
    gpu_check_model.py unpack SRC.safetensors.gz DST.safetensors [--pure]
        the carried file -> an all-fp16 model.safetensors: each int8 row times its scale, rounded once to fp16. Every
        tensor of the source model is there, with its shape; the scale tensors are gone.
    --pure: the pure-Python path even where numpy is importable (both paths write the same bytes: the products and
    quotients are computed in float64, where int8 x fp32 is exact, then rounded once, and numpy's and struct's
    float64 -> fp16/fp32 conversions both round to nearest even).
The carried file is not named model.safetensors, so that nothing takes it for a model before the rebuild."""
import array
import gzip
import hashlib
import json
import math
import os
import struct
import sys
import time

SCALE_SUFFIX = ".gpu_check_row_scale"
META_ROWS = "gpu_check.int8_rows"
META_PLANES = "gpu_check.f16_byte_planes"  # "1": each F16 tensor's bytes are its low bytes, then its high bytes


def read(path):
    raw = open(path, "rb").read()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    if len(raw) < 8:
        sys.exit(f"gpu_check_model: {path} is {len(raw)} bytes; expected a safetensors file (8-byte header length)")
    (n,) = struct.unpack("<Q", raw[:8])
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError as e:
        sys.exit(f"gpu_check_model: {path}'s header is not JSON ({e}); expected a safetensors file")
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    tensors = {}
    for name, t in header.items():
        lo, hi = t["data_offsets"]
        tensors[name] = (t["dtype"], t["shape"], raw[base + lo:base + hi])
    return tensors, meta


def write(path, tensors, meta):
    with open(path, "wb") as f:
        f.write(serialize(tensors, meta))


def serialize(tensors, meta):
    header, off = {}, 0
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    if meta:
        header["__metadata__"] = {k: str(v) for k, v in meta.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return b"".join([struct.pack("<Q", len(h)), h] + [tensors[name][2] for name in sorted(tensors)])


def to_planes(data):  # little-endian fp16: low bytes, then high bytes
    return data[0::2] + data[1::2]


def from_planes(data):
    out, half = bytearray(len(data)), len(data) // 2
    out[0::2], out[1::2] = data[:half], data[half:]
    return bytes(out)


def have_numpy(pure):
    if pure:
        return None
    try:
        import numpy
        return numpy
    except ImportError:
        return None


def f32_to_f16(data, np):
    if np is not None:
        return np.frombuffer(data, dtype="<f4").astype("<f2").tobytes()
    vals = array.array("f", data)
    if sys.byteorder != "little":
        vals.byteswap()
    out, step = [], 1 << 20
    for i in range(0, len(vals), step):
        chunk = vals[i:i + step]
        out.append(struct.pack(f"<{len(chunk)}e", *chunk))
    return b"".join(out)


def quantize_rows(data, rows, cols, np):
    """-> (int8 bytes, fp32 scale bytes, the rebuilt fp16 rows' cosines against the fp32 rows: mean, worst)."""
    if np is not None:
        x = np.frombuffer(data, dtype="<f4").reshape(rows, cols)
        scale = (np.abs(x).max(axis=1) / np.float32(127)).astype("<f4")
        scale[scale == 0] = 1
        q = np.clip(np.rint(x.astype("<f8") / scale.astype("<f8")[:, None]), -127, 127).astype("i1")
        r = (q.astype("<f8") * scale.astype("<f8")[:, None]).astype("<f2").astype("<f8")
        xd = x.astype("<f8")
        den = np.linalg.norm(xd, axis=1) * np.linalg.norm(r, axis=1)
        cos = np.where(den > 0, (xd * r).sum(axis=1) / np.where(den > 0, den, 1), 1.0)
        return q.tobytes(), scale.tobytes(), float(cos.mean()), float(cos.min())
    x = array.array("f", data)
    if sys.byteorder != "little":
        x.byteswap()
    qs, scales, cos_sum, cos_min = array.array("b"), array.array("f"), 0.0, 1.0
    h = struct.Struct(f"<{cols}e")
    for i in range(rows):
        row = x[i * cols:(i + 1) * cols]
        m = max(map(abs, row))
        # float64 quotient rounded to fp32: the same value as numpy's fp32 division (double rounding is innocuous).
        s = struct.unpack("<f", struct.pack("<f", m / 127))[0] if m > 0 else 1.0
        q = [min(127, max(-127, round(v / s))) for v in row]
        qs.extend(q)
        scales.append(s)
        r = h.unpack(h.pack(*[v * s for v in q]))
        dot, nx, nr = sum(a * b for a, b in zip(row, r)), sum(a * a for a in row), sum(b * b for b in r)
        c = dot / math.sqrt(nx * nr) if nx > 0 and nr > 0 else 1.0
        cos_sum += c
        cos_min = min(cos_min, c)
    if sys.byteorder != "little":
        scales.byteswap()
    return qs.tobytes(), scales.tobytes(), cos_sum / rows, cos_min


def dequantize_rows(q, scale, rows, cols, np):
    if np is not None:
        qq = np.frombuffer(q, dtype="i1").reshape(rows, cols).astype("<f8")
        s = np.frombuffer(scale, dtype="<f4").astype("<f8")
        return (qq * s[:, None]).astype("<f2").tobytes()
    qq, s = array.array("b", q), array.array("f", scale)
    if sys.byteorder != "little":
        s.byteswap()
    h = struct.Struct(f"<{cols}e")
    return b"".join(h.pack(*[v * s[i] for v in qq[i * cols:(i + 1) * cols]]) for i in range(rows))


def pack(src, dst, pure):
    np, t0 = have_numpy(pure), time.time()
    tensors, meta = read(src)
    out, table = {}, None
    for name, (dtype, shape, data) in tensors.items():
        if dtype == "F32" and name.endswith("word_embeddings.weight") and len(shape) == 2:
            q, scale, cmean, cmin = quantize_rows(data, shape[0], shape[1], np)
            out[name] = ("I8", shape, q)
            out[name + SCALE_SUFFIX] = ("F32", [shape[0]], scale)
            table = (name, shape, cmean, cmin)
        elif dtype == "F32":
            out[name] = ("F16", shape, f32_to_f16(data, np))
        else:
            out[name] = (dtype, shape, data)
    meta = dict(meta)
    if table:
        meta[META_ROWS] = table[0]
        meta["gpu_check.row_cosine_mean"] = f"{table[2]:.7f}"
        meta["gpu_check.row_cosine_worst"] = f"{table[3]:.7f}"
    meta["gpu_check.source_sha256"] = hashlib.sha256(open(src, "rb").read()).hexdigest()
    meta[META_PLANES] = "1"
    out = {k: (dt, s, to_planes(d) if dt == "F16" else d) for k, (dt, s, d) in out.items()}
    raw = serialize(out, meta)
    with open(dst, "wb") as f:
        f.write(gzip.compress(raw, compresslevel=6, mtime=0))
    size = os.path.getsize(dst)
    what = (f"{table[0]} {table[1][0]}x{table[1][1]} int8 rows (rebuilt rows' cosine vs fp32: mean {table[2]:.6f}, "
            f"worst {table[3]:.6f})" if table else "no word-embedding table found: all fp16")
    print(f"gpu_check_model pack: {dst}: {len(tensors)} tensors, fp32 -> fp16; {what}; {len(raw)} bytes, "
          f"{size} gzipped "
          f"({'numpy' if np else 'pure Python'}, {time.time() - t0:.1f} s)")


def unpack(src, dst, pure):
    np, t0 = have_numpy(pure), time.time()
    tensors, meta = read(src)
    rows_name = meta.pop(META_ROWS, None)
    cmean, cmin = meta.pop("gpu_check.row_cosine_mean", "?"), meta.pop("gpu_check.row_cosine_worst", "?")
    source = meta.pop("gpu_check.source_sha256", "?")
    planes = meta.pop(META_PLANES, "0") == "1"
    out = {}
    for name, (dtype, shape, data) in tensors.items():
        if name.endswith(SCALE_SUFFIX):
            continue
        if planes and dtype == "F16":
            data = from_planes(data)
        if name == rows_name:
            if dtype != "I8" or name + SCALE_SUFFIX not in tensors:
                sys.exit(f"gpu_check_model: {src}: {name} is {dtype} without {name + SCALE_SUFFIX}; expected I8 rows "
                         "and their fp32 scales")
            data, dtype = dequantize_rows(data, tensors[name + SCALE_SUFFIX][2], shape[0], shape[1], np), "F16"
        elif dtype == "F32":
            data, dtype = f32_to_f16(data, np), "F16"
        out[name] = (dtype, shape, data)
    for name, (dtype, shape, data) in out.items():
        want = math.prod(shape) * {"F16": 2, "F32": 4, "I64": 8, "I32": 4, "I8": 1, "BF16": 2}.get(dtype, 0)
        if want and len(data) != want:
            sys.exit(f"gpu_check_model: {src}: {name} has {len(data)} bytes; expected {want} for {dtype} {shape}")
    meta["gpu_check.rebuilt_from"] = f"int8 rows of {rows_name}" if rows_name else "fp16"
    meta["gpu_check.source_sha256"] = source
    write(dst, out, meta)
    print(f"gpu_check_model unpack: {dst}: {len(out)} tensors, all fp16"
          + (f"; {rows_name} rebuilt from int8 rows (row cosine vs fp32: mean {cmean}, worst {cmin})" if rows_name
             else "") + f" ({'numpy' if np else 'pure Python'}, {time.time() - t0:.1f} s)")


def main(argv):
    args = [a for a in argv if a != "--pure"]
    if len(args) != 3 or args[0] not in ("pack", "unpack"):
        print("gpu_check_model: the arguments are " + (" ".join(argv) or "none")
              + "; expected pack|unpack SRC DST [--pure]", file=sys.stderr)
        return 2
    (pack if args[0] == "pack" else unpack)(args[1], args[2], "--pure" in argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
