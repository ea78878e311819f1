#!/usr/bin/env python3
"""Throughput of `sglang-hs-send` against a stand-in server doing no work.

    python3 scripts/bench-send.py [--n 3000] [--runs 3] [--concurrency 16,64] [--send PROGRAM]

Needs `transformers` and `tokenizers` in the running interpreter (the sender runs in it too) and
the `sglang-hs-send` program (--send, $SGLANG_HS_SEND, else target/{release,debug}/sglang-hs-send).

Makes the tiny tokenizer of crates/pysplice-sglang/tests/python/send/ and N good conversations (its ChatML template, about
1,000 tokens each on average), starts crates/pysplice-sglang/tests/python/send/standin_server.py with no dump (each request is
answered at once, up to 256 per pass) and times whole runs of the sender, each over every
conversation with a fresh record: first `--dry-run` (read, render and tokenize only: the
reference, measured in the same run), then sending at each concurrency. Prints, per mode, the
median of the runs: wall seconds, conversations/s, prompt tokens/s, the sender's CPU seconds,
and the ratio of its rate to the dry run's. Whole processes: the interpreter's start and the
tokenizer's load are included.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "send"))
sys.dont_write_bytecode = True

import harness  # noqa: E402
import tiny_tokenizer  # noqa: E402


def program(given):
    return given or harness.send_program(kinds=("release", "debug"))


def timed(cmd):
    """(wall seconds, CPU seconds of the child, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit("failed (exit %d): %s\n%s%s" % (proc.returncode, " ".join(cmd), proc.stdout[-2000:], proc.stderr[-2000:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def tokens_of(stdout):
    # "... N conversations sent (T tokens)" / "dry run: N conversations would be sent (T tokens)"
    import re

    m = re.search(r"(\d+) conversations (?:would be )?sent \((\d+) tokens\)", stdout)
    if not m:
        raise SystemExit("no summary line in: %r" % stdout[-500:])
    return int(m.group(1)), int(m.group(2))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=3000, help="conversations (default %(default)s)")
    p.add_argument("--runs", type=int, default=3, help="timed runs of each mode (default %(default)s)")
    p.add_argument("--concurrency", default="16,64", help="comma-separated (default %(default)s)")
    p.add_argument("--send", help="the sglang-hs-send program")
    p.add_argument("--json", help="also write the figures here")
    a = p.parse_args()
    send = program(a.send)
    tmp = tempfile.mkdtemp(prefix="bench-send-")
    server = None
    try:
        tok = os.path.join(tmp, "tok")
        tiny_tokenizer.make(tok)
        cases = [c for c in tiny_tokenizer.conversations(a.n + a.n // 50 + 8, seed=5) if c.kind in ("ok", "sharegpt")][: a.n]
        conv = os.path.join(tmp, "conversations.jsonl")
        tiny_tokenizer.write_jsonl(conv, cases)
        server = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "tests", "send", "standin_server.py"), "--port", "0", "--max-batch", "256"],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = server.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit("the stand-in did not start: %r" % line)
        url = line.split()[-1]
        base = [send, "--python", sys.executable, "--conversations", conv, "--tokenizer", tok, "--progress", "none"]
        modes = [("dry run (render only)", ["--dry-run", "--record", os.path.join(tmp, "dry.record")])]
        for c in [int(x) for x in a.concurrency.split(",")]:
            modes.append(("send, concurrency %d" % c, ["--url", url, "--concurrency", str(c)]))
        rows = []
        for name, extra in modes:
            walls, cpus, counts = [], [], None
            for k in range(a.runs):
                record = os.path.join(tmp, "record-%d.jsonl" % k)
                if os.path.exists(record):
                    os.unlink(record)
                args = extra if "--record" in extra else extra + ["--record", record]
                wall, cpu, out = timed(base + args)
                walls.append(wall)
                cpus.append(cpu)
                counts = tokens_of(out)
            wall = statistics.median(walls)
            rows.append(dict(mode=name, conversations=counts[0], tokens=counts[1], wall_s=round(wall, 3),
                             wall_min_s=round(min(walls), 3), wall_max_s=round(max(walls), 3),
                             cpu_s=round(statistics.median(cpus), 3), per_s=round(counts[0] / wall, 1),
                             tokens_per_s=round(counts[1] / wall)))
        ref = rows[0]["tokens_per_s"]
        print("%d conversations, %d prompt tokens (%.0f a conversation); median of %d runs each"
              % (rows[0]["conversations"], rows[0]["tokens"], rows[0]["tokens"] / max(rows[0]["conversations"], 1), a.runs))
        print("%-26s %9s %14s %16s %8s %9s" % ("mode", "wall s", "conversations/s", "prompt tokens/s", "CPU s", "vs dry"))
        for r in rows:
            r["vs_dry_run"] = round(r["tokens_per_s"] / ref, 3)
            print("%-26s %9.2f %14.1f %16d %8.2f %9.2f" % (r["mode"], r["wall_s"], r["per_s"], r["tokens_per_s"], r["cpu_s"], r["vs_dry_run"]))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
    finally:
        if server is not None:
            server.terminate()
            server.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
