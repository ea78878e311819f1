#!/usr/bin/env python3
"""SpecForge's own online (disaggregated) EAGLE-3 trainer on a CPU, fed from a Mooncake store.

    python specforge_consumer.py --control-dir DIR --run-id RUN [--steps N] [--received FILE]
        [--tiny-dir DIR] [--hidden 64 --vocab 1024 --aux 3]

Runs with the store venv's python (scripts/store-venv.sh), the Mooncake client variables in the
environment (mooncake_stack.py's `env`). SpecForge is the pinned copy beside the checkout
(../shared/third_party/specforge, or --specforge DIR / $SPECFORGE_SRC: the folder that holds the
`specforge` package), put first on sys.path; a `specforge` imported from anywhere else is refused.

What runs is SpecForge's direct route: `build_disagg_online_consumer` + `Trainer.fit()` over a
`MooncakeFeatureStore(retain_on_release=True)` (a client without a segment of its own, store id
the run id unless --store-id) and a `StreamingRefChannel(DIR/refs.jsonl)`. The trainer publishes
`.consumer_quantum`, acknowledges, deletes the objects of what it trained on, and writes
`.consumer_done` or `.consumer_failed`, as in a real run. Replaced in this process only (SpecForge's
files are not touched): a one-rank gloo process group with FSDP_SHARDING=NO_SHARD, a tiny EAGLE-3
draft (one layer, sdpa attention) for a target of width --hidden and vocabulary --vocab, the Triton
loss (`specforge.algorithms.eagle3.model.LogSoftmaxLoss`) by the same masked
-sum(p * log_softmax) in plain torch, and TORCHDYNAMO_DISABLE=1 (compiling costs a minute a run).

The target's lm_head and embedding come from --tiny-dir: a model folder that holds a config.json is
read as it is (a folder without a *.index.json, as save_pretrained writes one file, is reached
through a folder of links beside it in DIR, with an index); an empty or missing folder gets random
bfloat16 weights of the given sizes. Default: DIR/tiny-target.

With --received FILE: one JSON line per sample trained on, written when its optimizer step is
acknowledged: sample_id, step, that step's loss, and for each tensor its shape, dtype and the
sha256 of its bytes exactly as the store handed them over (the feature store's read is observed on
this instance; SpecForge's code is unchanged). Each step's loss is printed. Exit status 0 only when
fit() ended normally after at least one step and every loss was finite.
"""

import argparse
import glob
import hashlib
import json
import math
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
DEFAULT_SPECFORGE = os.path.join(os.path.dirname(REPO), "shared", "third_party", "specforge")
ACK_REASON = "optimizer-boundary-durable-ack"  # what SpecForge's DPAckController aborts trained samples with
START = time.monotonic()


def say(message):
    print("[consumer %6.1fs] %s" % (time.monotonic() - START, message), flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="specforge_consumer.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--control-dir", required=True, help="the channel's folder: refs.jsonl and its sidecars")
    p.add_argument("--run-id", required=True)
    p.add_argument("--store-id", help="the Mooncake key prefix (default: $DISAGG_STORE_ID, else the run id)")
    p.add_argument("--steps", type=int, help="max_steps (default: until the producer's .closed, drained)")
    p.add_argument("--received", help="write a JSON line per sample trained on here")
    p.add_argument("--tiny-dir", help="the target's model folder (default: CONTROL_DIR/tiny-target)")
    p.add_argument("--hidden", type=int, default=64, help="the target's hidden size (default 64)")
    p.add_argument("--vocab", type=int, default=1024, help="the target's vocabulary (default 1024)")
    p.add_argument("--aux", type=int, default=3, help="aux layers in hidden_state (SpecForge's Llama draft: 3)")
    p.add_argument("--draft-vocab", type=int, help="the draft's vocabulary (default min(64, vocab))")
    p.add_argument("--ttt-length", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--accumulation-steps", type=int, default=1)
    p.add_argument("--idle-timeout", type=float, default=60.0, help="seconds without a ref before failing")
    p.add_argument("--buffer-bytes", type=int, default=64 << 20, help="the store client's local buffer")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fail-after-steps", type=int, help="the loss raises in the step after this many (a trainer that fails)")
    p.add_argument("--specforge", default=os.environ.get("SPECFORGE_SRC", DEFAULT_SPECFORGE),
                   help="the folder holding the `specforge` package (default: $SPECFORGE_SRC, else %(default)s)")
    args = p.parse_args(argv)
    if args.aux != 3:
        p.error("--aux %d: SpecForge's Llama EAGLE-3 draft reads exactly 3 aux layers" % args.aux)
    if args.hidden % 4:
        p.error("--hidden must be a multiple of 4 (the draft has 4 heads)")
    args.draft_vocab = args.draft_vocab or min(64, args.vocab)
    if not 0 < args.draft_vocab <= args.vocab:
        p.error("--draft-vocab must be in 1..vocab")
    for name in ("MOONCAKE_METADATA_SERVER", "MOONCAKE_MASTER_SERVER_ADDR"):
        if not os.environ.get(name):
            p.error("%s is not set (mooncake_stack.py's env)" % name)
    return args


def import_specforge(folder):
    """Puts the pinned copy first on sys.path and checks that it is the one imported."""
    folder = os.path.realpath(folder)
    if not os.path.isfile(os.path.join(folder, "specforge", "__init__.py")):
        raise SystemExit("specforge_consumer.py: no specforge package in %s (--specforge)" % folder)
    sys.path.insert(0, folder)
    import specforge

    found = os.path.realpath(specforge.__file__)
    if not found.startswith(folder + os.sep):
        raise SystemExit("specforge_consumer.py: imported %s, not the copy in %s" % (found, folder))
    return found


# -- the target's files -------------------------------------------------------------------------
def make_tiny_target(folder, hidden, vocab, seed):
    """config.json + lm_head and embedding in bfloat16 + an index: what TargetHead.from_pretrained
    and the draft's load_embedding read."""
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig

    os.makedirs(folder, exist_ok=True)
    config = LlamaConfig(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=8,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=vocab,
                         max_position_embeddings=4096, tie_word_embeddings=False)
    config.architectures = ["LlamaForCausalLM"]
    config.save_pretrained(folder)
    g = torch.Generator().manual_seed(seed)
    weights = {name: (torch.randn(vocab, hidden, generator=g) * 0.05).to(torch.bfloat16)
               for name in ("lm_head.weight", "model.embed_tokens.weight")}
    save_file(weights, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        json.dump({"metadata": {}, "weight_map": {name: "model.safetensors" for name in weights}}, f)
    return folder


def target_folder(args):
    """The folder TargetHead and load_embedding read: --tiny-dir as it is, through an indexed view
    when it has no index, or made."""
    folder = os.path.abspath(args.tiny_dir or os.path.join(args.control_dir, "tiny-target"))
    if not os.path.isfile(os.path.join(folder, "config.json")):
        if os.path.isdir(folder) and os.listdir(folder):
            raise SystemExit("specforge_consumer.py: %s holds files but no config.json" % folder)
        return make_tiny_target(folder, args.hidden, args.vocab, args.seed)
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config = config.get("text_config", config)
    if (config.get("hidden_size"), config.get("vocab_size")) != (args.hidden, args.vocab):
        raise SystemExit("specforge_consumer.py: %s has hidden %s, vocab %s; asked for %d, %d" % (
            folder, config.get("hidden_size"), config.get("vocab_size"), args.hidden, args.vocab))
    if glob.glob(os.path.join(folder, "*.index.json")):
        return folder
    from safetensors import safe_open

    view = os.path.join(os.path.abspath(args.control_dir), "target-view")
    os.makedirs(view, exist_ok=True)
    weight_map = {}
    for name in sorted(os.listdir(folder)):
        if name == "config.json" or name.endswith(".safetensors"):
            link = os.path.join(view, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join(folder, name), link)
        if name.endswith(".safetensors"):
            with safe_open(os.path.join(folder, name), framework="pt") as f:
                weight_map.update({key: name for key in f.keys()})
    with open(os.path.join(view, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    return view


def tiny_draft(args, target_dir):
    """SpecForge's Llama EAGLE-3 draft, one layer, sdpa attention, bfloat16; the draft vocabulary
    is the target's first --draft-vocab ids."""
    import torch
    from specforge.modeling.auto import AutoDraftModel
    from transformers import LlamaConfig

    h = args.hidden
    config = LlamaConfig(hidden_size=h, intermediate_size=2 * h, num_hidden_layers=1, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=h // 4, vocab_size=args.vocab, max_position_embeddings=4096,
                         rms_norm_eps=1e-6, pad_token_id=0, tie_word_embeddings=False)
    config.architectures = ["LlamaForCausalLMEagle3"]
    config.draft_vocab_size = args.draft_vocab
    config.target_hidden_size = h
    draft = AutoDraftModel.from_config(config, attention_backend="sdpa", torch_dtype=torch.bfloat16)
    draft.load_embedding(target_dir)
    draft.freeze_embedding()
    with torch.no_grad():
        draft.t2d.zero_()
        draft.t2d[: args.draft_vocab] = True
        draft.d2t.zero_()  # target id = draft id + d2t[draft id]
    return draft


class TorchLogSoftmaxLoss:
    """specforge.core.loss.LogSoftmaxLoss (a Triton kernel) as its reference computes it:
    -sum(mask * p * log_softmax(logits)) over the vocabulary, mean over the rest."""

    calls, fail_after = 0, None  # --fail-after: its loss raises from that many calls on

    @staticmethod
    def apply(logits, target_p, position_mask):
        import torch

        TorchLogSoftmaxLoss.calls += 1
        if TorchLogSoftmaxLoss.fail_after is not None and TorchLogSoftmaxLoss.calls > TorchLogSoftmaxLoss.fail_after:
            raise RuntimeError("a failure injected by --fail-after-steps")
        logp = torch.log_softmax(logits.float(), dim=2)
        return -torch.sum(position_mask * (target_p * logp), 2).mean()


# -- what the store hands over ------------------------------------------------------------------
def describe(t):
    import torch

    raw = t.contiguous().reshape(-1).view(torch.uint8).numpy()
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "sha256": hashlib.sha256(raw.tobytes()).hexdigest()}


class Observer:
    """Watches one MooncakeFeatureStore instance: each tensor's bytes as get_into filled them,
    which sample they belong to, which samples an optimizer step acknowledged (the trained ones),
    and each step's loss (the trainer's logger)."""

    def __init__(self, store, received_path):
        self.lock = threading.Lock()
        self.by_key = {}  # store key -> description, until its get() returns
        self.fetched = {}  # sample id -> {name: description}
        self.acked = []  # trained sample ids not yet given a step
        self.steps = []  # (step, loss, all losses finite)
        self.lines = 0
        self.out = open(received_path, "w", encoding="utf-8") if received_path else None
        self._wrap(store)

    def _wrap(self, store):
        read, get, abort = store._store_get_tensor, store.get, store.abort

        def observed_read(key, out):
            read(key, out)
            with self.lock:
                self.by_key[key] = describe(out)

        def observed_get(ref, *a, **kw):
            tensors, handle = get(ref, *a, **kw)
            gen = int(ref.metadata["generation"])
            with self.lock:
                self.fetched[ref.sample_id] = {
                    name: self.by_key.pop("%s/%s/g%d/%s" % (store.store_id, ref.sample_id, gen, name))
                    for name in tensors}
            return tensors, handle

        def observed_abort(sample_id, *a, **kw):
            if kw.get("reason", a[0] if a else None) == ACK_REASON:
                with self.lock:
                    self.acked.append(sample_id)
            return abort(sample_id, *a, **kw)

        store._store_get_tensor, store.get, store.abort = observed_read, observed_get, observed_abort

    def logger(self, metrics, step):
        """The trainer's logger: called after each optimizer step, after its acknowledgement."""
        values = {k: float(v) for k, v in metrics.items() if k == "loss" or k.startswith("ploss_")}
        if "loss" not in values:
            return
        finite = all(math.isfinite(v) for v in values.values())
        with self.lock:
            self.steps.append((step, values["loss"], finite))
            trained, self.acked = self.acked, []
            lines = [{"sample_id": sid, "step": step, "loss": values["loss"], "tensors": self.fetched.pop(sid, None)}
                     for sid in trained]
        say("step %d loss %.6f%s  samples %s" % (step, values["loss"], "" if finite else " NOT FINITE",
                                                ", ".join(trained)))
        self.write(lines)

    def write(self, lines):
        if self.out is None:
            return
        for line in lines:
            self.out.write(json.dumps(line, sort_keys=True) + "\n")
            self.lines += 1
        self.out.flush()

    def close(self):
        with self.lock:
            rest = [{"sample_id": sid, "step": None, "loss": None, "tensors": self.fetched.pop(sid, None)}
                    for sid in self.acked]
            self.acked = []
        self.write(rest)
        if self.out is not None:
            self.out.close()


def main(argv):
    args = parse_args(argv)
    os.environ["TORCHDYNAMO_DISABLE"] = "1"
    os.environ["FSDP_SHARDING"] = "NO_SHARD"
    os.environ["SPECFORGE_DEVICE"] = "cpu"
    specforge_file = import_specforge(args.specforge)

    from importlib.metadata import version

    import torch
    import torch.distributed as dist
    import transformers

    say("specforge %s; torch %s, transformers %s, mooncake %s" % (
        os.path.dirname(specforge_file), torch.__version__, transformers.__version__,
        version("mooncake-transfer-engine-non-cuda")))
    torch.manual_seed(args.seed)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)

    import specforge.algorithms.eagle3.model as eagle3_model

    eagle3_model.LogSoftmaxLoss = TorchLogSoftmaxLoss  # the name the module bound at import
    if args.fail_after_steps is not None:  # each step computes the loss once per TTT position
        TorchLogSoftmaxLoss.fail_after = args.fail_after_steps * args.ttt_length * args.accumulation_steps
    from specforge.algorithms.eagle3.model import OnlineEagle3Model
    from specforge.algorithms.eagle3.providers import create_registration
    from specforge.launch import build_disagg_online_consumer
    from specforge.modeling.target.target_head import TargetHead
    from specforge.optimizer import BF16Optimizer
    from specforge.runtime.data_plane.mooncake_store import MooncakeFeatureStore
    from specforge.runtime.data_plane.streaming_ref_channel import StreamingRefChannel

    control = os.path.abspath(args.control_dir)
    os.makedirs(control, exist_ok=True)
    target_dir = target_folder(args)
    model = OnlineEagle3Model(draft_model=tiny_draft(args, target_dir), length=args.ttt_length,
                              attention_backend="sdpa").to(torch.bfloat16)
    target_head = TargetHead.from_pretrained(target_dir)

    def optimizer_factory(module):
        return BF16Optimizer(module, lr=1e-3, max_grad_norm=0.5, warmup_ratio=0.0, lr_scheduler="constant",
                             total_steps=args.steps or 1000)

    # As SpecForge's own _mooncake_store() reads the environment; no segment of its own: the
    # objects live in the writer's segment or a segment host's.
    store = MooncakeFeatureStore(
        store_id=args.store_id or os.environ.get("DISAGG_STORE_ID") or args.run_id,
        setup_kwargs={
            "local_hostname": os.environ.get("MOONCAKE_LOCAL_HOSTNAME", "127.0.0.1"),
            "metadata_server": os.environ["MOONCAKE_METADATA_SERVER"],
            "master_server_addr": os.environ["MOONCAKE_MASTER_SERVER_ADDR"],
            "protocol": os.environ.get("MOONCAKE_PROTOCOL", "tcp"),
            "rdma_devices": "",
            "global_segment_size": 0,
            "local_buffer_size": args.buffer_bytes,
        },
        retain_on_release=True,  # the builder insists: objects go at the optimizer-durable ack
    )
    observer = Observer(store, args.received)
    trainer = build_disagg_online_consumer(
        algorithm=create_registration(),
        feature_store=store,
        channel=StreamingRefChannel(os.path.join(control, "refs.jsonl")),
        draft_model=model,
        target_head=target_head,
        optimizer_factory=optimizer_factory,
        run_id=args.run_id,
        output_dir=os.path.join(control, "out"),
        batch_size=args.batch_size,
        accumulation_steps=args.accumulation_steps,
        max_steps=args.steps,
        idle_timeout_s=args.idle_timeout,
        metadata_db_path=os.path.join(control, "consumer.sqlite"),
        logger=observer.logger,
        log_interval=1,
        strategy_kwargs={},
    )
    say("consumer built (store id %s); fit() starts" % store.store_id)
    failure = None
    try:
        step = trainer.fit()
        say("fit() ended at step %d" % step)
    except BaseException as exc:  # SpecForge has written .consumer_failed
        failure = "%s: %s" % (type(exc).__name__, exc)
        say("fit() failed: " + failure)
    finally:
        observer.close()
        dist.destroy_process_group()
    problems = [failure] if failure else []
    if not observer.steps:
        problems.append("no optimizer step was logged")
    problems += ["step %d: a loss is not finite" % s for s, _, finite in observer.steps if not finite]
    for problem in problems:
        say("FAILED: " + problem)
    if not problems:
        say("%d steps, every loss finite; %d samples written to %s" % (
            len(observer.steps), observer.lines, args.received or "(no --received)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
