"""torch.save's archive format, written without torch.save: the zip layout (local headers, data
descriptors, central directory), CRC-32 combination and data.pkl, for a stitched sample's file
that the writers fill chunk by chunk.

Its definitions are injected as they are written here (see __init__.py).
"""


try:
    import torch
except ImportError:  # the dump runs under PyTorch; the parts that need none are tested without it
    torch = None

from .state import _pysplice_hs_Process


def _pysplice_hs_crc_mul(a, b):
    # a * b modulo the CRC-32 polynomial, in zlib's reflected bit order (a != 0)
    m, p = 1 << 31, 0
    while a:
        if a & m:
            p ^= b
            a ^= m
        m >>= 1
        b = (b >> 1) ^ 0xEDB88320 if b & 1 else b >> 1
    return p


def _pysplice_hs_crc_combine(crc1, crc2, len2):
    # zlib's crc32_combine: the CRC-32 of A + B from the CRC-32s of A and of B and B's
    # length in bytes (A shifted by 8 * len2 bits: x^(8 * len2) mod P, by squarings)
    powers = _pysplice_hs_Process.crc_powers
    if len(powers) != 32:  # x^(2^k) mod P, k = 0..31 (the sequence repeats after 32)
        powers, x = [], 1 << 30
        for _ in range(32):
            powers.append(x)
            x = _pysplice_hs_crc_mul(x, x)
        _pysplice_hs_Process.crc_powers = powers  # whole, in one assignment: threads share it
    p, k, n = 1 << 31, 3, len2
    while n:
        if n & 1:
            p = _pysplice_hs_crc_mul(powers[k & 31], p)
        n >>= 1
        k += 1
    return _pysplice_hs_crc_mul(p, crc1) ^ crc2


def _pysplice_hs_zip_layout(records):
    # torch.save's archive layout (PyTorchStreamWriter over miniz) for records of known
    # sizes, [(name, size)] in file order: stored entries under "archive/", each local
    # header with CRC and sizes left 0 (flags: data descriptor, UTF-8) and an "FB" extra
    # field padding its data to a 64-byte boundary, a zip64 extra where the size or the
    # header's offset reaches 4 GiB; after the data, a data descriptor (64-bit sizes
    # where the zip64 extra is). Returns the entries and where the central directory starts.
    import struct

    big, out, at = 0xFFFFFFFF, [], 0
    for name, size in records:
        raw = ("archive/" + name).encode()
        wide = [size, 0] if size >= big else []  # the compressed size: not known yet, as miniz streams it
        wide += [at] if at >= big else []
        z64 = struct.pack("<HH", 1, 8 * len(wide)) + struct.pack("<%dQ" % len(wide), *wide) if wide else b""
        pad = -(at + 30 + len(raw) + len(z64) + 4) % 64
        extra = z64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, 0x0808, 0, 0, 0, 0, 0, 0, len(raw), len(extra)) + raw + extra
        entry = dict(name=raw, size=size, header=at, head=head, data=at + len(head), wide=bool(wide))
        out.append(entry)
        at = entry["data"] + size + (24 if wide else 16)
    return out, at


def _pysplice_hs_zip_descriptor(entry, crc):
    import struct

    n = entry["size"]
    return struct.pack("<II", 0x08074B50, crc) + (struct.pack("<QQ", n, n) if entry["wide"] else struct.pack("<II", n, n))


def _pysplice_hs_zip_end(entries, crcs, at):
    # The central directory at `at` and the end records (zip64, its locator, classic),
    # as miniz writes them for torch.save; crcs: one per entry.
    import struct

    big, cd = 0xFFFFFFFF, []
    for e, crc in zip(entries, crcs):
        n, h = e["size"], e["header"]
        wide = ([n, n] if n >= big else []) + ([h] if h >= big else [])
        extra = struct.pack("<HH", 1, 8 * len(wide)) + struct.pack("<%dQ" % len(wide), *wide) if wide else b""
        cd.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0, 0, 0x0808, 0, 0, 0, crc, min(n, big), min(n, big), len(e["name"]), len(extra), 0, 0, 0, 0, min(h, big)) + e["name"] + extra)
    cd = b"".join(cd)
    count = len(entries)
    tail = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 0x2D, 0, 0, count, count, len(cd), at)
    tail += struct.pack("<IIQI", 0x07064B50, 0, at + len(cd), 1)
    tail += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, min(len(cd), big), min(at, big), 0)
    return cd + tail


class _pysplice_hs_Stored:
    # A contiguous CPU tensor as torch.save pickles it into data.pkl: rebuilt by
    # torch._utils._rebuild_tensor_v2 from a storage named through persistent_id.
    def __init__(self, key, dtype, shape):
        self.key, self.dtype, self.shape = key, dtype, tuple(shape)
        self.numel = 1
        for d in self.shape:
            self.numel *= d

    def __reduce_ex__(self, protocol):
        import collections

        import torch._utils

        stride, step = [], 1
        for d in reversed(self.shape):
            stride.insert(0, step)
            step *= d
        return (torch._utils._rebuild_tensor_v2, (_pysplice_hs_Storage(self), 0, self.shape, tuple(stride), False, collections.OrderedDict()))


class _pysplice_hs_Storage:
    def __init__(self, stored):
        self.stored = stored


def _pysplice_hs_storage_class(dtype):
    # torch.save's storage type for a dtype (torch.BFloat16Storage, ...)
    try:
        name = torch.storage._dtype_to_storage_type_map()[dtype]
    except Exception:
        name = dict([(torch.int64, "LongStorage"), (torch.bfloat16, "BFloat16Storage"), (torch.float16, "HalfStorage"), (torch.float32, "FloatStorage")])[dtype]
    return getattr(torch, name)


def _pysplice_hs_pickle(sample):
    # data.pkl of `sample` as torch.save writes it (pickle protocol 2; each tensor a
    # _pysplice_hs_Stored, its storage named ("storage", type, key, "cpu", numel)).
    import io
    import pickle

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, _pysplice_hs_Storage):
                s = obj.stored
                return ("storage", _pysplice_hs_storage_class(s.dtype), s.key, "cpu", s.numel)
            return None

    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(sample)
    return buf.getvalue()
