#!/usr/bin/env python3
"""Prefill throughput of the real SGLang server with the hidden-state dump on against off.

    VENV/bin/python scripts/bench-real-server.py --venv VENV --release X --bin DIR [--arch deepseek_v3]
        [--rounds 5 --prompts 16 --tokens 512 --concurrency 4]

One install, patched by `sglang-hs-dump --installed`, serves the same tiny model (crates/pysplice-sglang/tests/python/real) on a
CPU with the flags it printed, launched alternately with SGLANG_HS_DUMP_DIR set (dump on) and
without (the patched file then does one attribute test per forward): off, on, off, on. Each launch
runs `--rounds` rounds of the same prompts (random token ids, radix cache off) sent
`--concurrency` at a time with max_new_tokens 1, so that prefill is almost all the work; a round's
throughput is its prompt tokens over its wall time. Prints each round, the median of each side and
their ratio (on / off), and reverts the install at the end.
"""

import argparse
import concurrent.futures
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "real"))
import job as real  # noqa: E402


def send_round(url, prompts, concurrency, tag):
    def one(i):
        body = {"input_ids": prompts[i], "sampling_params": {"max_new_tokens": 1, "temperature": 0}, "rid": "%s-%d" % (tag, i)}
        real.http(url + "/generate", body, timeout=600)

    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(len(prompts))))
    return sum(len(p) for p in prompts) / (time.monotonic() - began)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", required=True)
    parser.add_argument("--release", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--arch", default="deepseek_v3", choices=sorted(real.ARCH_CLASS))
    parser.add_argument("--passes", type=int, default=2, help="launches of each side (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per launch (default %(default)s)")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-real-")
    ns = argparse.Namespace(venv=args.venv, release=args.release, arch=args.arch, bin=args.bin, work=work, live=False)
    job = real.Job(ns)
    servers = []
    try:
        real.run([job.bin("sglang-hs-dump"), "--installed", "--python", job.install.python, "--revert"], ok=(0, 1, 2))
        real.run([job.install.python, os.path.join(real.HERE, "tiny_models.py"), job.model, args.arch])
        job.patch()
        rng = random.Random(0)
        prompts = [[rng.randrange(10, 1000) for _ in range(args.tokens)] for _ in range(args.prompts)]
        rates = {"off": [], "on": []}
        # One server at a time: SGLang's scheduler polls while idle, so a second one would take a
        # core from the first. Launches alternate off, on, off, on, ... (`--passes` of each).
        for p in range(args.passes):
            for name in ("off", "on"):
                server = real.Server(job, job.dump if name == "on" else None, job.flags, "%s-%d" % (name, p))
                servers = [server]
                server.wait_ready()
                send_round(server.url, prompts[:2], 2, "warm-%s-%d" % (name, p))  # first passes allocate
                for r in range(args.rounds):
                    rate = send_round(server.url, prompts, args.concurrency, "%s-%d-%d" % (name, p, r))
                    rates[name].append(rate)
                    print("launch %d dump %-3s round %d %8.0f prompt tokens/s" % (p, name, r, rate), flush=True)
                if name == "on":
                    job.wait_idle()
                server.stop()
                servers = []
        files = len([n for n in os.listdir(job.dump) if n.endswith(".ckpt")])
        med_off, med_on = statistics.median(rates["off"]), statistics.median(rates["on"])
        print(json.dumps({"release": args.release, "arch": real.ARCH_CLASS[args.arch], "prompts": args.prompts,
                          "tokens": args.tokens, "concurrency": args.concurrency, "passes": args.passes, "rounds": args.rounds,
                          "off_median": round(med_off), "on_median": round(med_on),
                          "ratio_on_over_off": round(med_on / med_off, 3), "samples_written": files}))
    finally:
        for s in servers:
            try:
                s.stop()
            except real.JobFailed as exc:
                print(exc, file=sys.stderr)
        real.run([job.bin("sglang-hs-dump"), "--installed", "--python", job.install.python, "--revert"], ok=(0, 1, 2))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
