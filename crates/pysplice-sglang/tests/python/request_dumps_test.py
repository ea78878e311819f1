#!/usr/bin/env python3
"""Unit tests of sglang-hs-send's request-dump reader (crates/pysplice-sglang/python/pysplice_sglang/request_dumps.py).

    python3 crates/pysplice-sglang/tests/python/request_dumps_test.py -v

Standard library only (no SGLang, no PyTorch, no transformers): the dumps are written with
classes named as SGLang's (module sglang.srt.managers.io_struct, made here), the hostile files by
crates/pysplice-sglang/tests/python/send/hostile_dumps.py.
"""

import dataclasses
import enum
import io
import json
import math
import os
import pickle
import shutil
import sys
import tempfile
import struct
import time
import tracemalloc
import types
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "python"), os.path.join(HERE, "send")]

import hostile_dumps  # noqa: E402
from pysplice_sglang import request_dumps as rd  # noqa: E402


def _module(name):
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    return sys.modules[name]


def _cls(module, name, fields):
    cls = dataclasses.make_dataclass(name, [(f, object, dataclasses.field(default=None)) for f in fields])
    cls.__module__, cls.__qualname__ = module, name
    setattr(_module(module), name, cls)
    return cls


Gen = _cls(rd.IO, "GenerateReqInput", ["text", "input_ids", "rid", "sampling_params", "stream", "log_metrics", "image_data"])
Emb = _cls(rd.IO, "EmbeddingReqInput", ["text", "input_ids", "rid"])
ServerArgs = _cls("sglang.srt.server_args", "ServerArgs", ["model_path", "stream_output"])
# What 0.5.9's ServerArgs carries beyond its fields: the ModelConfig it made, whose hf_config is
# the model's transformers config, and SGLang enums.
ModelConfig = _cls("sglang.srt.configs.model_config", "ModelConfig", ["hf_config", "attention_arch", "dtype"])
HfConfig = _cls("transformers.models.qwen2.configuration_qwen2", "Qwen2Config", ["hidden_size", "architectures"])


class AttentionArch(enum.Enum):
    MLA = 1
    MHA = 2


AttentionArch.__module__ = "sglang.srt.configs.model_config"
_module(AttentionArch.__module__).AttentionArch = AttentionArch


# 0.5.23: ServerArgs is a msgspec Struct (dict=True) whose __reduce__ is
# (_rebuild_server_args, (type(self), msgspec.structs.asdict(self), dict(self.__dict__))): its fields,
# then its resolution bookkeeping, where the resolved CUDA-graph config (a CudaGraphConfig of two
# PhaseConfigs, declared by _parse_cuda_graph_config) is kept. Named and shaped as the release's
# (sglang/srt/server_args.py, sglang/srt/model_executor/cuda_graph_config.py).
CG = "sglang.srt.model_executor.cuda_graph_config"
PhaseConfig = _cls(CG, "PhaseConfig", ["backend", "max_bs", "bs", "tc_compiler", "max_context_size", "full_prefill_max_req",
                                       "full_prefill_prefix_chunk_tokens", "max_seq_len"])
CudaGraphConfig = _cls(CG, "CudaGraphConfig", ["decode", "prefill"])


class ServerArgs23:
    def __init__(self, fields, bookkeeping):
        self.fields, self.bookkeeping = fields, bookkeeping

    def __reduce__(self):
        return (_rebuild_server_args, (type(self), dict(self.fields), dict(self.bookkeeping)))


def _rebuild_server_args(cls, fields, bookkeeping):
    raise AssertionError("never called: the test only pickles")


ServerArgs23.__module__ = _rebuild_server_args.__module__ = "sglang.srt.server_args"
ServerArgs23.__qualname__ = ServerArgs23.__name__ = "ServerArgs"
_module("sglang.srt.server_args")._rebuild_server_args = _rebuild_server_args


class _Dtype:
    def __reduce__(self):
        return "bfloat16"  # a torch.dtype pickles as the global torch.bfloat16


_Dtype.__module__ = "torch"
_module("torch").bfloat16 = _Dtype()


def dump_0523(requests):
    """A request dump as 0.5.23's TokenizerManager._dump_data_to_file writes it."""
    cuda_graph = CudaGraphConfig(decode=PhaseConfig(backend="full", tc_compiler="eager"),
                                 prefill=PhaseConfig(backend="disabled", tc_compiler="eager"))
    model_config = ModelConfig(hf_config=HfConfig(hidden_size=64, architectures=["Qwen2ForCausalLM"]),
                               attention_arch=AttentionArch.MHA, dtype=_module("torch").bfloat16)
    sa = ServerArgs23(dict(model_path="org/m", stream_output=False, cuda_graph_config=None, dump_requests_folder="/d"),
                      {"_input_frozen": False, "_resolution_finished": True, "_model_config": model_config,
                       "_resolved_overrides": [("_parse_cuda_graph_config", {"cuda_graph_config": cuda_graph}),
                                               ("_handle_other_validations", {"skip_server_warmup": True})],
                       "_cuda_graph_config_locked": {("decode", "backend")}, "_launch_command": "sglang serve --model-path org/m"})
    return {"server_args": sa, "config_updates": [{"source": "startup", "fields": {}}],
            "resolved_config": {"model_path": "org/m", "cuda_graph_config": {"decode": {"backend": "full"}}, "model_config": model_config,
                                "dtype": _module("torch").bfloat16},
            "requests": requests}


def pickled_0523(obj):
    """`obj` pickled while sglang.srt.server_args.ServerArgs is 0.5.23's (the module holds 0.5.9's)."""
    module = _module("sglang.srt.server_args")
    old, module.ServerArgs = module.ServerArgs, ServerArgs23
    try:
        return pickle.dumps(obj, protocol=pickle.DEFAULT_PROTOCOL)
    finally:
        module.ServerArgs = old


def pstr(s):
    """A pickle's SHORT_BINUNICODE of `s`."""
    return b"\x8c" + bytes([len(s)]) + s.encode()


def get(k):
    """A pickle's LONG_BINGET of memo `k`."""
    return b"j" + struct.pack("<I", k)


def server_args():
    sa = ServerArgs(model_path="org/m", stream_output=False)
    sa.model_config = ModelConfig(hf_config=HfConfig(hidden_size=64, architectures=["Qwen2ForCausalLM"]),
                                  attention_arch=AttentionArch.MHA, dtype="bfloat16")
    return sa


class Tok:
    """A tokenizer of one id per character; add_special_tokens puts id 1 first."""

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": ([1] if add_special_tokens else []) + [ord(c) for c in text]}


def meta(prompt, completion, finish=None):
    return {"id": "x", "finish_reason": finish or {"type": "stop", "matched": 2}, "prompt_tokens": prompt, "completion_tokens": completion}


def entry(k, ids=None, out=None, finish=None, text=None, completion=None, **out_extra):
    ids = [10 + k, 11, 12] if ids is None and text is None else ids
    out = [100 + k, 101, 2] if out is None else out
    req = Gen(text=text, input_ids=ids, rid="prod-%d" % k, sampling_params={"max_new_tokens": 64}, stream=False, log_metrics=True)
    n_prompt = len(ids) if ids is not None else len(text) + 1
    o = {"text": "t", "output_ids": out, "meta_info": meta(n_prompt, len(out) if completion is None else completion, finish)}
    o.update(out_extra)
    return (req, o, 1000.0 + k, 1001.0 + k)


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="request-dumps-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, name, obj, folder="d"):
        path = os.path.join(self.tmp, folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            pickle.dump(obj, f)
        return path

    def harvest(self, folder="d", tokenizer=None, **options):
        bad = {}
        items = list(rd.harvest(rd.dump_files([os.path.join(self.tmp, folder)]), rd.Options(**options), tokenizer,
                                bad=lambda p, why: bad.__setitem__(os.path.basename(p), why)))
        return items, bad


class Samples(Base):
    def test_each_family_gives_prompt_ids_then_output_ids_masked_on_the_output(self):
        self.write("a.pkl", [entry(0), entry(1)])  # 0.4.x: a list
        self.write("b.pkl", {"server_args": ServerArgs(model_path="org/m", stream_output=False), "requests": [entry(2)]})
        items, bad = self.harvest()
        self.assertEqual(bad, {})
        self.assertEqual([i.ids for i in items], [[10, 11, 12, 100, 101, 2], [11, 11, 12, 101, 101, 2], [12, 11, 12, 102, 101, 2]])
        for i in items:
            self.assertEqual(i.mask, [0, 0, 0, 1, 1, 1])
            self.assertTrue(i.rid.startswith("hv-"))
        self.assertEqual([i.source["family"] for i in items], ["0.4", "0.4", "0.5"])
        self.assertEqual(items[2].source["model_path"], "org/m")
        self.assertIsNone(items[0].source["model_path"])
        self.assertEqual((items[1].source["file"], items[1].source["index"], items[1].source["created"], items[1].source["finished"]),
                         ("a.pkl", 1, 1001.0, 1002.0))
        self.assertEqual(items[1].source["production_rid"], "prod-1")

    def test_the_servers_arguments_may_carry_their_model_config_and_nothing_else_may(self):
        self.write("a.pkl", {"server_args": server_args(), "requests": [entry(0)]})
        items, bad = self.harvest()
        self.assertEqual((bad, items[0].source["model_path"]), ({}, "org/m"))
        # the same classes in a request refuse the file, naming them
        e = entry(1)
        e[0].sampling_params = {"x": server_args().model_config}
        self.write("a.pkl", {"server_args": server_args(), "requests": [entry(0), e]})
        items, bad = self.harvest()
        self.assertEqual(items, [])
        self.assertRegex(bad["a.pkl"], r"holds (sglang|transformers)\S* outside the server's arguments")
        self.write("a.pkl", {"server_args": ServerArgs(model_path=hostile_dumps._System("true")), "requests": []})
        self.assertIn("posix.system", self.harvest()[1]["a.pkl"])

    def test_a_0523_dump_keeps_the_servers_resolution_bookkeeping_and_its_cuda_graph_config(self):
        # as a real 0.5.23 server writes it: the bookkeeping (the third argument of
        # _rebuild_server_args) holds the resolved CudaGraphConfig, ModelConfig and torch.bfloat16
        path = os.path.join(self.tmp, "d", "2026-01-01_00-00-00.pkl")
        os.makedirs(os.path.dirname(path))
        with open(path, "wb") as f:
            f.write(pickled_0523(dump_0523([entry(0), entry(1)])))
        items, bad = self.harvest()
        self.assertEqual(bad, {})
        self.assertEqual([i.ids for i in items], [[10, 11, 12, 100, 101, 2], [11, 11, 12, 101, 101, 2]])
        self.assertEqual({i.source["model_path"] for i in items}, {"org/m"})
        _, sa, _ = rd.load(pickled_0523(dump_0523([])))
        self.assertEqual(sa.get("model_path"), "org/m")
        overrides = sa.bookkeeping["_resolved_overrides"]
        self.assertEqual(overrides[0][1]["cuda_graph_config"].fields["decode"].get("backend"), "full")
        # the same classes in a request, or bookkeeping that is not a dict, refuse the file
        e = entry(2)
        e[0].sampling_params = {"x": CudaGraphConfig(decode=PhaseConfig(backend="full"))}
        with self.assertRaisesRegex(rd.DumpError, r"holds sglang.srt.model_executor.cuda_graph_config.CudaGraphConfig outside"):
            rd.load(pickled_0523(dump_0523([e])))
        blob = pickled_0523(dump_0523([]))
        module = _module("sglang.srt.server_args")
        old, module.ServerArgs = module.ServerArgs, ServerArgs23
        try:
            blob = pickle.dumps({"server_args": ServerArgs23({"model_path": "m"}, {}), "requests": []}, protocol=4)
            blob = blob.replace(b"}\x94\x87", b"]\x94\x87")  # the bookkeeping a list
        finally:
            module.ServerArgs = old
        with self.assertRaisesRegex(rd.DumpError, "_rebuild_server_args"):
            rd.load(blob)

    def test_rids_are_the_same_on_a_second_read(self):
        self.write("a.pkl", [entry(k) for k in range(5)])
        first = [i.rid for i in self.harvest()[0]]
        self.assertEqual(first, [i.rid for i in self.harvest()[0]])
        self.assertEqual(len(set(first)), 5)

    def test_finish_reasons_other_than_stop_are_counted_not_kept(self):
        self.write("a.pkl", [entry(0, finish={"type": "length", "length": 3}), entry(1, finish={"type": "abort", "message": "x"}),
                             entry(2)])
        items, _ = self.harvest()
        self.assertEqual([i.reason for i in items], ["length", "abort", None])
        items, _ = self.harvest(keep_finish=("stop", "length"))
        self.assertEqual([i.reason for i in items], [None, "abort", None])

    def test_a_streams_last_delta_is_never_a_sample(self):
        self.write("a.pkl", [entry(0, out=[7, 2], completion=9), entry(1, out=[1, 2, 3], completion=2)])
        items, _ = self.harvest()
        self.assertEqual([(i.reason, i.ids) for i in items], [("partial-stream", None), ("malformed", None)])

    def test_text_prompts_and_text_only_outputs_need_the_tokenizer_and_the_servers_counts(self):
        # 0.4.x dumps the text only: tokenized again, the matched stop token added
        req, out, c, f = entry(0, ids=None, text="hi")
        del out["output_ids"]
        out["text"] = "ok"
        out["meta_info"]["completion_tokens"] = 3
        self.write("a.pkl", [(req, out, c, f)])
        items, _ = self.harvest()
        self.assertEqual(items[0].reason, "no-tokenizer")
        items, _ = self.harvest(tokenizer=Tok())
        self.assertEqual(items[0].ids, [1, ord("h"), ord("i"), ord("o"), ord("k"), 2])
        self.assertEqual(items[0].mask, [0, 0, 0, 1, 1, 1])
        out["meta_info"]["completion_tokens"] = 4  # the text does not give what was generated
        self.write("a.pkl", [(req, out, c, f)])
        self.assertEqual(self.harvest(tokenizer=Tok())[0][0].reason, "tokens-differ")

    def test_embeddings_multimodal_and_crash_dumps_unfinished_are_counted(self):
        unfinished = (Gen(input_ids=[1, 2], rid="u"), {}, 1.0, 2.0)
        mm = entry(1)
        mm[0].image_data = ["http://x/y.png"]
        self.write("crash_dump_a.pkl", {"server_args": None, "requests": [unfinished, mm, (Emb(text="e"), {"embedding": [0.1], "meta_info": {}}, 1.0, 2.0)],
                                        "launch_command": "python -m sglang.launch_server"})
        self.assertEqual([i.reason for i in self.harvest()[0]], ["unfinished", "multimodal", "not-generation"])

    def test_dedup_sample_fraction_and_lengths(self):
        self.write("a.pkl", [entry(0), entry(0), entry(1, out=[5]), entry(2, out=list(range(3, 40)))])
        items, _ = self.harvest(min_completion=2, max_tokens=20)
        self.assertEqual([i.reason for i in items], [None, "duplicate", "too-short", "too-long"])
        self.assertEqual([i.reason for i in self.harvest(dedup=False, min_completion=2, max_tokens=20)[0]][:2], [None, None])
        self.write("a.pkl", [entry(k) for k in range(400)])
        kept = [i.rid for i in self.harvest(sample_fraction=0.25, seed=7)[0] if i.ids]
        self.assertTrue(60 < len(kept) < 140, len(kept))
        self.assertEqual(kept, [i.rid for i in self.harvest(sample_fraction=0.25, seed=7)[0] if i.ids])
        self.assertNotEqual(kept, [i.rid for i in self.harvest(sample_fraction=0.25, seed=8)[0] if i.ids])

    def test_a_file_modified_under_min_age_is_not_read_yet(self):
        path = self.write("a.pkl", [entry(0)])
        self.assertIn("still being written", dict(rd.dump_files([os.path.dirname(path)], min_age=60))[path])
        os.utime(path, (time.time() - 120, time.time() - 120))
        self.assertIsNone(dict(rd.dump_files([os.path.dirname(path)], min_age=60))[path])


class Hostile(Base):
    def test_the_hostile_folder_runs_nothing_names_each_file_and_reads_the_good_ones(self):
        good = self.write("good.pkl", [entry(0), entry(1)])
        shutil.copy(good, os.path.join(self.tmp, "keep.pkl"))
        canary = os.path.join(self.tmp, "CANARY")
        want = hostile_dumps.write_all(os.path.join(self.tmp, "d"), os.path.join(self.tmp, "keep.pkl"), canary)
        items, bad = self.harvest()
        self.assertFalse(os.path.exists(canary))
        self.assertEqual(sorted(bad), sorted(want))
        for name, words in want.items():
            for w in words:
                self.assertIn(w, bad[name], name)
        self.assertEqual(len([i for i in items if i.ids]), 2)

    def test_a_plain_unpickler_would_have_run_the_canary(self):
        # the test's canary is live: pickle.loads runs it (the reader above refused it)
        canary = os.path.join(self.tmp, "LIVE")
        pickle.loads(hostile_dumps.canary(canary))
        self.assertTrue(os.path.exists(canary))

    def test_builtins_are_called_with_data_only(self):
        blob = b"\x80\x04\x8c\x08builtins\x8c\tbytearray\x93J\x00\x00\x00\x40\x85R."  # bytearray(2**30)
        with self.assertRaisesRegex(rd.DumpError, "not data"):
            rd.load(blob)

    def test_the_estimated_memory_is_bounded(self):
        blob = pickle.dumps([[] for _ in range(20000)], protocol=4)
        rd.load(blob)
        with self.assertRaisesRegex(rd.DumpError, "would take more than"):
            rd.load(blob, max_memory=1 << 20)

    def test_a_fifo_is_not_opened_for_reading_and_never_blocks(self):
        fifo = os.path.join(self.tmp, "f.pkl")
        os.mkfifo(fifo)
        with self.assertRaisesRegex(rd.DumpError, "not a regular file"):
            rd.read_file(fifo)

    def test_a_file_over_the_size_limit_is_not_read(self):
        path = self.write("a.pkl", [entry(k) for k in range(50)])
        with self.assertRaisesRegex(rd.DumpError, "over --max-dump-size"):
            rd.read_file(path, max_bytes=100)

    def test_no_opcode_outside_the_dump_protocols(self):
        for blob, words in ((b"\x80\x02cos\nsystem\n.", "no request dump holds"), (b"\x80\x04(I1\n.", "protocol 0"),
                            (b"\x80\x04\x97.", "out-of-band"), (b"\x80\x04K\x01Q.", "persistent id"),
                            (b"(lp0\n.", "protocol 2 to 5"), (b"\x80\x04]\x94.junk", "after the pickle")):
            with self.assertRaisesRegex(rd.DumpError, words):
                rd.load(blob)

    def test_a_memo_index_out_of_order_is_refused_before_the_unpickler_grows_its_table(self):
        with self.assertRaisesRegex(rd.DumpError, "out of order"):
            rd.load(b"\x80\x04]r\xff\xff\xff\x7f.")

    def test_a_value_no_check_foresaw_is_named_malformed(self):
        class Odd:
            def __call__(self, text, add_special_tokens=True):
                raise RuntimeError("a tokenizer that fails")

        self.write("a.pkl", [entry(0, ids=None, text="hi"), entry(1)])
        items, bad = self.harvest(tokenizer=Odd())
        self.assertEqual((items[0].reason, bad), ("malformed", {}))
        self.assertIn("a tokenizer that fails", items[0].detail)
        self.assertIsNotNone(items[1].ids)

    def test_a_time_that_is_no_finite_number_skips_its_request_and_the_run_goes_on(self):
        times = [(2 ** 2000, 1.0), (1.0, 10 ** 400), (float("nan"), 1.0), (1.0, float("inf")), (float("-inf"), 1.0)]
        entries = []
        for k, (created, finished) in enumerate(times):
            req, out, _, _ = entry(k)
            entries.append((req, out, created, finished))
        self.write("a.pkl", entries + [entry(9)])
        self.write("b.pkl", [entry(10)])
        items, bad = self.harvest()
        self.assertEqual(bad, {})
        self.assertEqual([i.reason for i in items], ["malformed"] * 5 + [None, None])
        self.assertIn("not a finite time", items[0].detail)
        for i in items[5:]:
            json.dumps(i.source, allow_nan=False)  # a record line is strict JSON
            self.assertTrue(math.isfinite(i.source["created"]))

    def test_a_call_is_charged_for_what_it_copies(self):
        # one object stored once in the memo, passed to a builtin again and again: each call
        # copies it, so the estimate grows by its size each time
        max_memory = 48 << 20

        def calls(builtin, obj, n):
            return (b"\x80\x04]\x94" + obj + b"\x94" + b"0" + pstr("builtins") + pstr(builtin) + b"\x93\x94" + b"0"
                    + (get(2) + get(1) + b"\x85Ra") * n + b".")

        ints = b"](" + b"".join(b"J" + struct.pack("<i", i) for i in range(30000)) + b"e"
        megabyte = b"\x8e" + struct.pack("<Q", 1 << 20) + b"\x00" * (1 << 20)
        for builtin, obj, n in (("bytearray", megabyte, 100), ("set", ints, 60), ("frozenset", ints, 60)):
            with self.subTest(builtin=builtin):
                rd.load(calls(builtin, obj, 1), max_memory=max_memory)  # one copy is within the bound
                tracemalloc.start()
                try:
                    with self.assertRaisesRegex(rd.DumpError, "would take more than 48 MiB"):
                        rd.load(calls(builtin, obj, n), max_memory=max_memory)
                    peak = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
                self.assertLess(peak, max_memory)

    def test_the_nesting_bound_holds_through_memo_references(self):
        # each list memoized empty, then given the one before it through the memo: 2,000 deep
        blob = b"\x80\x04]\x94" + b"".join(b"]\x94" + get(k - 1) + b"a0" for k in range(1, 2000)) + b"0" + get(1999) + b"."
        with self.assertRaisesRegex(rd.DumpError, "nested more than 48"):
            rd.load(blob)
        # a list given items after it was placed in another
        blob = b"\x80\x04]\x94]\x94" + get(0) + b"a" + get(0) + b"]a0."
        with self.assertRaisesRegex(rd.DumpError, "after it was placed"):
            rd.load(blob)

    def test_no_state_is_set_on_the_readers_own_functions_or_classes(self):
        named = [("sglang.srt.server_args", "_rebuild_server_args"), ("builtins", "set"), ("collections", "OrderedDict"),
                 (rd.IO, "GenerateReqInput")]
        before = [(getattr(rd.RestrictedUnpickler(io.BytesIO()).find_class(*k), "__name__", None)) for k in named]
        for module, name in named:
            with self.subTest(name=name):
                # the global, then BUILD with the state (None, {"__name__": "changed"}), popped
                blob = (b"\x80\x04]\x94" + pstr(module) + pstr(name) + b"\x93N}" + pstr("__name__") + pstr("changed")
                        + b"s\x86b0.")
                with self.assertRaisesRegex(rd.DumpError, "state"):
                    rd.load(blob)
        self.assertEqual([(getattr(rd.RestrictedUnpickler(io.BytesIO()).find_class(*k), "__name__", None)) for k in named], before)
        self.assertNotIn("changed", before)
        self.write("a.pkl", [entry(0)])
        self.assertIsNotNone(self.harvest()[0][0].ids)

    def test_no_codec_but_latin_1_is_looked_up(self):
        # bytearray(str, codec) as protocol 2 writes a bytearray: only latin-1, and never through
        # the codec registry, which would import the codec's module
        self.assertEqual(rd.load(b"\x80\x02]\x94" + pstr("builtins") + pstr("bytearray") + b"\x93" + pstr("ab") + pstr("latin-1")
                                 + b"\x86Ra.")[2], [bytearray(b"ab")])
        codec = next(c for c in ("bz2_codec", "zlib_codec", "quopri_codec", "uu_codec") if "encodings." + c not in sys.modules)
        blob = b"\x80\x02]\x94" + pstr("builtins") + pstr("bytearray") + b"\x93" + pstr("ab") + pstr(codec) + b"\x86Ra."
        with self.assertRaisesRegex(rd.DumpError, "not data|encoding"):
            rd.load(blob)
        self.assertFalse("encodings." + codec in sys.modules, "the codec registry imported encodings." + codec)

    def test_names_in_messages_are_printable(self):
        self.assertEqual(rd.quoted("a\x1b[2Jb\n"), "a\\x1b[2Jb\\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
