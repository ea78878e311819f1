#!/usr/bin/env python3
"""Unit tests of the hidden-state dump's parts that need no PyTorch (crates/pysplice-sglang/python/pysplice_sglang/dump).

    python3 crates/pysplice-sglang/tests/python/hs_dump_parts_test.py -v

Standard library only: torch is made unimportable first, so a part that starts to need it fails
here. The package is the recipe's code as it is injected, template slots included: the settings
are read from the variables named "{env}", "{max_env}", ... (the patched file names the real
ones), and every definition is one a recipe names (PackageAndRecipes). What needs PyTorch (the
writer's copies and files, stitching) runs in crates/pysplice-sglang/tests/python/runtime/run_hs_dump_test.py.
"""

import ast
import json
import logging
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import tomllib
import types
import unittest
import zipfile
import zlib

sys.dont_write_bytecode = True
sys.modules["torch"] = None  # `import torch` raises ImportError from here on
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from pysplice_sglang.dump import archive, capture, chunks, debris, files, hooks, sample, settings, sink, state, status, writer  # noqa: E402

# The recipe's [vars] as the package writes them (template slots).
ENV, MAX_ENV, QUEUE_ENV, LAYERS_ENV = "{env}", "{max_env}", "{queue_env}", "{layers_env}"


def ns(**fields):
    return types.SimpleNamespace(**fields)


class Listed(list):
    """A host tensor as the writer's planning reads one: .tolist()."""

    def tolist(self):
        return list(self)


class Imports(unittest.TestCase):
    def test_every_module_imports_without_pytorch(self):
        for module in (archive, capture, chunks, debris, files, hooks, settings, status, writer):
            self.assertIsNone(getattr(module, "torch", None), module.__name__)


class ChunkedRequestIdentity(unittest.TestCase):
    """Which field links the chunks of one request (chunks.py), and the writer's plan of a pass."""

    def test_the_identity_comes_from_the_fields_the_release_has(self):
        kv = dict(req_pool_indices=[0], extend_prefix_lens=[0], req_to_token_pool=object(), out_cache_loc=[1])
        cases = [
            (dict(rids=["a"]), "rid"),
            (dict(kv, rids=["a"]), "rid"),
            (dict(kv, extend_seq_lens=[1]), "kv"),
            (kv, None),  # a pool but no lengths to find each request's last token
            (dict(req_pool_indices=[0], extend_prefix_lens=[0]), "slot"),
            (dict(req_pool_indices=[0]), None),
            (dict(extend_prefix_lens=[0], extend_seq_lens=[1]), None),
            (dict(), None),
        ]
        for fields, how in cases:
            self.assertEqual(chunks._pysplice_hs_stitch_how(ns(**fields)), how, fields)

    def test_which_requests_of_a_pass_hold_their_whole_prompt(self):
        complete = chunks._pysplice_hs_complete
        self.assertEqual(complete(0, None, [3, 4], None), [True, True])
        self.assertEqual(complete(0, None, [3, 4], [0, 2]), [True, False])  # a cached prefix
        # orig_seq_lens: the first chunk of a longer prompt is not whole, its last chunk neither
        self.assertEqual(complete(0, [3, 10], [3, 4], [0, 0]), [True, False])
        self.assertEqual(complete(0, [10], [6], [4]), [False])
        # without it, a pass that fills the chunk budget may have cut its last non-empty request
        self.assertEqual(complete(8, None, [3, 5, 0], [0, 0, 0]), [True, False, True])
        self.assertEqual(complete(8, None, [3, 4], [0, 0]), [True, True])
        # a full list shorter than the pass is not used
        self.assertEqual(complete(7, [3], [3, 4], [0, 0]), [True, False])

    def planner(self):
        plans = object.__new__(writer._pysplice_hs_Writer)  # no threads, no files: only the plan
        plans.held = dict()
        return plans

    def plan(self, plans, how, lens, prefix, full=None, rids=None, end=False, **tensors):
        meta = dict(lens=lens, prefix=prefix, rids=rids, stitch=how, chunk=0, layers=None, provenance=None, end=end)
        if full is not None:
            meta["full"] = full
        job = dict(tensors=dict((k, Listed(v)) for k, v in tensors.items()), meta=meta, todo=[], left=0)
        return plans._plan(job), job["todo"]

    def test_a_request_is_stitched_across_passes_by_rid(self):
        plans = self.planner()
        plan, ends = self.plan(plans, "rid", [4, 2], [0, 0], full=[10, 2], rids=["a", "b"])
        self.assertEqual((plan[0][0], plan[0][2], plan[0][3]), ("add", 0, False))
        self.assertEqual(plan[1], ("whole",))
        first = plan[0][1]
        self.assertIs(plans.held["a"], first)
        plan, ends = self.plan(plans, "rid", [6], [4], full=[10], rids=["a"])
        self.assertIs(plan[0][1], first)
        self.assertEqual((plan[0][0], plan[0][2], plan[0][3]), ("add", 1, True))  # the last chunk
        self.assertEqual((plans.held, ends), ({}, []))

    def test_a_chunk_that_does_not_continue_where_the_request_stopped_is_its_own(self):
        plans = self.planner()
        self.plan(plans, "rid", [4], [0], full=[10], rids=["a"])
        plan, _ = self.plan(plans, "rid", [3], [5], full=[10], rids=["a"])  # rows 5.., not 4..
        self.assertEqual(plan[0], ("whole",))

    def test_two_prompts_given_one_rid_are_kept_apart_by_their_slots(self):
        # SGLang refuses a rid in flight; should two prompts of one rid come all the same, each
        # in its own pool slot (kept across chunks from 0.5.9), their chunks taking turns: each
        # chunk goes to its own prompt's file, neither prompt ends the other
        plans = self.planner()
        plan, ends = self.plan(plans, "rid", [4], [0], full=[12], rids=["a"], slots=[1])
        first = plan[0][1]
        plan, ends = self.plan(plans, "rid", [4], [0], full=[12], rids=["a"], slots=[2])
        second = plan[0][1]
        self.assertIsNot(second, first)
        self.assertEqual(ends, [])
        for p, last in ((4, False), (8, True)):
            for slot, entry in ((1, first), (2, second)):
                plan, ends = self.plan(plans, "rid", [4], [p], full=[12], rids=["a"], slots=[slot])
                self.assertEqual((plan[0][0], plan[0][1], plan[0][3], ends), ("add", entry, last, []), (p, slot))
        self.assertEqual(plans.held, {})
        # a chunk of the rid in another slot than the request held is not stitched into it
        self.plan(plans, "rid", [4], [0], full=[12], rids=["b"], slots=[3])
        plan, _ = self.plan(plans, "rid", [4], [4], full=[12], rids=["b"], slots=[5])
        self.assertEqual(plan[0], ("whole",))

    def test_a_request_is_linked_by_kv_locations(self):
        plans = self.planner()
        # its last token's KV location (77) is what the next chunk's pool row shows before it
        plan, _ = self.plan(plans, "kv", [4], [0], full=[7], slots=[3], last_loc=[77], prev_loc=[0])
        held = plan[0][1]
        self.assertIs(plans.held[77], held)
        plan, _ = self.plan(plans, "kv", [3], [4], full=[7], slots=[5], last_loc=[90], prev_loc=[77])
        self.assertEqual((plan[0][1], plan[0][3]), (held, True))

    def test_a_held_request_not_continued_ends_partial(self):
        plans = self.planner()
        plan, _ = self.plan(plans, "slot", [4], [0], full=[10], slots=[3])
        held = plan[0][1]
        _, ends = self.plan(plans, "slot", [2], [0], full=[2], slots=[6])
        self.assertEqual(ends, [("end", held, 1, ".ckpt.partial")])
        self.assertEqual(plans.held, {})

    def test_by_rid_a_request_may_miss_two_passes(self):
        plans = self.planner()
        plan, _ = self.plan(plans, "rid", [4], [0], full=[10], rids=["a"])
        held = plan[0][1]
        for _ in range(2):
            self.assertEqual(self.plan(plans, "rid", [2], [0], full=[2], rids=["x"])[1], [])
        _, ends = self.plan(plans, "rid", [2], [0], full=[2], rids=["y"])
        self.assertEqual(ends, [("end", held, 1, ".ckpt.partial")])

    def test_an_identity_taken_by_a_new_request_ends_the_old_one(self):
        plans = self.planner()
        plan, _ = self.plan(plans, "slot", [4], [0], full=[10], slots=[3])
        old = plan[0][1]
        plan, ends = self.plan(plans, "slot", [4], [0], full=[9], slots=[3])
        self.assertIsNot(plan[0][1], old)
        self.assertIn(("end", old, 1, ".ckpt.partial"), ends)

    def test_the_cap_ends_every_held_request(self):
        plans = self.planner()
        plan, ends = self.plan(plans, "rid", [4], [0], full=[10], rids=["a"], end=True)
        self.assertEqual(ends, [("end", plan[0][1], 1, ".ckpt.partial")])


class HealthProbes(unittest.TestCase):
    """SGLang's /health and /health_generate prefill one token as "HEALTH_CHECK_<uuid>" (0.5.x):
    a router polling them must not leave samples in the folder (found on the real 0.5.23 server)."""

    def test_a_health_probe_of_the_server_is_never_a_sample(self):
        meta = dict(rids=["HEALTH_CHECK_4c2357dc", "conv-1", "health", None, 7])
        self.assertEqual([sample._pysplice_hs_probe(meta, i) for i in range(6)], [True, False, False, False, False, False])

    def test_without_rids_nothing_is_taken_for_a_probe(self):
        self.assertFalse(sample._pysplice_hs_probe(dict(rids=None), 0))

    def test_before_rids_a_whole_prompt_of_the_one_token_0_is_the_probe(self):
        # SGLang before 0.5.10 sends input_ids=[0]; the batch has no rids then
        job = dict(meta=dict(rids=None, lens=[3, 1, 1, 1], prefix=[0, 0, 0, 5]), tensors=dict(ids=[0, 7, 7, 9, 0, 0]))
        self.assertEqual([sample._pysplice_hs_probe_row(job, i) for i in range(4)], [False, False, True, False])
        job["meta"]["rids"] = ["a", "b", "c", "d"]  # with rids, only the rid says so
        self.assertFalse(sample._pysplice_hs_probe_row(job, 2))


class Folder(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hs_dump_parts_")
        os.chmod(self.dir, 0o700)
        self.fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)

    def tearDown(self):
        os.close(self.fd)
        shutil.rmtree(self.dir)

    def put(self, name, data=b""):
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(data)

    def names(self):
        return set(os.listdir(self.dir))


class StatusFiles(Folder):
    def test_a_status_file_is_read_only_when_it_is_a_small_regular_json_object_of_this_user(self):
        read = status._pysplice_hs_read_status
        uid = os.geteuid()
        self.put("ok.json", b'{"pid": 5}')
        self.assertEqual(read(self.fd, "ok.json", uid), {"pid": 5})
        self.assertIsNone(read(self.fd, "ok.json", uid + 1))
        for name, data in (("list.json", b"[1]"), ("bad.json", b"{"), ("bytes.json", b'{"a": "\xff"}')):
            self.put(name, data)
            self.assertIsNone(read(self.fd, name, uid), name)
        self.put("big.json", b'{"a": 1}' + b" " * 65536)  # its first 64 KiB parse, but it is too big
        self.assertIsNone(read(self.fd, "big.json", uid))
        os.symlink("ok.json", os.path.join(self.dir, "link.json"))
        self.assertIsNone(read(self.fd, "link.json", uid))
        os.mkfifo(os.path.join(self.dir, "fifo.json"))
        self.assertIsNone(read(self.fd, "fifo.json", uid))  # not waited on
        self.assertIsNone(read(self.fd, "missing.json", uid))

    def test_the_identity_of_a_process(self):
        me = status._pysplice_hs_identity()
        self.assertEqual(set(me), {"host", "pidns", "boot", "pid", "start", "uid"})
        self.assertEqual((me["pid"], me["uid"]), (os.getpid(), os.geteuid()))
        self.assertEqual(me["start"], status._pysplice_hs_started(os.getpid()))
        self.assertTrue(me["start"].isdigit(), me)
        self.assertEqual(status._pysplice_hs_started(dead_pid()), "")

    def test_the_writer_replaces_its_status_file_whole(self):
        w = object.__new__(writer._pysplice_hs_Writer)
        w.cond, w.status_lock = threading.Condition(), threading.Lock()
        w.me = dict(host="h", pid=1)
        w.state = dict(token="0badcafe", dir_fd=self.fd)
        w.queued, w.written, w.dropped, w.files, w.lost, w.held, w.phase = 5, 3, 1, 9, 2, {"a": 1}, "running"
        w.status = ".hs_dump_status_dp0_pid1_0badcafe_1.json"
        w.sink = None
        self.put(w.status, b"old")
        w._write_status()
        self.assertEqual(self.names(), {w.status})  # no temporary left
        info = status._pysplice_hs_read_status(self.fd, w.status, os.geteuid())
        info.pop("time")
        self.assertEqual(info, dict(host="h", pid=1, token="0badcafe", queued=5, written=3, dropped=1, files=9, held=1, lost=2, state="running"))
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.dir, w.status)).st_mode), 0o600)
        # with the store sink on, its counts too (what the sender waits on)
        counts = dict(store="run", queued=2, stored=7, spilled=1)
        w.sink = type("Sink", (), dict(counts=lambda self: counts))()
        w._write_status()
        self.assertEqual(status._pysplice_hs_read_status(self.fd, w.status, os.geteuid())["sink"], counts)

    def test_the_sink_setting(self):
        self.assertIsNone(sink._pysplice_hs_sink_setting(""))
        self.assertEqual(sink._pysplice_hs_sink_setting("mooncake://run-1"), ("run-1", False))
        self.assertEqual(sink._pysplice_hs_sink_setting("mooncake://a.b:c_d?keep=files"), ("a.b:c_d", True))
        for bad in ("run", "file://x", "mooncake://", "mooncake://a/b", "mooncake://a?keep=all", "mooncake://a b",
                    "mooncake://" + "x" * 201):
            with self.assertRaises(ValueError, msg=bad):
                sink._pysplice_hs_sink_setting(bad)


def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


class DebrisRules(Folder):
    """What a start removes of what killed processes left (debris.py)."""

    ME = dict(host="h", pidns="pid:[4026531836]", boot="b-1", uid=os.geteuid())

    def status_file(self, pid, token, serial=1, info=()):
        # as the writer writes it, of process `pid`, which started at tick 1 (`info` overrides)
        name = ".hs_dump_status_dp0_pid%d_%s_%d.json" % (pid, token, serial)
        body = dict(self.ME, pid=pid, token=token, start="1", queued=0, written=0, dropped=0, held=0)
        body.update(info)
        self.put(name, json.dumps(body).encode())
        return name

    def debris_of(self, pid, token):
        # the names the writer makes (files.py, stitch.py, parts.py), of process `pid`
        stem = "data_dp0_pid%d_%s" % (pid, token)
        return {
            ".%s_%08d.ckpt.tmp" % (stem, 3),
            ".%s_%08d.ckpt.partial.tmp" % (stem, 12345678),
            ".%s_s%d.stitch.tmp" % (stem, 2),
            ".%s_s%d.hidden.part.tmp" % (stem, 2),
            ".%s_%08d.ids.part.tmp" % (stem, 4),  # before serials
            ".hs_dump_status_dp0_pid%d_%s_%d.json.tmp" % (pid, token, 1),
        }

    def clean(self):
        debris._pysplice_hs_clean(self.fd, self.ME)

    def test_the_debris_of_a_process_that_is_gone_goes(self):
        pid = dead_pid()
        names = self.debris_of(pid, "0123abcd")
        for name in names:
            self.put(name)
        names.add(self.status_file(pid, "0123abcd"))
        names.add(self.status_file(pid, "0123abcd", serial=2))
        kept = {
            "data_dp0_pid%d_0123abcd_00000003.ckpt" % pid,  # a published sample
            ".data_dp0_pid%d_0123abcd_0000003.ckpt.tmp" % pid,  # not a name the dump makes
            ".data_dp0_pid%d_0123ABCD_00000003.ckpt.tmp" % pid,
            ".data_dp0_pid%d_0123abcd_00000003.ckpt.tmp.x" % pid,
            ".data_dp0_pid%d_0123abcd_s2.other.part.tmp" % pid,
            "notes.txt",
        }
        for name in kept:
            self.put(name)
        os.mkdir(os.path.join(self.dir, ".data_dp0_pid%d_0123abcd_s9.stitch.tmp" % pid))  # not a file
        kept.add(".data_dp0_pid%d_0123abcd_s9.stitch.tmp" % pid)
        self.clean()
        self.assertEqual(self.names(), kept)

    def test_nothing_goes_without_proof_that_its_process_is_gone(self):
        pid, alive = dead_pid(), os.getpid()
        cases = [  # (token, the process in the names, its status file: None for none)
            ("00000001", pid, None),
            ("00000002", pid, dict(host="elsewhere")),
            ("00000003", pid, dict(pidns="pid:[1]")),
            ("00000004", pid, dict(boot="another-boot")),
            ("00000005", pid, dict(start="")),  # its start time was not known
            ("00000006", pid, dict(pid=pid + 1)),  # the file speaks of another process
            ("00000007", pid, dict(token="00000008")),
            ("00000009", alive, dict(start=status._pysplice_hs_started(alive))),  # still running
        ]
        expected = set()
        for token, p, info in cases:
            expected |= self.debris_of(p, token)
            if info is not None:
                expected.add(self.status_file(p, token, info=info))
        # a status file that is a symlink proves nothing
        link = ".hs_dump_status_dp0_pid%d_0000000a_1.json" % pid
        os.symlink(self.status_file(pid, "0000000b"), os.path.join(self.dir, link))
        expected |= {link, self.status_file(pid, "0000000b")} | self.debris_of(pid, "0000000a")
        for name in expected:
            if not os.path.lexists(os.path.join(self.dir, name)):
                self.put(name)
        self.clean()
        self.assertEqual(self.names(), expected - {self.status_file(pid, "0000000b")})

    def test_every_status_file_of_a_process_must_prove_it_gone(self):
        pid = dead_pid()
        expected = self.debris_of(pid, "0123abcd")
        for name in expected:
            self.put(name)
        expected.add(self.status_file(pid, "0123abcd"))
        expected.add(self.status_file(pid, "0123abcd", serial=2, info=dict(host="elsewhere")))
        self.clean()
        self.assertEqual(self.names(), expected)

    def test_this_process_writers_are_never_debris(self):
        pid = dead_pid()
        expected = self.debris_of(pid, "feedf00d")
        for name in expected:
            self.put(name)
        expected.add(self.status_file(pid, "feedf00d"))
        state._pysplice_hs_Process.tokens.add("feedf00d")
        try:
            self.clean()
        finally:
            state._pysplice_hs_Process.tokens.discard("feedf00d")
        self.assertEqual(self.names(), expected)

    def test_passes_a_killed_process_left_unwritten_are_reported(self):
        pid = dead_pid()
        self.status_file(pid, "0123abcd", info=dict(queued=5, written=2, dropped=1, held=1))
        with self.assertLogs("pysplice_sglang.dump", logging.WARNING) as logs:
            self.clean()
        self.assertIn("pid %d: 2 passes, 1 chunked requests unfinished" % pid, logs.output[0])
        self.assertEqual(self.names(), set())


class Environ(unittest.TestCase):
    """Each test gets the dump's variables unset and leaves them so."""

    def setUp(self):
        self.saved = dict((k, os.environ.get(k)) for k in (ENV, MAX_ENV, QUEUE_ENV, LAYERS_ENV))
        for k in self.saved:
            os.environ.pop(k, None)

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class LayerSettings(Environ):
    """The settings read when the model is built (settings.py)."""

    def test_layer_ids(self):
        ids = settings._pysplice_hs_layer_ids
        self.assertIsNone(ids("", 61))
        self.assertEqual(ids("2, 30,58", 61), [2, 30, 58])
        self.assertEqual(ids(" 7 ", None), [7])
        self.assertEqual(ids("1000", None), [1000])
        with self.assertRaises(ValueError):
            ids("1234567890", None)  # at most 9 digits, whatever the model
        for raw in ("1,,2", "1,", ",1", "a", "-1", "1.5", "+1", "\u0663", "1234567890", "3,2", "2,2", "61"):
            with self.assertRaises(ValueError, msg=raw):
                ids(raw, 61)

    def test_a_refused_value_is_shown_printable_and_cut(self):
        self.assertEqual(settings._pysplice_hs_show("a\x1bb"), "'a\\x1bb'")
        shown = settings._pysplice_hs_show("9" * 100)
        self.assertEqual(shown, repr("9" * 60) + "...")

    def setup(self, config=None, model=None):
        model = model if model is not None else ns()
        config = config if config is not None else ns(num_hidden_layers=8, architectures=["DeepseekV3ForCausalLM"])
        return model, settings._pysplice_hs_setup(model, config)

    def test_the_settings_of_a_model(self):
        os.environ.update({ENV: "/tmp/x", MAX_ENV: " 12 ", QUEUE_ENV: "0.5", LAYERS_ENV: "1,3,7"})
        model, folder = self.setup()
        self.assertEqual(folder, "/tmp/x")
        state = model._hs_dump_state
        self.assertEqual((state["cap"], state["budget"], state["layers"], state["layer_count"]), (12, 1 << 19, [1, 3, 7], 8))
        self.assertEqual(state["budget_raw"], "0.5")
        self.assertRegex(state["token"], "^[0-9a-f]{8}$")
        os.environ.update({MAX_ENV: "", QUEUE_ENV: "", LAYERS_ENV: ""})
        state = self.setup()[0]._hs_dump_state
        self.assertEqual((state["cap"], state["budget"], state["layers"]), (None, 2048 << 20, None))

    def test_a_bad_setting_keeps_the_dump_off_with_one_warning(self):
        os.environ[ENV] = "/tmp/x"
        for name, raw, says in (
            (MAX_ENV, "ten", "is not a number of files"),
            (MAX_ENV, "-1", "is not a number of files"),
            (QUEUE_ENV, "nan", "is not a number of MiB"),
            (QUEUE_ENV, "inf", "is not a number of MiB"),
            (LAYERS_ENV, "3,9", "is refused: layer 9 does not exist, the model has 8 layers (0-7)"),
        ):
            os.environ[name] = raw
            model = ns()
            with self.assertLogs("pysplice_sglang.dump", logging.WARNING) as logs:
                self.assertIsNone(self.setup(model=model)[1])
                self.assertIsNone(self.setup(model=model)[1])  # asked again: no second warning
            self.assertEqual(len(logs.output), 1, logs.output)
            self.assertIn("%s=%r %s" % (name, raw, says), logs.output[0])
            self.assertFalse(hasattr(model, "_hs_dump_state"))
            os.environ.pop(name)

    def test_draft_models_never_dump(self):
        os.environ[ENV] = "/tmp/x"
        self.assertIsNone(self.setup(config=ns(architectures=["DeepseekV3ForCausalLMNextN"]))[1])
        draft = type("MistralLarge3EagleModel", (), {})()
        self.assertIsNone(self.setup(model=draft)[1])
        self.assertFalse(settings._pysplice_hs_is_draft(ns(), ns(architectures=None)))

    def test_the_init_hook_turns_the_dump_on_only_when_asked(self):
        model = ns()
        hooks.init(model, ns(num_hidden_layers=4))
        self.assertEqual((model._hs_dump_dir, model._hs_dump_count), (None, 0))
        os.environ.update({ENV: "/tmp/x", LAYERS_ENV: "1,2"})
        hooks.init(model, ns(num_hidden_layers=4))
        self.assertEqual((model._hs_dump_dir, model._hs_dump_state["layers"]), ("/tmp/x", [1, 2]))


class Architecture:
    """A model with one backbone, whose set_eagle3_layers_to_capture does what `select` says."""

    def __init__(self, layers, select, count=8):
        self.model = ns(layers_to_capture=[], capture_aux_hidden_states=False, layers=[None] * count)
        self.select = select
        os.environ[LAYERS_ENV] = layers
        hooks.init(self.model, ns(num_hidden_layers=count))

    def modules(self):
        return [self, self.model]

    def set_eagle3_layers_to_capture(self, ids):
        self.model.capture_aux_hidden_states = True
        self.model.layers_to_capture.extend(self.select(ids))


class Capture(Environ):
    """The aux layers captured for the dump, or the capture undone (capture.py, hooks.capture)."""

    def setUp(self):
        super().setUp()
        os.environ[ENV] = "/tmp/x"

    def test_the_layers_asked_for_are_captured(self):
        arch = Architecture("1,3", lambda ids: [i + 1 for i in ids])
        hooks.capture(arch, ns(architectures=["DeepseekV3ForCausalLM"]))
        self.assertEqual((arch.model.layers_to_capture, arch.model._hs_dump_dir), ([2, 4], "/tmp/x"))

    def test_layers_outside_the_model_undo_the_capture_and_turn_the_dump_off(self):
        for layers, select, why in (
            ("6,7", lambda ids: [i + 1 for i in ids], "layers [7, 8], outside 1-7"),
            ("", lambda ids: [2, 4, 5], "layers [2, 4, 5], outside 1-3"),  # SGLang's default, 4 layers
            ("1,2", lambda ids: [0, 1], "layers [0, 1], outside"),
            ("1,2", lambda ids: [3], "not one per id"),
            ("1,2", lambda ids: [], "no layer selected"),
        ):
            arch = Architecture(layers, select, count=8 if layers else 4)
            with self.assertLogs("pysplice_sglang.dump", logging.WARNING) as logs:
                hooks.capture(arch, ns(architectures=["DeepseekV3ForCausalLM"]))
            self.assertIn(why, logs.output[0])
            self.assertIsNone(arch.model._hs_dump_dir)
            self.assertEqual((arch.model.layers_to_capture, arch.model.capture_aux_hidden_states), ([], False))

    def test_a_capture_that_raises_is_undone_and_the_dump_goes_on_without_aux(self):
        def select(ids):
            raise RuntimeError("no such layer")

        arch = Architecture("1", select)
        with self.assertLogs("pysplice_sglang.dump", logging.WARNING) as logs:
            hooks.capture(arch, ns(architectures=None))
        self.assertIn("dumping without aux_hidden_state", logs.output[0])
        self.assertEqual((arch.model.capture_aux_hidden_states, arch.model._hs_dump_dir), (False, "/tmp/x"))

    def test_no_capture_under_pipeline_parallelism_nor_for_drafts(self):
        arch = Architecture("1", lambda ids: [2])
        arch.pp_group = ns(world_size=2)
        with self.assertLogs("pysplice_sglang.dump", logging.WARNING):
            hooks.capture(arch, ns(architectures=None))
        self.assertEqual(arch.model.layers_to_capture, [])
        arch = Architecture("1", lambda ids: [2])
        hooks.capture(arch, ns(architectures=["DeepseekV3ForCausalLMNextN"]))
        self.assertEqual(arch.model.layers_to_capture, [])
        self.assertIsNone(capture._pysplice_hs_capture_begin(ns()))  # no backbone dumps


class Folders(Folder):
    """The dump folder's checks and the publication of a file under a free name (files.py)."""

    def test_the_folder_is_made_private_and_a_doubtful_one_refused(self):
        fd = files._pysplice_hs_open_dir(os.path.join(self.dir, "new") + "/")
        os.close(fd)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.dir, "new")).st_mode), 0o700)
        for name, mode in (("open", 0o777), ("group", 0o770)):
            os.mkdir(os.path.join(self.dir, name))
            os.chmod(os.path.join(self.dir, name), mode)
        os.symlink("new", os.path.join(self.dir, "link"))
        self.put("file")
        for path, says in (("open", "writable by group or others"), ("group", "writable by group"), ("link/", "a symlink"), ("file", "not a directory"), ("..", "does not end with a folder name")):
            with self.assertRaises(OSError, msg=path) as caught:
                files._pysplice_hs_open_dir(os.path.join(self.dir, path))
            self.assertIn(says, str(caught.exception))

    def test_a_file_is_published_under_a_free_name_never_over_one(self):
        state = dict(dir_fd=self.fd, dp_rank=1, token="0123abcd", next=7, lock=threading.Lock(), publish=threading.Lock(), link=True)
        stem = files._pysplice_hs_stem(state)
        self.assertEqual(stem, "data_dp1_pid%d_0123abcd" % os.getpid())
        self.put("%s_%08d.ckpt" % (stem, 7), b"taken")
        self.put(".tmp", b"new")
        name = __import__("pysplice_sglang.dump.stitch", fromlist=["x"])._pysplice_hs_publish_free(state, ".tmp", ".ckpt", 7)
        self.assertEqual(name, "%s_%08d.ckpt" % (stem, 8))
        self.assertEqual(state["next"], 9)
        with open(os.path.join(self.dir, "%s_%08d.ckpt" % (stem, 7)), "rb") as f:
            self.assertEqual(f.read(), b"taken")
        state["link"] = False  # a folder without hard links: checked, then renamed
        self.put(".tmp2", b"x")
        self.assertFalse(files._pysplice_hs_publish(state, ".tmp2", name))
        self.assertTrue(files._pysplice_hs_publish(state, ".tmp2", "other"))


class StitchedFileFormat(unittest.TestCase):
    """archive.py writes torch.save's zip layout by hand: zipfile reads it, CRCs combine as zlib's."""

    def test_crc_combine_is_zlibs(self):
        a, b = b"hidden states " * 37, b"of one request" * 1001
        self.assertEqual(archive._pysplice_hs_crc_combine(zlib.crc32(a), zlib.crc32(b), len(b)), zlib.crc32(a + b))
        self.assertEqual(archive._pysplice_hs_crc_combine(zlib.crc32(a), zlib.crc32(b""), 0), zlib.crc32(a))

    def test_the_layout_is_a_zip_that_zipfile_reads(self):
        blobs = [("data.pkl", b"\x80\x02}q\x00."), ("byteorder", b"little"), ("data/0", bytes(range(256)) * 3)]
        entries, at = archive._pysplice_hs_zip_layout([(n, len(d)) for n, d in blobs])
        out = bytearray(at)
        crcs = []
        for e, (_, data) in zip(entries, blobs):
            crc = zlib.crc32(data)
            crcs.append(crc)
            out[e["header"] : e["data"]] = e["head"]
            self.assertEqual(e["data"] % 64, 0)  # torch.save aligns every record's data
            out[e["data"] : e["data"] + len(data)] = data
            descriptor = archive._pysplice_hs_zip_descriptor(e, crc)
            out[e["data"] + len(data) : e["data"] + len(data) + len(descriptor)] = descriptor
        raw = bytes(out) + archive._pysplice_hs_zip_end(entries, crcs, at)
        path = os.path.join(tempfile.mkdtemp(prefix="hs_dump_zip_"), "sample.ckpt")
        try:
            with open(path, "wb") as f:
                f.write(raw)
            with zipfile.ZipFile(path) as z:
                self.assertIsNone(z.testzip())
                self.assertEqual(z.namelist(), ["archive/" + n for n, _ in blobs])
                for name, data in blobs:
                    self.assertEqual(z.read("archive/" + name), data)
        finally:
            shutil.rmtree(os.path.dirname(path))
        self.assertEqual(struct.unpack("<I", raw[-22:-18])[0], 0x06054B50)


class PackageAndRecipes(unittest.TestCase):
    """The recipes beside the package take their code from it (`code-from`): every definition a
    module holds is injected by a recipe, and nothing else a module runs at its top level would
    be missing from the patched file."""

    def test_every_top_level_statement_reaches_the_patched_file_or_is_an_import(self):
        folder = os.path.join(HERE, "..", "..", "python", "pysplice_sglang", "dump")
        named = set()
        for recipe in ("sglang_hs_dump.toml", "sglang_hs_dump_models.toml"):
            with open(os.path.join(folder, recipe), "rb") as f:
                for hook in tomllib.load(f)["hook"]:
                    for entry in hook.get("code-from", []):
                        named.add((entry["file"], entry.get("def") or entry.get("body")))
        self.assertGreater(len(named), 50)
        seen = set()
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".py") or name == "__init__.py":
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                tree = ast.parse(f.read(), name)
            for k, node in enumerate(tree.body):
                if k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                    continue  # the docstring
                if isinstance(node, (ast.Import, ast.ImportFrom, ast.Try)):
                    continue  # the module's own imports (torch's in a try), not injected
                where = "%s:%d" % (name, node.lineno)
                self.assertIsInstance(node, (ast.FunctionDef, ast.ClassDef), where + ": not injected by any recipe")
                self.assertIn((name, node.name), named, where + ": %s is named by no recipe's code-from" % node.name)
                seen.add((name, node.name))
        self.assertEqual(named - seen, set(), "named by a recipe, defined by no module")


if __name__ == "__main__":
    unittest.main(verbosity=2)
