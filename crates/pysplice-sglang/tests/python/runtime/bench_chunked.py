#!/usr/bin/env python3
"""A long request under chunked prefill, through the recipe's dump, against the same unchunked.

    python3 crates/pysplice-sglang/tests/python/runtime/bench_chunked.py PATCHED_MOCK [--dir /dev/shm/hs_chunked]
        [--tokens 131072] [--chunk 8192] [--hidden 7168] [--aux 3] [--gap SECONDS]
        [--interleave N] [--suite]

Calls the recipe's `_pysplice_hs_dump` (from a mock patched by the engine, see patch_mock.sh)
with the passes SGLang 0.5.23's scheduler makes of one prompt of --tokens tokens: with chunked
prefill, --tokens / --chunk passes of one request (the same rid, `extend_prefix_lens` growing by
one chunk each pass, `orig_seq_lens` the whole prompt, the request's pool slot kept); without, one
pass of the whole prompt. With --interleave N, N prompts of --tokens / N tokens each, their
chunks taking turns pass by pass (rids tell them apart). Rows are DeepSeek-V3's width (bf16,
H = --hidden, --aux aux layers), made on the GPU (CPU when there is none). Passes come back to
back, or --gap seconds apart (the time a real forward of a chunk takes). The model is built with
a config of that width (the dump starts building its ring then, where it does, and the run waits
for it, as a server loads its weights meanwhile: `ring built before`). Before the timed passes,
one request of --chunk tokens (its own sample, not counted) is the run's first pass, reported
apart. --suite runs the set the benchmarks document: first the folder's own bounds (the same
bytes, 8 MiB pieces, no CRC: pwrite by 4 threads into 4 files, by 4 threads into one file and by
one thread into one file; stores through one shared mapping of one file, torch copy_, by 4
threads), then chunked back to back and 0.16 s apart, 4 prompts interleaved the same two ways,
and unchunked; the GB/s of each run are also given as ratios to the one-thread pwrite rate and
the four-thread mapped rate. Each mode runs in a process of its own and reports:

  pinned    a device-to-host copy of one pass's rows into pinned memory, timed to completion
            (median of 5), in the same process before the dump starts: the reference;
  blocked   the time the forward spends in the dump per pass (median and max), the GPU idle;
  done      from the first pass until everything is written (the writer closed as at exit);
  after     of it, the time after the last pass returned;
  GB/s      the prompts' rows (bytes) over `done`;
  rss       the peak resident memory over the baseline (VmHWM), and the peak of its anonymous
            part (RssAnon, sampled every 5 ms): file pages mapped from the dump folder count in
            the first, not in the second;
  files     what the folder holds at the end: one complete .ckpt per prompt, nothing partial.

Each run then checks every file: input_ids, hidden_state and aux_hidden_state equal the rows the
passes produced, in order, and prefix_len is 0; with --crc, every zip entry's CRC too. Exits
non-zero when a check fails; prints a Markdown table.
"""

import argparse
import ctypes
import importlib.util
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import zipfile

sys.dont_write_bytecode = True

import torch  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Sampler(threading.Thread):
    """The peak of RssAnon, sampled."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak, self.stop = 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, status_kib("RssAnon"))
            time.sleep(0.005)


class Batch:
    """The ForwardBatch fields of a prefill pass as 0.5.23's scheduler fills them."""

    class Mode:
        name = "EXTEND"

    def __init__(self, ids, lens, prefix, full, rids, slots, loc):
        self.forward_mode = Batch.Mode()
        self.input_ids = ids
        self.extend_seq_lens_cpu = list(lens)
        self.extend_prefix_lens_cpu = list(prefix)
        self.extend_seq_lens = torch.tensor(lens, dtype=torch.int32, device=ids.device)
        self.extend_prefix_lens = torch.tensor(prefix, dtype=torch.int32, device=ids.device)
        self.seq_lens = self.extend_seq_lens + self.extend_prefix_lens
        self.orig_seq_lens = torch.tensor(full, dtype=torch.int32, device=ids.device)
        self.rids = list(rids)
        self.req_pool_indices = torch.tensor(slots, dtype=torch.int64, device=ids.device)
        self.req_pool_indices_cpu = list(slots)
        self.out_cache_loc = loc


class Model:
    """Stands for DeepseekV2Model: the attributes the recipe's init block sets."""


class Config:
    """Stands for the model's config: what the dump reads of it when the model is built."""

    def __init__(self, hidden):
        self.hidden_size, self.num_hidden_layers, self.torch_dtype = hidden, 61, torch.bfloat16


def load(path):
    spec = importlib.util.spec_from_file_location("patched_mock", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pinned_copy_ms(hidden, aux, ids, rows):
    """The reference: one pass's rows copied to pinned host memory, to completion (median of 5)."""
    if DEVICE != "cuda":
        return None
    parts = [t[:rows] for t in (hidden, aux, ids) if t is not None]
    dst = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in parts]
    times = []
    for _ in range(6):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for d, t in zip(dst, parts):
            d.copy_(t, non_blocking=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    del dst
    return statistics.median(times[1:]) * 1e3


def idle(queue):
    """Wait until the writer has written what it was given and has its ring ready."""
    with queue.cond:
        while (queue.jobs or queue.resizing or queue.busy) and queue.error is None:
            queue.cond.wait(1.0)


def plan(n, chunk, ways):
    """The passes, chunks of the `ways` prompts taking turns: (prompt, its first row, rows)."""
    size = n // ways
    cuts = [[(k, start, min(chunk, size - start)) for start in range(0, size, chunk)] for k in range(ways)]
    out = []
    while any(cuts):
        for c in cuts:
            if c:
                out.append(c.pop(0))
    return out, size


def plain_writes(args):
    """What the folder allows: the prompts' bytes written with plain pwrite calls (8 MiB pieces,
    no CRC) by 4 threads into 4 files, by 4 threads into one file, by one thread into one file."""
    total = args.tokens * (8 + args.hidden * 2 * (1 + args.aux))
    src = memoryview(torch.randint(0, 255, (64 << 20,), dtype=torch.uint8).numpy()).cast("B")
    out = os.path.join(args.dir, "plain")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    def rate(threads, files):
        fds = [os.open(os.path.join(out, "f%d" % k), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for k in range(files)]
        share = total // threads

        def work(k):
            fd, at, done = fds[k % files], k * share if files == 1 else 0, 0
            while done < share:
                n = min(8 << 20, share - done)
                os.pwrite(fd, src[(done % (56 << 20)) :][:n], at + done)
                done += n

        ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        took = time.perf_counter() - t0
        for fd in fds:
            os.close(fd)
        for k in range(files):
            os.unlink(os.path.join(out, "f%d" % k))
        return share * threads / took / 1e9

    def mapped(threads):  # stores through one shared mapping of one file (torch copy_, 8 MiB pieces)
        path = os.path.join(out, "m")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(fd, total)
        m = mmap.mmap(fd, total)
        ref = ctypes.c_char.from_buffer(m)
        base, share = ctypes.addressof(ref), total // threads
        whole = torch.frombuffer(src, dtype=torch.uint8)

        def work(k):
            at, done = k * share, 0
            while done < share:
                n = min(8 << 20, share - done)
                dst = torch.frombuffer((ctypes.c_char * n).from_address(base + at + done), dtype=torch.uint8)
                dst.copy_(whole[(done % (56 << 20)) :][:n])
                done += n

        ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        took = time.perf_counter() - t0
        del ref
        m.close()
        os.close(fd)
        os.unlink(path)
        return share * threads / took / 1e9

    result = dict(mode="plain", bytes=total, four_files=rate(4, 4), one_file_four=rate(4, 1), one_file_one=rate(1, 1), mapped_four=mapped(4), failures=[])
    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(result), flush=True)


def run_mode(args):
    if args.mode == "plain":
        return plain_writes(args)
    mod = load(args.mock)
    n, H, K = args.tokens, args.hidden, args.aux
    chunk = args.chunk if args.mode == "chunked" else args.tokens
    ways = args.interleave if args.mode == "chunked" else 1
    passes, size = plan(n, chunk, ways)
    gen = torch.Generator(device=DEVICE).manual_seed(3)

    def rows_of(width):  # random bf16 rows, made a block at a time (no float32 copy of them all)
        t = torch.empty(n + 8, width, device=DEVICE, dtype=torch.bfloat16)
        for b in range(0, n + 8, 8192):
            t[b : b + 8192] = torch.randn(min(8192, n + 8 - b), width, device=DEVICE, generator=gen, dtype=torch.float32)
        return t

    # the prompts' rows, as the forward passes would produce them (plus padding rows per pass)
    hidden = rows_of(H)
    aux = rows_of(K * H) if K else None
    ids = torch.randint(0, 100000, (n + 8,), device=DEVICE, generator=gen)
    loc = torch.arange(1, n + 9, device=DEVICE)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    pinned = pinned_copy_ms(hidden, aux, ids, min(chunk, size) + 8)
    out = os.path.join(args.dir, args.mode)
    shutil.rmtree(out, ignore_errors=True)
    os.environ["SGLANG_HS_DUMP_DIR"] = out
    model = Model()
    model.layers_to_capture = [2, 30, 58][:K]
    model._hs_dump_dir = mod._pysplice_hs_setup(model, Config(H))
    model._hs_dump_count = 0
    assert model._hs_dump_dir is not None
    # A server builds the model, then loads its weights: the dump builds its ring meanwhile
    # (where it does); the time that took, before the first pass.
    t0 = time.perf_counter()
    early = model._hs_dump_state.get("early")
    if early is not None:
        early["done"].wait()
    ring_s = time.perf_counter() - t0 if early is not None else None

    def one_pass(rid, begin, start, m, full):
        # rows [start, start + m) of a prompt of `full` rows that begins at row `begin` of the
        # tensors, plus padding rows past them, as a batch padded for MLP sync carries
        rows = slice(begin + start, begin + start + m + 8)
        value = (hidden[rows], aux[rows]) if K else hidden[rows]
        batch = Batch(ids[rows], [m], [start], [full], [rid], [7], loc[rows])
        if DEVICE == "cuda":
            torch.cuda.synchronize()  # the forward's own GPU work is done
        t0 = time.perf_counter()
        returned = mod._pysplice_hs_dump(model, None, batch, value)
        took = time.perf_counter() - t0
        assert returned is value
        return took

    # a first request of one chunk, a sample of its own: the dump builds its ring meanwhile
    warm = min(args.chunk, n)
    first = one_pass("warm-up", 0, 0, warm, warm)
    idle(model._hs_dump_state["queue"])
    for name in os.listdir(out):
        if name.endswith(".ckpt"):
            os.unlink(os.path.join(out, name))
    with open("/proc/self/clear_refs", "w") as f:  # the peak (VmHWM) restarts from here
        f.write("5")
    base, base_anon = status_kib("VmRSS"), status_kib("RssAnon")
    sampler = Sampler()
    sampler.start()
    blocked = []
    t_all = time.perf_counter()
    for k, start, m in passes:
        if blocked and args.gap:
            time.sleep(args.gap)  # the next chunk's own forward
        blocked.append(one_pass("long-%d" % k, k * size, start, m, size))
    t_last = time.perf_counter()
    # As at exit: what is queued is written (the last passes' rows complete the samples).
    model._hs_dump_state["queue"].close()
    done = time.perf_counter() - t_all
    sampler.stop.set()
    sampler.join()
    peak, peak_anon = status_kib("VmHWM"), sampler.peak
    files = sorted(os.listdir(out))
    complete = [f for f in files if f.endswith(".ckpt")]
    row_bytes = n * (8 + H * 2 * (1 + K))
    result = dict(mode=args.mode, ways=ways, gap=args.gap, passes=len(blocked), pinned_ms=pinned, first_ms=first * 1e3, ring_s=ring_s,
                  blocked_ms=statistics.median(blocked) * 1e3, blocked_max_ms=max(blocked) * 1e3, done_s=done,
                  after_s=done - (t_last - t_all), gbps=row_bytes / done / 1e9, rss_mib=(peak - base) / 1024,
                  anon_mib=(peak_anon - base_anon) / 1024, files=files, failures=[])
    if len(complete) != ways or any(not f.endswith(".ckpt") and not f.startswith(".") for f in files):
        result["failures"].append("folder holds %s" % files)
    else:
        step = 8192
        for path in complete:
            s = torch.load(os.path.join(out, path), map_location="cpu", weights_only=True, mmap=True)
            k = int(s["rid"].split("-")[1])
            lo = k * size
            checks = [("prefix_len", s.get("prefix_len") == 0), ("input_ids", torch.equal(s["input_ids"], ids[lo : lo + size].cpu().long()))]
            ok = tuple(s["hidden_state"].shape) == (1, size, H)
            for b in range(0, size, step):
                ok = ok and torch.equal(s["hidden_state"][0, b : b + step], hidden[lo + b : lo + min(b + step, size)].cpu())
            checks.append(("hidden_state", ok))
            if K:
                ok = tuple(s["aux_hidden_state"].shape) == (1, size, K * H)
                for b in range(0, size, step):
                    ok = ok and torch.equal(s["aux_hidden_state"][0, b : b + step], aux[lo + b : lo + min(b + step, size)].cpu())
                checks.append(("aux_hidden_state", ok))
            result["failures"] += ["%s: %s differs from the rows the passes produced" % (path, key) for key, good in checks if not good]
            del s
            if args.crc:  # every entry's CRC, as Python's zipfile checks it (reads the whole file)
                with zipfile.ZipFile(os.path.join(out, path)) as z:
                    bad = z.testzip()
                if bad is not None:
                    result["failures"].append("%s: entry %s has a wrong CRC" % (path, bad))
        result["ckpt_gib"] = sum(os.path.getsize(os.path.join(out, f)) for f in complete) / (1 << 30)
    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(result), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mock")
    p.add_argument("--dir", default="/dev/shm/hs_chunked")
    p.add_argument("--tokens", type=int, default=131072)
    p.add_argument("--chunk", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--aux", type=int, default=3)
    p.add_argument("--gap", type=float, default=0.0, help="seconds between passes (default: back to back)")
    p.add_argument("--interleave", type=int, default=1, help="prompts whose chunks take turns (default 1)")
    p.add_argument("--suite", action="store_true", help="the documented set of runs")
    p.add_argument("--crc", action="store_true", help="also check every zip entry's CRC of each file (reads it all again)")
    p.add_argument("--mode", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.mock = os.path.abspath(args.mock)
    if args.interleave < 1 or args.tokens % args.interleave:
        p.error("--interleave must divide --tokens")
    if args.mode:
        run_mode(args)
        return 0
    gpu = torch.cuda.get_device_name(0) if DEVICE == "cuda" else "no GPU"
    print("torch %s, %s, %d CPUs, folder %s" % (torch.__version__, gpu, os.cpu_count(), args.dir))
    if args.suite:
        runs = [("plain", 1, 0.0), ("chunked", 1, 0.0), ("chunked", 1, 0.16), ("chunked", 4, 0.0), ("chunked", 4, 0.16), ("unchunked", 1, 0.0)]
    else:
        runs = [("chunked", args.interleave, args.gap), ("unchunked", 1, 0.0)]
    rows, failed, plain = [], False, None
    for mode, ways, gap in runs:
        cmd = [sys.executable, os.path.abspath(__file__), args.mock, "--mode", mode, "--dir", args.dir, "--tokens", str(args.tokens),
               "--chunk", str(args.chunk), "--hidden", str(args.hidden), "--aux", str(args.aux), "--gap", str(gap), "--interleave", str(ways)]
        cmd += ["--crc"] if args.crc else []
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not done.stdout.strip():
            print(done.stdout, done.stderr)
            return 1
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(r), flush=True)
        if mode == "plain":
            plain = r
            continue
        for f in r["failures"]:
            print("FAIL %s: %s" % (mode, f))
            failed = True
        rows.append(r)
    shutil.rmtree(args.dir, ignore_errors=True)
    row_mib = args.tokens * args.hidden * 2 * (1 + args.aux) / (1 << 20)
    print()
    print("%d tokens of prompts, H = %d, %d aux layers, bf16 (%.0f MiB of rows); chunks of %d tokens"
          % (args.tokens, args.hidden, args.aux, row_mib, args.chunk))

    def ms(v):
        return "%.1f ms" % v if v is not None else "-"

    def ratio(v, ref):
        return "%.2fx" % (v / ref) if ref else "-"

    print("| prefill | passes | blocked per pass, median (max) | pinned copy of a pass | median, max / pinned | all written | after the last pass | GB/s | / pwrite 1 thread, / mapped 4 threads | first pass (/ pinned) | ring built before | peak RSS over base | peak anonymous | files |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["mode"] == "unchunked":
            what = "unchunked"
        else:
            what = ("%d prompts interleaved, " % r["ways"] if r["ways"] > 1 else "") + ("%.2f s apart" % r["gap"] if r["gap"] else "back to back")
        counts = "%d .ckpt, %d .ckpt.partial" % (sum(f.endswith(".ckpt") for f in r["files"]), sum(f.endswith(".ckpt.partial") for f in r["files"]))
        bounds = "%s, %s" % (ratio(r["gbps"], plain["one_file_one"]), ratio(r["gbps"], plain["mapped_four"])) if plain else "-"
        ring = "%.2f s" % r["ring_s"] if r.get("ring_s") is not None else "-"
        print("| %s | %d | %s (%s) | %s | %s, %s | %.2f s | %.2f s | %.2f | %s | %s (%s) | %s | %.0f MiB | %.0f MiB | %s |" % (
            what, r["passes"], ms(r["blocked_ms"]), ms(r["blocked_max_ms"]), ms(r["pinned_ms"]), ratio(r["blocked_ms"], r["pinned_ms"]),
            ratio(r["blocked_max_ms"], r["pinned_ms"]), r["done_s"], r["after_s"], r["gbps"], bounds, ms(r["first_ms"]),
            ratio(r["first_ms"], r["pinned_ms"]), ring, r["rss_mib"], r["anon_mib"], counts))
    if args.suite:
        print()
        print("The folder's bounds, the same %.2f GB written in the same run (8 MiB pieces, no CRC): pwrite by 4 threads into 4 files: %.2f GB/s; "
              "pwrite by 4 threads into one file: %.2f GB/s; pwrite by one thread into one file: %.2f GB/s; stores through one shared mapping "
              "of one file (torch copy_) by 4 threads: %.2f GB/s" % (plain["bytes"] / 1e9, plain["four_files"], plain["one_file_four"],
                                                                       plain["one_file_one"], plain["mapped_four"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
