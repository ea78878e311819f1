"""Samples written without PyTorch, laid out as torch.save lays them out, for the tests of
sglang-hs-inspect (hs_inspect_*.py beside this file).

A zip archive of stored entries under one folder (`<name>/data.pkl`, `<name>/data/<key>` per
storage, `.format_version`, `.storage_alignment`, `byteorder`, `version`), each entry's data at a
multiple of 64 bytes (padding in the local header's extra field), and data.pkl as torch.save's
pickler writes it (protocol 2: every container and string memoized, tensors as
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())` with the
storage as a persistent id). crates/pysplice-sglang/tests/python/hs_inspect_test.py checks with PyTorch that torch.load reads
these files as the checker does.

`Raw(bytes)` inserts pickle bytes as they are; `zip_bytes` takes per-entry options to write
archives torch.save never would (compressed, duplicated, truncated).
"""

import importlib.util
import os
import pickle
import struct
import sys
import zlib

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
ITEMSIZE = dict(LongStorage=8, IntStorage=4, FloatStorage=4, BFloat16Storage=2, HalfStorage=2, ByteStorage=1, BoolStorage=1)


def checker():
    """inspector.py of this checkout, imported as a module (it imports no PyTorch), with the
    sample reader it imports (crates/pysplice-sglang/python/pysplice_sglang/masks.py, which the command embeds)."""
    scripts = os.path.join(REPO, "crates", "pysplice-sglang", "python")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    return importlib.import_module("pysplice_sglang.inspector")


class T:
    """A tensor to write: its storage class, shape, and the bytes of its storage (zeros by
    default); `numel` overrides the element count the record declares."""

    def __init__(self, kind, shape, data=None, numel=None, stride=None, offset=0):
        self.kind, self.shape, self.offset = kind, tuple(shape), offset
        count = 1
        for d in shape:
            count *= d
        self.numel = count if numel is None else numel
        self.data = bytes(count * ITEMSIZE[kind]) if data is None else data
        if stride is None:
            stride, step = [], 1
            for d in reversed(self.shape):
                stride.insert(0, step)
                step *= d
        self.stride = tuple(stride)


class Raw:
    """Pickle bytes written as they are, in place of a value."""

    def __init__(self, data):
        self.data = data


class Pickler:
    """data.pkl for a value of dicts, lists, tuples, str, int, float, bool, None, T and Raw."""

    def __init__(self):
        self.out = bytearray(b"\x80\x02")
        self.memo = dict()  # id -> memo index (the objects are kept alive by the caller)
        self.globals = dict()
        self.count = 0
        self.storages = []  # (key, T)

    def put(self):
        n, self.count = self.count, self.count + 1
        self.out += b"q" + bytes([n]) if n < 256 else b"r" + struct.pack("<I", n)
        return n

    def get(self, n):
        self.out += b"h" + bytes([n]) if n < 256 else b"j" + struct.pack("<I", n)

    def glob(self, module, name):
        if (module, name) in self.globals:
            return self.get(self.globals[(module, name)])
        self.out += b"c" + module.encode() + b"\n" + name.encode() + b"\n"
        self.globals[(module, name)] = self.put()

    def value(self, v):
        if isinstance(v, Raw):
            self.out += v.data
        elif v is None:
            self.out += b"N"
        elif v is True or v is False:
            self.out += b"\x88" if v else b"\x89"
        elif isinstance(v, int):
            if 0 <= v < 256:
                self.out += b"K" + bytes([v])
            elif 0 <= v < 65536:
                self.out += b"M" + struct.pack("<H", v)
            elif -(1 << 31) <= v < (1 << 31):
                self.out += b"J" + struct.pack("<i", v)
            else:
                raw = pickle.encode_long(v)
                self.out += b"\x8a" + bytes([len(raw)]) + raw
        elif isinstance(v, float):
            self.out += b"G" + struct.pack(">d", v)
        elif id(v) in self.memo:
            self.get(self.memo[id(v)])
        elif isinstance(v, str):
            raw = v.encode("utf-8", "surrogatepass")
            self.out += b"X" + struct.pack("<I", len(raw)) + raw
            self.memo[id(v)] = self.put()
        elif isinstance(v, list):
            self.out += b"]"
            self.memo[id(v)] = self.put()
            if v:
                self.out += b"("
                for item in v:
                    self.value(item)
                self.out += b"e"
        elif isinstance(v, dict):
            self.out += b"}"
            self.memo[id(v)] = self.put()
            if v:
                self.out += b"("
                for key, item in v.items():
                    self.value(key)
                    self.value(item)
                self.out += b"u"
        elif isinstance(v, tuple):
            if not v:
                self.out += b")"
                return
            if len(v) <= 3:
                for item in v:
                    self.value(item)
                self.out += bytes([0x84 + len(v)])
            else:
                self.out += b"("
                for item in v:
                    self.value(item)
                self.out += b"t"
            self.memo[id(v)] = self.put()
        elif isinstance(v, T):
            key = str(len(self.storages))
            self.storages.append((key, v))
            self.glob("torch._utils", "_rebuild_tensor_v2")
            self.out += b"(("
            self.value("storage")
            self.glob("torch", v.kind)
            self.value(key)
            self.value("cpu")
            self.value(v.numel)
            self.out += b"t"
            self.put()
            self.out += b"Q"
            self.value(v.offset)
            self.value(v.shape)
            self.value(v.stride)
            self.out += b"\x89"
            self.glob("collections", "OrderedDict")
            self.out += b")R"
            self.put()
            self.out += b"t"
            self.put()
            self.out += b"R"
            self.put()
        else:
            raise TypeError(type(v).__name__)

    def dumps(self, v):
        self.value(v)
        self.out += b"."
        return bytes(self.out)


def zip_bytes(entries, options=None):
    """A zip archive of (name, bytes) entries as torch.save writes it: stored, data aligned to
    64 bytes. `options` per name: deflate=True, size=N (the declared size), crc=N, name=str
    (the central directory's name), flags=N."""
    options = options or dict()
    out, central = bytearray(), bytearray()
    for name, data in entries:
        opt = options.get(name, dict())
        raw_name = name.encode("utf-8", "surrogateescape")
        stored = data
        method = 0
        if opt.get("deflate"):
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            stored = c.compress(data) + c.flush()
            method = 8
        crc = opt.get("crc", zlib.crc32(data) & 0xFFFFFFFF)
        usize = opt.get("size", len(data))
        csize = opt.get("size", len(stored)) if method == 0 else len(stored)
        header = len(out)
        pad = (-(header + 30 + len(raw_name) + 4)) % 64
        extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        flags = opt.get("flags", 0x0800)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, flags, method, 0, 0, crc, csize, usize, len(raw_name), len(extra))
        out += raw_name + extra + stored
        cname = opt.get("name", name).encode("utf-8", "surrogateescape")
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, flags, method, 0, 0, crc, csize, usize,
                               len(cname), 0, 0, 0, 0, 0, header) + cname
    count = len(entries)
    out_at = len(out)
    out += central
    out += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, len(central), out_at, 0)
    return bytes(out)


def sample_bytes(value, name="archive", options=None, extra_entries=(), byteorder=b"little"):
    """A whole sample file: `value` pickled, its tensors' storages, torch.save's records."""
    p = Pickler()
    pkl = p.dumps(value)
    entries = [(name + "/data.pkl", pkl), (name + "/.format_version", b"1"), (name + "/.storage_alignment", b"64"),
               (name + "/byteorder", byteorder)]
    entries += [(name + "/data/" + key, t.data) for key, t in p.storages]
    entries += [(name + "/version", b"3\n")] + list(extra_entries)
    return zip_bytes(entries, options)


def provenance(**changes):
    """A provenance as the recipe writes it (sglang_hs_dump.toml, _pysplice_hs_provenance)."""
    p = dict(
        recipe="sglang-hs-dump", recipe_version="1", pysplice_version="0.1.0", sglang_version="0.5.10",
        architecture="DeepseekV3ForCausalLM", model_class="DeepseekV2Model", dtype="bfloat16",
        hidden_size=8, num_hidden_layers=8, hidden_state="post-norm", aux_layers=[2, 4, 5],
        eagle_aux_hidden_state_layer_ids=[1, 3, 4], aux_layers_requested=None, config_sha256="ab" * 32,
        tp_rank=0, tp_size=1, attn_tp_rank=0, attn_tp_size=1, attn_dp_rank=0, attn_dp_size=1, pp_rank=0, pp_size=1,
    )
    p.update(changes)
    return p


def sample(tokens=5, hidden=8, layers=(2, 4, 5), prov="default", **changes):
    """A sample dict as the dump writes it, tensors as T; `changes` replace or add keys."""
    s = dict(
        input_ids=T("LongStorage", (tokens,)),
        loss_mask=T("LongStorage", (tokens,)),
        hidden_state=T("BFloat16Storage", (1, tokens, hidden)),
        aux_hidden_state=T("BFloat16Storage", (1, tokens, len(layers) * hidden)),
        layers_to_capture=list(layers),
        prefix_len=0,
        rid="r-1",
    )
    if prov is not None:
        s["provenance"] = provenance(aux_layers=list(layers), eagle_aux_hidden_state_layer_ids=[i - 1 for i in layers]) if prov == "default" else prov
    s.update(changes)
    return s


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def content(path):
    with open(path, "rb") as f:
        return f.read()


def count_runs(flags):
    return sum(1 for i, f in enumerate(flags) if f and (i == 0 or not flags[i - 1]))


def decode_png(data):
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA PNG without interlace."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, ihdr = 8, b"", None
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        kind, payload = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", payload)
        elif kind == b"IDAT":
            idat += payload
        at += 12 + n
    width, height, depth, colour, _, _, interlace = ihdr
    assert depth == 8 and colour in (2, 6) and not interlace
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        rows.append(bytes(line) if bpp == 3 else b"".join(bytes(line[x * 4:x * 4 + 3]) for x in range(width)))
    return width, height, rows
