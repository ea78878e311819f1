#!/usr/bin/env python3
"""Benchmark of the sglang-hs-dump writer on a GPU machine, with real torch.

    python3 crates/pysplice-sglang/tests/python/runtime/bench_hs_dump.py PATCHED_MOCK [--dir /dev/shm/hs_bench] [--hidden 7168]
        [--tokens 2048] [--gib 8]

Calls the recipe's `_pysplice_hs_dump` (from a mock patched by the engine, see
patch_mock.sh) on synthetic prefill outputs of DeepSeek-V3's width (bf16, H = 7168):
hidden only and hidden + aux (3 layers), 1 and 8 requests of `--tokens` tokens per pass.
Each configuration runs in its own process (so that its peak RSS is its own) and
reports:

  first     the time the forward spends in the dump on the first pass (folder opened,
            writer started; the host ring is sized and pinned off the forward);
  blocked   the time the forward spends in the dump per pass, median, with the writer
            idle (each pass waits for the previous one to be written first);
  sustained passes back to back (about --gib GiB in all): the writer's throughput up to
            the last file on disk, and the mean time the forward was blocked per pass,
            waits for a full buffer included;
  rss       the process's peak resident memory over its baseline (torch and CUDA
            loaded, model tensors on the GPU);
  sync      the synchronous dump this writer replaced (pageable copy, then clone +
            torch.save + rename per request, all inside the forward), same passes.

The same run measures the machine: a device-to-host copy of one pass into pinned
memory, a host memcpy, and a plain file write (+ fsync) of one pass into the same folder.
Prints a Markdown table. No pass/fail: this is a measurement.
"""

import argparse
import gc
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True

import torch  # noqa: E402

GIB = 1 << 30


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Batch:
    """The ForwardBatch fields the dump reads (0.5.10+ shape)."""

    class Mode:
        name = "EXTEND"

    def __init__(self, ids, lens, rids):
        self.forward_mode = Batch.Mode()
        self.input_ids = ids
        self.extend_seq_lens_cpu = list(lens)
        self.extend_prefix_lens_cpu = [0] * len(lens)
        self.rids = list(rids)
        self.orig_seq_lens = torch.tensor(lens, dtype=torch.int32, device=ids.device)


class Model:
    """Stands for DeepseekV2Model: the attributes the recipe's init block sets."""


def load(path):
    spec = importlib.util.spec_from_file_location("patched_mock", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_pass(requests, tokens, hidden, aux_layers, seed):
    total = requests * tokens
    gen = torch.Generator(device="cuda").manual_seed(seed)
    h = torch.randn(total + 8, hidden, device="cuda", generator=gen, dtype=torch.float32).to(torch.bfloat16)
    a = None
    if aux_layers:
        a = torch.randn(total + 8, hidden * aux_layers, device="cuda", generator=gen, dtype=torch.float32).to(torch.bfloat16)
    ids = torch.randint(0, 100000, (total + 8,), device="cuda", generator=gen)
    return h, a, ids


def pass_bytes(requests, tokens, hidden, aux_layers):
    return requests * tokens * (hidden * 2 * (1 + aux_layers) + 8)


def sync_dump(out, value, batch, count):
    """The synchronous dump this writer replaced: pageable copy + clone + save + rename."""
    hidden, aux = value
    lens = batch.extend_seq_lens_cpu
    total = sum(lens)
    h = hidden[:total].detach().cpu()
    a = aux[:total].detach().cpu() if aux is not None else None
    ids = batch.input_ids[:total].detach().cpu().long()
    start = 0
    for i, n in enumerate(lens):
        b, start = start, start + n
        sample = dict(input_ids=ids[b:start].clone(), loss_mask=torch.ones(n, dtype=torch.long), hidden_state=h[b:start].clone().unsqueeze(0))
        if a is not None:
            sample["aux_hidden_state"] = a[b:start].clone().unsqueeze(0)
        name = os.path.join(out, "sync_%08d.ckpt" % (count + i))
        torch.save(sample, name + ".tmp")
        os.replace(name + ".tmp", name)
    return len(lens)


def run_config(args):
    """One configuration, in this process; prints one JSON line."""
    mod = load(args.mock)
    requests, aux_layers = args.requests, args.aux
    nbytes = pass_bytes(requests, args.tokens, args.hidden, aux_layers)
    passes = max(3, int(args.gib * GIB // nbytes))
    lens = [args.tokens] * requests
    value_h, value_a, ids = make_pass(requests, args.tokens, args.hidden, aux_layers, 1)
    value = (value_h, value_a) if aux_layers else value_h
    torch.cuda.synchronize()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:  # resets the peak (VmHWM) to the current RSS
        f.write("5")
    base_rss = rss_mib()
    out = os.path.join(args.dir, "run")
    shutil.rmtree(out, ignore_errors=True)
    result = dict(requests=requests, aux=aux_layers, pass_mib=nbytes / (1 << 20), passes=passes)

    if args.mode == "sync":
        os.makedirs(out)
        blocked = []
        t_all = time.perf_counter()
        count = 0
        for k in range(passes):
            batch = Batch(ids, lens, ["r%d-%d" % (k, j) for j in range(requests)])
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            count += sync_dump(out, (value_h, value_a), batch, count)
            blocked.append(time.perf_counter() - t0)
        total_s = time.perf_counter() - t_all
        result.update(blocked_ms=statistics.median(blocked) * 1e3, sustained_blocked_ms=statistics.mean(blocked) * 1e3, gbps=passes * nbytes / total_s / 1e9)
    else:
        os.environ["SGLANG_HS_DUMP_DIR"] = out
        model = Model()
        model.layers_to_capture = [2, 30, 58][:aux_layers] if aux_layers else []
        model._hs_dump_dir = mod._pysplice_hs_setup(model, None)
        model._hs_dump_count = 0
        assert model._hs_dump_dir is not None

        def dump(k):
            batch = Batch(ids, lens, ["r%d-%d" % (k, j) for j in range(requests)])
            torch.cuda.synchronize()  # the forward's own GPU work is done
            t0 = time.perf_counter()
            returned = mod._pysplice_hs_dump(model, None, batch, value)
            dt = time.perf_counter() - t0
            assert returned is value
            return dt

        def drain():
            # written, and the ring (built off the forward) ready
            q = model._hs_dump_state["queue"]
            with q.cond:
                while (q.jobs or getattr(q, "resizing", False)) and q.error is None:
                    q.cond.wait(1.0)
            assert q.error is None, q.error

        first = dump(0)  # first pass: opens the folder, starts the writer, sizes the ring
        drain()
        idle = []
        for k in range(1, 6):
            idle.append(dump(k))
            drain()
        sustained = []
        t_all = time.perf_counter()
        for k in range(passes):
            sustained.append(dump(100 + k))
        drain()
        total_s = time.perf_counter() - t_all
        q = model._hs_dump_state["queue"]
        result.update(
            first_ms=first * 1e3,
            blocked_ms=statistics.median(idle) * 1e3,
            sustained_blocked_ms=statistics.mean(sustained) * 1e3,
            gbps=passes * nbytes / total_s / 1e9,
            ring_mib=q.ring.numel() / (1 << 20),
            pinned=bool(q.ring.is_pinned()),
            registered=bool(q.registered),
            waits=q.waits,
            files=len(os.listdir(out)),
        )
    result["rss_mib"] = peak_rss_mib() - base_rss
    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(result), flush=True)


def machine(args):
    """Pinned copy time of the largest pass, host memcpy and file write bandwidth."""
    out = {}
    for requests, aux in ((1, 0), (1, 3), (8, 0), (8, 3)):
        h, a, _ = make_pass(requests, args.tokens, args.hidden, aux, 2)
        total = requests * args.tokens
        src = [h[:total]] + ([a[:total]] if a is not None else [])
        dst = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in src]
        times = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for d, s in zip(dst, src):
                d.copy_(s, non_blocking=True)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        out["pinned_copy_ms_%d_%d" % (requests, aux)] = statistics.median(times) * 1e3
        out["pinned_copy_gbps_%d_%d" % (requests, aux)] = sum(t.numel() * 2 for t in src) / statistics.median(times) / 1e9
        del h, a, src, dst
    buf = torch.empty(GIB, dtype=torch.uint8).fill_(7)
    other = torch.empty_like(buf)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        other.copy_(buf)
        times.append(time.perf_counter() - t0)
    out["memcpy_gbps"] = GIB / statistics.median(times) / 1e9
    torch.set_num_threads(1)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        other.copy_(buf)
        times.append(time.perf_counter() - t0)
    out["memcpy_1thread_gbps"] = GIB / statistics.median(times) / 1e9
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, "write_test")
    chunk = os.urandom(64 << 20)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for _ in range(GIB // len(chunk)):
                os.write(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        times.append(time.perf_counter() - t0)
        os.unlink(path)
    out["write_gbps"] = GIB / statistics.median(times) / 1e9
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mock")
    parser.add_argument("--dir", default="/dev/shm/hs_bench")
    parser.add_argument("--hidden", type=int, default=7168)
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--gib", type=float, default=8.0)
    parser.add_argument("--config", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="async", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--aux", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.mock = os.path.abspath(args.mock)
    if args.config:
        run_config(args)
        return 0
    print("torch %s, %s, %d CPUs, folder %s" % (torch.__version__, torch.cuda.get_device_name(0), os.cpu_count(), args.dir))
    m = machine(args)
    print(json.dumps(m))
    rows = []
    for requests in (1, 8):
        for aux in (0, 3):
            for mode in ("async", "sync"):
                cmd = [sys.executable, os.path.abspath(__file__), args.mock, "--config", "--mode", mode, "--requests", str(requests), "--aux", str(aux), "--dir", args.dir, "--hidden", str(args.hidden), "--tokens", str(args.tokens), "--gib", str(args.gib if mode == "async" else min(args.gib, 3))]
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    print(done.stdout, done.stderr)
                    return 1
                r = json.loads(done.stdout.strip().splitlines()[-1])
                r["mode"] = mode
                print(json.dumps(r), flush=True)
                rows.append(r)
    shutil.rmtree(args.dir, ignore_errors=True)
    print()
    print("| pass | MiB/pass | writer | first pass | blocked per pass, idle writer | pinned copy | ratio | sustained blocked per pass | throughput GB/s | vs write / memcpy (1 thread) | peak RSS over base, MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        key = "%d_%d" % (r["requests"], r["aux"])
        pinned = m["pinned_copy_ms_" + key]
        what = "%d x %d tokens, %s" % (r["requests"], args.tokens, "hidden + aux" if r["aux"] else "hidden")
        print(
            "| %s | %.0f | %s | %s | %.1f ms | %.1f ms | %.2f | %.1f ms | %.2f | %.0f%% / %.0f%% | %.0f |"
            % (what, r["pass_mib"], r["mode"], "%.1f ms" % r["first_ms"] if "first_ms" in r else "-", r["blocked_ms"], pinned, r["blocked_ms"] / pinned, r["sustained_blocked_ms"], r["gbps"], 100 * r["gbps"] / m["write_gbps"], 100 * r["gbps"] / m["memcpy_1thread_gbps"], r["rss_mib"])
        )
    print()
    print("machine: pinned D2H %.1f GB/s, memcpy %.1f GB/s (1 thread %.1f), file write + fsync %.1f GB/s" % (m["pinned_copy_gbps_8_3"], m["memcpy_gbps"], m["memcpy_1thread_gbps"], m["write_gbps"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
