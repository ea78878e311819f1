#!/usr/bin/env python3
"""The dump's store sink on the CPU: its puts against plain `put_from`, and the forward's blocked time
with the sink on against the folder route.

    PY=$(bash scripts/store-venv.sh)/bin/python
    $PY crates/pysplice-sglang/tests/python/store/bench_sink.py [PROGRAMS_DIR] [--dir /dev/shm/pysplice-bench-sink]
        [--hidden 7168] [--aux 3] [--rounds 5] [--small 4] [--large 2] [--segment-gib 5]
        [--forward-rounds 3] [--passes 4] [--gap 1.0]

Runs with the store venv's python (PyTorch, mooncake.store); PROGRAMS_DIR (default target/debug)
holds the `pysplice` that patches the runtime mock (patch_mock.sh): every class and function used
here is the recipe's own, from the patched mock. Each part runs in processes of its own, each
sink process with a Mooncake master of its own on loopback (mooncake_stack.py), started and
stopped here: the store then holds one client, whose segment takes every put (a local copy, no
TCP transfer), and nothing of one process outlives it. Rows are DeepSeek-V3's width (bf16,
H = --hidden, --aux aux layers); files go to --dir (a tmpfs such as /dev/shm) and are removed.

1. Puts. Sample files of 8,192 and 32,768 tokens (--small and --large of them) are written in the
   dump's layout by the dump's own functions (`_pysplice_hs_sample`, `_pysplice_hs_write`: torch.save
   into a hidden temporary, fsync, link). One `_pysplice_hs_Sink` (mooncake://bench?keep=files, so
   that the files stay between rounds; a segment of --segment-gib GiB) is offered their names; a
   round is timed from the first offer until its `stored` count reaches them all (torch.load with
   mmap, four hard-pinned `put_from`, the ticket). The reference, in the same process, on the same
   client and segment: the same four tensors (aux_hidden_state, hidden_state, input_ids as [1, L],
   attention_mask ones), already in memory (the file mapped and every page touched beforehand),
   one `put_from` each, hard-pinned, one sample after the other. A third run tells where the
   difference goes: the same puts, each file first mapped afresh by torch.load (mmap), as the sink
   maps it. Between runs every object is removed (`remove(key, True)`) and every ticket unlinked.
   A round is one run of each, their order rotating; a first round warms the segment's pages and
   is not counted. Reported: samples/s and GB/s (the four objects' bytes), medians of the rounds,
   and the median of the rounds' ratios of rates, sink / reference.
2. The forward. Prefill passes of one 8,192-token request, --gap seconds apart, through the
   recipe's `_pysplice_hs_dump` (the batch as SGLang 0.5.23 fills it; rows made on the CPU, one
   sample per pass): the time the forward spends in it per pass. The sink is set at model build
   (SGLANG_HS_DUMP_SINK=mooncake://fwd), so each route runs in a process of its own, the two
   alternating, --forward-rounds of each. What a server has imported before its first pass (the
   SGLang modules the dump asks for its ranks, chunk size and release: the store venv has
   SGLang) is imported first, outside the timing. A process makes two passes first, each followed by a
   wait until everything is written (and stored): the first reported on its own (the writer
   starts then, and with it the sink's thread and its store client), the second not counted
   (the ring is built by then). Then --passes timed passes. Before each pass a consumer takes
   what is ready, outside the timing, as a trainer would: the folder's .ckpt files are unlinked;
   with the sink, each ticket's objects are removed and the ticket unlinked (the sink has
   unlinked the file itself). Reported: blocked per pass, median and max, over every timed pass of
   the route; the first pass (median and max over its processes); ratios to the folder route; how
   often a pass found the writer or the sink still busy.

Prints a Markdown table with the machine (CPU, cores, memory, load average before and after)
and the versions. A measurement, no pass/fail: exits non-zero only when a run fails (a sample
spilled, a put refused, a file missing).
"""

import argparse
import glob
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
REPO = os.path.abspath(os.path.join(TESTS, "..", "..", "..", ".."))
sys.path.insert(0, HERE)

LAYERS = [2, 30, 58]


def status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def meminfo_kib(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def sample_bytes(tokens, hidden, aux):
    """The four objects of one sample: aux rows, final rows, input_ids and attention_mask (int64)."""
    return tokens * (hidden * 2 * (1 + aux) + 8 + 8)


def load(path):
    spec = importlib.util.spec_from_file_location("patched_mock", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def note(text):
    print("# " + text, flush=True)


class Model:
    """Stands for DeepseekV2Model: the attributes the recipe's init block sets."""


class Config:
    """Stands for the model's config: what the dump reads of it when the model is built."""

    def __init__(self, hidden):
        self.hidden_size, self.num_hidden_layers = hidden, 61
        import torch

        self.torch_dtype = torch.bfloat16


def rows(torch, count, width):
    """bf16 rows of finite values (random bit patterns below 2.0), made without a float32 copy."""
    return torch.randint(0, 1 << 14, (count, width), dtype=torch.int16).view(torch.bfloat16)


# -- 1. puts --------------------------------------------------------------------------------------


def run_puts(args):
    import torch

    mod = load(args.mock)
    H, K = args.hidden, args.aux
    folder = os.path.join(args.dir, "puts")
    shutil.rmtree(folder, ignore_errors=True)
    fd = mod._pysplice_hs_open_dir(folder)
    state = dict(dir_fd=fd, lock=threading.Lock(), publish=threading.Lock(), dp_rank=0, token=os.urandom(4).hex(),
                 next=0, link=True, sink=None)
    cond = threading.Condition()

    def changed():
        with cond:
            cond.notify_all()

    t0 = time.perf_counter()
    sink = mod._pysplice_hs_Sink(state, mod._pysplice_hs_sink_setting("mooncake://bench?keep=files"), changed)
    while sink.client is None and sink.dead is None:
        time.sleep(0.005)
    if sink.dead is not None:
        raise SystemExit("the sink has no store: %s" % sink.dead)
    connect_s = time.perf_counter() - t0
    client = sink.client
    from mooncake.store import ReplicateConfig

    config = ReplicateConfig()
    config.replica_num = 1
    config.with_hard_pin = True
    note("sink connected in %.2f s" % connect_s)

    def sink_run(names):
        base = sink.counts()
        t0 = time.perf_counter()
        for name in names:
            sink.offer(name)
        with cond:
            while True:
                c = sink.counts()
                if c["stored"] >= base["stored"] + len(names) or c["spilled"] > base["spilled"]:
                    break
                cond.wait(1.0)
        took = time.perf_counter() - t0
        if c["spilled"] > base["spilled"]:
            raise SystemExit("the sink spilled a sample: %s" % c)
        return took

    def sink_clear(names):
        checked = []
        for name in names:
            ticket = os.path.join(folder, name[: -len(".ckpt")] + ".store.json")
            with open(ticket) as f:
                t = json.load(f)
            for key, obj in t["objects"].items():
                checked.append((key, obj["shape"], obj["bytes"]))
                rc = client.remove(obj["key"], True)
                if rc != 0:
                    raise SystemExit("remove %s answered %s" % (obj["key"], rc))
            os.unlink(ticket)
        return checked

    def plain_run(samples):
        t0 = time.perf_counter()
        for stem, objects in samples:
            for key, t in objects:
                rc = client.put_from("plain/%s/%s" % (stem, key), t.data_ptr(), t.numel() * t.element_size(), config)
                if rc != 0:
                    raise SystemExit("plain put_from answered %d" % rc)
        return time.perf_counter() - t0

    def mapped_run(names):
        # the sink's reads without the sink: each file mapped afresh (torch.load, mmap), its four
        # tensors put as the plain run puts them
        t0 = time.perf_counter()
        for name in names:
            s = torch.load(os.path.join(folder, name), mmap=True, weights_only=True, map_location="cpu")
            n = s["input_ids"].numel()
            objects = [("hidden_state", s["aux_hidden_state"]), ("target", s["hidden_state"]),
                       ("input_ids", s["input_ids"].reshape(1, -1)), ("attention_mask", torch.ones((1, n), dtype=torch.long))]
            for key, t in objects:
                t = t.contiguous()
                rc = client.put_from("mapped/%s/%s" % (name, key), t.data_ptr(), t.numel() * t.element_size(), config)
                if rc != 0:
                    raise SystemExit("put_from answered %d" % rc)
            del s, objects, t
        return time.perf_counter() - t0

    def mapped_clear(names):
        for name in names:
            for key in ("hidden_state", "target", "input_ids", "attention_mask"):
                rc = client.remove("mapped/%s/%s" % (name, key), True)
                if rc != 0:
                    raise SystemExit("remove answered %s" % rc)

    def plain_clear(samples):
        for stem, objects in samples:
            for key, _ in objects:
                rc = client.remove("plain/%s/%s" % (stem, key), True)
                if rc != 0:
                    raise SystemExit("remove answered %s" % rc)

    result = dict(connect_s=connect_s, sizes=[])
    for tokens, count in ((8192, args.small), (32768, args.large)):
        if not count:
            continue
        # the samples' files, as the dump's writers write them
        hidden, aux = rows(torch, tokens, H), rows(torch, tokens, K * H)
        ids = torch.randint(0, 100000, (tokens,), dtype=torch.int64)
        model = Model()
        model.layers_to_capture = LAYERS[:K]
        model._hs_dump_state = dict(config=Config(H), layer_count=61, layers=None)
        try:
            provenance = mod._pysplice_hs_provenance(model, hidden, aux)
        except Exception:
            provenance = None
        t0 = time.perf_counter()
        names = []
        for k in range(count):
            job = dict(tensors=dict(ids=ids, hidden=hidden, aux=aux),
                       meta=dict(lens=[tokens], prefix=[0], rids=["bench-%d-%d" % (tokens, k)], layers=LAYERS[:K], chunk=0,
                                 provenance=provenance, full=[tokens]))
            sample, suffix = mod._pysplice_hs_sample(job, 0)
            assert suffix == ".ckpt", suffix
            names.append(mod._pysplice_hs_write(state, sample, suffix))
            del sample
        del hidden, aux, job
        write_s = time.perf_counter() - t0
        # the reference's tensors: each file mapped, every page touched (in memory, no copy)
        plain = []
        for name in names:
            s = torch.load(os.path.join(folder, name), mmap=True, weights_only=True, map_location="cpu")
            n = s["input_ids"].numel()
            objects = [("hidden_state", s["aux_hidden_state"].contiguous()), ("target", s["hidden_state"].contiguous()),
                       ("input_ids", s["input_ids"].reshape(1, -1).contiguous()),
                       ("attention_mask", torch.ones((1, n), dtype=torch.long))]
            for _, t in objects:
                t.reshape(-1).view(torch.uint8)[::4096].sum()
            plain.append((name[: -len(".ckpt")], objects))
        nbytes = sum(t.numel() * t.element_size() for _, objects in plain for _, t in objects)
        assert nbytes == count * sample_bytes(tokens, H, K), nbytes
        note("%d x %d tokens written in %.1f s (%.2f GB)" % (count, tokens, write_s, nbytes / 1e9))
        rounds, grew = [], []
        for r in range(args.rounds + 1):
            anon = status_kib("RssAnon")
            took = dict()
            modes = ["sink", "plain", "mapped"]
            for mode in modes[r % 3:] + modes[: r % 3]:
                if mode == "sink":
                    took["sink"] = sink_run(names)
                    checked = sink_clear(names)
                    if r == 0:  # the tickets name the four objects with the sizes of the reference's
                        want = [(key, list(t.shape), t.numel() * t.element_size()) for _, objects in plain for key, t in objects]
                        if sorted(checked) != sorted(want):
                            raise SystemExit("the tickets' objects %s are not %s" % (checked, want))
                elif mode == "plain":
                    took["plain"] = plain_run(plain)
                    plain_clear(plain)
                else:
                    took["mapped"] = mapped_run(names)
                    mapped_clear(names)
            if r:  # round 0 warms the segment's pages
                rounds.append(took)
                grew.append((status_kib("RssAnon") - anon) / 1024)
            note("%d tokens, round %d%s: sink %.3f s, plain %.3f s (%.2fx), plain from a fresh mapping %.3f s (%.2fx)" % (
                tokens, r, " (warm-up)" if not r else "", took["sink"], took["plain"], took["plain"] / took["sink"],
                took["mapped"], took["mapped"] / took["sink"]))
        result["sizes"].append(dict(tokens=tokens, count=count, bytes=nbytes, write_s=write_s, rounds=rounds,
                                    anon_growth_mib=grew))
        del plain, s, objects, t
        for name in names:
            os.unlink(os.path.join(folder, name))
    c = sink.counts()
    result["counts"] = c
    if c["spilled"]:
        raise SystemExit("the sink spilled %d samples" % c["spilled"])
    sink.close(10.0)
    shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(result), flush=True)


# -- 2. the forward -------------------------------------------------------------------------------


class Batch:
    """The ForwardBatch fields of a prefill pass as 0.5.23's scheduler fills them."""

    class Mode:
        name = "EXTEND"

    def __init__(self, torch, ids, lens, prefix, full, rids, slots, loc):
        self.forward_mode = Batch.Mode()
        self.input_ids = ids
        self.extend_seq_lens_cpu = list(lens)
        self.extend_prefix_lens_cpu = list(prefix)
        self.extend_seq_lens = torch.tensor(lens, dtype=torch.int32)
        self.extend_prefix_lens = torch.tensor(prefix, dtype=torch.int32)
        self.seq_lens = self.extend_seq_lens + self.extend_prefix_lens
        self.orig_seq_lens = torch.tensor(full, dtype=torch.int32)
        self.rids = list(rids)
        self.req_pool_indices = torch.tensor(slots, dtype=torch.int64)
        self.req_pool_indices_cpu = list(slots)
        self.out_cache_loc = loc


def run_forward(args):
    import torch

    mod = load(args.mock)
    H, K, n = args.hidden, args.aux, 8192
    sink_on = args.mode == "sink"
    out = os.path.join(args.dir, "forward-%s-%d" % (args.mode, args.round))
    shutil.rmtree(out, ignore_errors=True)
    os.environ["SGLANG_HS_DUMP_DIR"] = out
    os.environ.pop("SGLANG_HS_DUMP_SINK", None)
    if sink_on:
        os.environ["SGLANG_HS_DUMP_SINK"] = "mooncake://fwd"
    hidden, aux = rows(torch, n + 8, H), rows(torch, n + 8, K * H)
    ids = torch.randint(0, 100000, (n + 8,), dtype=torch.int64)
    loc = torch.arange(1, n + 9)
    # What a server has imported before its first pass (the store venv can import SGLang): the
    # first pass asks SGLang for the ranks, the chunk size and the release.
    t0 = time.perf_counter()
    mod._pysplice_hs_ranks(), mod._pysplice_hs_chunk_size(), mod._pysplice_hs_sglang_version()
    imports_s = time.perf_counter() - t0
    model = Model()
    model.layers_to_capture = LAYERS[:K]
    model._hs_dump_dir = mod._pysplice_hs_setup(model, Config(H))
    model._hs_dump_count = 0
    assert model._hs_dump_dir is not None
    state = model._hs_dump_state
    assert (state["sink_setting"] is not None) == sink_on, state["sink_setting"]
    count = [0]

    def one_pass():
        k = count[0]
        count[0] += 1
        value = (hidden, aux)
        batch = Batch(torch, ids, [n], [0], [n], ["p%d-%d" % (args.round, k)], [7], loc)
        t0 = time.perf_counter()
        returned = mod._pysplice_hs_dump(model, None, batch, value)
        took = time.perf_counter() - t0
        assert returned is value
        return took

    def busy():
        q = state["queue"]
        with q.cond:
            writer = len(q.jobs) + q.busy
        return writer, (state["sink"].counts()["queued"] if state["sink"] is not None else 0)

    def idle():
        q = state["queue"]
        with q.cond:
            while (q.jobs or q.resizing or q.busy) and q.error is None:
                q.cond.wait(0.5)
        assert q.error is None, q.error
        while state["sink"] is not None and state["sink"].counts()["queued"]:
            time.sleep(0.01)

    taken = dict(files=0, objects=0)

    def consume():
        # what a trainer takes: the folder's samples, or the store's (ticket by ticket)
        if sink_on:
            client = state["sink"].client
            for ticket in glob.glob(os.path.join(out, "*.store.json")):
                with open(ticket) as f:
                    t = json.load(f)
                for obj in t["objects"].values():
                    rc = client.remove(obj["key"], True)
                    if rc != 0:
                        raise SystemExit("remove %s answered %s" % (obj["key"], rc))
                    taken["objects"] += 1
                os.unlink(ticket)
        else:
            for path in glob.glob(os.path.join(out, "*.ckpt")):
                os.unlink(path)
                taken["files"] += 1

    first = one_pass()  # the writer starts (and the sink's thread, which connects to the store)
    idle()
    consume()
    one_pass()  # the ring is built by now: not counted
    idle()
    consume()
    blocked, found = [], []
    start = time.perf_counter()
    for k in range(args.passes):
        wait = start + k * args.gap - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        consume()
        found.append(busy())
        blocked.append(one_pass())
    idle()
    consume()
    state["queue"].close()  # as at exit: the writer and the sink finish
    consume()
    result = dict(mode=args.mode, round=args.round, imports_s=imports_s, first_ms=first * 1e3, blocked_ms=[b * 1e3 for b in blocked],
                  writer_busy=sum(1 for w, _ in found if w), sink_busy=sum(1 for _, s in found if s))
    left = [f for f in os.listdir(out) if not f.startswith(".hs_dump_status")]
    if sink_on:
        c = state["sink"].counts()
        result["counts"] = c
        if c["spilled"] or c["stored"] != count[0] or taken["objects"] != 4 * count[0] or left:
            raise SystemExit("the sink: %s, %d objects taken, the folder holds %s" % (c, taken["objects"], left))
    elif taken["files"] != count[0] or left:
        raise SystemExit("%d files taken of %d passes; the folder holds %s" % (taken["files"], count[0], left))
    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(result), flush=True)
    sys.stdout.flush()
    # the store client's teardown at exit (about a second, under the GIL) is not the forward's
    os._exit(0)


# -- the parent -----------------------------------------------------------------------------------


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return dict(cpu=model, nproc=nproc, cpus=os.cpu_count(), mem_gib=meminfo_kib("MemTotal") / (1 << 20))


def versions():
    from importlib import metadata

    import mooncake
    from mooncake_stack import binaries

    out = dict(python=platform.python_version(), torch=metadata.version("torch"))
    for dist in ("mooncake-transfer-engine-non-cuda", "mooncake-transfer-engine"):
        try:
            out["mooncake"] = "%s %s" % (dist, metadata.version(dist))
            break
        except metadata.PackageNotFoundError:
            continue
    del mooncake
    master = subprocess.run([binaries()[0], "--version"], capture_output=True, text=True)
    out["master"] = "; ".join(line.strip() for line in (master.stdout + master.stderr).splitlines() if line.strip())
    return out


def child(args, work, part, extra, store):
    """Runs one part in a process of its own (with a master of its own when `store`); its result."""
    from mooncake_stack import MooncakeStack

    cmd = [sys.executable, os.path.abspath(__file__), "--child", part, "--mock", args.mock, "--dir", args.dir,
           "--hidden", str(args.hidden), "--aux", str(args.aux), "--rounds", str(args.rounds), "--small", str(args.small),
           "--large", str(args.large), "--passes", str(args.passes), "--gap", str(args.gap)] + extra
    env = dict(os.environ)
    log = os.path.join(work, "%s%s.log" % (part, "-".join([""] + extra[1::2])))
    stack = None
    if store:
        stack = MooncakeStack(os.path.join(work, "mc-%s%s" % (part, "-".join([""] + extra[1::2]))))
        stack.start()
        env.update(stack.env)
        env["MOONCAKE_GLOBAL_SEGMENT_SIZE"] = str(int(args.segment_gib * (1 << 30)) if part == "puts" else 2 << 30)
    try:
        with open(log, "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
            last = None
            for line in proc.stdout:
                if line.startswith("# "):
                    print("  " + line[2:].rstrip(), flush=True)
                elif line.strip():
                    last = line
            rc = proc.wait()
    finally:
        if stack is not None:
            stack.stop()
    if rc != 0 or last is None:
        with open(log) as f:
            tail = [line for line in f.read().splitlines() if line[:1] not in "IW" or "Error" in line][-30:]
        raise SystemExit("%s %s failed (status %s); %s:\n%s" % (part, " ".join(extra), rc, log, "\n".join(tail)))
    return json.loads(last)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("programs", nargs="?", default=os.path.join(REPO, "target", "debug"))
    p.add_argument("--dir", default="/dev/shm/pysplice-bench-sink")
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--aux", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5, help="counted rounds of puts per size (default 5)")
    p.add_argument("--small", type=int, default=4, help="8,192-token samples per round (default 4)")
    p.add_argument("--large", type=int, default=2, help="32,768-token samples per round (default 2)")
    p.add_argument("--segment-gib", type=float, default=5.0, help="the puts' store segment (default 5 GiB)")
    p.add_argument("--forward-rounds", type=int, default=3, help="processes of each route (default 3)")
    p.add_argument("--passes", type=int, default=4, help="timed passes per process (default 4)")
    p.add_argument("--gap", type=float, default=1.0, help="seconds between passes (default 1.0)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--mock", help=argparse.SUPPRESS)
    p.add_argument("--mode", help=argparse.SUPPRESS)
    p.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child == "puts":
        return run_puts(args)
    if args.child == "forward":
        return run_forward(args)
    if args.aux < 1:
        p.error("the sink needs aux layers (--aux 1 or more)")

    t_start = time.time()
    m, v = machine(), versions()
    load_before = os.getloadavg()
    large = args.large * sample_bytes(32768, args.hidden, args.aux)
    need = max(large, args.small * sample_bytes(8192, args.hidden, args.aux)) + args.segment_gib * (1 << 30) + (2 << 30)
    avail = meminfo_kib("MemAvailable") * 1024
    if avail < need:
        raise SystemExit("%.1f GiB available, the puts need about %.1f GiB: lower --large, --small or --segment-gib" % (
            avail / (1 << 30), need / (1 << 30)))
    work = tempfile.mkdtemp(prefix="pysplice-bench-sink-")
    args.mock = os.path.join(work, "pm", "mock_deepseek_v2_patched.py")
    subprocess.run(["bash", os.path.join(TESTS, "runtime", "patch_mock.sh"), os.path.join(work, "pm")], check=True,
                   capture_output=True, env=dict(os.environ, PYSPLICE=os.path.join(os.path.abspath(args.programs), "pysplice")))
    os.makedirs(args.dir, mode=0o700, exist_ok=True)
    print("%s, nproc %s, %.1f GiB; python %s, torch %s, %s, master: %s; load average %.2f %.2f %.2f; logs in %s" % (
        m["cpu"], m["nproc"], m["mem_gib"], v["python"], v["torch"], v["mooncake"], v["master"], *load_before, work), flush=True)

    try:
        print("1. puts into the store", flush=True)
        puts = child(args, work, "puts", [], True)
        print("2. the forward, %d passes of 8,192 tokens per process, %.2f s apart" % (args.passes, args.gap), flush=True)
        forward = dict(folder=[], sink=[])
        for r in range(args.forward_rounds):
            for mode in (("folder", "sink") if r % 2 == 0 else ("sink", "folder")):
                res = child(args, work, "forward", ["--mode", mode, "--round", str(r)], mode == "sink")
                forward[mode].append(res)
                print("  %s, process %d: first %.1f ms, blocked median %.1f ms, max %.1f ms; writer busy at %d, sink at %d passes" % (
                    mode, r, res["first_ms"], statistics.median(res["blocked_ms"]), max(res["blocked_ms"]),
                    res["writer_busy"], res["sink_busy"]), flush=True)
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)
    load_after = os.getloadavg()
    total_s = time.time() - t_start
    shutil.rmtree(work, ignore_errors=True)

    print()
    print("Machine: %s, nproc %s (%d CPUs), %.1f GiB; load average %.2f / %.2f / %.2f before, %.2f / %.2f / %.2f after; %.0f s in all" % (
        m["cpu"], m["nproc"], m["cpus"], m["mem_gib"], *load_before, *load_after, total_s))
    print("Versions: Python %s, torch %s, %s; master: %s" % (v["python"], v["torch"], v["mooncake"], v["master"]))
    print()
    print("Puts (H = %d, %d aux layers, bf16; the sink's store client connected in %.2f s; %d counted rounds, order rotating):" % (
        args.hidden, args.aux, puts["connect_s"], args.rounds))
    print()
    print("| sample | per round | sink: samples/s | sink: GB/s | plain `put_from`: samples/s | plain: GB/s | sink / plain, median (min-max) "
          "| goal >= 0.8x | plain from a fresh mapping: GB/s, sink / it |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in puts["sizes"]:
        sink_t = [r["sink"] for r in s["rounds"]]
        plain_t = [r["plain"] for r in s["rounds"]]
        ratios = [r["plain"] / r["sink"] for r in s["rounds"]]
        ratio = statistics.median(ratios)
        mapped_t = [r["mapped"] for r in s["rounds"]]
        mapped = statistics.median([r["mapped"] / r["sink"] for r in s["rounds"]])
        print("| %s tokens (%.0f MB) | %d | %.2f | %.2f | %.2f | %.2f | %.2fx (%.2f-%.2f) | %s | %.2f GB/s, %.2fx |" % (
            "{:,}".format(s["tokens"]), s["bytes"] / s["count"] / 1e6, s["count"], s["count"] / statistics.median(sink_t),
            s["bytes"] / statistics.median(sink_t) / 1e9, s["count"] / statistics.median(plain_t),
            s["bytes"] / statistics.median(plain_t) / 1e9, ratio, min(ratios), max(ratios), "met" if ratio >= 0.8 else "**not met**",
            s["bytes"] / statistics.median(mapped_t) / 1e9, mapped))
    print()
    print("Rounds (sink s / plain s / fresh mapping s): " + "; ".join("%d tokens: %s" % (s["tokens"], ", ".join(
        "%.3f/%.3f/%.3f" % (r["sink"], r["plain"], r["mapped"]) for r in s["rounds"])) for s in puts["sizes"]))
    print("Anonymous memory grown per counted round (MiB; the segment's pages faulted after the warm-up): " + "; ".join(
        "%d tokens: %s" % (s["tokens"], ", ".join("%.0f" % g for g in s["anon_growth_mib"])) for s in puts["sizes"]))
    if not args.forward_rounds:
        return 0
    print()
    print("The forward (passes of one 8,192-token request, %.0f MB of rows, %.2f s apart; %d processes a route, %d timed passes each):" % (
        sample_bytes(8192, args.hidden, args.aux) / 1e6, args.gap, args.forward_rounds, args.passes))
    print()
    print("| route | passes | blocked per pass, median | max | first pass, median (max) | median / folder | max / folder | "
          "first / folder | passes finding the writer / the sink busy | goal: median <= 1.2x |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    figures = dict()
    for mode in ("folder", "sink"):
        runs = forward[mode]
        blocked = [b for r in runs for b in r["blocked_ms"]]
        firsts = [r["first_ms"] for r in runs]
        figures[mode] = (statistics.median(blocked), max(blocked), statistics.median(firsts), max(firsts), len(blocked),
                         sum(r["writer_busy"] for r in runs), sum(r["sink_busy"] for r in runs))
    for mode in ("folder", "sink"):
        med, top, first, first_max, count, wbusy, sbusy = figures[mode]
        ref = figures["folder"]
        goal = "" if mode == "folder" else ("met" if med <= 1.2 * ref[0] else "**not met**")
        print("| %s | %d | %.1f ms | %.1f ms | %.1f ms (%.1f ms) | %.2fx | %.2fx | %.2fx | %d / %s | %s |" % (
            "folder (sink off)" if mode == "folder" else "sink on", count, med, top, first, first_max, med / ref[0],
            top / ref[1], first / ref[2], wbusy, "-" if mode == "folder" else str(sbusy), goal))
    print()
    print("Per process (blocked ms): " + "; ".join("%s %d: %s (first %.1f; imports before it %.1f s)" % (
        r["mode"], r["round"], ", ".join("%.1f" % b for b in r["blocked_ms"]), r["first_ms"], r["imports_s"])
        for mode in ("folder", "sink") for r in forward[mode]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
