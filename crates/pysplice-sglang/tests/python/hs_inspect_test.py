#!/usr/bin/env python3
"""Test of `sglang-hs-inspect` on folders of small samples written here (needs PyTorch).

    python3 crates/pysplice-sglang/tests/python/hs_inspect_test.py [INSPECT]

INSPECT is the command to test (default: $SGLANG_HS_INSPECT, else target/debug or
target/release/sglang-hs-inspect of this checkout); it is run with `--python` this interpreter.
Cases: a clean folder (exit 0, counts, tokens, bytes, histogram, the PNG's structure), a folder
mixing two layer conventions, one mixing two SGLang releases, one mixing files with and
without provenance, an unreadable file, an empty folder and a missing one, and folders written
by the recipe itself (the runtime mock patched with target/*/pysplice, or $PYSPLICE). Prints
`N passed, M failed`; exit status 1 when a case fails.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import traceback
import zlib

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hs_inspect_samples as S  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
H = 8  # hidden size of the samples


def command():
    if len(sys.argv) > 1:
        return [sys.argv[1]]
    if os.environ.get("SGLANG_HS_INSPECT"):
        return [os.environ["SGLANG_HS_INSPECT"]]
    for kind in ("debug", "release"):
        path = os.path.join(REPO, "target", kind, "sglang-hs-inspect")
        if os.access(path, os.X_OK):
            return [path]
    raise SystemExit("no sglang-hs-inspect: cargo build --bin sglang-hs-inspect, or pass its path")


def provenance(**changes):
    """A provenance as the recipe writes it (sglang_hs_dump.toml, _pysplice_hs_provenance)."""
    p = dict(
        recipe="sglang-hs-dump", recipe_version="1", pysplice_version="0.1.0", sglang_version="0.5.10",
        architecture="DeepseekV3ForCausalLM", model_class="DeepseekV2Model", dtype="bfloat16",
        hidden_size=H, num_hidden_layers=8, hidden_state="post-norm", aux_layers=[2, 4, 5],
        eagle_aux_hidden_state_layer_ids=[1, 3, 4], aux_layers_requested=None, config_sha256="ab" * 32,
        tp_rank=0, tp_size=1, attn_tp_rank=0, attn_tp_size=1, attn_dp_rank=0, attn_dp_size=1, pp_rank=0, pp_size=1,
    )
    p.update(changes)
    return p


def write(folder, name, tokens, prov="default", layers=(2, 4, 5), seed=0):
    """One sample of `tokens` tokens, as the dump writes it; prov=None: an older dump's file."""
    g = torch.Generator().manual_seed(seed)
    s = dict(
        input_ids=torch.randint(0, 64, (tokens,), generator=g),
        loss_mask=torch.ones(tokens, dtype=torch.long),
        hidden_state=torch.randn(1, tokens, H, generator=g).to(torch.bfloat16),
        aux_hidden_state=torch.randn(1, tokens, len(layers) * H, generator=g).to(torch.bfloat16),
        layers_to_capture=list(layers),
        prefix_len=0,
        rid="r-%s" % name,
    )
    if prov is not None:
        s["provenance"] = provenance(aux_layers=list(layers), eagle_aux_hidden_state_layer_ids=[i - 1 for i in layers]) if prov == "default" else prov
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(s, path)
    return path


def inspect(*args, timeout=300):
    """(exit status, stdout) of the command."""
    p = subprocess.run(command() + ["--python", sys.executable] + list(args), capture_output=True, text=True, timeout=timeout)
    if p.returncode not in (0, 1):
        print(p.stderr, file=sys.stderr)
    return p.returncode, p.stdout


# The command run by a small parent that reports the command's peak memory (ru_maxrss of the
# command alone: a child spawned by this test process would count this process's own).
PEAK = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss // 1024)
"""


def peak_mib(*args):
    """(exit status, peak resident memory in MiB) of the command."""
    p = subprocess.run([sys.executable, "-c", PEAK] + command() + ["--python", sys.executable] + list(args),
                       capture_output=True, text=True, timeout=300)
    code, mib = p.stdout.split()
    return int(code), int(mib)


def inspect_json(*args, timeout=300):
    code, out = inspect("--json", *args, timeout=timeout)
    return code, json.loads(out)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def png_chunks(data):
    """[(type, payload)] of a PNG, each chunk's CRC checked."""
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature")
    chunks, at = [], 8
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        kind, payload = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        (crc,) = struct.unpack(">I", data[at + 8 + n:at + 12 + n])
        check(crc == zlib.crc32(kind + payload) & 0xFFFFFFFF, "CRC of the %s chunk" % kind)
        chunks.append((kind, payload))
        at += 12 + n
    check(at == len(data), "bytes after the last chunk")
    return chunks


# ---------------------------------------------------------------------------------------


def case_clean_folder(tmp):
    # complete samples in the folder and in a rows_* subfolder (SpecForge's layout), a partial
    # one, and what is not a sample: a hidden temporary, a status file, another file
    d = os.path.join(tmp, "dump")
    complete = {"a.ckpt": 5, "rows_0/b.ckpt": 9, "rows_0/c.ckpt": 20, "d.ckpt": 6}
    partial = {"e.ckpt.partial": 4}
    paths = [write(d, name, n, seed=i) for i, (name, n) in enumerate(sorted({**complete, **partial}.items()))]
    with open(os.path.join(d, ".data_x.ckpt.tmp"), "wb") as f:
        f.write(b"half a sample")
    with open(os.path.join(d, ".hs_dump_status_dp0_pid1_00000000.json"), "w") as f:
        f.write("{}")
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a sample")
    png = os.path.join(tmp, "lengths.png")
    code, r = inspect_json(d, "--png", png, "--png-size", "200x100")
    check(code == 0 and r["ok"], "exit %d, %r" % (code, r))
    check((r["complete"], r["partial"]) == (len(complete), len(partial)), "counts %r" % ((r["complete"], r["partial"]),))
    check(r["tokens"] == dict(complete=sum(complete.values()), partial=sum(partial.values())), "tokens %r" % r["tokens"])
    check(r["bytes"] == sum(os.path.getsize(p) for p in paths), "bytes %d" % r["bytes"])
    check(r["with_provenance"] == len(paths) and r["mixed"] == [] and r["unreadable"] == [], "%r" % r)
    check(r["agreed"]["aux_layers"] == [2, 4, 5] and r["agreed"]["sglang_version"] == "0.5.10", "agreed %r" % r["agreed"])
    lengths = sorted(complete.values())
    check(r["lengths"]["min"] == lengths[0] and r["lengths"]["max"] == lengths[-1], "lengths %r" % r["lengths"])
    # the bins: contiguous powers of two from the shortest to the longest, every length in one
    bins = r["histogram"]
    check(all(b["low"] <= b["high"] and b["high"] + 1 == c["low"] for b, c in zip(bins, bins[1:])), "bins %r" % bins)
    check(all(b["high"] + 1 == 2 * b["low"] for b in bins), "not powers of two: %r" % bins)
    check(bins[0]["low"] <= lengths[0] and lengths[-1] <= bins[-1]["high"], "bins do not cover the lengths")
    for b in bins:
        check(b["count"] == sum(1 for n in lengths if b["low"] <= n <= b["high"]), "bin %r" % b)
    # the PNG: size as asked, every chunk's CRC, drawn by matplotlib where this interpreter has
    # it, else by the built-in renderer; one bar (in the bars' colour) per filled bin
    data = S.content(png)
    chunks = png_chunks(data)
    kinds = [k for k, _ in chunks]
    check(kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds, "chunks %r" % kinds)
    width, height, rows = S.decode_png(data)
    check((width, height) == (200, 100) == (r["png"]["width"], r["png"]["height"]), "IHDR %dx%d" % (width, height))
    try:
        import matplotlib  # noqa: F401
        drawn = "matplotlib"
    except ImportError:
        drawn = "built-in"
    check(r["png"]["renderer"].startswith(drawn), "renderer %r" % r["png"]["renderer"])
    bar = b"\x3b\x6e\xa8"
    bars = S.count_runs([any(row[3 * x:3 * x + 3] == bar for row in rows) for x in range(width)])
    check(bars == sum(1 for b in bins if b["count"]), "%d bars for %d bins" % (bars, len(bins)))
    # the text report says the same and agrees
    code, out = inspect(d)
    check(code == 0 and "OK" in out.splitlines()[-1], out)
    check("%d complete samples (%d tokens)" % (len(complete), sum(complete.values())) in out, out)
    check(not os.path.exists(os.path.join(d, "lengths.png")), "a PNG written without --png")


def _mixed(tmp, odd_writer, keys):
    d = os.path.join(tmp, "dump")
    for i in range(3):
        write(d, "data_%d.ckpt" % i, 5 + i, seed=i)
    odd = odd_writer(d)
    code, r = inspect_json(d)
    check(code == 1 and not r["ok"], "exit %d for a mixed folder" % code)
    got = dict((m["key"], m) for m in r["mixed"])
    check(set(got) == set(keys), "mixed keys %s, expected %s" % (sorted(got), sorted(keys)))
    for key in keys:
        m = got[key]
        check(m["majority_files"] == 3 and not m["tie"], "%s: majority of %d files" % (key, m["majority_files"]))
        check([o["files"] for o in m["others"]] == [[odd]], "%s: odd files %r" % (key, m["others"]))
    code, out = inspect(d)
    check(code == 1 and "NOT OK" in out, out)
    for key in keys:
        check(any(line.startswith("MIXED %s:" % key) for line in out.splitlines()), "%s not reported:\n%s" % (key, out))
    check(odd in out, "the odd file is not named:\n%s" % out)
    return got


def case_two_layer_conventions(tmp):
    # SpecForge's ids given to an SGLang that did not add 1: layers one lower
    got = _mixed(tmp, lambda d: write(d, "rows_1/data_9.ckpt", 7, layers=(1, 3, 4)), ["aux_layers", "eagle_aux_hidden_state_layer_ids"])
    check(got["aux_layers"]["majority"] == [2, 4, 5] and got["aux_layers"]["others"][0]["value"] == [1, 3, 4], "%r" % got)
    check(got["eagle_aux_hidden_state_layer_ids"]["majority"] == [1, 3, 4], "%r" % got)


def case_two_releases(tmp):
    got = _mixed(tmp, lambda d: write(d, "data_9.ckpt", 7, prov=provenance(sglang_version="0.5.13")), ["sglang_version"])
    check(got["sglang_version"]["majority"] == "0.5.10" and got["sglang_version"]["others"][0]["value"] == "0.5.13", "%r" % got)


def case_with_and_without_provenance(tmp):
    got = _mixed(tmp, lambda d: write(d, "old.ckpt", 7, prov=None), ["provenance"])
    check(got["provenance"]["majority"] == "present" and got["provenance"]["others"][0]["value"] == "absent", "%r" % got)


def case_older_dump_alone_is_consistent(tmp):
    # files of an older dump (no provenance) that agree among themselves: reported, not mixed
    d = os.path.join(tmp, "dump")
    for i in range(2):
        write(d, "data_%d.ckpt" % i, 4, prov=None, seed=i)
    code, r = inspect_json(d)
    check(code == 0 and r["with_provenance"] == 0 and r["complete"] == 2, "exit %d, %r" % (code, r))
    code, out = inspect(d)
    check("provenance: 0 of 2 files (older dumps have none)" in out, out)


def case_unreadable_file(tmp):
    d = os.path.join(tmp, "dump")
    write(d, "good.ckpt", 5)
    bad = os.path.join(d, "bad.ckpt")
    with open(bad, "wb") as f:
        f.write(b"not a torch file")
    code, r = inspect_json(d)
    check(code == 1 and [u["file"] for u in r["unreadable"]] == [bad] and r["complete"] == 1, "exit %d, %r" % (code, r))


def unreadable_kinds(r):
    return [(os.path.basename(u["file"]), u.get("kind")) for u in r["unreadable"]]


def case_hand_written_samples_are_read_by_torch_as_by_the_checker(tmp):
    # the archives the torch-free tests use (hs_inspect_samples.py) are what torch.load
    # reads, tensor for tensor: the command's torch.load step compares them with its own reading
    d = os.path.join(tmp, "dump")
    for i, n in enumerate((3, 7, 12)):
        S.write(os.path.join(d, "h%d.ckpt" % i), S.sample_bytes(S.sample(tokens=n)))
    code, r = inspect_json(d)
    check(code == 0 and r["complete"] == 3 and r["tokens"]["complete"] == 22, "exit %d, %r" % (code, r))
    loaded = torch.load(os.path.join(d, "h1.ckpt"), weights_only=True, mmap=True)
    check(tuple(loaded["hidden_state"].shape) == (1, 7, 8) and loaded["hidden_state"].dtype == torch.bfloat16, "%r" % loaded)
    check(loaded["provenance"] == S.provenance(), "provenance %r" % loaded["provenance"])


def case_a_provenance_of_shared_references_ends_at_once(tmp):
    # `a = [a, a]` sixty times over, as a value the checker compares and prints: 1 KB on
    # disk, 2**60 values in print (the old checker never ended)
    d = os.path.join(tmp, "dump")
    a = [1]
    for _ in range(60):
        a = [a, a]
    S.write(os.path.join(d, "bomb.ckpt"), S.sample_bytes(S.sample(prov=S.provenance(sglang_version=a))))
    write(d, "good.ckpt", 5)
    code, r = inspect_json(d, timeout=120)
    check(code == 1 and unreadable_kinds(r) == [("bomb.ckpt", "pickle")], "exit %d, %r" % (code, r["unreadable"]))


def case_nested_and_tensor_provenance_values_are_named(tmp):
    # torch.save'd by torch itself: a nested list, a tensor, a dict as provenance values
    d = os.path.join(tmp, "dump")
    write(d, "nested.ckpt", 5, prov=provenance(aux_layers=[[2], [4]]))
    write(d, "tensor.ckpt", 5, prov=provenance(hidden_size=torch.tensor(8)))
    write(d, "dict.ckpt", 5, prov=provenance(sglang_version=dict(v="0.5.10")))
    deep = 1
    for _ in range(300):
        deep = [deep]
    write(d, "deep.ckpt", 5, prov=provenance(aux_layers=deep))
    code, r = inspect_json(d)
    got = dict(unreadable_kinds(r))
    check(code == 1 and got == {"nested.ckpt": "provenance", "tensor.ckpt": "provenance", "dict.ckpt": "provenance",
                                "deep.ckpt": "pickle"}, "exit %d, %r" % (code, r["unreadable"]))
    code, out = inspect(d)
    check("Traceback" not in out and out.count("UNREADABLE") == 4, out)


def case_a_zip_bomb_is_refused_in_bounded_memory(tmp):
    # torch.save stores data.pkl; one deflated to 1 MB that inflates to 1 GiB is refused
    # before it is inflated (the old checker took its whole size, and more, in memory)
    d, clean = os.path.join(tmp, "dump"), os.path.join(tmp, "clean")
    write(clean, "good.ckpt", 5)
    size = 1 << 30
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(b"\x80\x02X" + size.to_bytes(4, "little"))
    chunk = b"a" * (1 << 24)
    for _ in range(size // len(chunk)):
        body += c.compress(chunk)
    body += c.compress(b".") + c.flush()
    # the archive by hand: the deflated data.pkl and torch.save's version record
    entries, central = b"", b""
    for name, method, data, usize, crc in ((b"bomb/data.pkl", 8, body, size + 8, 0),
                                           (b"bomb/version", 0, b"3\n", 2, zlib.crc32(b"3\n"))):
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, len(data), usize,
                               len(name), 0, 0, 0, 0, 0, len(entries)) + name
        entries += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(data), usize, len(name), 0) + name + data
    os.makedirs(d)
    with open(os.path.join(d, "bomb.ckpt"), "wb") as f:
        f.write(entries + central + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 2, 2, len(central), len(entries), 0))
    check(os.path.getsize(os.path.join(d, "bomb.ckpt")) < 4 << 20, "the bomb is not small")
    _, base = peak_mib(clean)
    code, peak = peak_mib(d)
    check(code == 1, "exit %d" % code)
    check(peak < base + 200, "%d MiB for the bomb, %d MiB for a clean folder" % (peak, base))
    code, r = inspect_json(d)
    check(unreadable_kinds(r) == [("bomb.ckpt", "archive")], "%r" % r["unreadable"])


def case_a_sample_declaring_two_to_the_36_ids_is_named(tmp):
    # the old checker fell back to a whole load and reported a MemoryError
    d = os.path.join(tmp, "dump")
    s = S.sample(input_ids=S.T("LongStorage", (1 << 36,), data=b"\0" * 40, numel=1 << 36))
    S.write(os.path.join(d, "ids.ckpt"), S.sample_bytes(s))
    code, r = inspect_json(d)
    check(code == 1 and unreadable_kinds(r) == [("ids.ckpt", "tensor")], "exit %d, %r" % (code, r["unreadable"]))
    check("MemoryError" not in r["unreadable"][0]["error"], r["unreadable"][0]["error"])


def case_fifos_and_devices_named_like_samples_do_not_block(tmp):
    d = os.path.join(tmp, "dump")
    write(d, "good.ckpt", 5)
    os.mkfifo(os.path.join(d, "fifo.ckpt"))
    os.symlink("/dev/zero", os.path.join(d, "zero.ckpt.partial"))
    code, r = inspect_json(d, timeout=120)
    check(code == 1 and r["complete"] == 1, "exit %d, %r" % (code, r))
    check(sorted(unreadable_kinds(r)) == [("fifo.ckpt", "not-a-file"), ("zero.ckpt.partial", "not-a-file")], "%r" % r["unreadable"])


def case_png_is_never_written_over_a_file_or_through_a_link(tmp):
    d = os.path.join(tmp, "dump")
    sample = write(d, "good.ckpt", 5)
    before = S.content(sample)
    link = os.path.join(tmp, "lengths.png")
    os.symlink(sample, link)
    mine = os.path.join(tmp, "mine.png")
    S.write(mine, b"my own file")
    for png in (link, mine, sample):
        p = subprocess.run(command() + ["--python", sys.executable, d, "--png", png], capture_output=True, text=True, timeout=300)
        check(p.returncode == 2 and "--png" in p.stderr, "--png %s: exit %d, %s" % (png, p.returncode, p.stderr))
    check(S.content(sample) == before and S.content(mine) == b"my own file", "a file was written over")
    code, r = inspect_json(d, "--png", os.path.join(tmp, "new.png"))
    check(code == 0 and S.content(os.path.join(tmp, "new.png"))[:8] == b"\x89PNG\r\n\x1a\n", "exit %d" % code)


def case_names_and_values_are_printed_escaped(tmp):
    d = os.path.join(tmp, "dump")
    write(d, "a.ckpt", 5)
    write(d, "b.ckpt", 5)
    write(d, "evil\x1b]0;PWNED\x07\u202e.ckpt", 5, prov=provenance(pysplice_version="\x1b[2J"))
    S.write(os.path.join(d, "bad\x1b[31m.ckpt"), b"\x1b[2J")
    p = subprocess.run(command() + ["--python", sys.executable, d], capture_output=True, timeout=300)
    check(p.returncode == 1, "exit %d" % p.returncode)
    for raw in (b"\x1b", b"\x07", "\u202e".encode()):
        check(raw not in p.stdout + p.stderr, "%r printed raw:\n%s" % (raw, p.stdout.decode(errors="replace")))
    check(b"bad\\x1b[31m.ckpt" in p.stdout and b"\\x1b[2J (1)" in p.stdout, p.stdout.decode())


def case_empty_and_missing_folders(tmp):
    d = os.path.join(tmp, "empty")
    os.makedirs(d)
    code, r = inspect_json(d)
    check(code == 1 and r["complete"] == r["partial"] == 0, "empty folder: exit %d" % code)
    code, _ = inspect(os.path.join(tmp, "missing"))
    check(code == 2, "missing folder: exit %d" % code)


def case_several_folders_together(tmp):
    # node folders checked together: a mix across them is a mix
    a, b = os.path.join(tmp, "node0"), os.path.join(tmp, "node1")
    write(a, "x.ckpt", 5)
    write(a, "y.ckpt", 6)
    odd = write(b, "z.ckpt", 7, prov=provenance(architecture="Qwen3MoeForCausalLM"))
    code, r = inspect_json(a, b)
    check(code == 1 and r["complete"] == 3, "exit %d" % code)
    check([m["key"] for m in r["mixed"]] == ["architecture"] and r["mixed"][0]["others"][0]["files"] == [odd], "%r" % r["mixed"])


def pysplice():
    """The pysplice program of this checkout, or None."""
    if os.environ.get("PYSPLICE"):
        return os.environ["PYSPLICE"]
    for kind in ("debug", "release"):
        path = os.path.join(REPO, "target", kind, "pysplice")
        if os.access(path, os.X_OK):
            return path
    return None


def real_dump(tmp, out, layers=None):
    """Samples written by the recipe itself: the runtime mock patched with the recipe's TOML, one
    prefill pass of two requests into `out` (SGLANG_HS_DUMP_LAYERS=`layers` when given)."""
    import importlib.util

    mock = os.path.join(tmp, "mock_patched_%d.py" % len(os.listdir(tmp)))
    with open(os.path.join(REPO, "crates", "pysplice-sglang", "tests", "python", "runtime", "mock_deepseek_v2.py")) as src, open(mock, "w") as dst:
        dst.write(src.read())
    spec = os.path.join(REPO, "crates", "pysplice-sglang", "python", "pysplice_sglang", "dump", "sglang_hs_dump.toml")
    subprocess.run([pysplice(), "apply", "--spec", spec, mock], check=True, stdout=subprocess.DEVNULL)
    loader = importlib.util.spec_from_file_location(os.path.basename(mock)[:-3], mock)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    saved = dict(os.environ)
    os.environ["SGLANG_HS_DUMP_DIR"] = out
    if layers is not None:
        os.environ["SGLANG_HS_DUMP_LAYERS"] = layers
    try:
        torch.manual_seed(0)
        model = module.DeepseekV2ForCausalLM(module.MockConfig())
        ids = torch.randint(0, 64, (9,))
        batch = module.ForwardBatch(module.ForwardMode.EXTEND, ids, torch.arange(9), [5, 4], [0, 0], ["a", "b"])
        with torch.no_grad():
            model.model(ids, batch.positions, batch)
        model.model._hs_dump_state["queue"].close()  # written and flushed
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return list(model.model.layers_to_capture)


def case_folders_written_by_the_recipe(tmp):
    # what the dump writes is what the checker reads: one model's folder agrees; a second one
    # whose ids SGLang 0.5.13+ took as they are (no +1: the first id is not 1) does not
    if pysplice() is None:
        raise Skip("no pysplice program (cargo build --bin pysplice, or PYSPLICE=...)")
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    layers = real_dump(tmp, a)
    code, r = inspect_json(a)
    check(code == 0 and r["complete"] == 2 and r["tokens"]["complete"] == 9, "exit %d, %r" % (code, r))
    check(r["agreed"]["aux_layers"] == layers and r["agreed"]["eagle_aux_hidden_state_layer_ids"] == [i - 1 for i in layers], "%r" % r["agreed"])
    check(r["agreed"]["architecture"] == "DeepseekV3ForCausalLM" and r["agreed"]["model_class"] == "DeepseekV2Model", "%r" % r["agreed"])
    other = real_dump(tmp, b, layers="3,5,6")
    check(other == [3, 5, 6] != layers, "layers %r and %r" % (layers, other))
    code, r = inspect_json(a, b)
    keys = sorted(m["key"] for m in r["mixed"])
    check(code == 1 and keys == ["aux_layers", "eagle_aux_hidden_state_layer_ids"], "exit %d, mixed %s" % (code, keys))
    # two files each: a tie, said so, the first folder's value taken as the majority
    check(all(m["tie"] and m["majority_files"] == 2 for m in r["mixed"]), "%r" % r["mixed"])
    check(r["mixed"][0]["majority"] == layers, "majority %r" % r["mixed"][0]["majority"])


class Skip(Exception):
    pass


CASES = [(n[5:], f) for n, f in list(globals().items()) if n.startswith("case_")]


def main():
    passed = failed = 0
    for name, fn in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                fn(tmp)
            except Skip as why:
                print("skip %s: %s" % (name, why))
            except Exception as exc:
                failed += 1
                print("FAIL %s: %s" % (name, "".join(traceback.format_exception_only(type(exc), exc)).strip()))
            else:
                passed += 1
                print("ok   %s" % name)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
