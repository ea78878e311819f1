#!/usr/bin/env python3
"""End-to-end test of `sglang-hs-send` against stand-in SGLang servers running the real dump.

    python3 crates/pysplice-sglang/tests/python/send/e2e.py            # exit 0 when every check passes; prints timings

Needs what crates/pysplice-sglang/tests/python/send/selftest.py needs (PyTorch on the CPU, transformers, `smg==1.13.0`,
`specforge==0.2.0`) and the `sglang-hs-send` program: $SGLANG_HS_SEND, else
target/{debug,release}/sglang-hs-send of this checkout. No GPU.

Each stand-in (standin_server.py) runs the patched mock's forward, so the samples are written by
the recipe's real injected dump code. Over 300 conversations of the tiny tokenizer's ChatML
template (with ShareGPT-shaped lines, three over the context length, one the template rejects
and two lines that are not JSON), three runs:

1. one server that fails its first requests transiently: every good conversation lands exactly
   once as a complete sample whose input_ids and loss_mask equal what SpecForge's own parser
   gives for it, SpecForge's offline reader loads the folder, each bad line is named with its
   line number and never sent, and the exit status is 1 (some were skipped);
2. the same, the sender stopped with Ctrl-C (SIGINT) mid-run, then rerun: exit 130 and a
   message first, then nothing lost, nothing duplicated;
3. two servers behind the real smg router, each dumping into its own node folder, the sender
   killed with SIGKILL mid-run, then rerun over the parent folder: the same, and both servers
   got work.
"""

import glob
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
sys.path[:0] = [HERE, os.path.join(REPO, "crates", "pysplice-sglang", "python")]

import router  # noqa: E402
from harness import send_program  # noqa: E402
import selftest  # noqa: E402  (its server and patching helpers)
import specforge_ref  # noqa: E402
import tiny_tokenizer  # noqa: E402

N = 300
NOT_JSON = (7, 150)
TIMES, FAILURES = [], []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


def phase(name, t0):
    TIMES.append((name, time.time() - t0))
    print("%7.2f s  %s" % (TIMES[-1][1], name), flush=True)
    return time.time()


def send_command(url, conv, tok, dumps, *extra):
    cmd = [send_program(), "--python", sys.executable, "--conversations", conv, "--tokenizer", tok, "--url", url]
    for d in dumps:
        cmd += ["--dump-dir", d]
    return cmd + ["--concurrency", "8", "--retries", "6", "--progress", "lines", "--land-grace", "3", *extra]


def run_send(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def samples(folder):
    return [p for p in glob.glob(os.path.join(folder, "**", "*.ckpt*"), recursive=True)]


def stop_after(cmd, folder, count, sig):
    """Start the sender, stop it with `sig` once `count` samples are in `folder`."""
    # SIGINT as a terminal gives it, even where this test was started with SIGINT ignored
    # (a background command of a shell without job control), which Python would keep.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 300
    while len(samples(folder)) < count and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    stopped_early = proc.poll() is None
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=600)
    return stopped_early, proc.returncode, out, err


def verify(name, folder, kinds, cases, tok, expected, stderr, code):
    """Every good conversation exactly once, complete, with SpecForge's ids and mask; the bad
    lines named; SpecForge's reader loads the folder."""
    import torch

    good = {c.line["id"] for c in cases if c.kind in ("ok", "sharegpt")}
    seen, partial = {}, []
    for path in samples(folder):
        if path.endswith(".partial"):
            partial.append(path)
            continue
        s = torch.load(path, map_location="cpu", weights_only=True)
        check(s["rid"] not in seen, "%s: rid %s twice (%s, %s)" % (name, s["rid"], seen.get(s["rid"]), path))
        seen[s["rid"]] = path
        ids, mask = expected[s["rid"]]
        check(s["input_ids"].tolist() == ids, "%s: %s input_ids differ from SpecForge's" % (name, s["rid"]))
        check(s["loss_mask"].tolist() == mask, "%s: %s loss_mask differs from SpecForge's" % (name, s["rid"]))
    check(not partial, "%s: partial samples %s" % (name, partial[:3]))
    check(set(seen) == good, "%s: %d of %d conversations landed; missing %s, extra %s"
          % (name, len(set(seen) & good), len(good), sorted(good - set(seen))[:5], sorted(set(seen) - good)[:5]))
    check(code == 1, "%s: exit status %s, wanted 1 (lines were skipped)" % (name, code))
    for number, kind in kinds.items():
        if kind in ("not-json", "long", "rejected"):
            pattern = r"conversations\.jsonl:%d: skipped" % number
            check(re.search(pattern, stderr), "%s: line %d (%s) not named: %s" % (name, number, kind, pattern))
    refs = specforge_ref.read(folder)
    check(len(refs) == len(good), "%s: SpecForge's reader yields %d samples, wanted %d" % (name, len(refs), len(good)))
    for ref in refs[:20]:
        s = torch.load(ref["path"], map_location="cpu", weights_only=True)
        check(ref["tensors"]["loss_mask"].tolist() == s["loss_mask"].tolist(), "%s: reader's mask of %s" % (name, ref["path"]))


def main():
    from transformers import AutoTokenizer

    t_all = t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="send-e2e-")
    procs = []

    def server(dump, *args):
        proc, url = selftest.start_server("--patched-mock", mock, "--dump-dir", dump, *args)
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
        mock = selftest.patch_mock(tmp)
        cases = tiny_tokenizer.conversations(N, seed=11)
        conv = os.path.join(tmp, "conversations.jsonl")
        kinds = tiny_tokenizer.write_jsonl(conv, cases, not_json=NOT_JSON)
        expected = {}
        for c in cases:
            if c.kind in ("ok", "sharegpt"):
                expected[c.line["id"]] = specforge_ref.parse(tokenizer, tiny_tokenizer.messages_of(c.line))
        t0 = phase("tokenizer, patched mock, %d conversations, SpecForge's parse of each" % N, t0)

        # 1. one server, transient failures first
        dump = os.path.join(tmp, "one")
        one = server(dump, "--fail-first", "4")
        code, out, err = run_send(send_command(one[1], conv, tok, [dump]))
        t0 = phase("1. sent to one server (exit %d): %s" % (code, out.strip().splitlines()[-1] if out.strip() else err[-300:]), t0)
        verify("one server", dump, kinds, cases, tokenizer, expected, err, code)
        stop(one)
        t0 = phase("1. checked", t0)

        # 2. Ctrl-C mid-run, then the same command again
        dump = os.path.join(tmp, "interrupted")
        slow = server(dump, "--delay", "0.02", "--max-batch", "4")
        cmd = send_command(slow[1], conv, tok, [dump])
        early, code, out, err = stop_after(cmd, dump, 60, signal.SIGINT)
        check(early, "2. the sender finished before it could be interrupted")
        check(code == 130 and "rerun the same command" in out, "2. Ctrl-C: exit %s, %r" % (code, out[-300:]))
        got = len(samples(dump))
        check(got < 290, "2. %d samples landed before the interruption took effect" % got)
        t0 = phase("2. interrupted with %d samples on disk" % got, t0)
        code, out, err = run_send(cmd)
        t0 = phase("2. rerun (exit %d): %s" % (code, out.strip().splitlines()[-1] if out.strip() else err[-300:]), t0)
        check("already complete on disk" in out and not out.startswith("sglang-hs-send: 0 conversations sent"), "2. rerun: %r" % out)
        verify("interrupted", dump, kinds, cases, tokenizer, expected, err, code)
        stop(slow)

        # 3. two servers behind the router, the sender killed mid-run
        parent = os.path.join(tmp, "nodes")
        nodes = [server(os.path.join(parent, "node%d" % i), "--delay", "0.02", "--max-batch", "4") for i in range(2)]
        r = router.start([u for _, u in nodes])
        t0 = phase("3. two stand-ins behind smg: %s" % " ".join(r.command), t0)
        cmd = send_command(r.url, conv, tok, [parent])
        early, code, out, err = stop_after(cmd, parent, 80, signal.SIGKILL)
        check(early and code == -signal.SIGKILL, "3. kill: early %s, exit %s" % (early, code))
        got = len(samples(parent))
        t0 = phase("3. killed with %d samples on disk" % got, t0)
        code, out, err = run_send(cmd)
        t0 = phase("3. rerun (exit %d): %s" % (code, out.strip().splitlines()[-1] if out.strip() else err[-300:]), t0)
        verify("router", parent, kinds, cases, tokenizer, expected, err, code)
        per_node = [len(samples(os.path.join(parent, "node%d" % i))) for i in range(2)]
        check(min(per_node) > 0, "3. files per node %r" % per_node)
        r.stop()
        stop(*nodes)
        t0 = phase("3. checked (files per node %r)" % per_node, t0)
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
