#!/usr/bin/env python3
"""Runtime test of the sglang-hs-dump recipe on a patched copy of mock_deepseek_v2.py.

    python3 crates/pysplice-sglang/tests/python/runtime/run_hs_dump_test.py PATCHED_MOCK_FILE
    python3 crates/pysplice-sglang/tests/python/runtime/run_hs_dump_test.py --unpatched

The first form checks the patched mock and exits non-zero unless every case passes.
The second runs the same cases on the pristine mock beside this file and succeeds
only if cases fail there, which shows that the cases can fail.

Needs PyTorch only. Runs on CUDA when available (HS_TEST_DEVICE=cpu|cuda overrides);
model dtype bfloat16 (HS_TEST_DTYPE overrides); HS_TEST_ONLY=WORD,WORD runs the cases whose
names hold one of the words. A fake `sglang` package (written to a
temporary directory put first on sys.path) supplies the rank getters that the
recipe's code imports.
"""

import errno
import glob
import importlib.util
import logging
import os
import re
import shutil
import sys
import tempfile
import traceback

sys.dont_write_bytecode = True  # loading the mocks must leave no __pycache__ in the tree

import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PRISTINE = os.path.join(HERE, "mock_deepseek_v2.py")
ENV_VARS = ("SGLANG_HS_DUMP_DIR", "SGLANG_HS_DUMP_MAX", "SGLANG_HS_DUMP_LAYERS", "SGLANG_HS_DUMP_QUEUE_MB")

DEVICE = os.environ.get("HS_TEST_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
DTYPE = getattr(torch, os.environ.get("HS_TEST_DTYPE", "bfloat16"))

# ---------------------------------------------------------------------------------
# A fake `sglang` package: each rank getter reads fake_rank.STATE, which cases set.

FAKE_FILES = {
    # the release, as a real install's sglang/__init__.py (sglang.version) publishes it
    "sglang/__init__.py": "from sglang.srt.fake_rank import STATE as _STATE\n__version__ = _STATE['version']\n",
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/distributed/__init__.py": "",
    "sglang/srt/managers/__init__.py": "",
    "sglang/srt/fake_rank.py": (
        "STATE = dict(attn_tp_rank=0, attn_dp_rank=0, tp_rank=0, chunk=-1, version='0.5.99',\n"
        "             tp_size=1, attn_tp_size=1, attn_dp_size=1, pp_rank=0, pp_size=1)\n"
    ),
    # the server's chunked prefill size: 0.5.10+ ...
    "sglang/srt/server_args.py": (
        "import types\n"
        "from sglang.srt.fake_rank import STATE\n"
        "def get_global_server_args():\n"
        "    return types.SimpleNamespace(chunked_prefill_size=STATE['chunk'])\n"
    ),
    # ... and 0.4.6 - 0.5.9
    "sglang/srt/managers/schedule_batch.py": (
        "from sglang.srt.fake_rank import STATE\n"
        "class _Args(dict):\n"
        "    def get(self, key, default=None):\n"
        "        return STATE['chunk'] if key == 'chunked_prefill_size' else default\n"
        "global_server_args_dict = _Args()\n"
    ),
    # 0.5.14+
    "sglang/srt/runtime_context.py": (
        "from sglang.srt.fake_rank import STATE\n"
        "class _Parallel:\n"
        "    @property\n"
        "    def attn_tp_rank(self):\n"
        "        return STATE['attn_tp_rank']\n"
        "    @property\n"
        "    def attn_dp_rank(self):\n"
        "        return STATE['attn_dp_rank']\n"
        "def get_parallel():\n"
        "    return _Parallel()\n"
    ),
    # 0.4.x - 0.5.17
    "sglang/srt/layers/dp_attention.py": (
        "from sglang.srt.fake_rank import STATE\n"
        "def get_attention_tp_rank():\n"
        "    return STATE['attn_tp_rank']\n"
        "def get_attention_dp_rank():\n"
        "    return STATE['attn_dp_rank']\n"
        "def get_attention_tp_size():\n"
        "    return STATE['attn_tp_size']\n"
        "def get_attention_dp_size():\n"
        "    return STATE['attn_dp_size']\n"
    ),
    "sglang/srt/distributed/parallel_state.py": (
        "from sglang.srt.fake_rank import STATE\n"
        "import types\n"
        "def get_tensor_model_parallel_rank():\n"
        "    return STATE['tp_rank']\n"
        "def get_tensor_model_parallel_world_size():\n"
        "    return STATE['tp_size']\n"
        "def get_pp_group():\n"
        "    return types.SimpleNamespace(rank_in_group=STATE['pp_rank'], world_size=STATE['pp_size'])\n"
    ),
}
RANK_MODULES = (
    "sglang.srt.runtime_context",
    "sglang.srt.layers.dp_attention",
    "sglang.srt.distributed.parallel_state",
)
ARGS_MODULES = ("sglang.srt.server_args", "sglang.srt.managers.schedule_batch")


def install_fake_sglang(root):
    for rel, text in FAKE_FILES.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    sys.path.insert(0, root)
    for name in list(sys.modules):
        if name == "sglang" or name.startswith("sglang."):
            del sys.modules[name]
    importlib.import_module("sglang.srt.fake_rank")


def set_ranks(attn_tp_rank=0, attn_dp_rank=0, tp_rank=None, hide=(), chunk=-1):
    """Set the fake ranks and chunked prefill size; `hide` names modules to make
    unimportable (older releases)."""
    import sglang.srt.fake_rank as fake_rank

    fake_rank.STATE.update(
        attn_tp_rank=attn_tp_rank,
        attn_dp_rank=attn_dp_rank,
        tp_rank=attn_tp_rank if tp_rank is None else tp_rank,
        chunk=chunk,
    )
    for name in RANK_MODULES + ARGS_MODULES:
        if name in hide:
            sys.modules[name] = None  # import raises ImportError
        elif name in sys.modules and sys.modules[name] is None:
            del sys.modules[name]


# ---------------------------------------------------------------------------------
# Helpers


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Env:
    """Set the recipe's environment variables for one case; restore afterwards."""

    def __init__(self, **values):
        self.values = values

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in ENV_VARS}
        for k in ENV_VARS:
            os.environ.pop(k, None)
        for k, v in self.values.items():
            os.environ[k] = str(v)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


from dump_writers import drain, track_writers  # noqa: E402


class WarningCounter(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self._records = []

    @property
    def records(self):
        drain()  # a writer's warning comes when it gets to the pass
        return self._records

    def emit(self, record):
        if "hidden state dump" in record.getMessage():
            self._records.append(record)


WARNINGS = WarningCounter()
logging.getLogger().addHandler(WARNINGS)
logging.getLogger().setLevel(logging.WARNING)


def build(module, aux_form="list", pp=(0, 1), cls=None, architectures=None):
    """Build a CausalLM with seeded weights, so that two builds are identical."""
    module.AUX_FORM = aux_form
    module.PP_GROUP = module.PPGroup(*pp)
    torch.manual_seed(1234)
    config = module.MockConfig(architectures=architectures)
    model = (cls or module.DeepseekV2ForCausalLM)(config)
    return model.to(device=DEVICE, dtype=DTYPE).eval()


LENS = [5, 3]  # two requests in one prefill
PAD = 2  # DP / MLP-sync padding rows past sum(LENS)
PREFIX = [0, 2]
RIDS = ["req-a", "req-b"]


def make_batch(module, mode="EXTEND", lens=LENS, pad=PAD, rids=RIDS, prefix=PREFIX, full=None):
    n = sum(lens) + pad
    gen = torch.Generator().manual_seed(99)
    ids = torch.randint(0, 64, (n,), generator=gen).to(DEVICE)
    positions = torch.arange(n, device=DEVICE)
    batch = module.ForwardBatch(
        forward_mode=getattr(module.ForwardMode, mode),
        input_ids=ids,
        positions=positions,
        extend_seq_lens_cpu=list(lens),
        extend_prefix_lens_cpu=list(prefix) if prefix is not None else None,
        rids=list(rids) if rids is not None else None,
        orig_seq_lens=full,
    )
    return ids, positions, batch


def files_in(d):
    """Samples, complete and partial, in the order they were written (the counter)."""
    drain()
    if not os.path.isdir(d):
        return []
    paths = glob.glob(os.path.join(d, "*.ckpt")) + glob.glob(os.path.join(d, "*.ckpt.partial"))
    return sorted(paths, key=lambda p: os.path.basename(p).split(".")[0])


def specforge_lists(d):
    """The files SpecForge's offline readers train on: a recursive walk keeping names
    that end with .ckpt or .ckpt.gz (its documented rule), sorted."""
    drain()
    found = []
    for root, _dirs, names in os.walk(d):
        found += [os.path.join(root, n) for n in names if n.endswith((".ckpt", ".ckpt.gz"))]
    return sorted(found)


STATUS_RE = re.compile(r"\.hs_dump_status_dp\d+_pid(\d+)_[0-9a-f]{8}_\d+\.json")


def leftovers(d, live=None):
    """Temporaries and other hidden files under `d`, except the status files of live
    processes (`live`: pids, default this one)."""
    drain()
    live = {os.getpid()} if live is None else set(live)
    found = []
    for p in glob.glob(os.path.join(d, "**", ".*"), recursive=True) + glob.glob(os.path.join(d, "**", "*.tmp"), recursive=True):
        # a live process's status file, and the temporary it is being replaced from this moment
        # (the status thread rewrites it when the counts change, also after a failure)
        m = STATUS_RE.fullmatch(os.path.basename(p)[:-4] if p.endswith(".json.tmp") else os.path.basename(p))
        if not (m and int(m.group(1)) in live) and p not in found:
            found.append(p)
    return found


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def load_sample(path):
    # weights_only=True (torch.load's default from 2.6): readers need no pickle trust
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # torch < 1.13 has no weights_only
        return torch.load(path, map_location="cpu")


def expected_rows(ref_module, aux_form="list", layer_ids=None):
    """The pristine mock with capture enabled by hand: what the dump must contain."""
    model = build(ref_module, aux_form)
    model.set_eagle3_layers_to_capture(layer_ids)
    ids, pos, batch = make_batch(ref_module)
    with torch.no_grad():
        out = model.model(ids, pos, batch)
    hidden, aux = out
    if not isinstance(aux, torch.Tensor):
        aux = torch.cat(aux, dim=-1)
    return ids, hidden, aux, list(model.model.layers_to_capture)


PROVENANCE_KEYS = {
    "recipe", "recipe_version", "pysplice_version", "sglang_version", "architecture", "model_class",
    "dtype", "hidden_size", "num_hidden_layers", "hidden_state", "aux_layers",
    "eagle_aux_hidden_state_layer_ids", "aux_layers_requested", "config_sha256",
    "tp_rank", "tp_size", "attn_tp_rank", "attn_tp_size", "attn_dp_rank", "attn_dp_size", "pp_rank", "pp_size",
}
# The runtime test patches the mock with `pysplice apply --spec FILE`, where the recipe's
# pysplice_version stays "unknown"; a mock patched by a bundled recipe says its version.
EXPECT_PYSPLICE_VERSION = os.environ.get("HS_TEST_PYSPLICE_VERSION", "unknown")


def config_digest(config):
    """The provenance's config_sha256 as the recipe notes define it, computed here from the
    config the model was built with: its JSON with sorted keys, keys starting with "_" left
    out at every level, other values as str() without memory addresses."""
    import hashlib
    import json

    def public(value):
        if isinstance(value, dict):
            return {k: public(v) for k, v in value.items() if not str(k).startswith("_")}
        return [public(v) for v in value] if isinstance(value, list) else value

    data = config.to_dict() if callable(getattr(config, "to_dict", None)) else dict(vars(config))
    plain = lambda o: re.sub(" at 0x[0-9a-fA-F]+", "", str(o))  # noqa: E731
    text = json.dumps(public(json.loads(json.dumps(data, default=plain))), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_provenance(s, hidden_size, layers, requested=None, config=None, model_class="DeepseekV2Model", pp=(0, 1)):
    """The sample's provenance says what built it: the fake sglang's release and ranks, the
    mock's classes and config, the model's dtype, the layers captured (both conventions)."""
    import sglang.srt.fake_rank as fake_rank

    p = s.get("provenance")
    check(isinstance(p, dict), "no provenance dict: %r" % (p,))
    check(set(p) == PROVENANCE_KEYS, "provenance keys: extra %s, missing %s" % (sorted(set(p) - PROVENANCE_KEYS), sorted(PROVENANCE_KEYS - set(p))))
    for key, value in p.items():
        ok = value is None or type(value) in (str, int) or (type(value) is list and all(type(i) is int for i in value))
        check(ok, "provenance %s=%r is not str, int, list of int or None" % (key, value))
    config = config if config is not None else MOCK_CONFIG()
    st = fake_rank.STATE
    want = dict(
        recipe="sglang-hs-dump",
        pysplice_version=EXPECT_PYSPLICE_VERSION,
        sglang_version=st["version"],
        architecture=config.architectures[0],
        model_class=model_class,
        dtype=str(DTYPE).replace("torch.", ""),
        hidden_size=hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        hidden_state="post-norm",
        aux_layers=list(layers) if layers is not None else None,
        eagle_aux_hidden_state_layer_ids=[i - 1 for i in layers] if layers is not None else None,
        aux_layers_requested=requested,
        config_sha256=config_digest(config),
        tp_rank=st["tp_rank"], tp_size=st["tp_size"], attn_tp_rank=st["attn_tp_rank"], attn_tp_size=st["attn_tp_size"],
        attn_dp_rank=st["attn_dp_rank"], attn_dp_size=st["attn_dp_size"], pp_rank=pp[0], pp_size=pp[1],
    )
    for key, value in want.items():
        check(p[key] == value, "provenance %s=%r, expected %r" % (key, p[key], value))
    check(isinstance(p["recipe_version"], str) and p["recipe_version"].isdigit(), "recipe_version %r" % p["recipe_version"])


def check_samples(paths, ids, hidden, aux, layers, lens=LENS, prefix=PREFIX, rids=RIDS, partial=None, requested=None, pp=(0, 1)):
    check(len(paths) == len(lens), "expected %d files, found %d" % (len(lens), len(paths)))
    if partial is None:
        partial = [bool(p) for p in prefix] if prefix is not None else [False] * len(lens)
    start = 0
    for i, (path, n) in enumerate(zip(paths, lens)):
        want = ".ckpt.partial" if partial[i] else ".ckpt"
        check(path.endswith(want) and not path.endswith("." + want), "%s: expected suffix %s" % (path, want))
        s = load_sample(path)
        b, start = start, start + n
        keys = {"input_ids", "loss_mask", "hidden_state", "layers_to_capture", "prefix_len", "rid", "provenance"}
        if aux is not None:
            keys.add("aux_hidden_state")
        check(set(s) == keys, "keys %s != %s" % (sorted(s), sorted(keys)))
        check(s["input_ids"].shape == (n,) and s["input_ids"].dtype == torch.long, "input_ids shape/dtype")
        check(torch.equal(s["input_ids"], ids[b:start].cpu().long()), "input_ids values")
        check(s["loss_mask"].shape == (n,) and bool((s["loss_mask"] == 1).all()), "loss_mask")
        H = hidden.shape[-1]
        check(tuple(s["hidden_state"].shape) == (1, n, H), "hidden_state shape %s" % (tuple(s["hidden_state"].shape),))
        check(s["hidden_state"].dtype == DTYPE, "hidden_state dtype %s" % s["hidden_state"].dtype)
        check(s["hidden_state"].device.type == "cpu", "hidden_state not on cpu")
        check(torch.equal(s["hidden_state"][0], hidden[b:start].cpu()), "hidden_state values")
        # saved compactly: the slice's storage, not the whole batch's
        check(s["hidden_state"].untyped_storage().nbytes() == s["hidden_state"].numel() * s["hidden_state"].element_size(), "hidden_state saved with the whole batch storage")
        if aux is not None:
            K = len(layers)
            check(tuple(s["aux_hidden_state"].shape) == (1, n, K * H), "aux_hidden_state shape %s" % (tuple(s["aux_hidden_state"].shape),))
            check(torch.equal(s["aux_hidden_state"][0], aux[b:start].cpu()), "aux_hidden_state values")
            check(s["layers_to_capture"] == list(layers), "layers_to_capture %r != %r" % (s["layers_to_capture"], layers))
        else:
            check(s["layers_to_capture"] is None, "layers_to_capture should be None without aux")
        check(s["prefix_len"] == (prefix[i] if prefix is not None else None), "prefix_len %r" % s["prefix_len"])
        check_provenance(s, H, layers if aux is not None else None, requested=requested, pp=pp)
        check(s["rid"] == (rids[i] if rids is not None else None), "rid %r" % s["rid"])


# ---------------------------------------------------------------------------------
# Cases. Each gets (mod, ref, tmp): the module under test, the pristine mock, a fresh dir.


def case_markers(mod, ref, tmp):
    check(hasattr(mod, "_pysplice_hs_dump"), "the module has no _pysplice_hs_dump: not patched")


def case_env_unset(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env():
        model, pristine = build(mod), build(ref)
        check(not model.capture_aux_hidden_states, "capture enabled without the env var")
        check(getattr(model.model, "_hs_dump_dir", None) is None, "_hs_dump_dir set without the env var")
        for mode in ("EXTEND", "DECODE"):
            ids, pos, batch = make_batch(mod, mode)
            _, _, rbatch = make_batch(ref, mode)
            a, b = model(ids, pos, batch), pristine(ids, pos, rbatch)
            check(torch.equal(a.next_token_logits, b.next_token_logits), "logits differ from the unpatched model")
            check(a.aux_hidden_states is None and b.aux_hidden_states is None, "aux differs")
            ha, hb = model.model(ids, pos, batch), pristine.model(ids, pos, rbatch)
            check(isinstance(ha, torch.Tensor) and torch.equal(ha, hb), "model output differs")
    check(not os.path.exists(out) and not glob.glob(os.path.join(tmp, "**", "*.ckpt*"), recursive=True), "files written")


def _dump_case(mod, ref, tmp, aux_form, layer_env=None, layer_ids=None):
    out = os.path.join(tmp, "dump", "nested")  # created lazily, parents too
    env = dict(SGLANG_HS_DUMP_DIR=out)
    if layer_env is not None:
        env["SGLANG_HS_DUMP_LAYERS"] = layer_env
    with Env(**env):
        set_ranks(0, 0)
        model = build(mod, aux_form)
        check(model.capture_aux_hidden_states, "capture not enabled")
        check(not os.path.exists(out), "dump dir created before the first write")
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            value = model.model(ids, pos, batch)
        e_ids, e_hidden, e_aux, e_layers = expected_rows(ref, aux_form, layer_ids)
        # the returned value is what the unpatched model returns
        check(isinstance(value, tuple) and len(value) == 2, "return value is not (hidden, aux)")
        check(torch.equal(value[0], e_hidden), "returned hidden differs from unpatched")
        got_aux = value[1] if isinstance(value[1], torch.Tensor) else torch.cat(value[1], dim=-1)
        check(torch.equal(got_aux, e_aux), "returned aux differs from unpatched")
        check(list(model.model.layers_to_capture) == e_layers, "layers_to_capture differs")
        paths = files_in(out)
        check_samples(paths, e_ids, e_hidden, e_aux, e_layers, requested=layer_ids)
        # the files equal the rows this very forward returned
        s0 = load_sample(paths[0])
        check(torch.equal(s0["hidden_state"][0], value[0][: LENS[0]].cpu()), "file != returned rows")
        check(os.path.basename(paths[0]).startswith("data_dp0_pid%d_" % os.getpid()), "file name %s" % paths[0])
        # the full CausalLM path (tuple unpack, logits) still works and matches
        pristine = build(ref, aux_form)
        pristine.set_eagle3_layers_to_capture(layer_ids)
        _, _, rbatch = make_batch(ref)
        a, b = model(ids, pos, make_batch(mod)[2]), pristine(ids, pos, rbatch)
        check(torch.equal(a.next_token_logits, b.next_token_logits), "logits differ")
        check(torch.equal(a.aux_hidden_states, b.aux_hidden_states), "logits-processor aux differs")
        check(len(files_in(out)) == 4, "second prefill should add 2 files, have %d" % len(files_in(out)))
        check(not leftovers(out), "leftover temporary files: %s" % leftovers(out))


def case_extend_two_requests_list_aux(mod, ref, tmp):
    _dump_case(mod, ref, tmp, "list")


def case_extend_packed_aux(mod, ref, tmp):
    _dump_case(mod, ref, tmp, "packed")


def case_explicit_layers(mod, ref, tmp):
    # ids starting at 1 get +1 (SGLang 0.5.13+ heuristic); the file records the effective list
    _dump_case(mod, ref, tmp, "packed", layer_env="1, 3,5", layer_ids=[1, 3, 5])


def _nothing_written(mod, tmp, mode=None, pp=(0, 1), ranks=(0, 0), hide=(), aux_form="list"):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(*ranks, hide=hide)
        model = build(mod, aux_form, pp=pp)
        ids, pos, batch = make_batch(mod, mode or "EXTEND")
        if mode == "IDLE":
            ids, pos, batch = make_batch(mod, "IDLE", lens=[], pad=0, rids=[], prefix=[])
        with torch.no_grad():
            value = model.model(ids, pos, batch)
    check(files_in(out) == [], "files written: %s" % files_in(out))
    return model, value


def case_decode_pass(mod, ref, tmp):
    _nothing_written(mod, tmp, "DECODE")


def case_idle_pass(mod, ref, tmp):
    _nothing_written(mod, tmp, "IDLE")


def case_mixed_pass(mod, ref, tmp):
    _nothing_written(mod, tmp, "MIXED")


def case_target_verify_pass(mod, ref, tmp):
    _nothing_written(mod, tmp, "TARGET_VERIFY")


def case_draft_extend_pass(mod, ref, tmp):
    _nothing_written(mod, tmp, "DRAFT_EXTEND")


def case_empty_extend(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod, "EXTEND", lens=[], pad=0, rids=[], prefix=[])
        with torch.no_grad():
            value = model.model(ids, pos, batch)
    check(files_in(out) == [], "files written for an empty batch")
    check(isinstance(value, tuple) and value[0].shape[0] == 0, "value changed")


def case_prefill_mode_old_releases(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod, "PREFILL")
        with torch.no_grad():
            model.model(ids, pos, batch)
    check(len(files_in(out)) == 2, "PREFILL pass (0.2.x/0.3.x) should dump 2 files")


def case_pp_non_last_rank(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list", pp=(0, 2))
        check(not model.capture_aux_hidden_states, "aux capture enabled under PP")
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            value = model.model(ids, pos, batch)
        pristine = build(ref, "list", pp=(0, 2))
        with torch.no_grad():
            expect = pristine.model(ids, pos, make_batch(ref)[2])
        check(type(value).__name__ == "PPProxyTensors", "not a PPProxyTensors: %r" % type(value))
        for k in ("hidden_states", "residual"):
            check(torch.equal(value[k], expect[k]), "proxy %s differs" % k)
        # the helper itself leaves any non-tensor value alone, same object
        if hasattr(mod, "_pysplice_hs_dump"):
            check(mod._pysplice_hs_dump(model.model, ids, batch, value) is value, "proxy not returned as is")
            check(mod._pysplice_hs_dump(model.model, ids, batch, None) is None, "None not returned as is")
    check(files_in(out) == [], "files written on a non-last PP rank")
    check(not WARNINGS.records or all("aux capture" in r.getMessage() for r in WARNINGS.records), "dump warnings on PP rank")


def case_pp_last_rank_dumps_hidden_only(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "packed", pp=(1, 2))
        check(not model.capture_aux_hidden_states, "aux capture enabled under PP")
        ids, pos, batch = make_batch(mod)
        gen = torch.Generator().manual_seed(5)
        proxy = mod.PPProxyTensors(
            dict(
                hidden_states=torch.randn(ids.shape[0], 16, generator=gen).to(DEVICE, DTYPE),
                residual=torch.randn(ids.shape[0], 16, generator=gen).to(DEVICE, DTYPE),
            )
        )
        with torch.no_grad():
            value = model.model(ids, pos, batch, None, proxy)
    check(isinstance(value, torch.Tensor), "last PP rank should return the bare tensor")
    check_samples(files_in(out), ids, value, None, None, pp=(1, 2))


def case_attn_tp_rank_1_runtime_context(mod, ref, tmp):
    _nothing_written(mod, tmp, ranks=(1, 0))


def case_attn_tp_rank_1_dp_attention(mod, ref, tmp):
    # release without runtime_context (<= 0.5.13): dp_attention says rank 1
    _nothing_written(mod, tmp, ranks=(1, 0), hide=("sglang.srt.runtime_context",))


def case_rank_via_dp_attention_with_dp_rank(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 3, hide=("sglang.srt.runtime_context",))
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            model.model(ids, pos, batch)
    names = [os.path.basename(p) for p in files_in(out)]
    check(len(names) == 2 and all(n.startswith("data_dp3_pid%d_" % os.getpid()) for n in names), "names %s" % names)


def case_rank_via_parallel_state(mod, ref, tmp):
    # no runtime_context, no dp_attention: parallel_state's TP rank 1 -> no writer
    _nothing_written(mod, tmp, ranks=(1, 0), hide=RANK_MODULES[:2])


def case_rank_fallback_without_sglang(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(1, 0, hide=RANK_MODULES)  # every getter gone; torch.distributed not initialized
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            model.model(ids, pos, batch)
    check(len(files_in(out)) == 2, "fallback rank 0 should write")


def case_max_cap(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out, SGLANG_HS_DUMP_MAX=3):
        set_ranks(0, 0)
        model = build(mod, "list")
        for _ in range(3):
            ids, pos, batch = make_batch(mod)
            with torch.no_grad():
                model.model(ids, pos, batch)
    check(len(files_in(out)) == 3, "cap 3: found %d files" % len(files_in(out)))


def case_write_failure_warns_once(mod, ref, tmp):
    blocker = os.path.join(tmp, "a_file")
    with open(blocker, "w") as f:
        f.write("not a directory")
    out = os.path.join(blocker, "dump")  # mkdir fails, even as root
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        pristine = build(ref, "list")
        pristine.set_eagle3_layers_to_capture(None)
        for _ in range(3):
            ids, pos, batch = make_batch(mod)
            a = model(ids, pos, batch)
            b = pristine(ids, pos, make_batch(ref)[2])
            check(torch.equal(a.next_token_logits, b.next_token_logits), "logits differ after a dump failure")
            check(torch.equal(a.aux_hidden_states, b.aux_hidden_states), "aux differs after a dump failure")
    got = len(WARNINGS.records) - before
    check(got == 1, "expected exactly one warning, got %d" % got)
    check(not glob.glob(os.path.join(tmp, "**", "*.ckpt*"), recursive=True), "files written")


def case_disk_full_mid_write(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    before = len(WARNINGS.records)
    real_save = torch.save

    def failing_save(obj, f, *args, **kwargs):
        f.write(b"partial")
        raise OSError(28, "No space left on device")

    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod)
        torch.save = failing_save
        try:
            with torch.no_grad():
                value = model.model(ids, pos, batch)
                model.model(ids, pos, make_batch(mod)[2])  # queued behind the failing pass
            drain()
        finally:
            torch.save = real_save
        got = [r.getMessage() for r in WARNINGS.records[before:]]
        check(len(got) == 1 and "turned off" in got[0] and "No space left" in got[0], "warnings %s" % got)
        # the writer is dead: the next pass turns the dump off, silently, and serving goes on
        with torch.no_grad():
            again = model.model(ids, pos, make_batch(mod)[2])
        check(getattr(model.model, "_hs_dump_dir", None) is None, "dump still on after the writer died")
        check(torch.equal(again[0], value[0]), "value changed after the writer died")
    check(isinstance(value, tuple) and value[0].shape[0] == ids.shape[0], "value changed")
    check(len(WARNINGS.records) - before == 1, "expected one warning")
    check(files_in(out) == [], "files written")
    check(not leftovers(out), "partial temporary file left: %s" % leftovers(out))


def case_bad_shape_warns_and_returns(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod)
        batch.extend_seq_lens_cpu = [50, 50]  # more rows than the batch has
        with torch.no_grad():
            value = model.model(ids, pos, batch)
    check(isinstance(value, tuple) and value[0].shape[0] == ids.shape[0], "value changed")
    check(len(WARNINGS.records) - before == 1, "expected one warning")
    check(files_in(out) == [], "files written")


def case_kimi_input_ids_none(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "packed")
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            embeds = model.model.embed_tokens(ids)
            value = model.model(None, pos, batch, embeds)  # as general_mm_embed_routine does
    e_ids, e_hidden, e_aux, e_layers = expected_rows(ref, "packed")
    check(torch.equal(value[0], e_hidden), "returned hidden differs")
    check_samples(files_in(out), e_ids, e_hidden, e_aux, e_layers)


class OldInputMetadata:
    """Like 0.2.15-0.3.2 InputMetadata: no input_ids, no rids, no *_cpu lists;
    with prefix=None like 0.2.6, which has only seq_lens and extend_seq_lens."""

    def __init__(self, forward_mode, lens, prefix, seq_lens=None):
        self.forward_mode = forward_mode
        self.extend_seq_lens = torch.tensor(lens, device=DEVICE)
        if prefix is not None:
            self.extend_prefix_lens = torch.tensor(prefix, device=DEVICE)
        if seq_lens is not None:
            self.seq_lens = torch.tensor(seq_lens, device=DEVICE)


def case_old_input_metadata(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        model.model.layers_to_capture = []  # releases before aux capture existed
        model.capture_aux_hidden_states = False
        ids, pos, _ = make_batch(mod)
        batch = OldInputMetadata(mod.ForwardMode.EXTEND, LENS, PREFIX)
        with torch.no_grad():
            value = model.model(ids, pos, batch)
    check(isinstance(value, torch.Tensor), "bare tensor expected")
    check_samples(files_in(out), ids, value, None, None, rids=None)


def case_oldest_input_metadata_0_2_6(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        model.model.layers_to_capture = []
        model.capture_aux_hidden_states = False
        ids, pos, _ = make_batch(mod)
        seq_lens = [p + n for p, n in zip(PREFIX, LENS)]
        batch = OldInputMetadata(mod.ForwardMode.PREFILL, LENS, None, seq_lens)
        with torch.no_grad():
            value = model.model(ids, pos, batch)
    check_samples(files_in(out), ids, value, None, None, rids=None)


def case_draft_models_skipped(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        # a draft subclass (as MistralLarge3ForCausalLMEagle) and an architecture
        # renamed by ModelConfig for a draft (as DeepseekV3ForCausalLMNextN)
        Eagle = type("MistralLarge3ForCausalLMEagle", (mod.DeepseekV3ForCausalLM,), {})
        EagleModel = type("MistralLarge3EagleModel", (mod.DeepseekV2Model,), {})
        for model in (build(mod, "list", cls=Eagle), build(mod, "list", architectures=["DeepseekV3ForCausalLMNextN"])):
            check(not model.capture_aux_hidden_states, "capture enabled in a draft model")
            check(model.model.layers_to_capture == [], "layers set in a draft model")
        inner = build(mod, "list", architectures=["DeepseekV3ForCausalLMNextN"]).model
        check(getattr(inner, "_hs_dump_dir", None) is None, "draft DeepseekV2Model would dump")
        torch.manual_seed(0)
        em = EagleModel(mod.MockConfig()).to(DEVICE, DTYPE)
        check(getattr(em, "_hs_dump_dir", None) is None, "Eagle DeepseekV2Model subclass would dump")
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            em(ids, pos, batch)
        # the target (plain V3) still captures
        check(build(mod, "list", cls=mod.DeepseekV3ForCausalLM).capture_aux_hidden_states, "target V3 not capturing")
    check(files_in(out) == [], "draft wrote files")



# --- never overwrite, permissions, folder checks (the dump's guarantees) ------------


def _one_pass(mod, out, **env):
    with Env(SGLANG_HS_DUMP_DIR=out, **env):
        set_ranks(0, 0)
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            model.model(ids, pos, batch)
    return model


def _name(model, n, suffix=".ckpt"):
    state = model.model._hs_dump_state
    return "data_dp0_pid%d_%s_%08d%s" % (os.getpid(), state["token"], n, suffix)


def case_two_models_one_process_never_overwrite(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    a = _one_pass(mod, out)
    b = _one_pass(mod, out)
    names = [os.path.basename(p) for p in files_in(out)]
    check(len(names) == 4 and len(set(names)) == 4, "two models wrote %s" % names)
    check(a.model._hs_dump_state["token"] != b.model._hs_dump_state["token"], "same token for two models")


def case_taken_names_are_skipped_never_overwritten(mod, ref, tmp):
    # A restarted process that reuses a pid on a persistent folder: the names it would
    # pick exist already (a sample, a directory, a symlink at the temporary name).
    out = os.path.join(tmp, "dump")
    os.makedirs(out, mode=0o700)
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        taken = os.path.join(out, _name(model, 0))
        with open(taken, "wb") as f:
            f.write(b"an earlier sample")
        os.mkdir(os.path.join(out, _name(model, 1)))
        target = os.path.join(tmp, "target")
        with open(target, "wb") as f:
            f.write(b"not yours")
        link = os.path.join(out, "." + _name(model, 2) + ".tmp")
        os.symlink(target, link)
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            model.model(ids, pos, batch)
        with open(taken, "rb") as f:
            check(f.read() == b"an earlier sample", "an existing sample was overwritten")
        with open(target, "rb") as f:
            check(f.read() == b"not yours", "a symlink at the temporary name was followed")
        check(os.path.isdir(os.path.join(out, _name(model, 1))), "the directory was replaced")
        fresh = sorted(os.path.basename(p) for p in files_in(out) if os.path.isfile(p) and p != taken)
        # writers run side by side: which request gets which free name may vary
        taken_names = {_name(model, 0), _name(model, 1), _name(model, 2)}
        check(len(fresh) == 2 and not taken_names & set(fresh), "new samples %s" % fresh)
        check(sorted(n.endswith(".partial") for n in fresh) == [False, True], "suffixes %s" % fresh)
        os.unlink(link)
        os.rmdir(os.path.join(out, _name(model, 1)))


def case_folder_and_file_permissions(mod, ref, tmp):
    out = os.path.join(tmp, "dump", "nested")
    old = os.umask(0o022)
    try:
        _one_pass(mod, out)
    finally:
        os.umask(old)
    check(os.stat(out).st_mode & 0o777 == 0o700, "folder mode %o" % (os.stat(out).st_mode & 0o777))
    paths = files_in(out)
    check(len(paths) == 2, "files %s" % paths)
    for p in paths:
        check(os.stat(p).st_mode & 0o777 == 0o600, "file mode %o" % (os.stat(p).st_mode & 0o777))


def _refused(mod, out, tmp):
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        for _ in range(3):
            ids, pos, batch = make_batch(mod)
            with torch.no_grad():
                value = model.model(ids, pos, batch)
            check(isinstance(value, tuple), "value changed")
    got = [r.getMessage() for r in WARNINGS.records[before:]]
    check(len(got) == 1 and "turned off" in got[0], "expected one warning, got %s" % got)
    check(getattr(model.model, "_hs_dump_dir", None) is None, "dump still on")
    check(not glob.glob(os.path.join(tmp, "**", "*.ckpt*"), recursive=True), "files written")


def case_refuse_group_or_other_writable_folder(mod, ref, tmp):
    out = os.path.join(tmp, "shared")
    os.makedirs(out)
    os.chmod(out, 0o777)
    _refused(mod, out, tmp)


def case_refuse_symlinked_folder(mod, ref, tmp):
    real = os.path.join(tmp, "real")
    os.makedirs(real, mode=0o700)
    out = os.path.join(tmp, "link")
    os.symlink(real, out)
    _refused(mod, out, tmp)


def case_refuse_folder_of_another_user(mod, ref, tmp):
    if os.geteuid() != 0:
        raise Skip("needs root to give a folder to another user")
    out = os.path.join(tmp, "theirs")
    os.makedirs(out, mode=0o700)
    os.chown(out, 65534, 65534)
    _refused(mod, out, tmp)


def case_failed_publish_turns_off_without_retrying(mod, ref, tmp):
    # Publication fails (an error other than a taken name): one warning, the dump turns
    # off, the temporary is removed, and the name is never tried again.
    out = os.path.join(tmp, "dump")
    real_link = os.link
    calls = []

    def failing_link(*args, **kwargs):
        calls.append(args[1])
        raise OSError(5, "Input/output error")

    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        os.link = failing_link
        try:
            for _ in range(3):
                ids, pos, batch = make_batch(mod)
                with torch.no_grad():
                    model.model(ids, pos, batch)
            drain()
        finally:
            os.link = real_link
    got = [r.getMessage() for r in WARNINGS.records[before:]]
    check(len(got) == 1 and "Input/output error" in got[0], "warnings %s" % got)
    # writers run side by side (four): the samples in their hands when the first failed may
    # each be tried, each name once
    check(calls and len(set(calls)) == len(calls) <= 4, "publication tried %s" % calls)
    names = {_name(model, k).split(".")[0] for k in range(6)}
    check({c.split(".")[0] for c in calls} <= names, "publication tried %s" % calls)
    check(model.model._hs_dump_state["next"] >= len(calls), "counter stalled")
    check(files_in(out) == [] and not leftovers(out), "files left: %s" % os.listdir(out))


def case_max_read_at_build(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out, SGLANG_HS_DUMP_MAX=3):
        set_ranks(0, 0)
        model = build(mod, "list")
    os.environ["SGLANG_HS_DUMP_MAX"] = "100"  # changed after the build: no effect
    try:
        for _ in range(3):
            ids, pos, batch = make_batch(mod)
            with torch.no_grad():
                model.model(ids, pos, batch)
    finally:
        os.environ.pop("SGLANG_HS_DUMP_MAX", None)
    check(len(files_in(out)) == 3, "cap 3 read at build: found %d files" % len(files_in(out)))


def case_bad_max_or_budget_warns_once(mod, ref, tmp):
    for var, bad in [("SGLANG_HS_DUMP_MAX", v) for v in ("ten", "-1", "1.5")] + [
        ("SGLANG_HS_DUMP_QUEUE_MB", v) for v in ("lots", "-5", "nan", "inf")
    ]:
        out = os.path.join(tmp, "dump")
        before = len(WARNINGS.records)
        with Env(SGLANG_HS_DUMP_DIR=out, **{var: bad}):
            set_ranks(0, 0)
            model = build(mod, "list")
            for _ in range(2):
                ids, pos, batch = make_batch(mod)
                with torch.no_grad():
                    model.model(ids, pos, batch)
        got = [r.getMessage() for r in WARNINGS.records[before:]]
        check(len(got) == 1 and var in got[0] and "dump off" in got[0], "%r: warnings %s" % (bad, got))
        check(files_in(out) == [], "%r: files written" % bad)


# --- complete and partial samples -----------------------------------------------------


def _pass(mod, out, chunk=-1, hide=(), **batch_args):
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0, chunk=chunk, hide=hide)
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod, **batch_args)
        with torch.no_grad():
            value = model.model(ids, pos, batch)
    return ids, value


def case_partial_pass_hidden_from_specforge(mod, ref, tmp):
    # request b has a cached prefix (prefix_len 2): written, but not as a training file
    out = os.path.join(tmp, "dump")
    ids, value = _pass(mod, out)
    paths = files_in(out)
    check_samples(paths, ids, value[0], torch.cat(value[1], dim=-1), [2, 4, 5], partial=[False, True])
    check(specforge_lists(out) == paths[:1], "SpecForge would list %s" % specforge_lists(out))


def case_first_chunk_is_held_until_the_last(mod, ref, tmp):
    # chunked prefill: both requests start at 0, but b's prompt is 7 tokens long and only
    # 3 are in this pass (orig_seq_lens, 0.5.1+): no file for b until its last chunk, which
    # the next pass carries first; then one complete sample of both passes' rows
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0, chunk=8)
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod, prefix=[0, 0], full=[5, 7])
        with torch.no_grad():
            hidden, aux = model.model(ids, pos, batch)
        aux = torch.cat(aux, dim=-1)
        check_samples(files_in(out), ids, hidden, aux, [2, 4, 5], lens=[5], prefix=[0], rids=RIDS[:1])
        held = [n for n in os.listdir(out) if n.endswith(".stitch.tmp")]
        check(len(held) == 1, "b's first chunk is held in its sample's hidden file: %s" % os.listdir(out))
        ids2, pos2, batch2 = make_batch(mod, lens=[4], pad=1, rids=RIDS[1:], prefix=[3], full=[7])
        with torch.no_grad():
            hidden2, aux2 = model.model(ids2, pos2, batch2)
        aux2 = torch.cat(aux2, dim=-1)
    both_ids = torch.cat([ids[:5], ids[5:8], ids2[:4]])
    both_hidden = torch.cat([hidden[:5], hidden[5:8], hidden2[:4]])
    both_aux = torch.cat([aux[:5], aux[5:8], aux2[:4]])
    check_samples(files_in(out), both_ids, both_hidden, both_aux, [2, 4, 5], lens=[5, 7], prefix=[0, 0])
    check(len(specforge_lists(out)) == 2, "SpecForge would list %s" % specforge_lists(out))


def case_complete_passes_with_chunking_on(mod, ref, tmp):
    # chunked prefill on, orig_seq_lens says both prompts are whole: both complete
    out = os.path.join(tmp, "dump")
    ids, value = _pass(mod, out, chunk=8, prefix=[0, 0], full=[5, 3])
    check(len(specforge_lists(out)) == 2 and len(files_in(out)) == 2, "files %s" % files_in(out))


def case_lengths_on_the_host_with_rows_on_the_device(mod, ref, tmp):
    # a batch may keep orig_seq_lens on the CPU while the rows are on the GPU: the copy
    # to pinned memory takes each tensor where it is (no record_stream on a CPU tensor)
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0, chunk=8)
        model = build(mod, "list")
        # no rids nor slots (a release without stitching): b's cut shows as .ckpt.partial
        ids, pos, batch = make_batch(mod, prefix=[0, 0], rids=None)
        batch.orig_seq_lens = torch.tensor([5, 7], dtype=torch.int32)
        with torch.no_grad():
            value = model.model(ids, pos, batch)
    aux = torch.cat(value[1], dim=-1)
    check_samples(files_in(out), ids, value[0], aux, [2, 4, 5], prefix=[0, 0], rids=None, partial=[False, True])


def case_chunk_budget_filled_without_orig_seq_lens(mod, ref, tmp):
    # releases before 0.5.1 without a request identity (no pool slots: 0.3.x): a pass that fills the chunk budget (8 tokens) may have cut
    # its last request, which is then written as partial; one warning says chunking is on
    for hide in ((), ("sglang.srt.server_args",)):
        out = os.path.join(tmp, "dump%d" % len(hide))
        before = len(WARNINGS.records)
        ids, value = _pass(mod, out, chunk=8, hide=hide, prefix=[0, 0], rids=None)
        got = [r.getMessage() for r in WARNINGS.records[before:]]
        check(len(got) == 1 and "chunked prefill is on" in got[0], "warnings %s" % got)
        names = [os.path.basename(p) for p in files_in(out)]
        check(len(names) == 2 and names[0].endswith(".ckpt") and names[1].endswith(".ckpt.partial"), "names %s" % names)
        # a pass below the budget is complete
        out = os.path.join(tmp, "small%d" % len(hide))
        _pass(mod, out, chunk=64, hide=hide, prefix=[0, 0], rids=None)
        check(len(specforge_lists(out)) == 2, "below the budget: %s" % files_in(out))


# --- the writer: off the forward, in order, bounded, flushed ------------------------------


def _passes(mod, model, count, rid_prefix="p"):
    """Run `count` prefill passes of varied shapes; returns what the synchronous dump
    would have written, in order: (rid, ids, hidden, aux) per request, on the CPU."""
    shapes = [[5, 3], [1], [7, 2, 4], [3, 3], [6], [2, 2, 2, 2]]
    expected = []
    for k in range(count):
        lens = shapes[k % len(shapes)]
        rids = ["%s%d-%d" % (rid_prefix, k, j) for j in range(len(lens))]
        ids, pos, batch = make_batch(mod, lens=lens, pad=1, rids=rids, prefix=[0] * len(lens))
        with torch.no_grad():
            hidden, aux = model.model(ids, pos, batch)
        if not isinstance(aux, torch.Tensor):
            aux = torch.cat(aux, dim=-1)
        start = 0
        for rid, n in zip(rids, lens):
            b, start = start, start + n
            expected.append((rid, ids[b:start].cpu(), hidden[b:start].cpu(), aux[b:start].cpu()))
    return expected


def _bits(t):
    return t.view(torch.int16) if t.dtype in (torch.bfloat16, torch.float16) else t


def _check_written(out, expected):
    paths = files_in(out)
    check(len(paths) == len(expected), "%d files for %d samples" % (len(paths), len(expected)))
    for path, (rid, ids, hidden, aux) in zip(paths, expected):
        s = load_sample(path)
        check(s["rid"] == rid, "order: %s holds %r, expected %r" % (os.path.basename(path), s["rid"], rid))
        check(torch.equal(s["input_ids"], ids.long()), "%s: input_ids" % rid)
        check(s["hidden_state"].dtype == hidden.dtype and torch.equal(_bits(s["hidden_state"][0]), _bits(hidden)), "%s: hidden bits" % rid)
        check(torch.equal(_bits(s["aux_hidden_state"][0]), _bits(aux)), "%s: aux bits" % rid)
        check(s["hidden_state"].untyped_storage().nbytes() == hidden.numel() * hidden.element_size(), "%s: saved with the ring" % rid)


def case_writer_order_and_content_equal_sync(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "packed")
        expected = _passes(mod, model, 18)
    _check_written(out, expected)


class SlowSave:
    """torch.save that takes `delay` seconds: a writer slower than the forward."""

    def __init__(self, delay):
        self.delay, self.real = delay, torch.save

    def __enter__(self):
        import time

        def slow(*args, **kwargs):
            time.sleep(self.delay)
            return self.real(*args, **kwargs)

        torch.save = slow

    def __exit__(self, *exc):
        drain()
        torch.save = self.real


class GatedSave:
    """torch.save held back until `seconds` after entering (or, with `until`, until that
    holds, at most `seconds`): a disk that stalls."""

    def __init__(self, seconds, until=None):
        import threading
        import time

        self.gate, self.real = threading.Event(), torch.save

        def opener():
            end = time.monotonic() + seconds
            while until is not None and not until() and time.monotonic() < end:
                time.sleep(0.01)
            if until is None:
                time.sleep(seconds)
            self.gate.set()

        self.timer = threading.Thread(target=opener, daemon=True)

    def __enter__(self):
        def gated(*args, **kwargs):
            self.gate.wait()
            return self.real(*args, **kwargs)

        torch.save = gated
        self.timer.start()

    def __exit__(self, *exc):
        self.gate.set()
        drain()
        torch.save = self.real


def case_writer_backpressure_tiny_budget(mod, ref, tmp):
    # 20 KiB of host buffer (about 8 of these passes) and a disk that stalls for 2 s
    # while 24 passes come: the forward waits, nothing is dropped, the ring never grows
    # past the budget, and the files are still in order and bit-identical.
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out, SGLANG_HS_DUMP_QUEUE_MB="0.02"):
        set_ranks(0, 0)
        model = build(mod, "packed")

        def forward_waited():  # the disk stalls until then (not for a fixed time: load varies)
            try:
                return model.model._hs_dump_state["queue"].waits > 0
            except Exception:  # no writer yet, or no dump at all (the unpatched mock)
                return not hasattr(model.model, "_hs_dump_state")

        with GatedSave(60.0, until=forward_waited):
            expected = _passes(mod, model, 24)
        writer = model.model._hs_dump_state["queue"]
    check(writer.budget == int(0.02 * (1 << 20)), "budget %d" % writer.budget)
    check(writer.waits > 0, "the forward never waited")
    check(writer.ring.numel() <= writer.budget, "ring of %d bytes over the budget" % writer.ring.numel())
    _check_written(out, expected)


def case_writer_pass_over_budget_written_in_forward(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out, SGLANG_HS_DUMP_QUEUE_MB="0.001"):
        set_ranks(0, 0)
        model = build(mod, "packed")
        expected = _passes(mod, model, 4)
    got = [r.getMessage() for r in WARNINGS.records[before:]]
    check(len(got) == 1 and "exceeds SGLANG_HS_DUMP_QUEUE_MB" in got[0], "warnings %s" % got)
    _check_written(out, expected)


def exit_child(path, out):
    """Child of case_writer_flushes_at_exit: queue passes behind a slow writer and exit."""
    fake_root = tempfile.mkdtemp(prefix="hs_fake_sglang_")
    install_fake_sglang(fake_root)
    mod = load(path, "mock_deepseek_v2_under_test")
    os.environ["SGLANG_HS_DUMP_DIR"] = out
    model = build(mod, "packed")
    SlowSave(0.05).__enter__()
    expected = _passes(mod, model, 4)
    writer = model.model._hs_dump_state["queue"]
    torch.save(dict(expected=expected), os.path.join(os.path.dirname(out), "expected.pt"))
    print("queued at exit: %d passes" % len(writer.jobs), flush=True)
    shutil.rmtree(fake_root, ignore_errors=True)
    return 0  # a normal exit: the writer must finish first


def case_writer_flushes_at_exit(mod, ref, tmp):
    import subprocess

    if not hasattr(mod, "_pysplice_hs_Writer"):
        raise AssertionError("no dump writer in the module")
    out = os.path.join(tmp, "dump")
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--exit-child", mod.__file__, out],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, HS_TEST_DEVICE=DEVICE),
    )
    check(child.returncode == 0, "child failed: %s%s" % (child.stdout, child.stderr[-2000:]))
    queued = int(child.stdout.split("queued at exit: ")[1].split()[0])
    check(queued > 0, "nothing was queued at exit: the case shows nothing")
    expected = load_sample(os.path.join(tmp, "expected.pt"))["expected"]
    _check_written(out, expected)
    check(not leftovers(out), "leftovers %s" % leftovers(out))


class Skip(Exception):
    pass


class NotHere(Skip):
    """A case this device cannot run at all (CUDA graphs on the CPU): not a skip to refuse."""


def case_cuda_graph_capture_untouched(mod, ref, tmp):
    # Prefill graph capture (piecewise graphs) runs forward on a capturing stream:
    # the dump must stay out of it, or the capture breaks.
    if DEVICE != "cuda":
        raise NotHere("needs CUDA")
    out = os.path.join(tmp, "dump")
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "packed")
        ids, pos, batch = make_batch(mod)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(side):
            model.model(ids, pos, batch)  # warm-up, eager: dumps 2 files
        torch.cuda.current_stream().wait_stream(side)
        drain()  # as in SGLang, capture happens while no dump is being written
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            value = model.model(ids, pos, batch)
        graph.replay()
        torch.cuda.synchronize()
        e_ids, e_hidden, e_aux, e_layers = expected_rows(ref, "packed")
    check(torch.equal(value[0], e_hidden) and torch.equal(value[1], e_aux), "graph output differs")
    check(len(WARNINGS.records) == before, "warning during capture")
    check(len(files_in(out)) == 2, "capture must not dump: %d files" % len(files_in(out)))


def case_torch_compile_untouched(mod, ref, tmp):
    if not hasattr(torch, "compile"):
        raise Skip("no torch.compile")
    out = os.path.join(tmp, "dump")
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "list")
        ids, pos, batch = make_batch(mod)
        compiled = torch.compile(model.model, backend="eager")
        with torch.no_grad():
            value = compiled(ids, pos, batch)
        e_ids, e_hidden, e_aux, e_layers = expected_rows(ref, "list")
    check(torch.equal(value[0], e_hidden), "compiled output differs")
    check(len(WARNINGS.records) == before, "warning under torch.compile")
    # whatever ran eagerly (after a graph break) must have written correct files
    if files_in(out):
        check_samples(files_in(out), e_ids, e_hidden, e_aux, e_layers)


# --- bad settings: the dump turns off, the model is as SGLang builds it --------------------

BAD_LAYERS = [
    "999",  # no such layer: nothing captured, then `hidden, aux = <tensor>` raised in forward
    "-1",
    "2,999",  # the files claimed [2, 999] and held one layer
    "two,x",
    "2,,5",  # empty items are an error, not skipped
    "2,5,",
    "5,2",  # not increasing: aux is concatenated in layer order
    "2,2",  # a duplicate: one capture labelled twice
    "1.5",
    "\u0663",  # a digit, but not an ASCII one
    "1,7",  # +1 for ids starting at 1 (0.5.13+): layer 8 of 8 does not exist
    "9" * 5000,
]


def _model_without_dump(mod, ref, tmp, env, expect_var, layers=8):
    out = os.path.join(tmp, "dump")
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out, **env):
        set_ranks(0, 0)
        mod.AUX_FORM = ref.AUX_FORM = "packed"
        mod.PP_GROUP, ref.PP_GROUP = mod.PPGroup(), ref.PPGroup()
        models = []
        for m in (mod, ref):
            torch.manual_seed(1234)
            models.append(m.DeepseekV2ForCausalLM(m.MockConfig(num_hidden_layers=layers)).to(DEVICE, DTYPE).eval())
        model, pristine = models
        got = [r.getMessage() for r in WARNINGS.records[before:]]
        check(len(got) == 1 and expect_var in got[0] and "off" in got[0], "%r: warnings %s" % (env, got))
        check(len(got[0]) < 400, "%r: a warning of %d characters" % (env, len(got[0])))
        check(not model.capture_aux_hidden_states and list(model.model.layers_to_capture) == [], "%r: capture left on" % env)
        for mode in ("EXTEND", "DECODE", "EXTEND"):
            ids, pos, batch = make_batch(mod, mode)
            a, b = model(ids, pos, batch), pristine(ids, pos, make_batch(ref, mode)[2])
            check(torch.equal(a.next_token_logits, b.next_token_logits), "%r: logits differ from the unpatched model" % env)
            check(a.aux_hidden_states is None, "%r: aux returned" % env)
            with torch.no_grad():
                ha, hb = model.model(ids, pos, make_batch(mod, mode)[2]), pristine.model(ids, pos, make_batch(ref, mode)[2])
            check(isinstance(ha, torch.Tensor) and torch.equal(ha, hb), "%r: model output differs" % env)
    check(not os.path.exists(out), "%r: dump folder created" % env)


def case_bad_layer_env_dump_off_model_unpatched(mod, ref, tmp):
    for bad in BAD_LAYERS:
        _model_without_dump(mod, ref, tmp, dict(SGLANG_HS_DUMP_LAYERS=bad), "SGLANG_HS_DUMP_LAYERS")


def case_default_layers_too_many_for_a_tiny_model(mod, ref, tmp):
    # SGLang's default [2, N//2, N-3] is [2, 1, -1] for 2 layers: capture would break forward
    _model_without_dump(mod, ref, tmp, dict(), "SGLANG_HS_DUMP_LAYERS", layers=2)


def case_last_layer_id_accepted(mod, ref, tmp):
    # 7 is the input of the last of 8 layers: valid (no +1, the ids do not start at 1)
    _dump_case(mod, ref, tmp, "packed", layer_env="7", layer_ids=[7])


def case_long_bad_values_are_cut_in_the_warning(mod, ref, tmp):
    for var in ("SGLANG_HS_DUMP_MAX", "SGLANG_HS_DUMP_QUEUE_MB"):
        before = len(WARNINGS.records)
        with Env(SGLANG_HS_DUMP_DIR=os.path.join(tmp, "dump"), **{var: "x" * 100000}):
            set_ranks(0, 0)
            build(mod, "list")
        got = [r.getMessage() for r in WARNINGS.records[before:]]
        check(len(got) == 1 and var in got[0] and len(got[0]) < 400, "%s: warnings of %s characters" % (var, [len(g) for g in got]))


# --- DP attention: batches relabelled as EXTEND by prepare_mlp_sync_batch ----------------


def _relabelled(mod, mode, release, num_tokens=6):
    """A batch as ForwardBatch.prepare_mlp_sync_batch leaves it when DP padding is MAX_LEN and
    another DP rank extends: IDLE or DECODE relabelled EXTEND, the real mode kept in
    _original_forward_mode. 0.5.17 (forward_batch_info.py L1347-1411) and 0.5.23 (L1872-1938):
    an empty (idle) rank gets one fabricated request over the padded token count; decode rows
    become 1-token extends with prefix seq_len - 1. 0.5.1-0.5.13 (0.5.9 L788-799) set the
    attribute with setattr and keep the *_cpu fields as CPU tensors; an idle rank there has
    no rows. Inputs are then padded to num_tokens (_pad_inputs_to_size)."""
    if mode == "IDLE":
        ids, pos, batch = make_batch(mod, "IDLE", lens=[], pad=0, rids=[], prefix=[])
        seq_lens = torch.zeros(0, dtype=torch.int64, device=DEVICE)
    else:
        ids, pos, batch = make_batch(mod, "DECODE", lens=[1, 1], pad=0, prefix=[11, 6])
        seq_lens = torch.tensor([12, 7], device=DEVICE)
        batch.orig_seq_lens = seq_lens.to(torch.int32)
    batch.seq_lens = seq_lens
    batch._original_forward_mode = batch.forward_mode
    batch.forward_mode = mod.ForwardMode.EXTEND
    if release != "0.5.9" and seq_lens.shape[0] == 0:
        batch.extend_seq_lens = torch.tensor([num_tokens], dtype=torch.int32, device=DEVICE)
        batch.extend_prefix_lens = torch.zeros(1, dtype=seq_lens.dtype, device=DEVICE)
        batch.seq_lens = torch.tensor([num_tokens], dtype=seq_lens.dtype, device=DEVICE)
        batch.orig_seq_lens = torch.tensor([num_tokens], dtype=torch.int32, device=DEVICE)
        batch.extend_prefix_lens_cpu = [0]
        batch.extend_seq_lens_cpu = [int(num_tokens)]
    else:
        batch.extend_seq_lens = torch.full_like(batch.seq_lens, 1)
        batch.extend_prefix_lens = batch.seq_lens - 1
        if release == "0.5.9":
            batch.extend_prefix_lens_cpu = batch.extend_prefix_lens.cpu()
            batch.extend_seq_lens_cpu = batch.extend_seq_lens.cpu()
        else:
            batch.extend_prefix_lens_cpu = batch.extend_prefix_lens.cpu().tolist()
            batch.extend_seq_lens_cpu = batch.extend_seq_lens.cpu().tolist()
    pad = num_tokens - ids.shape[0]
    batch.input_ids = torch.cat([ids, ids.new_zeros(pad)])
    pos = torch.cat([pos, pos.new_zeros(pad)])
    return batch.input_ids, pos, batch


def case_dp_relabelled_idle_and_decode_write_nothing(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 1)
        model = build(mod, "packed")
        for release in ("0.5.17", "0.5.23", "0.5.9"):
            for mode in ("IDLE", "DECODE"):
                ids, pos, batch = _relabelled(mod, mode, release)
                with torch.no_grad():
                    value = model.model(ids, pos, batch)
                check(isinstance(value, tuple) and value[0].shape[0] == ids.shape[0], "value changed")
                check(files_in(out) == [], "%s %s relabelled EXTEND wrote %s" % (release, mode, [os.path.basename(p) for p in files_in(out)]))
        # a real prefill on the same rank is still dumped
        ids, pos, batch = make_batch(mod)
        with torch.no_grad():
            model.model(ids, pos, batch)
    check(len(files_in(out)) == 2, "the real prefill after them: %d files" % len(files_in(out)))


# --- the folder: a symlink is refused however the path is spelled ------------------------


def case_refuse_symlinked_folder_with_trailing_slash(mod, ref, tmp):
    real = os.path.join(tmp, "real")
    os.makedirs(real, mode=0o700)
    os.symlink(real, os.path.join(tmp, "link"))
    for spelling in ("link/", "link/.", "link//", "link/./", "./link/"):
        _refused(mod, os.path.join(tmp, spelling), tmp)
        check(os.listdir(real) == [], "%s: wrote into the link's target: %s" % (spelling, os.listdir(real)))
    # the same spellings of a real folder are fine, and write there
    for k, spelling in enumerate(("real/", "real/.", "real//")):
        _one_pass(mod, os.path.join(tmp, spelling))
        check(len(files_in(real)) == 2 * (k + 1), "%s: %d files in the folder" % (spelling, len(files_in(real))))


def case_refuse_a_file_as_folder_and_a_path_without_name(mod, ref, tmp):
    path = os.path.join(tmp, "plain")
    with open(path, "w") as f:
        f.write("a file")
    _refused(mod, path + "/", tmp)
    _refused(mod, os.path.join(tmp, "sub", ".."), tmp)


# --- the writer: host buffer growth, messages ----------------------------------------------


class SlowAlloc:
    """torch.empty that takes `delay` seconds for a buffer of 1 MiB or more: pinning host
    memory (about a second per GiB on an H200) made visible on any machine."""

    def __init__(self, delay):
        self.delay, self.real = delay, torch.empty

    def __enter__(self):
        import time

        def slow(*args, **kwargs):
            size = args[0] if args and isinstance(args[0], int) else 0
            if size >= 1 << 20:
                time.sleep(self.delay)
            return self.real(*args, **kwargs)

        torch.empty = slow

    def __exit__(self, *exc):
        drain()
        torch.empty = self.real


def case_first_pass_does_not_wait_for_the_ring(mod, ref, tmp):
    import time

    out = os.path.join(tmp, "dump")
    _one_pass(mod, os.path.join(tmp, "warm-up"))  # torch warmed up, then a new model
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0)
        model = build(mod, "packed")
        with SlowAlloc(1.5):
            blocked = []
            expected = []
            for k in range(4):
                t0 = time.perf_counter()
                expected += _passes(mod, model, 1, rid_prefix="g%d-" % k)
                blocked.append(time.perf_counter() - t0)
        print("    first passes while the ring is built: %s ms" % ", ".join("%.1f" % (b * 1e3) for b in blocked))
        check(max(blocked) < 0.75, "a pass waited %.2f s for the ring" % max(blocked))
    paths = files_in(out)
    _check_written(out, expected) if len(paths) == len(expected) else check(False, "%d files for %d samples" % (len(paths), len(expected)))


def case_small_budget_warning_says_the_sizes(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out, SGLANG_HS_DUMP_QUEUE_MB="0.001"):
        set_ranks(0, 0)
        model = build(mod, "packed")
        _passes(mod, model, 1)
    got = [r.getMessage() for r in WARNINGS.records[before:]]
    check(len(got) == 1 and " 0 MiB" not in got[0] and "0.001" in got[0] and "KiB" in got[0], "warnings %s" % got)


# --- a server stopped with SIGKILL (as SGLang stops its schedulers) -----------------------


def kill_child(path, out, mode, count):
    """Child of the SIGKILL cases: dump, say so on stdout, then wait to be killed.
    mode "wait": `count` passes behind a slow disk, then idle; "stuck": one pass whose first
    file is linked to its final name but its temporary not yet removed, and whose second file
    is cut mid-write."""
    import threading
    import time

    # in the case's folder, which the parent removes: this process ends by SIGKILL
    fake_root = tempfile.mkdtemp(prefix="hs_fake_sglang_", dir=os.path.dirname(out))
    install_fake_sglang(fake_root)
    mod = load(path, "mock_deepseek_v2_under_test")
    os.environ["SGLANG_HS_DUMP_DIR"] = out
    model = build(mod, "packed")
    if mode == "held":
        # the first chunk of a prompt cut into three: held in part files when killed
        track_writers(mod)
        set_ranks(0, 0, chunk=8)
        model = build(mod, "list")
        sched = ChunkingScheduler(mod, "0.5.18", 8)
        sched.add("r0", _prompts(1, [20])[0][1])
        batch, _ = sched.next_pass()
        with torch.no_grad():
            model.model(batch.input_ids, batch.positions, batch)
        drain()
        print("held", flush=True)
    elif mode == "wait":
        slow = SlowSave(1.5)
        slow.__enter__()
        expected = _passes(mod, model, int(count))
        slow.real(dict(expected=expected), os.path.join(os.path.dirname(out), "expected.pt"))
        print("dumped", flush=True)
    else:
        # two writers: one saves its file, links it and hangs before removing the
        # temporary; the other hangs in the middle of its save
        linked, cut, saves = threading.Event(), threading.Event(), []
        real_unlink, real_save = os.unlink, torch.save

        def stuck_unlink(name, *args, **kwargs):
            if str(name).endswith(".tmp") and not linked.is_set():
                linked.set()
                time.sleep(3600)
            return real_unlink(name, *args, **kwargs)

        def cut_save(obj, f, *args, **kwargs):
            saves.append(1)
            if len(saves) > 1:
                f.write(b"partial")
                f.flush()
                cut.set()
                time.sleep(3600)
            return real_save(obj, f, *args, **kwargs)

        os.unlink, torch.save = stuck_unlink, cut_save
        if hasattr(mod, "_pysplice_hs_Writer"):
            mod._pysplice_hs_Writer.threads = 2
        ids, pos, batch = make_batch(mod, prefix=[0, 0])
        with torch.no_grad():
            model.model(ids, pos, batch)
        linked.wait(60)
        cut.wait(60)
        print("stuck" if linked.is_set() and cut.is_set() else "not stuck", flush=True)
    time.sleep(3600)


def wait_idle_script():
    """docs/sglang.md's step that waits until the dump's folder is idle, as a file: laid out
    beside this test by patch_mock.sh, else taken from docs/sglang.md of this checkout."""
    path = os.path.join(HERE, "wait_idle.py")
    if not os.path.exists(path):
        with open(os.path.join(HERE, "..", "..", "..", "..", "..", "docs", "sglang.md"), encoding="utf-8") as f:
            text = f.read()
        start = text.index("<<'WAIT_IDLE'\n") + len("<<'WAIT_IDLE'\n")
        body = text[start : text.index("\nWAIT_IDLE\n", start) + 1]
        path = os.path.join(tempfile.mkdtemp(prefix="hs_wait_"), "wait_idle.py")
        with open(path, "w") as f:
            f.write(body)
    return path


def _start_child(mod, out, mode, count=0):
    import subprocess

    child = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--kill-child", mod.__file__, out, mode, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, HS_TEST_DEVICE=DEVICE),
    )
    import threading

    timer = threading.Timer(300, child.kill)
    timer.daemon = True
    timer.start()
    line = child.stdout.readline().strip()
    return child, line


def _kill(child):
    import signal

    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return child.stderr.read()[-2000:]


def _wait_idle(out, timeout=300):
    import subprocess

    return subprocess.run([sys.executable, wait_idle_script(), out], capture_output=True, text=True, timeout=timeout)


def case_sigkill_after_waiting_idle_loses_nothing(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    child, line = _start_child(mod, out, "wait", 6)
    try:
        check(line == "dumped", "child: %r" % line)
        waited = _wait_idle(out)
        check(waited.returncode == 0 and "idle" in waited.stdout, "wait: %d %s%s" % (waited.returncode, waited.stdout, waited.stderr))
    finally:
        err = _kill(child)
    expected = load_sample(os.path.join(tmp, "expected.pt"))["expected"]
    check(len(files_in(out)) == len(expected), "%d files for %d samples after SIGKILL%s" % (len(files_in(out)), len(expected), err and ": " + err))
    _check_written(out, expected)
    # the next start in the folder removes the killed process's status file, and nothing else
    _one_pass(mod, out)
    check(not leftovers(out), "debris after the next start: %s" % leftovers(out))
    check(len(files_in(out)) == len(expected) + 2, "files %d" % len(files_in(out)))


def case_sigkill_mid_write_debris_removed_at_next_start(mod, ref, tmp):
    out = os.path.join(tmp, "dump")
    child, line = _start_child(mod, out, "stuck")
    try:
        check(line == "stuck", "child: %r" % line)
    finally:
        err = _kill(child)
    names = sorted(os.listdir(out))
    temps = [n for n in names if n.endswith(".tmp")]
    finals = [n for n in names if n.endswith(".ckpt")]
    check(len(temps) == 2 and len(finals) == 1, "after SIGKILL: %s%s" % (names, err and " " + err))
    check(os.stat(os.path.join(out, finals[0])).st_nlink == 2, "the final file has no second link")
    # waiting is pointless now: the step says the process is gone with a pass not written
    waited = _wait_idle(out, timeout=60)
    check(waited.returncode != 0 and "not written" in waited.stderr, "wait on a killed writer: %d %r" % (waited.returncode, waited.stdout + waited.stderr))
    # what is not this dump's (or not of a gone process) must stay
    token = "0badc0de"
    other = os.path.join(out, ".data_dp0_pid%d_%s_00000000.ckpt.tmp" % (child.pid, token))  # no status file
    with open(other, "wb") as f:
        f.write(b"not proven ours")
    victim = os.path.join(tmp, "victim")
    with open(victim, "wb") as f:
        f.write(b"keep")
    dead_token = finals[0].split("_")[3]
    link = os.path.join(out, ".data_dp0_pid%d_%s_00000099.ckpt.tmp" % (child.pid, dead_token))
    os.symlink(victim, link)
    before = len(WARNINGS.records)
    _one_pass(mod, out)
    got = [r.getMessage() for r in WARNINGS.records[before:]]
    left = sorted(os.listdir(out))
    check(os.path.exists(other) and os.path.islink(link), "removed what is not proven debris: %s" % left)
    with open(victim, "rb") as f:
        check(f.read() == b"keep", "the symlink's target changed")
    os.unlink(other)
    os.unlink(link)
    check(not leftovers(out), "debris after the next start: %s" % leftovers(out))
    check(os.stat(os.path.join(out, finals[0])).st_nlink == 1, "the second link is still there")
    s = load_sample(os.path.join(out, finals[0]))
    check(tuple(s["input_ids"].shape) in [(n,) for n in LENS], "the linked sample is damaged")
    check(len(files_in(out)) == 3, "files %s" % os.listdir(out))
    check(len(got) == 1 and "not written" in got[0], "warnings %s" % got)


# --- chunked prefill: the passes of one request stitched into one sample -------------------


class PoolRows:
    """ReqToTokenPool as the model process sees it (forward_batch.req_to_token_pool, 0.4.6 -
    0.5.12): one row of KV locations per slot."""

    def __init__(self, rows, width):
        self.req_to_token = torch.zeros((rows, width), dtype=torch.int32, device=DEVICE)


class ChunkingScheduler:
    """Prefill passes as SGLang's scheduler cuts them (docs: sglang-chunked-requests), for one
    release family: the continuing chunk first (truncated to the budget), then waiting prompts
    whole while they fit, the first that does not fit cut to the rest of the budget, ending the
    pass; one chunked request at a time. Slots: a new one every chunk up to 0.5.8.post1 (freed
    after each chunk, FIFO), kept from 0.5.9 (FIFO rows 0..N-1; 1..N from 0.5.11; LIFO from
    0.5.18). ReqToTokenPool rows are filled as prepare_for_extend fills them: the earlier
    chunks' KV locations (prefix_indices) first, then this pass's out_cache_loc."""

    def __init__(self, mod, release, chunk, rows=8, pool=True):
        self.mod, self.release, self.chunk = mod, release, chunk
        self.v = v = _v(release)
        self.kept = v >= (0, 5, 9)
        self.lifo = v >= (0, 5, 18)
        self.free = list(range(1, rows + 1)) if v >= (0, 5, 11) else list(range(rows))
        # pool=False: a batch without ReqToTokenPool, where only the kept slot tells a request
        self.pool = PoolRows(rows + 1, 4096) if v <= (0, 5, 12) and pool else None
        self.next_loc = 1
        self.waiting, self.chunked, self.aborted = [], None, set()
        self.locs = dict()  # rid: KV locations of its tokens so far

    def add(self, rid, tokens):
        self.waiting.append(dict(rid=rid, tokens=tokens, done=0, slot=None))

    def abort(self, rid):
        # 0.5.14+: process_pending_chunked_abort stops a chunked request before its next
        # chunk and frees its slot (on 0.5.18+ the next one handed out)
        if self.chunked is not None and self.chunked["rid"] == rid:
            self.free.append(self.chunked["slot"])
            self.chunked = None

    def _alloc(self):
        return self.free.pop() if self.lifo else self.free.pop(0)

    def next_pass(self):
        budget, reqs = self.chunk, []
        if self.chunked is not None:
            r = self.chunked
            if not self.kept:
                r["slot"] = self._alloc()
            reqs.append((r, min(len(r["tokens"]) - r["done"], budget)))
            budget -= reqs[-1][1]
        while budget > 0 and self.waiting and (self.chunked is None or reqs[0][0] is not self.chunked or reqs[0][1] == len(self.chunked["tokens"]) - self.chunked["done"]):
            r = self.waiting.pop(0)
            r["slot"] = self._alloc()
            n = min(len(r["tokens"]), budget)
            reqs.append((r, n))
            budget -= n
            if n < len(r["tokens"]):
                break
        if not reqs:
            return None
        lens = [n for _, n in reqs]
        prefix = [r["done"] for r, _ in reqs]
        ids = torch.cat([torch.tensor(r["tokens"][r["done"] : r["done"] + n]) for r, n in reqs]).to(DEVICE)
        out_loc = torch.arange(self.next_loc, self.next_loc + sum(lens), device=DEVICE)
        self.next_loc += sum(lens)
        begin = 0
        for r, n in reqs:
            locs = self.locs.setdefault(r["rid"], [])
            locs += out_loc[begin : begin + n].tolist()
            if self.pool is not None:  # prefix_indices, then this pass's locations
                self.pool.req_to_token[r["slot"], : len(locs)] = torch.tensor(locs, dtype=torch.int32, device=DEVICE)
            begin += n
        v = self.v
        batch = self.mod.ForwardBatch(
            forward_mode=self.mod.ForwardMode.EXTEND,
            input_ids=ids,
            positions=torch.cat([torch.arange(p, p + n) for p, n in zip(prefix, lens)]).to(DEVICE),
            extend_seq_lens_cpu=lens,
            extend_prefix_lens_cpu=prefix,
            rids=[r["rid"] for r, _ in reqs] if v >= (0, 5, 10) else None,
            orig_seq_lens=[len(r["tokens"]) for r, _ in reqs] if v >= (0, 5, 1) else None,
        )
        batch.req_pool_indices = torch.tensor([r["slot"] for r, _ in reqs], dtype=torch.int64, device=DEVICE)
        if v >= (0, 5, 21):
            batch.req_pool_indices_cpu = batch.req_pool_indices.cpu()
        if self.pool is not None:
            batch.out_cache_loc = out_loc
            batch.req_to_token_pool = self.pool
        # after the pass: finished prompts free their slot; a cut one is the chunked request
        self.chunked = None
        for r, n in reqs:
            r["done"] += n
            if r["done"] == len(r["tokens"]) or not self.kept:
                self.free.append(r["slot"])
            if r["done"] < len(r["tokens"]):
                self.chunked = r
        return batch, [(r["rid"], p, n) for (r, n), p in zip(reqs, prefix)]


def _v(release):
    return tuple(int(x) for x in release.split(".")[:3])


def _prompts(count, lengths, seed=7):
    gen = torch.Generator().manual_seed(seed)
    return [("r%d" % k, torch.randint(0, 64, (n,), generator=gen).tolist()) for k, n in zip(range(count), lengths)]


def _run_chunked(mod, out, release, chunk, prompts, model=None, abort=None, pool=True, **env):
    """Feed `prompts` through a ChunkingScheduler of `release`; returns the rows each request's
    passes produced (rid: [ids, hidden, aux] concatenated, on the CPU) and the passes' shapes."""
    rows, passes = dict(), []
    with Env(SGLANG_HS_DUMP_DIR=out, **env):
        set_ranks(0, 0, chunk=chunk, hide=() if _v(release) >= (0, 5, 10) else ("sglang.srt.server_args",))
        model = model or build(mod, "list")
        sched = ChunkingScheduler(mod, release, chunk, pool=pool)
        for rid, toks in prompts:
            sched.add(rid, toks)
        k = 0
        while True:
            if abort is not None and k == abort[1]:
                sched.abort(abort[0])
            got = sched.next_pass()
            if got is None:
                break
            batch, reqs = got
            with torch.no_grad():
                hidden, aux = model.model(batch.input_ids, batch.positions, batch)
            aux = torch.cat(aux, dim=-1) if not isinstance(aux, torch.Tensor) else aux
            begin = 0
            for rid, _p, n in reqs:
                part = [batch.input_ids[begin : begin + n].cpu().long(), hidden[begin : begin + n].cpu(), aux[begin : begin + n].cpu()]
                if rid in rows:
                    rows[rid] = [torch.cat([a, b]) for a, b in zip(rows[rid], part)]
                else:
                    rows[rid] = part
                begin += n
            passes.append(reqs)
            k += 1
    return rows, passes, model


def _unchunked_rows(ref, tokens):
    """The same prompt prefilled in one pass by the pristine mock, capture on."""
    model = build(ref, "list")
    model.set_eagle3_layers_to_capture(None)
    ids = torch.tensor(tokens, device=DEVICE)
    batch = ref.ForwardBatch(forward_mode=ref.ForwardMode.EXTEND, input_ids=ids, positions=torch.arange(len(tokens), device=DEVICE), extend_seq_lens_cpu=[len(tokens)], extend_prefix_lens_cpu=[0])
    with torch.no_grad():
        hidden, aux = model.model(ids, batch.positions, batch)
    return hidden.cpu(), torch.cat(aux, dim=-1).cpu()


def _stitched(out, rows, ref, prompts, partial=(), rid_field=True, unchunked=True):
    """Each prompt is one file: complete (.ckpt, prefix_len 0) unless named in `partial`,
    holding bit for bit the rows its passes produced and, complete, those of the same prompt
    prefilled unchunked."""
    paths = files_in(out)
    check(len(paths) == len(rows), "%d files for %d requests: %s" % (len(paths), len(rows), [os.path.basename(p) for p in paths]))
    tokens = dict(prompts)
    for path in paths:
        s = load_sample(path)
        match = [rid for rid, r in rows.items() if r[0].shape == s["input_ids"].shape and torch.equal(r[0], s["input_ids"])]
        check(len(match) == 1, "%s matches %s" % (os.path.basename(path), match))
        rid = match[0]
        ids, hidden, aux = rows[rid]
        want = ".ckpt.partial" if rid in partial else ".ckpt"
        check(path.endswith(want) and not path.endswith("." + want), "%s: %s expected %s" % (os.path.basename(path), rid, want))
        check(s["rid"] == (rid if rid_field else None), "rid %r for %s" % (s["rid"], rid))
        check(s["prefix_len"] == 0, "prefix_len %r" % s["prefix_len"])
        # the keys and provenance of an unchunked sample
        keys = {"input_ids", "loss_mask", "hidden_state", "aux_hidden_state", "layers_to_capture", "prefix_len", "rid", "provenance"}
        check(set(s) == keys, "keys %s != %s" % (sorted(s), sorted(keys)))
        check_provenance(s, hidden.shape[-1], [2, 4, 5])
        n = ids.shape[0]
        check(s["loss_mask"].shape == (n,) and bool((s["loss_mask"] == 1).all()), "loss_mask")
        check(s["input_ids"].dtype == torch.long, "input_ids dtype")
        check(tuple(s["hidden_state"].shape) == (1, n, hidden.shape[-1]) and s["hidden_state"].dtype == DTYPE, "hidden_state %s" % (tuple(s["hidden_state"].shape),))
        check(torch.equal(_bits(s["hidden_state"][0]), _bits(hidden)), "%s: hidden_state differs from its passes' rows" % rid)
        check(torch.equal(_bits(s["aux_hidden_state"][0]), _bits(aux)), "%s: aux_hidden_state differs from its passes' rows" % rid)
        if unchunked and rid not in partial:
            check(n == len(tokens[rid]), "%s: %d of %d tokens" % (rid, n, len(tokens[rid])))
            h1, a1 = _unchunked_rows(ref, tokens[rid])
            check(torch.equal(_bits(s["hidden_state"][0]), _bits(h1)) and torch.equal(_bits(s["aux_hidden_state"][0]), _bits(a1)), "%s: differs from the unchunked prefill" % rid)
        check_archive(path, s)
    check(not leftovers(out), "part files left: %s" % leftovers(out))
    return paths


def check_archive(path, sample):
    """A sample's file is a sound zip (every entry's CRC right, as Python's zipfile reads it) and,
    where this torch writes the same records, laid out as torch.save lays out the same sample:
    the same entries at the same offsets, with the same sizes and CRCs (the serialization id,
    random, aside)."""
    import io
    import zipfile

    with zipfile.ZipFile(path) as z:
        bad = z.testzip()
        check(bad is None, "%s: entry %s has a wrong CRC" % (os.path.basename(path), bad))
        mine = [(i.filename, i.header_offset, i.file_size, i.CRC, i.compress_type) for i in z.infolist()]
    buf = io.BytesIO()
    torch.save(sample, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        theirs = [(i.filename, i.header_offset, i.file_size, i.CRC, i.compress_type) for i in z.infolist()]
    if [m[0] for m in mine] == [t[0] for t in theirs]:
        same = [m == t or m[0].endswith("serialization_id") and m[:3] == t[:3] for m, t in zip(mine, theirs)]
        check(all(same), "%s: laid out unlike torch.save: %s" % (os.path.basename(path), [(m, t) for m, t, ok in zip(mine, theirs, same) if not ok]))


# one release of each family: rids (0.5.10+; 0.5.18 LIFO slots, no pool; 0.5.21 slots on the
# host too), kept slot + ReqToTokenPool (0.5.9), a new slot each chunk (0.5.1 - 0.5.8.post1),
# no orig_seq_lens (0.4.6 - 0.5.0: the cut shows a pass later)
STITCH_RELEASES = ("0.5.21", "0.5.18", "0.5.10", "0.5.9", "0.5.7", "0.4.6")


def case_chunked_prompts_stitched_per_release(mod, ref, tmp):
    # prompts cut into 2, 3 and 16 chunks (chunk 8), with whole prompts around them
    prompts = _prompts(6, [10, 6, 20, 3, 121, 7])
    # and 0.5.9's kept slot alone (a batch without ReqToTokenPool)
    for release, pool in [(r, True) for r in STITCH_RELEASES] + [("0.5.9", False)]:
        out = os.path.join(tmp, "dump-%s-%s" % (release, pool))
        rows, passes, _ = _run_chunked(mod, out, release, 8, prompts, pool=pool)
        chunks = sorted(sum(1 for p in passes for r in p if r[0] == rid) for rid in rows)
        check({2, 3, 16} <= set(chunks), "%s: chunks per prompt %s" % (release, chunks))
        _stitched(out, rows, ref, prompts, rid_field=_v(release) >= (0, 5, 10))
        check(len(specforge_lists(out)) == len(prompts), "%s: SpecForge lists %d" % (release, len(specforge_lists(out))))


def case_chunked_exact_fit_without_orig_seq_lens(mod, ref, tmp):
    # 0.4.6 - 0.5.0: a prompt that ends exactly at the budget looks cut; the next pass shows
    # it was whole (it does not continue it), and one that does continue is stitched
    prompts = _prompts(4, [8, 4, 12, 3])
    out = os.path.join(tmp, "dump")
    rows, passes, _ = _run_chunked(mod, out, "0.4.6", 8, prompts)
    _stitched(out, rows, ref, prompts, rid_field=False)


def case_two_requests_chunked_interleaved_rids(mod, ref, tmp):
    # rids identify a request wherever its chunks come: A and B chunked in alternate passes
    out = os.path.join(tmp, "dump")
    prompts = _prompts(2, [9, 10])
    toks = dict(prompts)
    plan = [[("r0", 0, 4)], [("r1", 0, 3)], [("r0", 4, 3), ("r1", 3, 3)], [("r0", 7, 2)], [("r1", 6, 4)]]
    rows = dict()
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0, chunk=8)
        model = build(mod, "list")
        for reqs in plan:
            ids = torch.cat([torch.tensor(toks[r][p : p + n]) for r, p, n in reqs]).to(DEVICE)
            batch = mod.ForwardBatch(
                forward_mode=mod.ForwardMode.EXTEND, input_ids=ids, positions=torch.arange(ids.shape[0], device=DEVICE),
                extend_seq_lens_cpu=[n for _, _, n in reqs], extend_prefix_lens_cpu=[p for _, p, _ in reqs],
                rids=[r for r, _, _ in reqs], orig_seq_lens=[len(toks[r]) for r, _, _ in reqs],
            )
            with torch.no_grad():
                hidden, aux = model.model(ids, batch.positions, batch)
            aux = torch.cat(aux, dim=-1)
            b = 0
            for r, _p, n in reqs:
                part = [ids[b : b + n].cpu().long(), hidden[b : b + n].cpu(), aux[b : b + n].cpu()]
                rows[r] = [torch.cat([x, y]) for x, y in zip(rows[r], part)] if r in rows else part
                b += n
    _stitched(out, rows, ref, prompts)


def case_two_prompts_of_one_rid_interleaved_kept_apart(mod, ref, tmp):
    # SGLang refuses a rid in flight, but should two prompts of one rid come all the same, in
    # their own pool slots (kept across chunks from 0.5.9), their chunks taking turns with equal
    # lengths and chunks: each is stitched from its own chunks only, none mixed into the other
    out = os.path.join(tmp, "dump")
    prompts = _prompts(2, [12, 12], seed=3)
    toks = dict(prompts)
    slot = dict(r0=1, r1=2)
    plan = [[("r0", 0, 4)], [("r1", 0, 4)], [("r0", 4, 4)], [("r1", 4, 4)], [("r0", 8, 4)], [("r1", 8, 4)]]
    rows = dict()
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0, chunk=4)
        model = build(mod, "list")
        for reqs in plan:
            ids = torch.cat([torch.tensor(toks[r][p : p + n]) for r, p, n in reqs]).to(DEVICE)
            batch = mod.ForwardBatch(
                forward_mode=mod.ForwardMode.EXTEND, input_ids=ids, positions=torch.arange(ids.shape[0], device=DEVICE),
                extend_seq_lens_cpu=[n for _, _, n in reqs], extend_prefix_lens_cpu=[p for _, p, _ in reqs],
                rids=["same" for _ in reqs], orig_seq_lens=[len(toks[r]) for r, _, _ in reqs],
            )
            batch.req_pool_indices = torch.tensor([slot[r] for r, _, _ in reqs], dtype=torch.int64, device=DEVICE)
            with torch.no_grad():
                hidden, aux = model.model(ids, batch.positions, batch)
            aux = torch.cat(aux, dim=-1)
            b = 0
            for r, _p, n in reqs:
                part = [ids[b : b + n].cpu().long(), hidden[b : b + n].cpu(), aux[b : b + n].cpu()]
                rows[r] = [torch.cat([x, y]) for x, y in zip(rows[r], part)] if r in rows else part
                b += n
    paths = files_in(out)
    names = [os.path.basename(p) for p in paths]
    check(len(paths) == 2 and all(n.endswith(".ckpt") for n in names), "files %s" % names)
    for path in paths:
        s = load_sample(path)
        match = [r for r, got in rows.items() if torch.equal(got[0], s["input_ids"])]
        check(len(match) == 1 and s["rid"] == "same", "%s: ids of %s, rid %r" % (os.path.basename(path), match, s["rid"]))
        ids, hidden, aux = rows[match[0]]
        check(torch.equal(_bits(s["hidden_state"][0]), _bits(hidden)), "%s: hidden_state mixes the prompts" % match[0])
        check(torch.equal(_bits(s["aux_hidden_state"][0]), _bits(aux)), "%s: aux_hidden_state mixes the prompts" % match[0])
        check_archive(path, s)
    check(not leftovers(out), "left: %s" % leftovers(out))


def case_four_requests_chunked_in_turns_rids(mod, ref, tmp):
    # four prompts whose chunks take turns, one chunk a pass (A B C D A B C D ...): each misses
    # three passes between its chunks, more than the grace of a request held alone, and is
    # stitched all the same, as its chunks land side by side in four files
    out = os.path.join(tmp, "dump")
    prompts = _prompts(4, [9, 10, 11, 12], seed=5)
    toks = dict(prompts)
    cuts = [[(rid, p, min(4, len(t) - p)) for p in range(0, len(t), 4)] for rid, t in prompts]
    plan = []
    while any(cuts):
        plan += [[c.pop(0)] for c in cuts if c]
    rows = dict()
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0, chunk=4)
        model = build(mod, "list")
        for reqs in plan:
            ids = torch.cat([torch.tensor(toks[r][p : p + n]) for r, p, n in reqs]).to(DEVICE)
            batch = mod.ForwardBatch(
                forward_mode=mod.ForwardMode.EXTEND, input_ids=ids, positions=torch.arange(ids.shape[0], device=DEVICE),
                extend_seq_lens_cpu=[n for _, _, n in reqs], extend_prefix_lens_cpu=[p for _, p, _ in reqs],
                rids=[r for r, _, _ in reqs], orig_seq_lens=[len(toks[r]) for r, _, _ in reqs],
            )
            with torch.no_grad():
                hidden, aux = model.model(ids, batch.positions, batch)
            aux = torch.cat(aux, dim=-1)
            b = 0
            for r, _p, n in reqs:
                part = [ids[b : b + n].cpu().long(), hidden[b : b + n].cpu(), aux[b : b + n].cpu()]
                rows[r] = [torch.cat([x, y]) for x, y in zip(rows[r], part)] if r in rows else part
                b += n
    _stitched(out, rows, ref, prompts)


def case_a_taken_stitch_name_is_skipped_never_followed(mod, ref, tmp):
    # a file or a symlink already at the names a chunked prompt's hidden file would take (a
    # restarted process that reuses a pid, whatever left them): the next free name is used, the
    # dump stays on, nothing there is followed or written over
    out = os.path.join(tmp, "dump")
    os.makedirs(out, mode=0o700)
    target = os.path.join(tmp, "target")
    with open(target, "wb") as f:
        f.write(b"not yours")
    prompts = _prompts(3, [20, 6, 30])
    before = len(WARNINGS.records)
    with Env(SGLANG_HS_DUMP_DIR=out):
        set_ranks(0, 0, chunk=8)
        model = build(mod, "list")
        state = model.model._hs_dump_state
        # the serials this process hands out next (count(N)'s repr), and some after them
        first = int(re.search(r"\d+", repr(mod._pysplice_hs_Process.serials)).group())
        planted = []
        for k in range(first, first + 24):
            path = os.path.join(out, ".data_dp0_pid%d_%s_s%d.stitch.tmp" % (os.getpid(), state["token"], k))
            if k % 2:
                os.symlink(target, path)
            else:
                with open(path, "wb") as f:
                    f.write(b"an earlier file")
            planted.append(path)
        rows, _passes, model = _run_chunked(mod, out, "0.5.18", 8, prompts, model=model)
    drain()
    got = [r.getMessage() for r in WARNINGS.records[before:]]
    check(not got, "warnings %s" % got)
    check(model.model._hs_dump_dir is not None, "the dump turned off")
    with open(target, "rb") as f:
        check(f.read() == b"not yours", "a symlink at a stitched file's name was followed")
    for path in planted:
        if os.path.islink(path):
            check(os.readlink(path) == target, "%s was replaced" % path)
        else:
            with open(path, "rb") as f:
                check(f.read() == b"an earlier file", "%s was written over" % path)
        os.unlink(path)
    _stitched(out, rows, ref, prompts)


def case_stitched_with_pwrite_where_the_folder_maps_no_file(mod, ref, tmp):
    # the probe at a stitched file's open refused (mmap failing, as on a folder without
    # shared mappings): that request's rows go in with pwrite, the next one's through the
    # mapping; both files bit for bit (the first aborted: .ckpt.partial, read back mapped)
    import mmap

    prompts = _prompts(4, [20, 6, 30, 3])
    real = mmap.mmap
    calls = []

    def refused(fd, size, *args, **kwargs):
        calls.append(size)
        if len(calls) == 1:  # the probe at the first request's open
            raise OSError(errno.ENODEV, "No such device")
        return real(fd, size, *args, **kwargs)

    out = os.path.join(tmp, "dump")
    mmap.mmap = refused
    try:
        rows, _, _ = _run_chunked(mod, out, "0.5.18", 8, prompts, abort=("r0", 2))
    finally:
        mmap.mmap = real
    check(len(calls) >= 1, "the stitched file was never mapped: %s" % calls)
    _stitched(out, rows, ref, prompts, partial=("r0",))


def case_chunked_request_aborted(mod, ref, tmp):
    # 0.5.18: an abort stops the chunked request before its next chunk and its slot goes to
    # the next prompt (LIFO); it ends as .ckpt.partial with the rows it has, the others whole
    prompts = _prompts(4, [20, 6, 30, 3])
    out = os.path.join(tmp, "dump")
    rows, passes, _ = _run_chunked(mod, out, "0.5.18", 8, prompts, abort=("r0", 2))
    check(sum(1 for p in passes for r in p if r[0] == "r0") == 2, "passes %s" % passes)
    _stitched(out, rows, ref, prompts, partial=("r0",))
    check(len(specforge_lists(out)) == 3, "SpecForge lists %s" % specforge_lists(out))


def case_cap_reached_mid_request(mod, ref, tmp):
    # SGLANG_HS_DUMP_MAX=2: the pass that starts the second sample reaches the cap; that
    # request, cut there, ends as .ckpt.partial with its first chunk, nothing after it
    prompts = _prompts(3, [5, 12, 4])
    for release in ("0.5.18", "0.5.7"):
        out = os.path.join(tmp, "dump-" + release)
        rows, passes, _ = _run_chunked(mod, out, release, 8, prompts, SGLANG_HS_DUMP_MAX=2)
        first = dict(r0=rows["r0"], r1=[t[:3] for t in rows["r1"]])
        _stitched(out, first, ref, prompts, partial=("r1",), rid_field=_v(release) >= (0, 5, 10))


def stitch_exit_child(path, out):
    """Child of case_chunked_request_in_flight_at_exit: two chunks of a three-chunk prompt, then
    a normal exit (atexit)."""
    fake_root = tempfile.mkdtemp(prefix="hs_fake_sglang_")
    install_fake_sglang(fake_root)
    mod = load(path, "mock_deepseek_v2_under_test")
    prompts = _prompts(2, [4, 20])
    rows = dict()
    os.environ["SGLANG_HS_DUMP_DIR"] = out
    set_ranks(0, 0, chunk=8)
    model = build(mod, "list")
    sched = ChunkingScheduler(mod, "0.5.18", 8)
    for rid, toks in prompts:
        sched.add(rid, toks)
    for _ in range(2):
        batch, reqs = sched.next_pass()
        with torch.no_grad():
            hidden, aux = model.model(batch.input_ids, batch.positions, batch)
        aux = torch.cat(aux, dim=-1)
        b = 0
        for rid, _p, n in reqs:
            part = [batch.input_ids[b : b + n].cpu().long(), hidden[b : b + n].cpu(), aux[b : b + n].cpu()]
            rows[rid] = [torch.cat([x, y]) for x, y in zip(rows[rid], part)] if rid in rows else part
            b += n
    torch.save(dict(rows=rows, prompts=prompts), os.path.join(os.path.dirname(out), "expected.pt"))
    shutil.rmtree(fake_root, ignore_errors=True)
    return 0


def case_chunked_request_in_flight_at_exit(mod, ref, tmp):
    import subprocess

    out = os.path.join(tmp, "dump")
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--stitch-exit-child", mod.__file__, out],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, HS_TEST_DEVICE=DEVICE),
    )
    check(child.returncode == 0, "child failed: %s%s" % (child.stdout, child.stderr[-2000:]))
    saved = load_sample(os.path.join(tmp, "expected.pt"))
    rows = saved["rows"]
    check(rows["r1"][0].shape[0] == 12, "the child's prompt has %d rows" % rows["r1"][0].shape[0])
    _stitched(out, rows, ref, saved["prompts"], partial=("r1",))
    check(not [n for n in os.listdir(out) if n.startswith(".hs_dump_status")], "status file left: %s" % os.listdir(out))


def case_specforge_reads_stitched_as_unchunked(mod, ref, tmp):
    # SpecForge's offline reader (specforge 0.2.0, crates/pysplice-sglang/tests/python/send/specforge_ref.py) yields the same
    # tensors for the stitched files as for the same prompts dumped unchunked
    sys.path.insert(0, os.path.join(HERE, "..", "send"))
    try:
        import specforge_ref

        import specforge.runtime.data_plane.offline_reader  # noqa: F401
    except ImportError as exc:
        raise Skip("specforge 0.2.0 not installed: %s" % exc) from exc
    prompts = _prompts(4, [20, 6, 30, 3])
    chunked, whole = os.path.join(tmp, "chunked"), os.path.join(tmp, "whole")
    rows, passes, _ = _run_chunked(mod, chunked, "0.5.18", 8, prompts)
    check(len(passes) > len(prompts), "nothing was chunked: %s" % passes)
    _run_chunked(mod, whole, "0.5.18", 64, prompts)
    drain()
    got = [specforge_ref.read(d) for d in (chunked, whole)]
    check(len(got[0]) == len(got[1]) == len(prompts), "SpecForge read %d and %d samples" % (len(got[0]), len(got[1])))
    key = lambda s: tuple(s["tensors"]["input_ids"].reshape(-1).tolist())  # noqa: E731
    for a, b in zip(sorted(got[0], key=key), sorted(got[1], key=key)):
        check(a["num_tokens"] == b["num_tokens"] and set(a["tensors"]) == set(b["tensors"]), "samples %s / %s" % (a["num_tokens"], b["num_tokens"]))
        for k, t in a["tensors"].items():
            check(t.dtype == b["tensors"][k].dtype and torch.equal(_bits(t), _bits(b["tensors"][k])), "SpecForge's %s differs" % k)


def case_sigkill_with_a_chunked_prompt_held(mod, ref, tmp):
    # killed between two chunks of a prompt: its part files stay, the wait says a chunked prompt
    # is unfinished, and the next start removes them with one warning that counts it
    out = os.path.join(tmp, "dump")
    child, line = _start_child(mod, out, "held")
    try:
        check(line == "held", "child: %r" % line)
    finally:
        err = _kill(child)
    held = [n for n in os.listdir(out) if n.endswith(".stitch.tmp")]
    check(len(held) == 1, "after SIGKILL: %s%s" % (os.listdir(out), err and " " + err))
    waited = _wait_idle(out, timeout=60)
    check(waited.returncode != 0 and "1 chunked prompts unfinished" in waited.stdout, "wait: %d %r" % (waited.returncode, waited.stdout + waited.stderr))
    before = len(WARNINGS.records)
    _one_pass(mod, out)
    got = [r.getMessage() for r in WARNINGS.records[before:]]
    check(len(got) == 1 and "1 chunked requests unfinished" in got[0], "warnings %s" % got)
    check(not leftovers(out), "debris after the next start: %s" % leftovers(out))
    check(len(files_in(out)) == 2, "files %s" % os.listdir(out))


def case_writer_failure_with_a_chunked_prompt_held(mod, ref, tmp):
    # publication fails while a chunked prompt is held (then at its last chunk): one warning,
    # the dump turns off, and no part file is left behind
    for fail_at in (0, 1):
        out = os.path.join(tmp, "dump%d" % fail_at)
        real_link = os.link

        def failing_link(*args, **kwargs):
            raise OSError(5, "Input/output error")

        before = len(WARNINGS.records)
        with Env(SGLANG_HS_DUMP_DIR=out):
            set_ranks(0, 0, chunk=8)
            model = build(mod, "list")
            sched = ChunkingScheduler(mod, "0.5.18", 8)
            for rid, toks in _prompts(2, [3, 9]):
                sched.add(rid, toks)
            try:
                for k in range(2):
                    if k == fail_at:
                        os.link = failing_link
                    batch, _ = sched.next_pass()
                    with torch.no_grad():
                        model.model(batch.input_ids, batch.positions, batch)
                    drain()
            finally:
                os.link = real_link
        got = [r.getMessage() for r in WARNINGS.records[before:]]
        check(len(got) == 1 and "Input/output error" in got[0], "failing at pass %d: warnings %s" % (fail_at, got))
        check(not leftovers(out), "failing at pass %d: left %s" % (fail_at, leftovers(out)))
        check(len(files_in(out)) == fail_at, "failing at pass %d: files %s" % (fail_at, os.listdir(out)))


def _one_chunked_pass(model, sched, rows):
    """One pass of `sched` through `model`, its rows added to `rows` per rid; False when done."""
    got = sched.next_pass()
    if got is None:
        return False
    batch, reqs = got
    with torch.no_grad():
        hidden, aux = model.model(batch.input_ids, batch.positions, batch)
    aux = torch.cat(aux, dim=-1) if not isinstance(aux, torch.Tensor) else aux
    b = 0
    for rid, _p, n in reqs:
        part = [batch.input_ids[b : b + n].cpu().long(), hidden[b : b + n].cpu(), aux[b : b + n].cpu()]
        rows[rid] = [torch.cat([x, y]) for x, y in zip(rows[rid], part)] if rid in rows else part
        b += n
    return True


def case_two_writers_same_name_stem(mod, ref, tmp):
    # two models of one process given the same token, so the same name stem
    # (data_dp0_pid<pid>_<token>) and the same file numbers: their passes interleaved, chunked
    # prompts held by both at once (a preallocated file each from 0.5.1, part files before):
    # no sample lost, each writer its own status file, no warning, the dump on
    for release in ("0.5.18", "0.4.6"):
        out = os.path.join(tmp, "dump-" + release)
        before = len(WARNINGS.records)
        first = _prompts(4, [20, 6, 30, 3], seed=11)
        second = [("s" + rid[1:], toks) for rid, toks in _prompts(4, [17, 9, 25, 4], seed=12)]
        rows = dict()
        with Env(SGLANG_HS_DUMP_DIR=out):
            set_ranks(0, 0, chunk=8)
            a, b = build(mod, "list"), build(mod, "list")
            b.model._hs_dump_state["token"] = a.model._hs_dump_state["token"]
            scheds = []
            for prompts in (first, second):
                scheds.append(ChunkingScheduler(mod, release, 8))
                for rid, toks in prompts:
                    scheds[-1].add(rid, toks)
            going = [True, True]
            while any(going):
                for k, model in enumerate((a, b)):
                    going[k] = going[k] and _one_chunked_pass(model, scheds[k], rows)
        _stitched(out, rows, ref, first + second, rid_field=_v(release) >= (0, 5, 10))
        got = [r.getMessage() for r in WARNINGS.records[before:]]
        check(not got, "%s: warnings %s" % (release, got))
        check(a.model._hs_dump_dir is not None and b.model._hs_dump_dir is not None, "%s: the dump turned off" % release)
        statuses = [n for n in os.listdir(out) if STATUS_RE.fullmatch(n)]
        check(len(statuses) == 2, "%s: status files %s" % (release, statuses))


def case_status_write_failure_keeps_the_dump_on(mod, ref, tmp):
    # the status file cannot be replaced for a while: one warning, every sample written, the
    # dump on; once it can be, the status file says what was written
    import json
    import time

    out = os.path.join(tmp, "dump")
    real_replace = os.replace

    def failing_replace(src, dst, *args, **kwargs):
        if ".hs_dump_status" in str(dst):
            raise OSError(5, "Input/output error")
        return real_replace(src, dst, *args, **kwargs)

    before = len(WARNINGS.records)
    os.replace = failing_replace
    try:
        with Env(SGLANG_HS_DUMP_DIR=out):
            set_ranks(0, 0)
            model = build(mod, "list")
            for _ in range(3):
                ids, pos, batch = make_batch(mod)
                with torch.no_grad():
                    model.model(ids, pos, batch)
        deadline = time.time() + 60
        while time.time() < deadline and len([n for n in os.listdir(out) if n.endswith((".ckpt", ".ckpt.partial"))]) < 6:
            time.sleep(0.05)
        time.sleep(1.5)  # the status thread tries again meanwhile, and fails
    finally:
        os.replace = real_replace
    got = [r.getMessage() for r in WARNINGS.records[before:]]
    check(len(got) == 1 and "status file" in got[0] and "Input/output error" in got[0], "warnings %s" % got)
    check(model.model._hs_dump_dir is not None, "the dump turned off")
    check(len(files_in(out)) == 6, "files %s" % os.listdir(out))
    statuses = [n for n in os.listdir(out) if STATUS_RE.fullmatch(n)]
    check(len(statuses) == 1, "status files %s" % os.listdir(out))
    with open(os.path.join(out, statuses[0])) as f:
        info = json.load(f)
    check(info["queued"] == info["written"] == 3 and info["dropped"] == 0 and info["files"] == 6, "status %s" % info)


# --- provenance: what every sample says about its origin ---------------------------------


def case_provenance_ranks_sizes_and_release(mod, ref, tmp):
    import sglang.srt.fake_rank as fake_rank

    saved = dict(fake_rank.STATE)
    try:
        # a writer of attention-DP group 1 in TP 4 = 2 DP groups x attention TP 2
        fake_rank.STATE.update(tp_size=4, attn_tp_size=2, attn_dp_size=2)
        out = os.path.join(tmp, "dump")
        with Env(SGLANG_HS_DUMP_DIR=out):
            set_ranks(0, 1, tp_rank=2, hide=("sglang.srt.runtime_context",))
            model = build(mod, "list")
            ids, pos, batch = make_batch(mod)
            with torch.no_grad():
                value = model.model(ids, pos, batch)
        check_samples(files_in(out), ids, value[0], torch.cat(value[1], dim=-1), [2, 4, 5], partial=[False, True])
        p = load_sample(files_in(out)[0])["provenance"]
        check((p["tp_rank"], p["tp_size"], p["attn_dp_rank"], p["attn_dp_size"]) == (2, 4, 1, 2), "ranks %r" % p)
    finally:
        fake_rank.STATE.clear()
        fake_rank.STATE.update(saved)


def case_provenance_unknown_where_no_getter_says(mod, ref, tmp):
    # no rank getters (a release older than all of them, or a failing one) and no release
    # metadata: None, not a guess; the pipeline rank comes from the model's own group
    import importlib.metadata

    import sglang

    def version(name):  # no installed release either (a venv may have the real one)
        if name == "sglang":
            raise importlib.metadata.PackageNotFoundError(name)
        return installed(name)

    saved, installed = sglang.__version__, importlib.metadata.version
    sglang.__version__, importlib.metadata.version = None, version
    try:
        out = os.path.join(tmp, "dump")
        _pass(mod, out, hide=RANK_MODULES)
        p = load_sample(files_in(out)[0])["provenance"]
    finally:
        sglang.__version__, importlib.metadata.version = saved, installed
    for key in ("sglang_version", "tp_rank", "tp_size", "attn_tp_rank", "attn_tp_size", "attn_dp_rank", "attn_dp_size"):
        check(p[key] is None, "provenance %s=%r, expected None" % (key, p[key]))
    check((p["pp_rank"], p["pp_size"]) == (0, 1), "pp %r" % ((p["pp_rank"], p["pp_size"]),))


def case_provenance_once_per_model(mod, ref, tmp):
    calls = []
    real = mod._pysplice_hs_provenance

    def counted(*args):
        calls.append(1)
        return real(*args)

    mod._pysplice_hs_provenance = counted
    try:
        out = os.path.join(tmp, "dump")
        with Env(SGLANG_HS_DUMP_DIR=out):
            set_ranks(0, 0)
            model = build(mod, "packed")
            for _ in range(3):
                with torch.no_grad():
                    model.model(*make_batch(mod))
            other = build(mod, "packed", architectures=["DeepseekV2ForCausalLM"])
            with torch.no_grad():
                other.model(*make_batch(mod))
    finally:
        mod._pysplice_hs_provenance = real
    check(len(calls) == 2, "provenance computed %d times for 2 models" % len(calls))
    paths = files_in(out)
    check(len(paths) == 8, "%d files" % len(paths))
    seen = [load_sample(p)["provenance"] for p in paths]
    mine = [p for p in seen if p["architecture"] == "DeepseekV3ForCausalLM"]
    theirs = [p for p in seen if p["architecture"] == "DeepseekV2ForCausalLM"]
    check(len(mine) == 6 and len(theirs) == 2 and all(p == mine[0] for p in mine), "provenance varies within a model")
    config = ref.MockConfig(architectures=["DeepseekV2ForCausalLM"])
    check(theirs[0]["config_sha256"] == config_digest(config) != mine[0]["config_sha256"], "config digest does not follow the config")


def case_specforge_reader_ignores_provenance(mod, ref, tmp):
    # SpecForge's own offline reader yields the same samples and tensors with the key and
    # with it removed from every file
    sys.path.insert(0, os.path.join(HERE, "..", "send"))
    try:
        import specforge_ref
        import specforge.runtime.data_plane.offline_reader  # noqa: F401
    except ImportError as exc:
        raise Skip("SpecForge not importable: %s" % exc) from exc
    finally:
        sys.path.pop(0)
    out = os.path.join(tmp, "dump")
    _pass(mod, out, prefix=[0, 0])
    bare = os.path.join(tmp, "bare")
    os.makedirs(bare)
    for path in files_in(out):
        s = load_sample(path)
        check(isinstance(s.pop("provenance"), dict), "no provenance in %s" % path)
        torch.save(s, os.path.join(bare, os.path.basename(path)))
    a, b = specforge_ref.read(out), specforge_ref.read(bare)
    check(len(a) == len(b) == 2, "SpecForge read %d and %d samples" % (len(a), len(b)))
    for x, y in zip(a, b):
        check(os.path.basename(x["path"]) == os.path.basename(y["path"]), "order differs")
        check((x["sample_id"], x["num_tokens"]) == (y["sample_id"], y["num_tokens"]), "refs differ")
        check(sorted(x["tensors"]) == sorted(y["tensors"]) == ["aux_hidden_state", "hidden_state", "input_ids", "loss_mask"], "keys %s" % sorted(x["tensors"]))
        for key in x["tensors"]:
            check(torch.equal(x["tensors"][key], y["tensors"][key]), "%s differs" % key)


CASES = [(name[5:].replace("_", "-"), fn) for name, fn in list(globals().items()) if name.startswith("case_")]


def run(path):
    fake_root = tempfile.mkdtemp(prefix="hs_fake_sglang_")
    install_fake_sglang(fake_root)
    mod = load(path, "mock_deepseek_v2_under_test")
    track_writers(mod)
    ref = load(PRISTINE, "mock_deepseek_v2_pristine")
    global MOCK_CONFIG
    MOCK_CONFIG = ref.MockConfig  # the config every case builds with (build())
    print("device %s, dtype %s, torch %s, module %s" % (DEVICE, DTYPE, torch.__version__, path))
    passed = failed = 0
    only = [w for w in os.environ.get("HS_TEST_ONLY", "").split(",") if w]  # a subset, by name
    for name, fn in CASES:
        if only and not any(w in name for w in only):
            continue
        tmp = tempfile.mkdtemp(prefix="hs_case_")
        try:
            set_ranks(0, 0)
            fn(mod, ref, tmp)
            leftover = leftovers(tmp)
            check(not leftover, "leftover temporary files: %s" % leftover)
        except Skip as why:
            if os.environ.get("HS_TEST_NO_SKIP") and not isinstance(why, NotHere):  # every case must run (CI)
                failed += 1
                print("FAIL %s: skipped: %s" % (name, why))
            else:
                print("skip %s: %s (not counted)" % (name, why))
        except Exception as exc:
            failed += 1
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            print("FAIL %s: %s" % (name, detail))
            if os.environ.get("HS_TEST_VERBOSE"):
                traceback.print_exc()
        else:
            passed += 1
            print("ok   %s" % name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(fake_root, ignore_errors=True)
    return passed, failed


def main(argv):
    if argv[1:2] == ["--exit-child"]:
        return exit_child(argv[2], argv[3])
    if argv[1:2] == ["--stitch-exit-child"]:
        return stitch_exit_child(argv[2], argv[3])
    if argv[1:2] == ["--kill-child"]:
        return kill_child(*argv[2:6])
    if argv[1:] == ["--unpatched"]:
        passed, failed = run(PRISTINE)
        ok = failed > 0
        print("unpatched mock: %d of %d cases failed, %s" % (failed, passed + failed, "as expected" if ok else "UNEXPECTED: the test cannot fail"))
        return 0 if ok else 1
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.strip())
        return 2
    passed, failed = run(argv[1])
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
