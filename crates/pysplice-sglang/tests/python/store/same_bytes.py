#!/usr/bin/env python3
"""Does each sample a trainer received hold the bytes of its sample file?

    python same_bytes.py RECEIVED.jsonl DUMP_DIR

RECEIVED.jsonl is specforge_consumer.py's --received: per sample, the sha256, shape and dtype of
each tensor as the store handed it over. DUMP_DIR holds SAMPLE.ckpt for each (the store sink's
?keep=files), read with torch.load(weights_only=True), mapped to SpecForge's online names:
hidden_state is the file's aux_hidden_state, target its hidden_state, input_ids and loss_mask
its own as [1, L], attention_mask all ones. Prints one line per difference; exit 0 when none.
"""

import hashlib
import json
import os
import sys

import torch


def online(sample):
    """The five tensors of a sample file under SpecForge's online names."""
    n = sample["input_ids"].numel()
    return dict(
        hidden_state=sample["aux_hidden_state"], target=sample["hidden_state"], input_ids=sample["input_ids"].reshape(1, n),
        loss_mask=sample["loss_mask"].reshape(1, n), attention_mask=torch.ones((1, n), dtype=torch.long))


def describe(t):
    raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return dict(shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""), sha256=hashlib.sha256(raw).hexdigest())


def differences(received, dump_dir):
    with open(received) as f:
        lines = [json.loads(line) for line in f]
    out = []
    for r in lines:
        path = os.path.join(dump_dir, r["sample_id"] + ".ckpt")
        if not os.path.exists(path):
            out.append("%s: no sample file %s" % (r["sample_id"], path))
            continue
        want = online(torch.load(path, weights_only=True))
        for name, t in want.items():
            got, expected = r["tensors"].get(name), describe(t)
            if got != expected:
                out.append("%s: %s received %s, the file holds %s" % (r["sample_id"], name, got, expected))
    return len(lines), out


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    count, out = differences(*argv)
    for line in out:
        print(line)
    print("%d samples, %d differences" % (count, len(out)))
    return 1 if out or not count else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
