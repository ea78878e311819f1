"""sglang-hs-inspect: check a hidden-state dump folder before training on it.

    sglang-hs-inspect DIR... [--json] [--png FILE] [--png-size WxH] [--python PY]

Reads every sample under the folders (recursive *.ckpt and *.ckpt.partial; hidden temporaries
are skipped), one at a time with torch.load(weights_only=True, mmap=True), so that only the
shapes are read, never the tensors' data. Says how many complete and partial samples there are,
their tokens and bytes, a histogram of the complete samples' lengths, and checks that every file
agrees on what it was dumped from: the SGLang release, the architecture and model class, the
config's digest, the aux layers (SGLang's layers_to_capture and SpecForge's
eagle_aux_hidden_state_layer_ids), the dtype and width of hidden_state and what it is
(post-norm), the recipe's format version, and whether the file has a provenance at all (files
of older dumps have none: a mix of both is a mix).

Exit status: 0 when the folders hold samples that all agree; 1 when they disagree (the odd files
are named, with the key that differs and the majority's value), a file cannot be read, or there
is no sample; 2 for a usage error.
"""

import argparse
import json
import os
import struct
import sys
import zlib

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
SHOWN = 10  # odd files named per value in the text report (all of them in --json)


def list_samples(folders):
    """(path, complete) of every sample under the folders, sorted by path."""
    found = []
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            dirs.sort()
            for name in names:
                if name.startswith(".") or not name.endswith(SUFFIXES):
                    continue
                found.append((os.path.join(root, name), name.endswith(".ckpt")))
    return sorted(found)


def load(path):
    """The sample at `path`: memory-mapped where the file allows it (torch.save's zip format),
    so that reading its shapes reads none of its tensors."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except (RuntimeError, ValueError, TypeError):  # not the zip format, or an older torch
        return torch.load(path, map_location="cpu", weights_only=True)


def facts(path):
    """What one sample says: its token count and the values that must agree across files."""
    s = load(path)
    if not isinstance(s, dict):
        raise ValueError("not a dict but %s" % type(s).__name__)
    ids, hidden = s.get("input_ids"), s.get("hidden_state")
    if ids is None or hidden is None:
        raise ValueError("no %s" % ("input_ids" if ids is None else "hidden_state"))
    tokens = int(ids.shape[-1])
    if hidden.dim() != 3 or int(hidden.shape[1]) != tokens:
        raise ValueError("hidden_state %s does not hold %d tokens" % (list(hidden.shape), tokens))
    aux = s.get("aux_hidden_state")
    layers = s.get("layers_to_capture")
    out = dict(
        provenance="present" if isinstance(s.get("provenance"), dict) else "absent",
        dtype=str(hidden.dtype).replace("torch.", ""),
        hidden_size=int(hidden.shape[-1]),
        aux_layers=[int(i) for i in layers] if layers is not None else None,
        aux_width=int(aux.shape[-1]) if aux is not None else None,
    )
    prov = s.get("provenance")
    if isinstance(prov, dict):
        for key, source in CHECKED:
            if source == "provenance":
                out[key] = prov.get(key)
        out["pysplice_version"] = prov.get("pysplice_version")
    return tokens, out


def show(value):
    return json.dumps(value)


def disagreements(values):
    """Per checked key whose files disagree: the majority value and the other values with
    their files. `values`: [(path, facts)]."""
    mixed = []
    for key, _source in CHECKED:
        groups = dict()  # value (as JSON) -> files
        for path, f in values:
            if key in f:
                groups.setdefault(show(f[key]), []).append(path)
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


def png_bytes(counts, width, height):
    """A bar chart of `counts` as an RGB PNG of width x height pixels, written with zlib and
    struct: one bar per count, scaled to the largest, on a white ground with a base line."""
    white, bar, axis = b"\xff\xff\xff", b"\x3b\x6e\xa8", b"\x40\x40\x40"
    n = max(len(counts), 1)
    peak = max(counts) if counts else 0
    margin = max(1, min(width, height) // 20)
    inner_w, inner_h = max(width - 2 * margin, 1), max(height - 2 * margin, 1)
    slot = inner_w / n
    spans = []
    for i, c in enumerate(counts):
        x0 = margin + int(i * slot + slot * 0.1)
        x1 = margin + int((i + 1) * slot - slot * 0.1)
        h = int(round(inner_h * c / peak)) if peak else 0
        spans.append((x0, max(x1, x0 + 1), h))
    rows = []
    base = height - margin  # the base line's row
    for y in range(height):
        row = bytearray(white * width)
        if y == base:
            row[margin * 3:(width - margin) * 3] = axis * (width - 2 * margin)
        elif y < base:
            for x0, x1, h in spans:
                if h and y >= base - h:
                    x1 = min(x1, width)
                    row[x0 * 3:x1 * 3] = bar * (x1 - x0)
        rows.append(b"\x00" + bytes(row))  # filter type 0 (none) per row

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")


def size_of(text):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not WIDTHxHEIGHT" % text)
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise argparse.ArgumentTypeError("%r: each side 16 to 8192 pixels" % text)
    return w, h


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def main(argv):
    p = argparse.ArgumentParser(prog="sglang-hs-inspect", description=__doc__.split("\n\n")[2].strip())
    p.add_argument("folders", nargs="+", metavar="DIR", help="dump folders (read recursively, together)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the text report")
    p.add_argument("--png", metavar="FILE", help="write the length histogram as a PNG bar chart (nothing is written without it)")
    p.add_argument("--png-size", type=size_of, default=(640, 320), metavar="WxH", help="the PNG's size in pixels (default 640x320)")
    p.add_argument("--python", metavar="PY", help="the interpreter (read by the launcher)")
    args = p.parse_args(argv)
    for folder in args.folders:
        if not os.path.isdir(folder):
            p.error("%s: not a folder" % folder)
    samples = list_samples(args.folders)
    values, unreadable = [], []
    complete = partial = tokens_complete = tokens_partial = size = 0
    lengths, versions = [], dict()
    for path, done in samples:
        try:
            tokens, f = facts(path)
            size += os.stat(path).st_size
        except Exception as exc:
            unreadable.append(dict(file=path, error="%s: %s" % (type(exc).__name__, exc)))
            continue
        values.append((path, f))
        if f.get("pysplice_version") is not None:
            versions[f["pysplice_version"]] = versions.get(f["pysplice_version"], 0) + 1
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
    if args.png:
        with open(args.png, "wb") as f:
            f.write(png_bytes([c for _, _, c in bins], *args.png_size))
    ok = bool(values) and not mixed and not unreadable
    if args.json:
        print(json.dumps(dict(
            ok=ok,
            folders=args.folders,
            complete=complete,
            partial=partial,
            tokens=dict(complete=tokens_complete, partial=tokens_partial),
            bytes=size,
            with_provenance=sum(1 for _, f in values if f["provenance"] == "present"),
            pysplice_versions=versions,
            agreed=agreed,
            mixed=mixed,
            unreadable=unreadable,
            lengths=stats,
            histogram=[dict(low=a, high=b, count=c) for a, b, c in bins],
            png=dict(path=args.png, width=args.png_size[0], height=args.png_size[1]) if args.png else None,
        ), sort_keys=True))
        return 0 if ok else 1
    out = sys.stdout
    out.write("%d complete samples (%d tokens), %d partial (%d tokens), %s in %s\n" % (
        complete, tokens_complete, partial, tokens_partial, human(size), ", ".join(args.folders)))
    with_prov = sum(1 for _, f in values if f["provenance"] == "present")
    out.write("provenance: %d of %d files%s\n" % (with_prov, len(values), "" if with_prov == len(values) else " (older dumps have none)"))
    for key, value in agreed.items():
        if key != "provenance":
            out.write("  %-34s %s\n" % (key, show(value)))
    if versions:
        out.write("  %-34s %s\n" % ("pysplice_version", ", ".join("%s (%d)" % kv for kv in sorted(versions.items()))))
    if stats:
        out.write("lengths of complete samples: min %(min)d, median %(median)s, mean %(mean)s, max %(max)d\n" % stats)
        peak = max(c for _, _, c in bins)
        for low, high, count in bins:
            bar = "#" * (int(round(40.0 * count / peak)) if peak else 0)
            out.write("  %7d-%-7d %-40s %d\n" % (low, high, bar, count))
    if args.png:
        out.write("histogram written to %s (%dx%d)\n" % (args.png, args.png_size[0], args.png_size[1]))
    for m in mixed:
        tie = " (a tie: the value of the first file in order is taken as the majority)" if m["tie"] else ""
        out.write("MIXED %s: %d files have %s%s; other values:\n" % (m["key"], m["majority_files"], show(m["majority"]), tie))
        for other in m["others"]:
            names = other["files"][:SHOWN]
            more = len(other["files"]) - len(names)
            out.write("  %s in %d files: %s%s\n" % (show(other["value"]), len(other["files"]), ", ".join(names), " and %d more" % more if more else ""))
    for u in unreadable:
        out.write("UNREADABLE %s: %s\n" % (u["file"], u["error"]))
    if not samples:
        out.write("no samples (*.ckpt, *.ckpt.partial) found\n")
    out.write("OK: every file agrees\n" if ok else "NOT OK\n")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly, as other tools do; the verdict is
        # then unknown to the reader, so not 0
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 141
    sys.exit(status)
