#!/usr/bin/env python3
"""What each sample of a real-server job must hold, computed apart from the programs under test.

    python3 crates/pysplice-sglang/tests/python/real/expect.py TOKENIZER CONVERSATIONS.jsonl OUT.json [--live LIVE.json]

Runs in the SGLang release's virtual environment. For every conversation (JSONL lines with `id`
and `messages`) the ids and loss mask come from SpecForge's own parser (crates/pysplice-sglang/tests/python/send/specforge_ref.py,
`specforge` installed without its dependencies), not from sglang-hs-send. LIVE.json, written by the
job for the live-traffic route, lists what the production server was asked and answered
(`{"rid", "prompt_ids", "output_ids"}`): such a sample is the prompt's ids then the output's,
its mask 0 on the prompt and 1 on the generated tokens. With --masks-unset (a release that records
no rid, so that nothing can set a mask) every mask is expected all ones. OUT.json is the `--expect` file of
crates/pysplice-sglang/tests/python/real/reference.py.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokenizer")
    parser.add_argument("conversations")
    parser.add_argument("out")
    parser.add_argument("--live")
    parser.add_argument("--masks-unset", action="store_true", help="the release records no rid: every mask stays all ones")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "send"))
    import specforge_ref
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(args.tokenizer)
    requests = []
    with open(args.conversations) as f:
        for line in f:
            conv = json.loads(line)
            ids, mask = specforge_ref.parse(tokenizer, conv["messages"])
            mask = [1] * len(ids) if args.masks_unset else mask
            requests.append({"rid": conv["id"], "input_ids": ids, "loss_mask": mask})
    if args.live:
        seen = set()
        with open(args.live) as f:
            for req in json.load(f):
                prompt, output = req["prompt_ids"], req["output_ids"]
                if tuple(prompt + output) in seen:  # the sender keeps the first of equal samples
                    continue
                seen.add(tuple(prompt + output))
                requests.append({"rid": None, "input_ids": prompt + output, "loss_mask": [0] * len(prompt) + [1] * len(output)})
    with open(args.out, "w") as f:
        json.dump({"requests": requests, "count": len(requests)}, f)


if __name__ == "__main__":
    main()
