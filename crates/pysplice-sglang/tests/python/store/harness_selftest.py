#!/usr/bin/env python3
"""Self-test of the store harness: a Mooncake store, a minimal producer, SpecForge's own consumer.

    "$(bash scripts/store-venv.sh)/bin/python" crates/pysplice-sglang/tests/python/store/harness_selftest.py
        [--segment-host 64MB] [--tiny-dir MODEL_DIR] [--keep]

Runs with the store venv's python; exit 0 when every check passes; prints timings. In a temporary
folder (kept on failure, or with --keep):
1. starts a Mooncake master on free loopback ports (mooncake_stack.py), and with --segment-host a
   `mooncake_client` holding the objects instead of the producer's own segment;
2. starts specforge_consumer.py (SpecForge's online trainer, 3 steps, tensors of a width-64 target
   with a 1024-token vocabulary, as the project's tiny models);
3. publishes 3 synthetic samples as SpecForge's online producer does, without importing SpecForge:
   the five tensors' raw bytes put hard-pinned under `{store_id}/{sample_id}/g1/{name}`, then one
   SampleRef line appended to refs.jsonl with O_APPEND and fsync, never more in flight than the
   consumer's `.consumer_quantum` allows (2 at least), then `.closed`;
4. checks that the consumer ended with `.consumer_done` and exit status 0, that every sample was
   trained on with the shapes, dtypes and sha256 of the bytes published, and that the trainer
   deleted the objects of what it trained on; then removes whatever is left and stops the store.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "send")]

import mooncake_stack  # noqa: E402
from harness import FAILURES, check  # noqa: E402
import numpy as np  # noqa: E402

RUN_ID = "selftest"
LENGTHS = (16, 24, 40)  # one sample each; a length of its own, so a mix-up shows
HIDDEN, VOCAB, AUX = 64, 1024, 3
TIMES = []
START = time.monotonic()


def phase(name, t0):
    TIMES.append((name, time.monotonic() - t0))
    return time.monotonic()


class Tensor:
    """A tensor's bytes as SpecForge stores them (raw, contiguous, little-endian) with its shape and
    dtype name; made with numpy, so that the producer needs no PyTorch."""

    def __init__(self, array, shape, dtype):
        self.array, self.shape, self.dtype = np.ascontiguousarray(array), list(shape), dtype

    @property
    def nbytes(self):
        return self.array.nbytes

    def describe(self):
        return {"shape": self.shape, "dtype": self.dtype, "sha256": hashlib.sha256(self.array.tobytes()).hexdigest()}


def bfloat16(rng, shape):
    """Normal numbers in bfloat16: the upper half of each float32."""
    x = rng.standard_normal(int(np.prod(shape))).astype("<f4")
    return Tensor((x.view("<u4") >> 16).astype("<u2"), shape, "bfloat16")


def make_sample(i, length):
    """The five tensors of SpecForge's online EAGLE-3 feature set, random."""
    rng = np.random.default_rng(1000 + i)
    loss_mask = np.ones(length, dtype="<i8")
    loss_mask[: length // 4] = 0
    return {
        "input_ids": Tensor(rng.integers(0, VOCAB, length, dtype="<i8"), (1, length), "int64"),
        "loss_mask": Tensor(loss_mask, (1, length), "int64"),
        "hidden_state": bfloat16(rng, (1, length, AUX * HIDDEN)),
        "target": bfloat16(rng, (1, length, HIDDEN)),
        "attention_mask": Tensor(np.ones(length, dtype="<i8"), (1, length), "int64"),
    }


def ref_line(store_id, task_id, gen, tensors):
    """dataclasses.asdict(SampleRef) as SpecForge's channel writes it: fields in order, compact."""
    sample_id = "%s:%s" % (RUN_ID, task_id)
    specs = {}
    for name, t in tensors.items():
        specs[name] = {"name": name, "shape": t.shape, "dtype": t.dtype, "device_hint": None, "required": True,
                       "target_repr": "hidden_state" if name == "target" else None, "target_meta": {}}
    ref = {
        "sample_id": sample_id,
        "run_id": RUN_ID,
        "source_task_id": task_id,
        "feature_store_uri": "mooncake://%s/%s" % (store_id, sample_id),
        "feature_keys": {name: "%s/%s" % (sample_id, name) for name in tensors},
        "feature_specs": specs,
        "strategy": "eagle3",
        "schema_version": 1,
        "target_model_version": "selftest-target",
        "draft_weight_version": None,
        "tokenizer_version": "selftest-tokenizer",
        "num_tokens": tensors["input_ids"].shape[1],
        "estimated_bytes": sum(t.nbytes for t in tensors.values()),
        # Anything beyond SampleRef's fields goes here; SpecForge reads "generation" (the keys'
        # gN) and "target_repr".
        "metadata": {"run_id": RUN_ID, "source_task_id": task_id, "strategy": "eagle3",
                     "target_repr": "hidden_state", "transport": "pysplice-selftest", "generation": gen},
    }
    return sample_id, json.dumps(ref, separators=(",", ":"))


class Channel:
    """The producer's side of SpecForge's file channel (refs.jsonl and its sidecars)."""

    def __init__(self, control):
        self.path = os.path.join(control, "refs.jsonl")
        self.published = 0

    def sidecar(self, suffix):
        try:
            with open(self.path + suffix, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def consumed(self):
        try:
            return int(self.sidecar(".consumed_count") or 0)
        except ValueError:
            return 0

    def stopped(self):
        return self.sidecar(".consumer_done") is not None or self.sidecar(".consumer_failed") is not None

    def append(self, line):
        data = (line + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_APPEND | os.O_CREAT | os.O_WRONLY, 0o644)
        try:
            done = 0
            while done < len(data):
                n = os.write(fd, data[done:])
                if n <= 0:
                    raise OSError("append made no progress")
                done += n
            self.published += 1
            os.fsync(fd)
        finally:
            os.close(fd)

    def write(self, suffix, text=""):
        tmp = "%s%s.tmp.%d" % (self.path, suffix, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path + suffix)


class Producer:
    """A Mooncake client that puts each sample's tensors, all of them or none."""

    def __init__(self, env, segment_bytes):
        from mooncake.store import MooncakeDistributedStore, ReplicateConfig

        self.store = MooncakeDistributedStore()
        rc = self.store.setup(env["MOONCAKE_LOCAL_HOSTNAME"], env["MOONCAKE_METADATA_SERVER"], segment_bytes, 16 << 20,
                              env["MOONCAKE_PROTOCOL"], "", env["MOONCAKE_MASTER_SERVER_ADDR"])
        if rc != 0:
            raise RuntimeError("Mooncake setup failed with status %s" % rc)
        self.config = ReplicateConfig()
        self.config.replica_num = 1
        self.config.with_hard_pin = True  # never evicted: the trainer removes after its acknowledgement
        self.keys = []

    def put_sample(self, keys, tensors):
        written = []
        for name, t in tensors.items():
            pointer = t.array.ctypes.data
            self.store.register_buffer(pointer, t.nbytes)  # RDMA needs it; TCP ignores it
            try:
                rc = self.store.put_from(keys[name], pointer, t.nbytes, self.config)
            finally:
                self.store.unregister_buffer(pointer)
            if rc != 0:
                for key in written:
                    self.remove(key)
                raise RuntimeError("put %s: status %s" % (keys[name], rc))
            written.append(keys[name])
        self.keys += written

    def remove(self, key):
        rc = self.store.remove(key)
        if rc == -706:  # a reader's lease (is_exist and get take one); the owner may force
            rc = self.store.remove(key, True)
        return rc

    def exists(self, key):
        return self.store.is_exist(key) == 1

    def close(self):
        self.store.close()


def wait_for(cond, timeout_s, consumer, what):
    deadline = time.monotonic() + timeout_s
    while not cond():
        if consumer.poll() is not None:
            raise RuntimeError("the consumer exited (status %s) while waiting for %s" % (consumer.returncode, what))
        if time.monotonic() > deadline:
            raise RuntimeError("no %s after %.0f s" % (what, timeout_s))
        time.sleep(0.05)


def publish(producer, channel, consumer, digests):
    samples = [make_sample(i, length) for i, length in enumerate(LENGTHS)]
    wait_for(lambda: channel.sidecar(".consumer_quantum"), 120, consumer, ".consumer_quantum")
    high = max(2, int(channel.sidecar(".consumer_quantum")))
    for i, length in enumerate(LENGTHS):
        wait_for(lambda: channel.stopped() or channel.published - channel.consumed() < high, 120, consumer,
                 "room under the high watermark %d" % high)
        if channel.stopped():
            raise RuntimeError("the consumer stopped after %d samples" % channel.published)
        task_id = "task-%05d" % i
        tensors = samples[i]
        sample_id, line = ref_line(RUN_ID, task_id, 1, tensors)
        keys = {name: "%s/%s/g1/%s" % (RUN_ID, sample_id, name) for name in tensors}
        producer.put_sample(keys, tensors)
        channel.append(line)  # announced only once every put succeeded
        digests[sample_id] = {name: t.describe() for name, t in tensors.items()}
        print("[producer %6.1fs] published %s (%d tokens)" % (time.monotonic() - START, sample_id, length), flush=True)
    channel.write(".closed")


def main(argv):
    parser = argparse.ArgumentParser(prog="harness_selftest.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--segment-host", metavar="SIZE",
                        help="keep the objects in a mooncake_client segment host of this size")
    parser.add_argument("--tiny-dir", help="the target's model folder, for the consumer (default: random weights)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="store-selftest-")
    control = os.path.join(work, "control")
    os.makedirs(control)
    received_path = os.path.join(work, "received.jsonl")
    consumer_log = os.path.join(work, "consumer.log")
    start = t0 = time.monotonic()
    digests = {}
    with mooncake_stack.MooncakeStack(os.path.join(work, "store"), segment=args.segment_host) as stack:
        t0 = phase("store started", t0)
        with open(consumer_log, "wb") as log:
            consumer = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "specforge_consumer.py"), "--control-dir", control,
                 "--run-id", RUN_ID, "--steps", str(len(LENGTHS)), "--received", received_path,
                 "--hidden", str(HIDDEN), "--vocab", str(VOCAB), "--aux", str(AUX)]
                + (["--tiny-dir", args.tiny_dir] if args.tiny_dir else []),
                env=dict(os.environ, **stack.env), stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=mooncake_stack.end_with_parent)
        channel = Channel(control)
        producer = None
        try:
            producer = Producer(stack.env, 0 if args.segment_host else 32 << 20)
            publish(producer, channel, consumer, digests)
            t0 = phase("published (the consumer starting meanwhile)", t0)
        except Exception as exc:
            check(False, "producer: %s" % exc)
            channel.write(".failed", str(exc))
        try:
            status = consumer.wait(timeout=180)
        except subprocess.TimeoutExpired:
            consumer.kill()
            status = consumer.wait()
            check(False, "the consumer did not end within 180 s")
        t0 = phase("consumer ended", t0)
        with open(consumer_log, encoding="utf-8", errors="replace") as f:
            sys.stdout.write(f.read())
        check(status == 0, "consumer exit status %s" % status)
        check(channel.sidecar(".consumer_done") is not None,
              ".consumer_done missing (.consumer_failed: %r)" % channel.sidecar(".consumer_failed"))
        received = []
        if os.path.exists(received_path):
            with open(received_path, encoding="utf-8") as f:
                received = [json.loads(line) for line in f]
        check(sorted(r["sample_id"] for r in received) == sorted(digests),
              "trained on %s, published %s" % ([r["sample_id"] for r in received], sorted(digests)))
        for r in received:
            want = digests.get(r["sample_id"])
            check(r["tensors"] == want, "%s: received %s, published %s" % (r["sample_id"], r["tensors"], want))
        if producer is not None:
            left = [key for key in producer.keys if producer.exists(key)]
            check(not left, "the trainer left %d of %d objects: %s" % (len(left), len(producer.keys), left[:5]))
            for key in left:
                producer.remove(key)
            producer.close()
        t0 = phase("checked", t0)
        ended = stack.stop()
    phase("store stopped (%s)" % ", ".join("%s %s" % item for item in ended.items()), t0)
    for name, seconds in TIMES:
        print("%-60s %6.2f s" % (name, seconds))
    print("%-60s %6.2f s" % ("total", time.monotonic() - start))
    if FAILURES or args.keep:
        print("work folder kept: %s" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print("%d checks failed" % len(FAILURES))
        return 1
    print("OK: %d samples trained on, byte for byte as published" % len(received))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
