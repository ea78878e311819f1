#!/usr/bin/env python3
"""End-to-end test of `sglang-hs-send` at the protocol level, without PyTorch (CI runs it).

    python3 crates/pysplice-sglang/tests/python/send/protocol.py            # exit 0 when every check passes; prints timings

Needs `transformers` and `tokenizers` (the tiny tokenizer), `smg==1.13.0` (the router) and the
`sglang-hs-send` program ($SGLANG_HS_SEND, else target/{debug,release}/sglang-hs-send). The
stand-ins run without the dump (no PyTorch, no sample files): each records every request it
accepts (`--log`), and the sender keeps its record (`--record`) with no dump folder, so a
conversation is done once the server answered it. crates/pysplice-sglang/tests/python/send/e2e.py is the same job with the
real dump writing the samples (it needs PyTorch).

Over 300 conversations of the tiny tokenizer's ChatML template (ShareGPT-shaped lines among
them; three over the context length, one the template rejects, two lines that are not JSON):

1. one server failing its first requests transiently: every good conversation is accepted
   exactly once, under its own rid, with the ids its chat template renders to; each bad line
   is named with its line number and never sent; exit status 1;
2. Ctrl-C (SIGINT) mid-run, then the same command: exit 130 first; then every conversation
   accepted exactly once over both runs (the requests in flight were answered and recorded);
3. two servers behind the real smg router, the sender killed with SIGKILL mid-run, then the
   same command: every conversation accepted at least once, again only those in flight at the
   kill (at most --concurrency), and both servers got work.
"""

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
sys.path[:0] = [HERE]

import router  # noqa: E402
from harness import send_program, start_server  # noqa: E402
import tiny_tokenizer  # noqa: E402

N = 300
NOT_JSON = (7, 150)
CONCURRENCY = 8
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


def phase(name, t0):
    print("%7.2f s  %s" % (time.time() - t0, name), flush=True)
    return time.time()


def accepted(*logs):
    """rid -> [input_ids of each request the servers accepted for it]."""
    out = collections.defaultdict(list)
    for log in logs:
        if not os.path.exists(log):
            continue
        with open(log, encoding="utf-8") as f:
            for line in f:
                # A stand-in may be mid-write while the test polls: its last line is whole
                # only once it ends in a newline.
                if not line.endswith("\n"):
                    break
                entry = json.loads(line)
                out[entry["rid"]].append(entry["input_ids"])
    return out


def count(*logs):
    return sum(len(v) for v in accepted(*logs).values())


def command(url, conv, tok, record):
    return [send_program(), "--python", sys.executable, "--conversations", conv, "--tokenizer", tok,
            "--url", url, "--record", record, "--concurrency", str(CONCURRENCY), "--retries", "6",
            "--progress", "lines"]


# Each pass of the stand-ins in runs 2 and 3 takes 0.1 s, 4 requests at most: a run lasts
# 7 s or more, so the signal comes mid-run however busy the machine is.
def stop_after(cmd, logs, requests, sig):
    """Start the sender; send it `sig` once the servers accepted `requests` requests."""
    # SIGINT as a terminal gives it: a shell without job control (CI runs this test in the
    # background) starts its background commands with SIGINT ignored, and Python keeps an
    # ignored SIGINT ignored.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while count(*logs) < requests and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    early = proc.poll() is None
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=300)
    return early, proc.returncode, out, err


def verify(name, got, expected, kinds, stderr, code, duplicates=0):
    """Every good conversation accepted with its ids, at most `duplicates` of them twice; no
    bad line sent, each named."""
    check(code == 1, "%s: exit status %s, wanted 1 (lines were skipped)" % (name, code))
    check(set(got) == set(expected), "%s: %d of %d accepted; missing %s, extra %s" % (
        name, len(set(got) & set(expected)), len(expected), sorted(set(expected) - set(got))[:5],
        sorted(set(got) - set(expected))[:5]))
    twice = sorted(rid for rid, sends in got.items() if len(sends) > 1)
    check(len(twice) <= duplicates, "%s: %d sent twice (at most %d may be): %s" % (name, len(twice), duplicates, twice[:5]))
    for rid, sends in got.items():
        if rid in expected:
            check(all(ids == expected[rid] for ids in sends), "%s: %s sent with other ids than its template renders" % (name, rid))
    for number, kind in kinds.items():
        if kind in ("not-json", "long", "rejected"):
            check(re.search(r"conversations\.jsonl:%d: skipped" % number, stderr), "%s: line %d (%s) not named" % (name, number, kind))


def main():
    from transformers import AutoTokenizer

    t_all = t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="send-protocol-")
    procs = []

    def server(log, *args):
        proc, url = start_server("--log", log, *args)
        procs.append(proc)
        return proc, url

    def stop(*servers):
        for proc, _ in servers:
            proc.send_signal(signal.SIGTERM)
        for proc, _ in servers:
            check(proc.wait(60) == 0, "a stand-in did not stop cleanly")

    try:
        tok = os.path.join(tmp, "tok")
        tiny_tokenizer.make(tok)
        tokenizer = AutoTokenizer.from_pretrained(tok)
        cases = tiny_tokenizer.conversations(N, seed=11)
        conv = os.path.join(tmp, "conversations.jsonl")
        kinds = tiny_tokenizer.write_jsonl(conv, cases, not_json=NOT_JSON)
        expected = {}
        for c in cases:
            if c.kind in ("ok", "sharegpt"):
                text = tokenizer.apply_chat_template(tiny_tokenizer.messages_of(c.line), tokenize=False)
                expected[c.line["id"]] = tokenizer(text, add_special_tokens=False)["input_ids"]
        t0 = phase("tokenizer and %d conversations (%d good)" % (N, len(expected)), t0)

        # 1. one server, transient failures first
        log = os.path.join(tmp, "one.jsonl")
        one = server(log, "--fail-first", "4")
        proc = subprocess.run(command(one[1], conv, tok, os.path.join(tmp, "one.record")),
                              capture_output=True, text=True, timeout=300)
        verify("one server", accepted(log), expected, kinds, proc.stderr, proc.returncode)
        check("%d conversations sent" % len(expected) in proc.stdout, "1. summary: %r" % proc.stdout[-300:])
        stop(one)
        t0 = phase("1. one server failing its first 4 requests: exit %d" % proc.returncode, t0)

        # 2. Ctrl-C mid-run, then the same command again
        log = os.path.join(tmp, "interrupted.jsonl")
        slow = server(log, "--delay", "0.1", "--max-batch", "4")
        cmd = command(slow[1], conv, tok, os.path.join(tmp, "interrupted.record"))
        early, code, out, _ = stop_after(cmd, [log], 60, signal.SIGINT)
        check(early, "2. the sender finished before it could be interrupted")
        check(code == 130 and "rerun the same command" in out, "2. Ctrl-C: exit %s, %r" % (code, out[-300:]))
        first = count(log)
        check(first < len(expected) - 10, "2. %d accepted before the interruption took effect" % first)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        verify("interrupted", accepted(log), expected, kinds, proc.stderr, proc.returncode)
        stop(slow)
        t0 = phase("2. Ctrl-C after %d accepted, then rerun: exit %d" % (first, proc.returncode), t0)

        # 3. two servers behind the router, the sender killed mid-run
        logs = [os.path.join(tmp, "node%d.jsonl" % i) for i in range(2)]
        nodes = [server(lg, "--delay", "0.1", "--max-batch", "4") for lg in logs]
        r = router.start([u for _, u in nodes])
        cmd = command(r.url, conv, tok, os.path.join(tmp, "nodes.record"))
        early, code, _, _ = stop_after(cmd, logs, 80, signal.SIGKILL)
        check(early and code == -signal.SIGKILL, "3. kill: early %s, exit %s" % (early, code))
        first = count(*logs)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        verify("router", accepted(*logs), expected, kinds, proc.stderr, proc.returncode, duplicates=CONCURRENCY)
        per_node = [count(lg) for lg in logs]
        check(min(per_node) > 0, "3. requests per node %r" % per_node)
        r.stop()
        stop(*nodes)
        t0 = phase("3. two stand-ins behind smg, SIGKILL after %d accepted, then rerun: exit %d, "
                   "requests per node %r" % (first, proc.returncode, per_node), t0)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%7.2f s  total" % (time.time() - t_all))
    print("%d checks failed" % len(FAILURES) if FAILURES else "all checks passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
