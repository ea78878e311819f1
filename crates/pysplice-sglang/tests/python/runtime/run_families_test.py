#!/usr/bin/env python3
"""Runtime test of the hidden-state dump on the stand-in model files of four families whose
forwards differ (crates/pysplice-sglang/tests/python/runtime/families: Llama-like through `_init_model`, Qwen3-MoE-like
whose forward is Qwen2-MoE's in another file, GPT-OSS-like, a VLM wrapper calling its language
model with embeddings only), patched by `sglang_hs_dump --arch all`.

    python3 run_families_test.py ROOT             # ROOT holds the patched sglang/ package
    python3 run_families_test.py ROOT --unpatched # ROOT holds the pristine one: every case must fail

Per architecture: a prefill (EXTEND) pass of two requests writes one file per request whose
input_ids, hidden_state (post-norm) and aux_hidden_state equal, slice by slice, what the model's
forward returns with the dump off; a decode pass writes nothing; layers_to_capture is recorded;
a prompt cut into three chunked-prefill passes is stitched into one file of its passes' rows.
With SGLANG_HS_DUMP_LAYERS naming layers the model lacks, the dump turns off with one warning and
the forward's results equal those of the model built without the dump.
Runs on CUDA when available (HS_TEST_DEVICE=cpu forces the CPU). Prints `N passed, M failed`.
"""

import glob
import logging
import os
import sys
import tempfile

import torch

ROOT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
UNPATCHED = "--unpatched" in sys.argv
if ROOT is None or not os.path.isdir(os.path.join(ROOT, "sglang")):
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
sys.path.insert(0, ROOT)
DEVICE = os.environ.get("HS_TEST_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")

from sglang.srt.models import base, gpt_oss, llama, qwen2_moe, qwen3_moe, vlm  # noqa: E402

from dump_writers import close_all, track_writers  # noqa: E402

for _module in (gpt_oss, llama, qwen2_moe, qwen3_moe, vlm):
    track_writers(_module)


ARCHS = [
    ("LlamaForCausalLM", llama.LlamaForCausalLM, lambda m: m.model),
    ("Qwen3MoeForCausalLM", qwen3_moe.Qwen3MoeForCausalLM, lambda m: m.model),
    ("GptOssForCausalLM", gpt_oss.GptOssForCausalLM, lambda m: m.model),
    ("VlmForConditionalGeneration", vlm.VlmForConditionalGeneration, lambda m: m.language_model.model),
]


def build(cls, name, out_dir):
    os.environ["SGLANG_HS_DUMP_DIR"] = out_dir
    torch.manual_seed(0)
    config = base.Config(architectures=[name])
    return cls(config).to(DEVICE).eval()


def batch(mode, lens, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 64, (sum(lens),), generator=g).to(DEVICE)
    return ids, base.ForwardBatch(mode, ids, lens, rids=["r%d" % i for i in range(len(lens))])


def run(model, name, ids, fb, image):
    positions = torch.arange(ids.shape[0], device=DEVICE)
    if name.startswith("Vlm"):
        return model(ids, positions, fb, image=image)
    return model(ids, positions, fb)


def reference(model, inner, name, ids, fb, image):
    """The model's own output with the dump off: (hidden after the final norm, aux [T, K*H])."""
    seen = {}
    handle = inner.register_forward_hook(lambda mod, args, out: seen.setdefault("out", out))
    saved = getattr(inner, "_hs_dump_dir", None)
    inner._hs_dump_dir = None
    try:
        with torch.no_grad():
            run(model, name, ids, fb, image)
    finally:
        inner._hs_dump_dir = saved
        handle.remove()
    out = seen["out"]
    hidden, aux = out if isinstance(out, tuple) else (out, None)
    if aux is not None and not isinstance(aux, torch.Tensor):
        aux = torch.cat(list(aux), dim=-1)
    return hidden, aux


def case(name, cls, inner_of):
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = os.path.join(tmp, "dump")
        model = build(cls, name, out_dir)
        inner = inner_of(model)
        lens = [5, 3]
        ids, fb = batch(base.ForwardMode.EXTEND, lens)
        image = torch.randn(2, 4, device=DEVICE) if name.startswith("Vlm") else None
        with torch.no_grad():
            run(model, name, ids, fb, image)
        close_all()
        files = sorted(glob.glob(os.path.join(out_dir, "*.ckpt")))
        assert len(files) == 2, "%d files after a prefill of 2 requests" % len(files)
        hidden, aux = reference(model, inner, name, ids, fb, image)
        assert aux is not None, "no aux states: capture was not enabled"
        start = 0
        for n, path in zip(lens, files):
            s = torch.load(path, map_location="cpu", weights_only=True)
            sl = slice(start, start + n)
            assert torch.equal(s["input_ids"], ids[sl].cpu().long()), "input_ids differ"
            assert s["hidden_state"].shape == (1, n, hidden.shape[-1]), s["hidden_state"].shape
            assert torch.equal(s["hidden_state"][0], hidden[sl].cpu()), "hidden_state differs"
            assert torch.equal(s["aux_hidden_state"][0], aux[sl].cpu()), "aux_hidden_state differs"
            assert s["layers_to_capture"] == list(inner.layers_to_capture), s["layers_to_capture"]
            assert torch.equal(s["loss_mask"], torch.ones(n, dtype=torch.long))
            check_provenance(s["provenance"], name, inner, hidden)
            start += n
        ids, fb = batch(base.ForwardMode.DECODE, [1, 1], seed=2)
        with torch.no_grad():
            run(model, name, ids, fb, image=None)
        close_all()
        assert len(glob.glob(os.path.join(out_dir, "*.ckpt"))) == 2, "decode wrote files"


def case_chunked(name, cls, inner_of):
    # One 13-token prompt cut by chunked prefill into passes of 5, 5 and 3 tokens, as 0.5.10+
    # batches show it (the same rid, the prefix growing by each chunk, orig_seq_lens the whole
    # prompt): one complete .ckpt, whose rows are those of its passes, in order, bit for bit.
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = os.path.join(tmp, "dump")
        model = build(cls, name, out_dir)
        inner = inner_of(model)
        prompt = torch.randint(0, 64, (13,), generator=torch.Generator().manual_seed(3)).to(DEVICE)
        image = torch.randn(1, 4, device=DEVICE) if name.startswith("Vlm") else None
        hidden, aux, start = [], [], 0
        for n in (5, 5, 3):
            ids = prompt[start : start + n]
            fb = base.ForwardBatch(base.ForwardMode.EXTEND, ids, [n], rids=["long"])
            fb.extend_prefix_lens_cpu = [start]
            fb.extend_prefix_lens = torch.tensor([start])
            fb.orig_seq_lens = torch.tensor([prompt.shape[0]])
            h, a = reference(model, inner, name, ids, fb, image)
            hidden.append(h[:n].cpu())
            aux.append(a[:n].cpu())
            with torch.no_grad():
                run(model, name, ids, fb, image)
            start += n
        close_all()
        names = sorted(os.listdir(out_dir))
        files = [f for f in names if f.endswith(".ckpt")]
        assert len(files) == 1 and not any(f.endswith(".partial") for f in names), "files %s" % names
        s = torch.load(os.path.join(out_dir, files[0]), map_location="cpu", weights_only=True)
        assert s["prefix_len"] == 0, s["prefix_len"]
        assert torch.equal(s["input_ids"], prompt.cpu().long()), "input_ids differ"
        assert torch.equal(s["hidden_state"][0], torch.cat(hidden)), "hidden_state is not its passes' rows"
        assert torch.equal(s["aux_hidden_state"][0], torch.cat(aux)), "aux_hidden_state is not its passes' rows"
        check_provenance(s["provenance"], name, inner, hidden[0])


# Patched by the bundled recipe (`sglang-hs-dump --arch all`): the provenance names the
# program's release (HS_TEST_PYSPLICE_VERSION, when set, says which one).
PYSPLICE_VERSION = os.environ.get("HS_TEST_PYSPLICE_VERSION")


def check_provenance(p, name, inner, hidden):
    """The sample's provenance names this architecture, its backbone class, the layers it
    captured in both conventions, the dtype and width of hidden_state and the config's digest."""
    import hashlib
    import json
    import re

    layers = [int(i) for i in inner.layers_to_capture]
    want = dict(
        recipe="sglang-hs-dump",
        architecture=name,
        model_class=type(inner).__name__,
        dtype=str(hidden.dtype).replace("torch.", ""),
        hidden_size=hidden.shape[-1],
        num_hidden_layers=base.Config().num_hidden_layers,
        hidden_state="post-norm",
        aux_layers=layers,
        eagle_aux_hidden_state_layer_ids=[i - 1 for i in layers],
        aux_layers_requested=None,
    )
    for key, value in want.items():
        assert p[key] == value, "provenance %s=%r, expected %r" % (key, p[key], value)
    version = p["pysplice_version"]
    assert version == PYSPLICE_VERSION if PYSPLICE_VERSION else re.fullmatch(r"\d+\.\d+\.\d+\S*", version), version
    # the stand-in's config refers to itself (text_config): written by name, not by address
    config = vars(base.Config(architectures=[name]))
    text = json.dumps({k: re.sub(" at 0x[0-9a-fA-F]+", "", str(v)) if isinstance(v, base.Config) else v for k, v in config.items()}, sort_keys=True)
    assert p["config_sha256"] == hashlib.sha256(text.encode()).hexdigest(), "config_sha256"


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        if "hidden state dump" in record.getMessage():
            self.messages.append(record.getMessage())


WARNINGS = Warnings()
logging.getLogger().addHandler(WARNINGS)


def same(a, b):
    """Two forward results hold equal tensors (tensors, tuples or lists, result objects)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dict__") and hasattr(b, "__dict__"):
        return vars(a).keys() == vars(b).keys() and all(same(vars(a)[k], vars(b)[k]) for k in vars(a))
    return a == b


def case_bad_layers(name, cls, inner_of):
    # ids past the model's 8 layers (as given, or after SGLang's +1): the dump turns off with
    # one warning and the model is as built without it, its forward results identical
    for bad in ("2,999", "1,7"):
        with tempfile.TemporaryDirectory() as tmp:
            out_dir = os.path.join(tmp, "dump")
            os.environ.pop("SGLANG_HS_DUMP_DIR", None)
            torch.manual_seed(0)
            plain = cls(base.Config(architectures=[name])).to(DEVICE).eval()
            os.environ["SGLANG_HS_DUMP_LAYERS"] = bad
            before = len(WARNINGS.messages)
            try:
                model = build(cls, name, out_dir)
            finally:
                os.environ.pop("SGLANG_HS_DUMP_LAYERS")
            got = WARNINGS.messages[before:]
            assert len(got) == 1 and "SGLANG_HS_DUMP_LAYERS" in got[0], "%s: warnings %s" % (bad, got)
            assert list(inner_of(model).layers_to_capture) == [], "%s: layers %s" % (bad, inner_of(model).layers_to_capture)
            assert not any(getattr(m, "capture_aux_hidden_states", False) for m in model.modules()), "%s: capture on" % bad
            for mode, lens in ((base.ForwardMode.EXTEND, [5, 3]), (base.ForwardMode.DECODE, [1, 1])):
                ids, fb = batch(mode, lens)
                image = torch.randn(2, 4, device=DEVICE) if name.startswith("Vlm") and mode == base.ForwardMode.EXTEND else None
                with torch.no_grad():
                    a = run(model, name, ids, fb, image)
                    b = run(plain, name, ids, batch(mode, lens)[1], image)
                assert same(a, b), "%s: the forward differs from the model built without the dump" % bad
            close_all()
            assert not os.path.exists(out_dir), "%s: files written" % bad


def main():
    passed = failed = 0
    for name, cls, inner_of in ARCHS:
        for label, fn in (("", case), (" chunked", case_chunked), (" bad-layers", case_bad_layers)):
            try:
                fn(name, cls, inner_of)
                passed += 1
                print("ok   %s%s" % (name, label))
            except Exception as exc:  # a failing case, reported
                failed += 1
                print("FAIL %s%s: %r" % (name, label, exc))
    print("%d passed, %d failed" % (passed, failed))
    if UNPATCHED:
        return 0 if passed == 0 else 1
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
