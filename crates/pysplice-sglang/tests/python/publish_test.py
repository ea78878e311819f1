#!/usr/bin/env python3
"""The publisher (pysplice_sglang/publish.py) without a store: tickets read and refused, the
provenance check, the SampleRef line, back-pressure, the trainer's verdicts, and a restart.

    python3 crates/pysplice-sglang/tests/python/publish_test.py

A store stand-in records what is put and removed; the channel is a temporary folder whose
sidecar files the tests write as SpecForge's consumer writes them. End to end, with Mooncake and
SpecForge's own consumer: store/publish_e2e.py.
"""

import json
import os
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from pysplice_sglang import masks as slm  # noqa: E402
from pysplice_sglang import publish  # noqa: E402

FIELDS = ["sample_id", "run_id", "source_task_id", "feature_store_uri", "feature_keys", "feature_specs", "strategy",
          "schema_version", "target_model_version", "draft_weight_version", "tokenizer_version", "num_tokens",
          "estimated_bytes", "metadata"]


def ticket(sample="data_dp0_pid1_ab_00000001", n=3, hidden=16, layers=8, aux=(2, 4, 5), rid="r1", store="run1"):
    objects = dict()
    for name, shape, dtype in (("hidden_state", [1, n, hidden * len(aux)], "bfloat16"), ("target", [1, n, hidden], "bfloat16"),
                               ("input_ids", [1, n], "int64"), ("attention_mask", [1, n], "int64")):
        objects[name] = dict(key="%s/%s/g1/%s" % (store, sample, name), shape=shape, dtype=dtype)
    return dict(format="pysplice-hs-store", version=1, store_id=store, sample_id=sample, generation=1, objects=objects,
                num_tokens=n, rid=rid, layers_to_capture=list(aux), input_ids=list(range(5, 5 + n)),
                provenance=dict(eagle_aux_hidden_state_layer_ids=[i - 1 for i in aux], num_hidden_layers=layers,
                                hidden_size=hidden, sglang_version="0.5.23", architecture="DeepseekV3ForCausalLM"))


class FakeStore:
    def __init__(self, full=0):
        self.objects, self.full, self.removed, self.stale = dict(), full, [], set()

    def put(self, key, data):
        if self.full:
            self.full -= 1
            return publish.STORE_FULL
        self.objects.setdefault(key, data)  # as Mooncake: a second put keeps the first value
        return 0

    def exists(self, key):
        return key in self.objects or "/loss_mask" not in key and not key.endswith("/gone")

    def size(self, key):
        if key in self.stale:  # an unfinished put of a sender that died: no size until removed
            return -704
        return len(self.objects[key]) if key in self.objects else -704

    def remove(self, key):
        self.removed.append(key)
        self.objects.pop(key, None)
        self.stale.discard(key)
        return 0


class Folder(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="publish-test-")
        self.control = os.path.join(self.dir, "control")
        self.stop = threading.Event()

    def side(self, suffix, text=""):
        with open(os.path.join(self.control, "refs.jsonl" + suffix), "w") as f:
            f.write(text)

    def publisher(self, store=None, high=0, expect=None):
        return publish.Publisher(self.control, expect or publish.Expect(), dict(target="t", tokenizer="tok"), high,
                                 report=lambda text: None, store=store or FakeStore())

    def lines(self):
        with open(os.path.join(self.control, "refs.jsonl")) as f:
            return [json.loads(line) for line in f]


class Tickets(Folder):
    def write(self, data):
        path = os.path.join(self.dir, "s.store.json")
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else json.dumps(data).encode())
        return path

    def test_a_ticket_as_the_sink_writes_it_is_read(self):
        t = publish.read_ticket(self.write(ticket()))
        self.assertEqual(t["num_tokens"], 3)
        self.assertTrue(publish.is_ticket_name("data_1.store.json"))
        self.assertFalse(publish.is_ticket_name(".data_1.store.json.tmp"))
        self.assertFalse(publish.is_ticket_name("data_1.ckpt"))

    def test_what_is_not_a_whole_ticket_is_refused(self):
        bad = []
        for change in (
            lambda t: t.update(format="other"),
            lambda t: t.update(version=2),
            lambda t: t.update(num_tokens=4),
            lambda t: t.update(input_ids=[1, "2", 3]),
            lambda t: t["objects"].pop("target"),
            lambda t: t["objects"]["target"].update(dtype="complex64"),
            lambda t: t["objects"]["target"].update(shape=[1, 2, 16]),
            lambda t: t["objects"]["target"].update(key="run1/other/g1/target"),
            lambda t: t.update(sample_id="../x"),
            lambda t: t.update(store_id=""),
            lambda t: t.update(generation=2),
            lambda t: t.update(rid=7),
            lambda t: t.update(provenance=None),
        ):
            t = ticket()
            change(t)
            bad.append(t)
        for t in bad + [b"\xff\xfe", b"[1, 2]", b"{"]:
            with self.assertRaises(slm.MaskError, msg=str(t)[:200]):
                publish.read_ticket(self.write(t))

    def test_a_link_is_never_followed(self):
        target = self.write(ticket())
        link = os.path.join(self.dir, "l.store.json")
        os.symlink(target, link)
        with self.assertRaises(slm.MaskError):
            publish.read_ticket(link)


class Provenance(unittest.TestCase):
    def test_specforges_default_ids_and_the_first_samples_facts(self):
        e = publish.Expect()
        self.assertIsNone(publish.provenance_problem(ticket(), e))  # [1, 3, 4] for 8 layers
        self.assertEqual((e.hidden, e.dtype, e.release), (16, "bfloat16", "0.5.23"))
        other = ticket(hidden=32)
        other["provenance"]["hidden_size"] = 32
        self.assertIn("hidden width 32", publish.provenance_problem(other, e))

    def test_other_aux_layers_are_named(self):
        why = publish.provenance_problem(ticket(aux=(3, 4, 5)), publish.Expect())
        self.assertIn("aux layer ids [2, 3, 4], the trainer expects [1, 3, 4]", why)
        self.assertIsNone(publish.provenance_problem(ticket(aux=(3, 4, 5)), publish.Expect(aux_ids=[2, 3, 4])))

    def test_the_draft_config_gives_ids_and_width(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dict(target_hidden_size=16, eagle_config=dict(eagle_aux_hidden_state_layer_ids=[1, 2, 5])), f)
        self.assertEqual(publish.expected_from_draft(f.name), ([1, 2, 5], 16))
        with self.assertRaises(publish.Refused):
            publish.expected_from_draft(f.name + ".missing")


class Publishing(Folder):
    def test_a_line_is_specforges_sampleref_and_the_mask_is_put(self):
        store = FakeStore()
        p = self.publisher(store, high=10)
        self.side(".consumer_quantum", "1\n")
        self.assertTrue(p.publish(ticket(), [0, 1, 1], "r1", "d" * 64, self.stop))
        (line,) = self.lines()
        self.assertEqual(list(line), FIELDS)  # SpecForge's field order
        self.assertEqual(line["feature_store_uri"], "mooncake://run1/data_dp0_pid1_ab_00000001")
        self.assertEqual(list(line["feature_specs"]), ["input_ids", "loss_mask", "hidden_state", "target", "attention_mask"])
        self.assertEqual(line["feature_specs"]["target"]["target_repr"], "hidden_state")
        self.assertEqual(line["metadata"]["generation"], 1)
        self.assertEqual(line["metadata"]["target_repr"], "hidden_state")
        self.assertEqual(line["num_tokens"], 3)
        self.assertEqual(line["estimated_bytes"], 3 * 48 * 2 + 3 * 16 * 2 + 3 * 8 * 3)
        mask = store.objects["run1/data_dp0_pid1_ab_00000001/g1/loss_mask"]
        self.assertEqual(mask, (0).to_bytes(8, "little") + (1).to_bytes(8, "little") * 2)
        # the same sample, or another sample of the rid, is not announced again
        self.assertFalse(p.publish(ticket(), [0, 1, 1], "r1", "d" * 64, self.stop))
        self.assertFalse(p.publish(ticket(sample="data_2"), [0, 1, 1], "r1", "d" * 64, self.stop))
        self.assertEqual(len(self.lines()), 1)

    def test_a_sample_whose_objects_are_gone_is_never_announced(self):
        t = ticket()
        t["objects"]["target"]["key"] += "/gone"
        with self.assertRaises(slm.MaskError):
            self.publisher().publish(t, [1, 1, 1], "r1", "d", self.stop)
        self.assertFalse(os.path.exists(os.path.join(self.control, "refs.jsonl")))

    def test_back_pressure_waits_for_the_trainer(self):
        p = self.publisher(high=1)
        self.side(".consumer_quantum", "1")
        p.publish(ticket(sample="s1", rid="r1"), [1, 1, 1], "r1", "d", self.stop)
        done = []
        worker = threading.Thread(target=lambda: done.append(p.publish(ticket(sample="s2", rid="r2"), [1, 1, 1], "r2", "d", self.stop)))
        worker.start()
        time.sleep(0.5)
        self.assertEqual((done, len(self.lines())), ([], 1))  # one in flight: the second waits
        self.side(".consumed_count", "1")
        worker.join(5)
        self.assertEqual((done, len(self.lines())), ([True], 2))

    def test_no_quantum_no_line(self):
        p = self.publisher()
        self.stop.set()
        with self.assertRaises(publish.Stop):
            p.publish(ticket(), [1, 1, 1], "r1", "d", self.stop)
        self.assertFalse(os.path.exists(os.path.join(self.control, "refs.jsonl")))

    def test_a_full_store_is_waited_out(self):
        store = FakeStore(full=2)
        p = self.publisher(store)
        self.side(".consumer_quantum", "1")
        self.assertTrue(p.publish(ticket(), [1, 1, 1], "r1", "d", self.stop))
        self.assertEqual(store.removed.count("run1/data_dp0_pid1_ab_00000001/g1/loss_mask"), 2)

    def test_a_stale_mask_of_a_sender_that_died_is_replaced(self):
        store = FakeStore()
        key = "run1/data_dp0_pid1_ab_00000001/g1/loss_mask"
        store.objects[key] = b"\x09" * 24  # left half-put: a put keeps it, its size is not there
        store.stale.add(key)
        p = self.publisher(store)
        self.side(".consumer_quantum", "1")
        self.assertTrue(p.publish(ticket(), [0, 1, 1], "r1", "d", self.stop))
        self.assertEqual(store.objects[key], (0).to_bytes(8, "little") + (1).to_bytes(8, "little") * 2)

    def test_the_trainers_end_stops_publishing(self):
        for suffix, words in ((".consumer_done", "the trainer is done"), (".consumer_failed", "the trainer failed: boom")):
            self.setUp()
            p = self.publisher()
            self.side(".consumer_quantum", "1")
            self.side(suffix, "boom\n" if "failed" in suffix else "")
            with self.assertRaises(publish.Stop) as caught:
                p.publish(ticket(), [1, 1, 1], "r1", "d", self.stop)
            self.assertEqual(str(caught.exception), words)

    def test_a_restart_reads_the_channel(self):
        p = self.publisher()
        self.side(".consumer_quantum", "1")
        p.publish(ticket(), [1, 1, 1], "r1", "d", self.stop)
        again = self.publisher()
        self.assertEqual((again.done, again.rids, again.run_id), ({"data_dp0_pid1_ab_00000001": "r1"}, {"r1"}, "run1"))
        self.assertFalse(again.publish(ticket(), [1, 1, 1], "r1", "d", self.stop))

    def test_a_closed_channel_or_a_cut_line_is_refused(self):
        self.publisher()
        self.side(".closed")
        with self.assertRaises(publish.Refused):
            self.publisher()
        os.unlink(os.path.join(self.control, "refs.jsonl.closed"))
        self.side("", '{"sample_id": "x", "run_id": "r"')
        with self.assertRaises(publish.Refused):
            self.publisher()

    def test_one_store_id_a_run(self):
        p = self.publisher()
        self.side(".consumer_quantum", "1")
        p.publish(ticket(), [1, 1, 1], "r1", "d", self.stop)
        with self.assertRaises(publish.Refused):
            p.publish(ticket(sample="s2", rid="r2", store="run2"), [1, 1, 1], "r2", "d", self.stop)

    def test_the_verdict_and_what_the_trainer_never_took(self):
        store = FakeStore()
        p = self.publisher(store)
        self.side(".consumer_quantum", "1")
        p.publish(ticket(), [1, 1, 1], "r1", "d", self.stop)
        self.side(".consumer_done")
        ended, left = p.finish(None, self.stop, wait_s=1)
        self.assertEqual((ended, left), ("the trainer is done", 1))
        self.assertTrue(os.path.exists(os.path.join(self.control, "refs.jsonl.closed")))
        self.assertIn("run1/data_dp0_pid1_ab_00000001/g1/hidden_state", store.removed)


if __name__ == "__main__":
    unittest.main()
