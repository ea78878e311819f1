#!/usr/bin/env python3
"""Every dumped sample against an independent reference: transformers' own model, float32.

    python3 crates/pysplice-sglang/tests/python/real/reference.py DUMP_DIR MODEL_DIR --release X --arch NAME --expect FILE

Runs in the SGLang release's virtual environment (torch, transformers). For each `*.ckpt` below
DUMP_DIR it runs MODEL_DIR's weights through transformers' model class in float32 on the sample's
`input_ids` and compares, token by token (relative L2 error of a row):

- each aux layer: SGLang's capture id `i` is the residual stream entering layer `i`, transformers'
  `hidden_states[i]` (`hidden_states[0]` is the embedding output);
- `hidden_state`: the final post-norm state, what the model returns before the head.

The samples are bfloat16, computed by SGLang in bfloat16. The yardstick of bfloat16 rounding is
measured, not guessed: the same weights run by transformers in bfloat16, compared with float32 the
same way. Each row must be within TOL_TOKEN or SLACK times the yardstick's worst row, whichever is
larger, and the median within TOL_MEDIAN or SLACK times the yardstick's median (SGLang's own
kernels round in other places than transformers' do). Against the next layer's states the same
rows must be APART times further off, so that the check tells one layer from the next. An MoE model's top-k choice can flip between bfloat16 and float32
where two routing scores are nearly equal: a token whose float32 top-k margin (the k-th score less
the next one, relative to the k-th) is under TIE_MARGIN (bfloat16's 1/256) at any MoE layer below
the compared one is a routing-tie token.
Those rows are counted and reported and held to the loose TOL_TIE; the ones that need it (over the
row limit) must stay a small share (MAX_TIE_SHARE of the rows); every other row meets the limit.

Also checked: the layer numbering (`layers_to_capture` is SGLang's default [2, N//2, N-3] unless
the expectation says otherwise, and the provenance's EAGLE-3 ids are those minus one), the
provenance (release, architecture, class, sizes, dtype), the ids (each sample's `input_ids` equal
to the ids of the request the expectation file names for its rid, or for its ids where the release
records no rid) and the loss mask where the expectation gives one. The expectation file is JSON:
{"requests": [{"rid": ..., "input_ids": [...], "loss_mask": [...] or null}], "count": N}.
Exit 0 when every sample holds, 1 otherwise; one line per sample.
"""

import argparse
import glob
import json
import os
import sys

TOL_TOKEN = 0.08
TOL_MEDIAN = 0.01
SLACK = 3.0
APART = 10.0
TOL_TIE = 0.5
TIE_MARGIN = 1.0 / 256
MAX_TIE_SHARE = 0.05


def _row_errors(got, want):
    got, want = got.float().reshape(-1, want.shape[-1]), want.float().reshape(-1, want.shape[-1])
    return ((got - want).norm(dim=-1) / want.norm(dim=-1).clamp_min(1e-6)).tolist()


class Reference:
    """transformers' model of MODEL_DIR in float32, with each MoE router's top-k margins kept."""

    def __init__(self, model_dir):
        import torch
        import transformers

        self.torch = torch
        self.model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        self.model.eval()
        # The same weights computed in bfloat16 by transformers: how far bfloat16 arithmetic alone
        # carries a row from float32, the yardstick of "within bfloat16 rounding".
        self.half = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16)
        self.half.eval()
        self.config = self.model.config
        self.margins = {}  # layer -> [T] margins of the current forward
        for index, layer in enumerate(self.model.model.layers):
            gate = getattr(getattr(layer, "mlp", None), "gate", None)
            if gate is not None and hasattr(gate, "weight"):
                gate.register_forward_pre_hook(self._margin_hook(index, gate))

    def _margin_hook(self, index, gate):
        torch, config = self.torch, self.config

        def hook(module, inputs):
            h = inputs[0].reshape(-1, inputs[0].shape[-1]).float()
            logits = torch.nn.functional.linear(h, gate.weight.float())
            if getattr(config, "scoring_func", "softmax") == "sigmoid":
                scores = logits.sigmoid()
            else:
                scores = logits.softmax(dim=-1)
            bias = getattr(gate, "e_score_correction_bias", None)
            if bias is not None:
                scores = scores + bias.float()
            k = config.num_experts_per_tok
            top = scores.topk(k + 1, dim=-1).values
            # relative to the k-th score: under bfloat16's 8-bit mantissa (1/256) the order can flip
            self.margins[index] = ((top[:, k - 1] - top[:, k]) / top[:, k - 1].abs().clamp_min(1e-6)).tolist()

        return hook

    def run(self, ids):
        torch = self.torch
        self.margins = {}
        with torch.no_grad():
            out = self.model.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
            margins = dict(self.margins)
            half = self.half.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
        return out.hidden_states, out.last_hidden_state, margins, half.hidden_states, half.last_hidden_state


def _tie_tokens(margins, below_layer, count):
    tied = set()
    for layer, values in margins.items():
        if layer < below_layer:
            tied.update(t for t in range(count) if values[t] < TIE_MARGIN)
    return tied


def check_sample(path, sample, ref, expect, args):
    """Problems of one sample (a list of strings) and its row statistics."""
    problems = []
    ids = sample["input_ids"].tolist()
    rid = sample.get("rid")
    # by its rid where the release records one and it is a conversation's; else by its ids
    wanted = expect.get(("rid", rid)) if rid is not None else None
    wanted = wanted or expect.get(("ids", tuple(ids)))
    if wanted is None:
        problems.append("no request sent has rid %r and these %d ids" % (rid, len(ids)))
    else:
        if wanted["input_ids"] != ids:
            problems.append("input_ids differ from the %d ids sent for rid %r" % (len(wanted["input_ids"]), rid))
        mask = wanted.get("loss_mask")
        if mask is not None and sample["loss_mask"].tolist() != mask:
            problems.append("loss_mask is not the one expected")
    n = ref.config.num_hidden_layers
    layers = list(sample.get("layers_to_capture") or [])
    want_layers = args.layers or [2, n // 2, n - 3]
    if layers != want_layers:
        problems.append("layers_to_capture %s, expected %s" % (layers, want_layers))
    prov = sample.get("provenance") or {}
    for key, want in (
        ("sglang_version", args.release),
        ("architecture", args.arch),
        ("num_hidden_layers", n),
        ("hidden_size", ref.config.hidden_size),
        ("dtype", "bfloat16"),
        ("hidden_state", "post-norm"),
        ("aux_layers", layers),
        ("eagle_aux_hidden_state_layer_ids", [i - 1 for i in layers]),
    ):
        if prov.get(key) != want:
            problems.append("provenance %s is %r, expected %r" % (key, prov.get(key), want))
    hidden, final, margins, half_hidden, half_final = ref.run(ids)
    stats = {"rows": 0, "tie_rows": 0, "excused": 0, "worst": 0.0, "errors": []}
    compared = [("hidden_state", sample["hidden_state"][0], final[0], half_final[0], n)]
    aux = sample.get("aux_hidden_state")
    if aux is None:
        problems.append("no aux_hidden_state")
    else:
        width = ref.config.hidden_size
        for j, layer in enumerate(layers):
            part = aux[0][:, j * width : (j + 1) * width]
            compared.append(("aux layer %d" % layer, part, hidden[layer][0], half_hidden[layer][0], layer))
    for name, got, want, half, depth in compared:
        if tuple(got.shape) != tuple(want.shape):
            problems.append("%s has shape %s, the reference %s" % (name, tuple(got.shape), tuple(want.shape)))
            continue
        errors = _row_errors(got, want)
        yardstick = sorted(_row_errors(half, want))
        tied = _tie_tokens(margins, depth, len(errors))
        token_limit = max(TOL_TOKEN, SLACK * yardstick[-1])
        for t, e in enumerate(errors):
            limit = TOL_TIE if t in tied else token_limit
            stats["excused"] += t in tied and e > token_limit
            if e > limit:
                problems.append("%s token %d: relative error %.4f over %.3f%s" % (name, t, e, limit, " (routing tie)" if t in tied else ""))
                break
        clean = sorted(e for t, e in enumerate(errors) if t not in tied)
        median_limit = max(TOL_MEDIAN, SLACK * yardstick[len(yardstick) // 2])
        if clean and clean[len(clean) // 2] > median_limit:
            problems.append("%s median relative error %.4f over %.4f" % (name, clean[len(clean) // 2], median_limit))
        stats["yardstick"] = max(stats.get("yardstick", 0.0), yardstick[len(yardstick) // 2])
        # The comparison must tell layers apart: against the next layer's states the same rows
        # are far off (a dump of the wrong layer, or rows shifted by a token, fails above).
        if depth + 1 < len(hidden) and name != "hidden_state":
            other = sorted(_row_errors(got, hidden[depth + 1][0]))
            if other[len(other) // 2] < APART * median_limit:
                problems.append("%s is as close to layer %d (median %.4f): the check cannot tell layers apart" % (name, depth + 1, other[len(other) // 2]))
        stats["rows"] += len(errors)
        stats["tie_rows"] += len(tied)
        stats["errors"] += clean
        stats["worst"] = max([stats["worst"]] + clean)
    return problems, stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump_dir")
    parser.add_argument("model_dir")
    parser.add_argument("--release", required=True)
    parser.add_argument("--arch", required=True)
    parser.add_argument("--expect", required=True)
    parser.add_argument("--layers", type=lambda s: [int(x) for x in s.split(",")])
    args = parser.parse_args()
    import torch

    with open(args.expect) as f:
        spec = json.load(f)
    expect = {}
    for req in spec["requests"]:
        if req["rid"] is not None:
            expect[("rid", req["rid"])] = req
        expect[("ids", tuple(req["input_ids"]))] = req
    ref = Reference(args.model_dir)
    paths = sorted(glob.glob(os.path.join(glob.escape(args.dump_dir), "**", "*.ckpt"), recursive=True))
    failed, rows, ties, excused, errors = 0, 0, 0, 0, []
    for path in paths:
        sample = torch.load(path, weights_only=True)
        problems, stats = check_sample(path, sample, ref, expect, args)
        rows, ties, errors = rows + stats["rows"], ties + stats["tie_rows"], errors + stats["errors"]
        excused += stats["excused"]
        name = os.path.relpath(path, args.dump_dir)
        if problems:
            failed += 1
            print("FAIL %s: %s" % (name, "; ".join(problems)))
        else:
            print("ok   %s: %d tokens, worst row %.4f (transformers' own bfloat16: median %.4f), %d routing-tie rows" % (
                name, len(sample["input_ids"]), stats["worst"], stats.get("yardstick", 0.0), stats["tie_rows"]))
    if spec.get("count") is not None and len(paths) != spec["count"]:
        failed += 1
        print("FAIL %d samples, expected %d" % (len(paths), spec["count"]))
    if rows and excused > MAX_TIE_SHARE * rows:
        failed += 1
        print("FAIL %d of %d rows are over the limit, excused as routing ties (over %.0f%%)" % (excused, rows, 100 * MAX_TIE_SHARE))
    errors.sort()
    median = errors[len(errors) // 2] if errors else float("nan")
    print(
        "%s: %d samples, %d rows compared, median relative error %.4f, worst %.4f (routing ties aside), %d routing-tie rows, %d of them over the limit; %d failed"
        % ("FAIL" if failed else "OK", len(paths), rows, median, errors[-1] if errors else float("nan"), ties, excused, failed)
    )
    sys.exit(1 if failed or not paths else 0)


if __name__ == "__main__":
    main()
