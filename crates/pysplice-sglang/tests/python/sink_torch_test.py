"""The dump's store sink (pysplice_sglang.dump.sink) against PyTorch itself, with a stand-in for
the Mooncake client: what each put carries, what the ticket says, when a file goes, what a refused
put leaves. Needs PyTorch, not Mooncake (CI runs it in an SGLang release's venv); the store itself
is exercised by the store suite (tests/python/store).

    python3 scripts/python-tests.py ... crates/pysplice-sglang/tests/python --only sink_torch_test.py
"""

import ctypes
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from pysplice_sglang.dump import files, sink  # noqa: E402


class StandInStore:
    """Keeps a copy of each put's bytes; refuses the keys in `full` as a full store does (-200)."""

    def __init__(self, full=()):
        self.objects, self.full, self.removed = dict(), set(full), []

    def put_from(self, key, ptr, size, config):
        if key in self.full:
            return -200
        self.objects[key] = ctypes.string_at(ptr, size)
        return 0

    def remove(self, key, force):
        self.removed.append(key)
        self.objects.pop(key, None)
        return 0


def sink_on(store):
    """The sink class, connected to `store` instead of a Mooncake client."""

    class Connected(sink._pysplice_hs_Sink):
        def _connect(self):
            self.client, self.config, self.register = store, None, False

    return Connected


class SinkThreads(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sink-torch-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.state = dict(dir_fd=files._pysplice_hs_open_dir(self.dir), link=True)
        self.addCleanup(os.close, self.state["dir_fd"])
        self.seen = []  # (queued, .ckpt files in the folder) each time the sink says its counts changed

    def changed(self):
        self.seen.append((self.sink.counts()["queued"], sorted(n for n in os.listdir(self.dir) if n.endswith(".ckpt"))))

    def sample(self, name, tokens, width=8, aux=True):
        s = dict(
            input_ids=torch.arange(tokens, dtype=torch.long) * 7,
            hidden_state=torch.randn(tokens, width).to(torch.bfloat16),
            rid="rid-" + name, layers_to_capture=[2, 4, 6],
            provenance=dict(sglang_version="0.5.23", hidden_size=width, dtype="bfloat16"),
        )
        if aux:
            s["aux_hidden_state"] = torch.randn(tokens, 3 * width).to(torch.bfloat16)
        torch.save(s, os.path.join(self.dir, name + ".ckpt"))
        return s

    def start(self, store, keep=False):
        self.sink = sink_on(store)(self.state, ("run", keep), lambda: self.changed())
        self.addCleanup(self.sink.close, 10.0)

    def drain(self, offered):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            c = self.sink.counts()
            if c["queued"] == 0 and c["stored"] + c["spilled"] >= offered:
                return c
            time.sleep(0.01)
        self.fail("the sink did not drain: %s" % self.sink.counts())

    def test_each_sample_is_put_with_its_bytes_ticketed_and_its_file_removed(self):
        store = StandInStore()
        samples = {"s%d" % k: self.sample("s%d" % k, tokens) for k, tokens in enumerate((5, 300, 1))}
        self.start(store)
        for name in samples:
            self.sink.offer(name + ".ckpt")
        c = self.drain(len(samples))
        self.assertEqual((c["stored"], c["spilled"]), (3, 0))
        self.assertEqual(sorted(n for n in os.listdir(self.dir) if not n.startswith(".")), sorted(n + ".store.json" for n in samples))
        for name, s in samples.items():
            with open(os.path.join(self.dir, name + ".store.json")) as f:
                ticket = json.load(f)
            n = s["input_ids"].numel()
            want = dict(hidden_state=s["aux_hidden_state"], target=s["hidden_state"], input_ids=s["input_ids"].reshape(1, -1),
                        attention_mask=torch.ones((1, n), dtype=torch.long))
            self.assertEqual(sorted(ticket["objects"]), sorted(want))
            for key, t in want.items():
                obj = ticket["objects"][key]
                self.assertEqual(obj["key"], "run/%s/g1/%s" % (name, key))
                self.assertEqual(obj["shape"], list(t.shape))
                self.assertEqual(store.objects[obj["key"]], t.contiguous().view(torch.uint8).numpy().tobytes(), key)
            self.assertEqual(ticket["input_ids"], s["input_ids"].tolist())
            self.assertEqual(ticket["rid"], s["rid"])

    def test_nothing_is_queued_while_a_stored_sample_still_has_its_file(self):
        # The sender takes "nothing queued" to mean that every file left is a spilled sample.
        for k in range(6):
            self.sample("q%d" % k, 64)
        self.start(StandInStore())
        for k in range(6):
            self.sink.offer("q%d.ckpt" % k)
        self.drain(6)
        self.assertTrue(self.seen)
        for queued, left in self.seen:
            if queued == 0:
                self.assertEqual(left, [], "nothing queued, yet %s still in the folder" % left)

    def test_keep_files_leaves_each_file_and_its_bytes(self):
        s = self.sample("k", 40)
        self.start(StandInStore(), keep=True)
        self.sink.offer("k.ckpt")
        self.drain(1)
        again = torch.load(os.path.join(self.dir, "k.ckpt"), weights_only=True)
        for key in ("input_ids", "hidden_state", "aux_hidden_state"):
            self.assertTrue(torch.equal(again[key], s[key]), key)

    def test_a_refused_put_spills_the_sample_and_removes_what_it_put(self):
        store = StandInStore(full={"run/b/g1/target"})
        self.sample("a", 10)
        b = self.sample("b", 10)
        self.start(store)
        for name in ("a", "b"):
            self.sink.offer(name + ".ckpt")
        c = self.drain(2)
        self.assertEqual((c["stored"], c["spilled"]), (1, 1))
        self.assertIn("run/b/g1/hidden_state", store.removed)
        self.assertFalse([k for k in store.objects if k.startswith("run/b/")])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "b.store.json")))
        again = torch.load(os.path.join(self.dir, "b.ckpt"), weights_only=True)
        self.assertTrue(torch.equal(again["aux_hidden_state"], b["aux_hidden_state"]))

    def test_a_sample_without_aux_rows_is_spilled_not_put(self):
        store = StandInStore()
        self.sample("n", 10, aux=False)
        self.start(store)
        self.sink.offer("n.ckpt")
        c = self.drain(1)
        self.assertEqual((c["stored"], c["spilled"]), (0, 1))
        self.assertEqual(store.objects, dict())
        self.assertTrue(os.path.exists(os.path.join(self.dir, "n.ckpt")))

    def test_close_moves_what_was_queued(self):
        for k in range(4):
            self.sample("c%d" % k, 32)
        self.start(StandInStore())
        for k in range(4):
            self.sink.offer("c%d.ckpt" % k)
        self.sink.close(30.0)
        self.assertEqual(self.sink.counts()["stored"], 4)
        self.assertFalse([n for n in os.listdir(self.dir) if n.endswith(".ckpt")])
        self.assertFalse([t for t in threading.enumerate() if t.name.startswith("pysplice-hs-sink")])


class Advice(unittest.TestCase):
    def test_dropping_a_tensors_pages_never_touches_a_byte_outside_it(self):
        # A tensor in the middle of other memory, starting and ending inside pages it shares.
        page = 4096
        whole = torch.arange(8 * page, dtype=torch.int32).view(torch.uint8)[: 8 * page].clone()
        before = whole.clone()
        inner = whole[page // 2 : 6 * page + 100]
        sink._pysplice_hs_sink_advise(dict(t=inner, n=3, empty=whole[:0]), 4)
        self.assertTrue(torch.equal(whole[: page // 2], before[: page // 2]))
        self.assertTrue(torch.equal(whole[6 * page + 100 :], before[6 * page + 100 :]))

    def test_a_view_wider_than_its_storage_drops_no_byte_beyond_it(self):
        # An expanded view (stride 0) spans far more elements than its storage holds.
        page = 4096
        whole = torch.arange(8 * page, dtype=torch.int32).view(torch.uint8)[: 8 * page].clone()
        before = whole.clone()
        one = whole[page : page + 8].view(torch.int64).expand(6 * page)
        sink._pysplice_hs_sink_advise(dict(t=one), 4)
        self.assertTrue(torch.equal(whole, before))

    def test_faulting_in_changes_nothing(self):
        t = torch.randn(3, 1000).to(torch.bfloat16)
        again = t.clone()
        sink._pysplice_hs_sink_advise(dict(t=t[1:]), 22)
        self.assertTrue(torch.equal(t, again))


if __name__ == "__main__":
    unittest.main()
