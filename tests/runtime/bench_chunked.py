#!/usr/bin/env python3
"""A long request under chunked prefill, through the recipe's dump, against the same unchunked.

    python3 tests/runtime/bench_chunked.py PATCHED_MOCK [--dir /dev/shm/hs_chunked]
        [--tokens 131072] [--chunk 8192] [--hidden 7168] [--aux 3] [--gap SECONDS]

Calls the recipe's `_pysplice_hs_dump` (from a mock patched by the engine, see patch_mock.sh)
with the passes SGLang 0.5.23's scheduler makes of one prompt of --tokens tokens: with chunked
prefill, --tokens / --chunk passes of one request (the same rid, `extend_prefix_lens` growing by
one chunk each pass, `orig_seq_lens` the whole prompt, the request's pool slot kept); without, one
pass of the whole prompt. Rows are DeepSeek-V3's width (bf16, H = --hidden, --aux aux layers),
made on the GPU (CPU when there is none). Passes come back to back, or --gap seconds apart (the
time a real forward of a chunk takes). Each mode runs in a process of its own and reports:

  blocked   the time the forward spends in the dump per pass (median and max), the GPU idle;
  done      from the first pass until everything is written (the writer closed as at exit);
  rss       the peak resident memory over the baseline (VmHWM), and the peak of its anonymous
            part (RssAnon, sampled every 5 ms): file pages mapped from the dump folder count in
            the first, not in the second;
  files     what the folder holds at the end: one complete .ckpt, nothing partial.

Each run then checks the file: input_ids, hidden_state and aux_hidden_state equal the rows the
passes produced, in order, and prefix_len is 0. Exits non-zero when a check fails; prints a
Markdown table.
"""

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

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


def load(path):
    spec = importlib.util.spec_from_file_location("patched_mock", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_mode(args):
    mod = load(args.mock)
    n, chunk, H, K = args.tokens, args.chunk if args.mode == "chunked" else args.tokens, args.hidden, args.aux
    gen = torch.Generator(device=DEVICE).manual_seed(3)
    # the prompt's rows, as the forward passes would produce them (plus padding rows per pass)
    hidden = torch.randn(n + 8, H, device=DEVICE, generator=gen, dtype=torch.float32).to(torch.bfloat16)
    aux = torch.randn(n + 8, K * H, device=DEVICE, generator=gen, dtype=torch.float32).to(torch.bfloat16) if K else None
    ids = torch.randint(0, 100000, (n + 8,), device=DEVICE, generator=gen)
    loc = torch.arange(1, n + 9, device=DEVICE)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    out = os.path.join(args.dir, args.mode)
    shutil.rmtree(out, ignore_errors=True)
    os.environ["SGLANG_HS_DUMP_DIR"] = out
    model = Model()
    model.layers_to_capture = [2, 30, 58][:K]
    model._hs_dump_dir = mod._pysplice_hs_setup(model, None)
    model._hs_dump_count = 0
    assert model._hs_dump_dir is not None
    with open("/proc/self/clear_refs", "w") as f:  # the peak (VmHWM) restarts from here
        f.write("5")
    base, base_anon = status_kib("VmRSS"), status_kib("RssAnon")
    sampler = Sampler()
    sampler.start()
    blocked = []
    t_all = time.perf_counter()
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        # padding rows past the request, as a batch padded for MLP sync carries
        rows = slice(start, start + m + 8)
        value = (hidden[rows], aux[rows]) if K else hidden[rows]
        batch = Batch(ids[rows], [m], [start], [n], ["long-0"], [7], loc[rows])
        if blocked and args.gap:
            time.sleep(args.gap)  # the next chunk's own forward
        if DEVICE == "cuda":
            torch.cuda.synchronize()  # the forward's own GPU work is done
        t0 = time.perf_counter()
        returned = mod._pysplice_hs_dump(model, None, batch, value)
        blocked.append(time.perf_counter() - t0)
        assert returned is value
    # As at exit: what is queued is written (the last pass's rows complete the sample).
    model._hs_dump_state["queue"].close()
    done = time.perf_counter() - t_all
    sampler.stop.set()
    sampler.join()
    peak, peak_anon = status_kib("VmHWM"), sampler.peak
    files = sorted(os.listdir(out))
    complete = [f for f in files if f.endswith(".ckpt")]
    result = dict(mode=args.mode, passes=len(blocked), blocked_ms=statistics.median(blocked) * 1e3,
                  blocked_max_ms=max(blocked) * 1e3, done_s=done, rss_mib=(peak - base) / 1024,
                  anon_mib=(peak_anon - base_anon) / 1024, files=files, failures=[])
    if len(complete) != 1 or any(not f.endswith(".ckpt") and not f.startswith(".") for f in files):
        result["failures"].append("folder holds %s" % files)
    else:
        s = torch.load(os.path.join(out, complete[0]), map_location="cpu", weights_only=True, mmap=True)
        checks = [("prefix_len", s.get("prefix_len") == 0), ("input_ids", torch.equal(s["input_ids"], ids[:n].cpu().long()))]
        step = 8192
        ok = tuple(s["hidden_state"].shape) == (1, n, H)
        for b in range(0, n, step):
            ok = ok and torch.equal(s["hidden_state"][0, b : b + step], hidden[b : min(b + step, n)].cpu())
        checks.append(("hidden_state", ok))
        if K:
            ok = tuple(s["aux_hidden_state"].shape) == (1, n, K * H)
            for b in range(0, n, step):
                ok = ok and torch.equal(s["aux_hidden_state"][0, b : b + step], aux[b : min(b + step, n)].cpu())
            checks.append(("aux_hidden_state", ok))
        result["failures"] += ["%s differs from the rows the passes produced" % k for k, good in checks if not good]
        result["ckpt_gib"] = os.path.getsize(os.path.join(out, complete[0])) / (1 << 30)
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
    p.add_argument("--mode", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.mock = os.path.abspath(args.mock)
    if args.mode:
        run_mode(args)
        return 0
    gpu = torch.cuda.get_device_name(0) if DEVICE == "cuda" else "no GPU"
    print("torch %s, %s, %d CPUs, folder %s" % (torch.__version__, gpu, os.cpu_count(), args.dir))
    rows, failed = [], False
    for mode in ("chunked", "unchunked"):
        cmd = [sys.executable, os.path.abspath(__file__), args.mock, "--mode", mode, "--dir", args.dir,
               "--tokens", str(args.tokens), "--chunk", str(args.chunk), "--hidden", str(args.hidden), "--aux", str(args.aux), "--gap", str(args.gap)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not done.stdout.strip():
            print(done.stdout, done.stderr)
            return 1
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(r), flush=True)
        for f in r["failures"]:
            print("FAIL %s: %s" % (mode, f))
            failed = True
        rows.append(r)
    shutil.rmtree(args.dir, ignore_errors=True)
    row_mib = args.tokens * args.hidden * 2 * (1 + args.aux) / (1 << 20)
    print()
    print("%d-token prompt, H = %d, %d aux layers, bf16 (%.0f MiB of rows); chunks of %d tokens, %s"
          % (args.tokens, args.hidden, args.aux, row_mib, args.chunk, "%.2f s apart" % args.gap if args.gap else "back to back"))
    print("| prefill | passes | blocked per pass, median | max | all written | peak RSS over base | peak anonymous | files |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %.1f ms | %.1f ms | %.2f s | %.0f MiB | %.0f MiB | %s |" % (
            r["mode"], r["passes"], r["blocked_ms"], r["blocked_max_ms"], r["done_s"], r["rss_mib"], r["anon_mib"],
            "%d .ckpt, %d .ckpt.partial" % (sum(f.endswith(".ckpt") for f in r["files"]), sum(f.endswith(".ckpt.partial") for f in r["files"]))))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
