"""sglang-hs-inspect: check a hidden-state dump folder before training on it.

    sglang-hs-inspect DIR... [--json] [--png FILE] [--png-size WxH] [--record FILE]... [--python PY]

Reads every sample under the folders (recursive *.ckpt and *.ckpt.partial; hidden temporaries
are skipped), one at a time. Each file is first read without PyTorch, within fixed bounds: a
regular file only, torch.save's zip layout (entries stored, not compressed), a small data.pkl
read by a restricted reader that runs nothing and knows only plain values and tensors, and
provenance values that are scalars or flat lists. Then torch.load(weights_only=True, mmap=True)
must read the same, so that only the shapes are read, never the tensors' data. Says how many
complete and partial samples there are, their tokens and bytes, a histogram of the complete
samples' lengths, and checks that every file agrees on what it was dumped from: the SGLang
release, the architecture and model class, the config's digest, the aux layers (SGLang's
layers_to_capture and SpecForge's eagle_aux_hidden_state_layer_ids), the dtype and width of
hidden_state and what it is (post-norm), the recipe's format version, and whether the file has
a provenance at all (files of older dumps have none: a mix of both is a mix).

With the sender's record (sglang-hs-send's JSONL of what it sent: `--record FILE`, repeatable,
and DIR/.hs_send_record.jsonl, its default, wherever a folder has one) it also checks who made
each complete sample: every sample that no record owns (no rid, a rid the records do not hold,
or other tokens than were sent with that rid: another client of the same server) and every
sample whose loss_mask is not the one the sender recorded (never set: the dump writes all ones)
is named. Without a record, the report says that ownership was not checked.

Exit status: 0 when the folders hold samples that all agree (and, with a record, that it owns
and masked); 1 when they disagree (the odd files are named, with the key that differs and the
majority's value), a file or record cannot be read, a sample is not owned or not masked, or
there is no sample; 2 for a usage error, an interpreter without PyTorch, or a PNG that cannot be
written.
"""

import argparse
import hashlib
import io
import json
import math
import os
import struct
import sys
import zlib

# The sample reader (crates/pysplice-sglang/python/pysplice_sglang/masks.py), embedded in this program as a module.
from . import masks as slm

# The keys that must agree, in the order they are reported; (name, where it comes from).
# Provenance keys are compared among the files that have a provenance.
CHECKED = (
    ("provenance", "file"),
    ("sglang_version", "provenance"),
    ("architecture", "provenance"),
    ("model_class", "provenance"),
    ("config_sha256", "provenance"),
    ("num_hidden_layers", "provenance"),
    ("recipe_version", "provenance"),
    ("hidden_state", "provenance"),
    ("dtype", "tensor"),
    ("hidden_size", "tensor"),
    ("aux_layers", "file"),
    ("eagle_aux_hidden_state_layer_ids", "provenance"),
    ("aux_width", "tensor"),
)
SUFFIXES = (".ckpt", ".ckpt.partial")
# sglang-hs-send's record: its default name in the first --dump-dir, and the longest line it reads
RECORD_NAME = ".hs_send_record.jsonl"
MAX_RECORD_LINE = 64 << 20
HEX64 = set("0123456789abcdef")
SHOWN = 10  # odd files named per value in the text report (all of them in --json)

# Bounds on one sample, far above what the dump writes (a data.pkl of about 2 KB, ten zip
# entries, a provenance of twenty keys), so that no file can make the checker read, hold or
# print more than a few megabytes. The bounds on the zip, data.pkl and tensors are the
# reader's (masks.MAX_*); these are the provenance's.
MAX_KEYS = 256  # provenance keys
MAX_KEY = 128  # characters of a provenance key
MAX_LIST = 4096  # items of a provenance list or layers_to_capture
MAX_TEXT = 4096  # characters of a provenance string
MAX_MESSAGE = 300  # characters of an error message quoted from torch.load

# The reader, shared with masks.py and sglang-hs-send: regular files only, then
# torch.save's zip layout and data.pkl within bounds; its refusals are SampleErrors whose
# `kind` is "not-a-file", "archive", "pickle" or "tensor".
SampleError, NotAFile = slm.SampleError, slm.NotAFile
Tensor, is_int, quoted = slm.Tensor, slm.is_int, slm.quoted


class ShapeError(SampleError):
    """A sample without the keys and shapes the dump writes."""

    kind = "sample"


class ProvenanceError(SampleError):
    """A provenance whose values are not scalars or flat lists within the bounds."""

    kind = "provenance"


class TorchError(SampleError):
    """torch.load refuses the file, or reads it otherwise than the checker."""

    kind = "torch"


# ---------------------------------------------------------------------------------------
# Printing: names and values from the files never drive the terminal.

printable = slm.printable


def json_name(text):
    """A file name for the JSON report: the bytes of a name that is not UTF-8 as `\\xNN` (JSON
    cannot hold them: a lone surrogate is refused by strict parsers)."""
    if not any(0xD800 <= ord(c) < 0xE000 for c in text):
        return text
    return "".join("\\x%02x" % (ord(c) - 0xDC00) if 0xDC80 <= ord(c) <= 0xDCFF else
                   "\\u{%x}" % ord(c) if 0xD800 <= ord(c) < 0xE000 else c for c in text)


def show(value):
    """A provenance value in the report: text in the programs' one printable form, in quotes;
    numbers, lists and null as JSON writes them (which escapes every character it must)."""
    return '"%s"' % slm.shown(value) if isinstance(value, str) else json.dumps(value)




def open_regular(path):
    """A read-only descriptor of the regular file at `path`, links followed (a link to a file is
    a sample like a file); NotAFile for anything else, a file that is gone included."""
    try:
        return slm.open_regular(path, follow_links=True)
    except FileNotFoundError as exc:
        raise NotAFile("cannot open it: %s" % (exc.strerror or exc)) from None


def read_sample(fd, size):
    """The sample in the open file `fd` of `size` bytes, read within the reader's bounds, its
    tensors checked against their storages' entries (none of their data is read)."""
    archive, value, storages = slm.read_archive(fd, size)
    slm.check_storages(archive, storages)
    return value



# ---------------------------------------------------------------------------------------
# What a sample says.


def scalar_problem(v):
    """Why `v` is not a provenance scalar, or None."""
    if v is None or isinstance(v, (bool, int)):
        return None
    if isinstance(v, float):
        return None if math.isfinite(v) else "a number that is not finite"
    if isinstance(v, str):
        return None if len(v) <= MAX_TEXT else "a string of %d characters (at most %d)" % (len(v), MAX_TEXT)
    return "a tensor" if isinstance(v, Tensor) else "a %s" % type(v).__name__


def check_provenance(prov):
    """Refuse a provenance whose values are not scalars (None, bool, int, float, short str) or
    flat lists of them, or that has too many or too long keys."""
    if len(prov) > MAX_KEYS:
        raise ProvenanceError("a provenance of %d keys (at most %d)" % (len(prov), MAX_KEYS))
    for key, value in prov.items():
        if not isinstance(key, str) or len(key) > MAX_KEY:
            raise ProvenanceError("provenance key %s is not a string of at most %d characters" % (quoted(key), MAX_KEY))
        problem = None
        if isinstance(value, list):
            if len(value) > MAX_LIST:
                problem = "a list of %d items (at most %d)" % (len(value), MAX_LIST)
            for item in value:
                problem = problem or scalar_problem(item)
                if problem:
                    problem = "a list holding " + problem
                    break
        else:
            problem = scalar_problem(value)
        if problem:
            raise ProvenanceError("provenance value %s is %s; provenance values are scalars or flat lists" % (quoted(key), problem))


def tensor(s, key, required):
    t = s.get(key)
    if t is None and not required:
        return None
    if t is None:
        raise ShapeError("no %s" % key)
    if not isinstance(t, Tensor):
        raise ShapeError("%s is %s, not a tensor" % (key, scalar_problem(t) or "a %s" % type(t).__name__))
    return t


def facts(s):
    """What one sample says: its token count and the values that must agree across files."""
    if not isinstance(s, dict):
        raise ShapeError("not a dict but %s" % type(s).__name__)
    ids, hidden = tensor(s, "input_ids", True), tensor(s, "hidden_state", True)
    if not ids.shape:
        raise ShapeError("input_ids has no dimension")
    tokens = ids.shape[-1]
    if len(hidden.shape) != 3 or hidden.shape[1] != tokens:
        raise ShapeError("hidden_state %s does not hold %d tokens" % (list(hidden.shape), tokens))
    aux = tensor(s, "aux_hidden_state", False)
    if aux is not None and (len(aux.shape) != 3 or aux.shape[:2] != hidden.shape[:2]):
        raise ShapeError("aux_hidden_state %s does not match hidden_state %s" % (list(aux.shape), list(hidden.shape)))
    layers = s.get("layers_to_capture")
    if layers is not None and not (isinstance(layers, list) and len(layers) <= MAX_LIST and all(is_int(i) for i in layers)):
        raise ShapeError("layers_to_capture is not a list of integers")
    prov = s.get("provenance")
    if prov is not None and not isinstance(prov, dict):
        raise ShapeError("provenance is %s, not a dict" % (scalar_problem(prov) or "a %s" % type(prov).__name__))
    out = dict(
        provenance="present" if prov is not None else "absent",
        dtype=hidden.dtype,
        hidden_size=hidden.shape[-1],
        aux_layers=list(layers) if layers is not None else None,
        aux_width=aux.shape[-1] if aux is not None else None,
    )
    if prov is not None:
        check_provenance(prov)
        for key, source in CHECKED:
            if source == "provenance":
                out[key] = prov.get(key)
        out["pysplice_version"] = prov.get("pysplice_version")
    return tokens, out


# ---------------------------------------------------------------------------------------
# PyTorch: each sample the reader above accepted must also be what torch.load reads.


class NoTorch(Exception):
    """The interpreter cannot read samples with PyTorch."""


class TorchReader:
    """torch.load(weights_only=True, mmap=True) of each sample, through the descriptor already
    checked (/proc/self/fd on Linux), compared with what the restricted reader found."""

    def __init__(self):
        try:
            import torch
        except Exception as exc:  # not installed, or an install that fails to import
            raise NoTorch("reading samples needs PyTorch, which %s cannot import (%s: %s); pass --python with "
                          "the interpreter of the environment that has torch" % (sys.executable, type(exc).__name__, exc)) from exc
        import inspect

        if "mmap" not in inspect.signature(torch.load).parameters:
            raise NoTorch("PyTorch %s has no memory-mapped torch.load; 2.1 or newer is needed" % torch.__version__)
        self.torch = torch

    def confirm(self, fd, path, sample):
        where = "/proc/self/fd/%d" % fd if os.path.isdir("/proc/self/fd") else path
        try:
            loaded = self.torch.load(where, map_location="cpu", weights_only=True, mmap=True)
        except Exception as exc:
            message = str(exc).strip().split("\n")[0][:MAX_MESSAGE]
            raise TorchError("torch.load refuses it: %s: %s" % (type(exc).__name__, message)) from exc
        if not isinstance(loaded, dict) or set(loaded) != set(sample):
            raise TorchError("torch.load reads other keys than the checker")
        for key, mine in sample.items():
            theirs = loaded[key]
            if isinstance(mine, Tensor):
                same = (isinstance(theirs, self.torch.Tensor) and tuple(theirs.shape) == mine.shape
                        and str(theirs.dtype) == "torch." + mine.dtype and tuple(theirs.stride()) == mine.stride)
            elif key in ("layers_to_capture", "provenance"):
                same = isinstance(theirs, type(mine)) and theirs == mine
            else:
                continue
            if not same:
                raise TorchError("torch.load reads %s otherwise than the checker" % quoted(key))


# ---------------------------------------------------------------------------------------
# Ownership: the sender's record says which samples it made and what mask each must have.


class Records:
    """The "sent" entries of sglang-hs-send's records (JSONL, one event a line): per rid, the
    token count, the SHA-256 of the ids (little-endian int64) and the mask as [start, end) runs.
    Lines that are not such an entry (other events, damaged lines) are counted and skipped."""

    def __init__(self):
        self.paths, self.sent, self.skipped = [], dict(), 0

    def read(self, path):
        """Add the record at `path`; NotAFile / OSError when it cannot be read."""
        fd = slm.open_regular(path, follow_links=True)
        self.paths.append(path)
        with os.fdopen(fd, "rb") as f:
            while True:
                raw = f.readline(MAX_RECORD_LINE + 1)
                if not raw:
                    return
                if len(raw) > MAX_RECORD_LINE:
                    self.skipped += 1
                    while raw and not raw.endswith(b"\n"):  # the rest of the long line
                        raw = f.readline(MAX_RECORD_LINE + 1)
                    continue
                if not raw.strip():
                    continue
                try:
                    entry = json.loads(raw.decode("utf-8"))
                except (ValueError, RecursionError):
                    self.skipped += 1
                    continue
                if not isinstance(entry, dict) or entry.get("event") != "sent":
                    self.skipped += not (isinstance(entry, dict) and isinstance(entry.get("event"), str))
                    continue
                if not sent_entry(entry):
                    self.skipped += 1
                    continue
                self.sent.setdefault(entry["rid"], []).append(entry)


def sent_entry(entry):
    """Whether a "sent" line is one the sender writes (a rid, a token count, a digest, runs)."""
    rid, tokens, digest, mask = entry.get("rid"), entry.get("tokens"), entry.get("ids_sha256"), entry.get("mask")
    if not (isinstance(rid, str) and 0 < len(rid.encode("utf-8", "surrogatepass")) <= slm.MAX_RID):
        return False
    if not (is_int(tokens) and 1 <= tokens <= slm.MAX_TOKENS) or not (isinstance(digest, str) and len(digest) == 64 and set(digest) <= HEX64):
        return False
    if not isinstance(mask, list) or len(mask) > tokens:
        return False
    last = 0
    for run in mask:
        if not (isinstance(run, list) and len(run) == 2 and is_int(run[0]) and is_int(run[1]) and last <= run[0] < run[1] <= tokens):
            return False
        last = run[1]
    return True


def read_longs(fd, sample, key):
    """The values of the sample's 1-d int64 tensor `key` (input_ids, loss_mask), read from the
    open file: 8 bytes a token, within the reader's bounds."""
    ref = sample.get(key)
    if not isinstance(ref, Tensor) or ref.dtype != "int64" or len(ref.shape) != 1 or (ref.stride != (1,) and ref.shape[0] > 1):
        raise ShapeError("%s is not a 1-d int64 tensor" % key)
    archive = slm.Archive(fd)
    info = archive.entry("data/" + ref.storage.key)
    n = ref.shape[0]
    if n > slm.MAX_TOKENS or info.size < (ref.offset + n) * 8:
        raise ShapeError("%s reaches past its storage" % key)
    raw = slm.pread(fd, n * 8, archive.data_at(info) + ref.offset * 8) if n else b""
    return list(struct.unpack("<%dq" % n, raw))


def ownership(fd, sample, records):
    """(verdict, rid, why) of a complete sample against the records: "owned", "not-owned" or
    "mask-not-set"."""
    rid = sample.get("rid")
    if rid is None:
        return "not-owned", None, "no rid (a request without one, or SGLang before 0.5.10)"
    if not isinstance(rid, str):
        return "not-owned", None, "its rid is not a string"
    entries = records.sent.get(rid)
    if not entries:
        return "not-owned", rid, "no record holds rid %s (another client's request?)" % rid
    ids = read_longs(fd, sample, "input_ids")
    digest = hashlib.sha256(struct.pack("<%dq" % len(ids), *ids)).hexdigest()
    mine = [e for e in entries if e["tokens"] == len(ids) and e["ids_sha256"] == digest]
    if not mine:
        return "not-owned", rid, "%d tokens, not the %s sent with rid %s" % (len(ids), " or ".join(str(e["tokens"]) + " tokens" for e in entries[:3]), rid)
    mask = read_longs(fd, sample, "loss_mask")
    for e in mine:
        want = [0] * e["tokens"]
        for a, b in e["mask"]:
            want[a:b] = [1] * (b - a)
        if mask == want:
            return "owned", rid, None
    ones = len(mask) and all(m == 1 for m in mask)
    return "mask-not-set", rid, "its loss_mask is %s, not the one the sender recorded" % ("all ones (never set)" if ones else "another")


# ---------------------------------------------------------------------------------------
# The report.


def list_samples(folders):
    """(path, complete) of every sample under the folders, sorted by path; and the folders
    that could not be listed, as unreadable entries. The walk keeps its own stack (os.walk
    recurses once per level: a folder nested a thousand deep would end it) and does not
    follow links to folders; a link to a file is a sample like a file."""
    found, problems = [], []
    todo = list(reversed(folders))
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            problems.append(dict(file=folder, kind="folder", error="cannot list this folder: %s" % (exc.strerror or exc)))
            continue
        below = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                is_link = entry.is_symlink()
            except OSError:
                is_dir = is_link = False
            if is_dir:
                if not is_link:
                    below.append(entry.path)
            elif not entry.name.startswith(".") and entry.name.endswith(SUFFIXES):
                found.append((entry.path, entry.name.endswith(".ckpt")))
        todo.extend(reversed(below))
    return sorted(found), problems


def disagreements(values):
    """Per checked key whose files disagree: the majority value and the other values with
    their files. `values`: [(path, facts)]."""
    mixed = []
    for key, _source in CHECKED:
        groups = dict()  # value (as JSON) -> files
        for path, f in values:
            if key in f:
                groups.setdefault(json.dumps(f[key]), []).append(path)
        if len(groups) < 2:
            continue
        # the majority; a tie goes to the value of the first file in order
        order = sorted(groups.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
        (top, top_files), rest = order[0], order[1:]
        mixed.append(dict(
            key=key,
            majority=json.loads(top),
            majority_files=len(top_files),
            tie=any(len(files) == len(top_files) for _, files in rest),
            others=[dict(value=json.loads(v), files=files) for v, files in rest],
        ))
    return mixed


def buckets(lengths):
    """Power-of-two bins from the shortest length's to the longest's: [(low, high, count)],
    both ends inclusive (1, 2-3, 4-7, ...)."""
    if not lengths:
        return []
    lo, hi = min(lengths).bit_length(), max(lengths).bit_length()
    bins = [[(1 << (b - 1)) if b else 0, (1 << b) - 1, 0] for b in range(lo, hi + 1)]
    for n in lengths:
        bins[n.bit_length() - lo][2] += 1
    return [tuple(b) for b in bins]


# ---------------------------------------------------------------------------------------
# The PNG: matplotlib where it is installed, else a small renderer of its own (axes, ticks,
# digits and capitals in a 5x7 font), written with zlib and struct.

BAR, AXIS, GRID, INK = b"\x3b\x6e\xa8", b"\x40\x40\x40", b"\xe4\xe4\xe4", b"\x20\x20\x20"
# 5x7 glyphs: seven rows of five bits, as hexadecimal pairs
FONT = dict(zip(
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ -().,:/+",
    """0E11131519110E 040C040404040E 0E11010204081F 1F02040201110E 02060A121F0202 1F101E0101110E
    0608101E11110E 1F010204080808 0E11110E11110E 0E11110F01020C 0E1111111F1111 1E11111E11111E
    0E11101010110E 1C12111111121C 1F10101E10101F 1F10101E101010 0E11101711110F 1111111F111111
    0E04040404040E 0702020202120C 11121418141211 1010101010101F 111B1515111111 11111915131111
    0E11111111110E 1E11111E101010 0E11111115120D 1E11111E141211 0F10100E01011E 1F040404040404
    1111111111110E 11111111110A04 1111111515150A 11110A040A1111 1111110A040404 1F01020408101F
    00000000000000 0000001F000000 02040808080402 08040202020408 00000000000C0C 000000000C0408
    000C0C000C0C00 00010204081000 0004041F040400""".split()))


def glyph_rows(c):
    code = FONT.get(c, FONT[" "])
    return [int(code[i:i + 2], 16) for i in range(0, 14, 2)]


class Canvas:
    """An RGB image in memory; every drawing call is clipped to it."""

    def __init__(self, width, height):
        self.w, self.h = width, height
        self.px = bytearray(b"\xff" * (width * height * 3))

    def rect(self, x0, y0, x1, y1, rgb):
        x0, x1, y0, y1 = max(0, int(x0)), min(self.w, int(x1)), max(0, int(y0)), min(self.h, int(y1))
        if x0 >= x1:
            return
        row = rgb * (x1 - x0)
        for y in range(y0, y1):
            at = (y * self.w + x0) * 3
            self.px[at:at + len(row)] = row

    def text(self, x, y, s, scale, rgb=INK):
        for i, c in enumerate(s):
            for r, bits in enumerate(glyph_rows(c)):
                for col in range(5):
                    if bits >> (4 - col) & 1:
                        px, py = x + (6 * i + col) * scale, y + r * scale
                        self.rect(px, py, px + scale, py + scale, rgb)

    def png(self):
        stride = self.w * 3
        raw = b"".join(b"\x00" + bytes(self.px[y * stride:(y + 1) * stride]) for y in range(self.h))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        ihdr = struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def text_width(s, scale):
    return max(6 * len(s) - 1, 0) * scale


def compact(n):
    """A bin's bound, short: 512, 1K, 64K, 1M (K = 1024)."""
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return "%d%s" % (n // size, unit)
    return str(n)


def y_ticks(peak):
    """0 and up to four more round steps (1, 2 or 5 times a power of ten) reaching `peak`."""
    if peak <= 0:
        return [0, 1]
    i = 0
    while (1, 2, 5)[i % 3] * 10 ** (i // 3) * 4 < peak:
        i += 1
    step = (1, 2, 5)[i % 3] * 10 ** (i // 3)
    return list(range(0, -(-peak // step) * step + 1, step))


AXIS_TITLE = "tokens: each bar from its length to twice it, less one (1K: 1024)"


def title_of(bins):
    n = sum(c for _, _, c in bins)
    return "lengths of %d complete sample%s, in tokens" % (n, "" if n == 1 else "s") if n else "no complete samples"


def png_builtin(bins, width, height):
    """The histogram as an RGB PNG of width x height pixels: a title, a y axis of sample counts
    with round ticks, one bar per bin over an x axis labelled with each bin's first length."""
    c = Canvas(width, height)
    s = max(1, min(width // 320, height // 160))
    line, pad = 7 * s, 3 * s + 2
    counts = [n for _, _, n in bins]
    ticks = y_ticks(max(counts) if counts else 0)
    labels = [str(t) for t in ticks]
    left = pad + max(text_width(t, s) for t in labels) + 5 * s
    top = pad + line + pad + line + line // 2 + pad
    bottom = pad + line + pad + line + pad
    right = pad + text_width(compact(bins[-1][0]) if bins else "", s) // 2 + s
    x0, x1, y0, y1 = left, width - right, top, height - bottom
    if x1 - x0 < max(len(bins), 1) * 2 or y1 - y0 < 8:  # too small for axes: the bars alone
        x0, x1, y0, y1, labels = 1, width - 1, 1, height - 2, None
    ymax = ticks[-1]
    if labels:
        for t, label in zip(ticks, labels):
            y = y1 - round((y1 - y0) * t / ymax)
            if t:
                c.rect(x0, y, x1, y + s, GRID)
            c.rect(x0 - 4 * s, y, x0, y + s, AXIS)
            c.text(x0 - 5 * s - text_width(label, s), y - line // 2, label, s)
        c.text(pad, pad + line + pad, "SAMPLES", s)
        title = title_of(bins).upper()
        for t in (title, title.split(",")[0], "LENGTHS"):
            if text_width(t, s) <= width - 2 * pad:
                c.text((width - text_width(t, s)) // 2, pad, t, s)
                break
    slot = (x1 - x0) / max(len(bins), 1)
    for i, (_low, _high, n) in enumerate(bins):
        h = round((y1 - y0) * n / ymax)
        bx0, bx1 = x0 + int(i * slot + slot * 0.15), x0 + int((i + 1) * slot - slot * 0.15)
        if h:
            c.rect(bx0, y1 - h, max(bx1, bx0 + 1), y1, BAR)
    c.rect(x0, y1, x1, y1 + s, AXIS)  # the base line
    if labels:
        c.rect(x0 - s, y0, x0, y1 + s, AXIS)
        widest = max([text_width(compact(b[0]), s) for b in bins] or [0])
        every = max(1, int(math.ceil((widest + 2 * s) / max(slot, 1))))
        for i, (low, _high, _n) in enumerate(bins):
            if i % every == 0:
                label = compact(low)
                cx = x0 + (i + 0.5) * slot
                c.rect(cx, y1 + s, cx + s, y1 + 3 * s, AXIS)
                c.text(int(cx - text_width(label, s) / 2), y1 + 3 * s + 2, label, s)
        for t in (AXIS_TITLE.upper().replace(";", ","), "TOKENS (1K: 1024)", "TOKENS"):
            if text_width(t, s) <= width - 2 * pad:
                c.text((width - text_width(t, s)) // 2, height - pad - line, t, s)
                break
    return c.png()


def png_matplotlib(bins, width, height):
    """The histogram drawn by matplotlib (Agg, no display): axes, tick labels, a title."""
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(width / 100.0, height / 100.0), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(bins)))
    ax.bar(xs, [n for _, _, n in bins], width=0.7, color="#3b6ea8")
    ax.set_xticks(xs)
    ax.set_xticklabels([compact(lo) for lo, _, _ in bins])
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(AXIS_TITLE)
    ax.set_ylabel("samples")
    ax.set_title(title_of(bins))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=100)
    return out.getvalue()


def png_chart(bins, width, height):
    """(PNG bytes, what drew it): matplotlib if it imports, else the built-in renderer."""
    try:
        import matplotlib
    except Exception as exc:
        why = "matplotlib is not installed" if isinstance(exc, ImportError) else "matplotlib does not import"
        return png_builtin(bins, width, height), "built-in (%s)" % why
    try:
        return png_matplotlib(bins, width, height), "matplotlib %s" % matplotlib.__version__
    except Exception as exc:
        return png_builtin(bins, width, height), "built-in (matplotlib failed: %s)" % type(exc).__name__


def png_problem(path):
    """Why `path` may not be the PNG's name, or None: it is never written through a link, over
    an existing file, or under a sample's name."""
    if path.endswith(SUFFIXES):
        return "--png %s: a sample's name (*.ckpt, *.ckpt.partial); name the PNG otherwise" % path
    if os.path.lexists(path):
        return "--png %s: exists; it is not replaced (remove it or name another file)" % path
    if not os.path.isdir(os.path.dirname(path) or "."):
        return "--png %s: its folder does not exist" % path
    return None


def write_new(path, data):
    """Write `data` into a file created for it (O_CREAT|O_EXCL|O_NOFOLLOW: never an existing
    file, never through a link); one left half-written is removed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o644)
    try:
        mine = os.fstat(fd)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        try:
            now = os.stat(path, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                os.unlink(path)
        except OSError:
            pass
        raise
    finally:
        os.close(fd)


def size_of(text):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not WIDTHxHEIGHT" % text) from None
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise argparse.ArgumentTypeError("%r: each side 16 to 8192 pixels" % text)
    return w, h


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


class Parser(argparse.ArgumentParser):
    """argparse, with its error messages (which quote the arguments) printed escaped."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, "%s: error: %s\n" % (self.prog, printable(message)))


def main(argv, reader=None, out=None):
    """The command. `reader`: what confirms each sample (default: PyTorch, checked once when
    there is a sample to read); `out`: where the report goes (default: stdout)."""
    out = out or sys.stdout
    p = Parser(prog="sglang-hs-inspect", description=__doc__.split("\n\n")[2].strip())
    p.add_argument("folders", nargs="+", metavar="DIR", help="dump folders (read recursively, together)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the text report")
    p.add_argument("--png", metavar="FILE", help="write the length histogram as a PNG bar chart into a new file "
                   "(an existing one is not replaced; nothing is written without it)")
    p.add_argument("--png-size", type=size_of, default=(640, 320), metavar="WxH", help="the PNG's size in pixels (default 640x320)")
    p.add_argument("--record", action="append", default=[], metavar="FILE", help="sglang-hs-send's record of what it sent "
                   "(repeatable; DIR/%s is read too where a folder has one): name the samples it does not own or "
                   "did not mask" % RECORD_NAME)
    p.add_argument("--python", metavar="PY", help="the interpreter (read by the launcher)")
    args = p.parse_args(argv)
    for folder in args.folders:
        if not os.path.isdir(folder):
            p.error("%s: not a folder" % folder)
    for path in args.record:
        if not os.path.exists(path):
            p.error("--record %s: no such file" % path)
    if args.png and png_problem(args.png):
        p.error(png_problem(args.png))
    samples, unreadable = list_samples(args.folders)
    # The records: those named, then each folder's own (the sender's default), each file once.
    records, seen = None, set()
    for path in args.record + [os.path.join(f, RECORD_NAME) for f in args.folders]:
        if path not in args.record and not os.path.lexists(path):
            continue
        key = os.path.realpath(path)
        if key in seen:
            continue
        seen.add(key)
        records = records or Records()
        try:
            records.read(path)
        except SampleError as exc:
            unreadable.append(dict(file=path, kind="record", error="the record: %s" % exc))
        except OSError as exc:
            unreadable.append(dict(file=path, kind="record", error="the record: cannot read it: %s" % (exc.strerror or exc)))
    owned, not_owned, unmasked = 0, [], []
    if samples and reader is None:
        try:
            reader = TorchReader()
        except NoTorch as why:
            sys.stderr.write("sglang-hs-inspect: %s\n" % printable(why))
            return 2
    values = []
    complete = partial = tokens_complete = tokens_partial = size = 0
    lengths, versions = [], dict()
    for path, done in samples:
        try:
            fd = open_regular(path)
            try:
                st = os.fstat(fd)
                sample = read_sample(fd, st.st_size)
                tokens, f = facts(sample)
                reader.confirm(fd, path, sample)
                verdict = ownership(fd, sample, records) if records is not None and done else None
            finally:
                os.close(fd)
        except SampleError as exc:
            unreadable.append(dict(file=path, kind=exc.kind, error=str(exc)))
            continue
        except OSError as exc:
            unreadable.append(dict(file=path, kind="io", error="cannot read it: %s" % (exc.strerror or exc)))
            continue
        size += st.st_size
        values.append((path, f))
        if verdict is not None:
            what, rid, why = verdict
            if what == "owned":
                owned += 1
            else:
                (not_owned if what == "not-owned" else unmasked).append(dict(file=path, rid=rid, why=why))
        version = f.get("pysplice_version")
        if version is not None:
            version = version if isinstance(version, str) else show(version)
            versions[version] = versions.get(version, 0) + 1
        if done:
            complete += 1
            tokens_complete += tokens
            lengths.append(tokens)
        else:
            partial += 1
            tokens_partial += tokens
    mixed = disagreements(values)
    agreed = dict()
    for key, _source in CHECKED:
        seen = [f[key] for _, f in values if key in f]
        if seen and key not in [m["key"] for m in mixed]:
            agreed[key] = seen[0]
    bins = buckets(lengths)
    lengths.sort()
    stats = None
    if lengths:
        mid = len(lengths) // 2
        median = lengths[mid] if len(lengths) % 2 else (lengths[mid - 1] + lengths[mid]) / 2
        stats = dict(min=lengths[0], max=lengths[-1], mean=round(sum(lengths) / len(lengths), 2), median=median)
    renderer = None
    if args.png:
        data, renderer = png_chart(bins, *args.png_size)
        try:
            write_new(args.png, data)
        except OSError as exc:
            sys.stderr.write("sglang-hs-inspect: cannot write --png %s: %s\n" % (printable(args.png), printable(exc.strerror or exc)))
            return 2
    ok = bool(values) and not mixed and not unreadable and not not_owned and not unmasked
    ownership_report = dict(
        checked=records is not None,
        records=[json_name(r) for r in records.paths] if records is not None else [],
        record_lines_skipped=records.skipped if records is not None else 0,
        owned=owned,
        not_owned=[dict(n, file=json_name(n["file"]), rid=json_name(n["rid"]) if n["rid"] else None, why=json_name(n["why"])) for n in not_owned],
        mask_not_set=[dict(n, file=json_name(n["file"]), rid=json_name(n["rid"]), why=json_name(n["why"])) for n in unmasked],
    )
    if args.json:
        out.write(json.dumps(dict(
            ok=ok,
            folders=[json_name(f) for f in args.folders],
            complete=complete,
            partial=partial,
            tokens=dict(complete=tokens_complete, partial=tokens_partial),
            bytes=size,
            with_provenance=sum(1 for _, f in values if f["provenance"] == "present"),
            pysplice_versions=dict((json_name(v), n) for v, n in versions.items()),
            agreed=agreed,
            mixed=[dict(m, others=[dict(o, files=[json_name(x) for x in o["files"]]) for o in m["others"]]) for m in mixed],
            unreadable=[dict(u, file=json_name(u["file"]), error=json_name(u["error"])) for u in unreadable],
            lengths=stats,
            histogram=[dict(low=a, high=b, count=c) for a, b, c in bins],
            png=dict(path=json_name(args.png), width=args.png_size[0], height=args.png_size[1], renderer=renderer) if args.png else None,
            ownership=ownership_report,
        ), sort_keys=True) + "\n")
        return 0 if ok else 1
    out.write("%d complete samples (%d tokens), %d partial (%d tokens), %s in %s\n" % (
        complete, tokens_complete, partial, tokens_partial, human(size), ", ".join(printable(f) for f in args.folders)))
    with_prov = sum(1 for _, f in values if f["provenance"] == "present")
    out.write("provenance: %d of %d files%s\n" % (with_prov, len(values), "" if with_prov == len(values) else " (older dumps have none)"))
    for key, value in agreed.items():
        if key != "provenance":
            out.write("  %-34s %s\n" % (key, show(value)))
    if versions:
        shown = ", ".join("%s (%d)" % (printable(v), n) for v, n in sorted(versions.items()))
        out.write("  %-34s %s\n" % ("pysplice_version", shown))
    if stats:
        out.write("lengths of complete samples: min %(min)d, median %(median)s, mean %(mean)s, max %(max)d\n" % stats)
        peak = max(c for _, _, c in bins)
        for low, high, count in bins:
            bar = "#" * (int(round(40.0 * count / peak)) if peak else 0)
            out.write("  %7d-%-7d %-40s %d\n" % (low, high, bar, count))
    if args.png:
        out.write("histogram written to %s (%dx%d, %s)\n" % (printable(args.png), args.png_size[0], args.png_size[1], renderer))
    for m in mixed:
        tie = " (a tie: the value of the first file in order is taken as the majority)" if m["tie"] else ""
        out.write("MIXED %s: %d files have %s%s; other values:\n" % (m["key"], m["majority_files"], show(m["majority"]), tie))
        for other in m["others"]:
            names = [printable(x) for x in other["files"][:SHOWN]]
            more = len(other["files"]) - len(names)
            out.write("  %s in %d files: %s%s\n" % (show(other["value"]), len(other["files"]), ", ".join(names), " and %d more" % more if more else ""))
    if records is None:
        out.write("ownership: not checked (no sender record: --record FILE, or %s in a folder)\n" % RECORD_NAME)
    else:
        out.write("ownership: %d of %d complete samples sent and masked by %s%s\n" % (
            owned, owned + len(not_owned) + len(unmasked), ", ".join(printable(r) for r in records.paths) or "no readable record",
            "; %d record lines skipped" % records.skipped if records.skipped else ""))
    for n in not_owned:
        out.write("NOT OWNED %s: %s\n" % (printable(n["file"]), printable(n["why"])))
    for n in unmasked:
        out.write("MASK NOT SET %s: rid %s: %s\n" % (printable(n["file"]), printable(n["rid"]), printable(n["why"])))
    for u in unreadable:
        out.write("UNREADABLE %s: %s\n" % (printable(u["file"]), printable(u["error"])))
    if not samples:
        out.write("no samples (*.ckpt, *.ckpt.partial) found\n")
    out.write(("OK: every file agrees%s\n" % (" and is the sender's, masked" if records is not None else "")) if ok else "NOT OK\n")
    return 0 if ok else 1


if __name__ == "__main__":
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # a terminal that is not UTF-8
        except (AttributeError, ValueError):
            pass
    try:
        status = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly, as other tools do; the verdict is
        # then unknown to the reader, so not 0
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 141
    except KeyboardInterrupt:
        status = 130
    sys.exit(status)
