#!/usr/bin/env python3
"""The dump's store sink and the sender's publisher feeding SpecForge's own online trainer.

    PY=$(bash scripts/store-venv.sh) ; $PY crates/pysplice-sglang/tests/python/store/publish_e2e.py PROGRAMS_DIR

Runs with the store venv's python (PyTorch, mooncake.store; scripts/store-venv.sh) and the
`sglang-hs-send` program of PROGRAMS_DIR, which also patches the runtime mock. A Mooncake master
on loopback (mooncake_stack.py, stopped by PID); a stand-in server (send/standin_server.py)
running the patched mock's forward, so that the recipe's injected dump and store sink write the
samples (chunked prefill in passes of 256 tokens: the long prompts are stitched); the sender
with --publish; SpecForge's own consumer (specforge_consumer.py: build_disagg_online_consumer +
Trainer.fit on the CPU). Cases:

1. the whole route: every conversation becomes one sample the trainer trains on (one step each,
   every loss finite), and each tensor it received is byte for byte what the folder route writes
   for the same request (the sink runs with ?keep=files, so each sample's file stays beside its
   store objects): hidden_state the file's aux_hidden_state, target its hidden_state, input_ids,
   loss_mask the conversation's mask (masks.py, SpecForge's rule), attention_mask all ones; the
   stitched long prompts included; the store is empty at the end (the trainer removed what it
   trained on); nothing spilled;
2. back-pressure: a high watermark of 1 and a trainer that stops after 2 steps: at most 3 lines
   are ever announced, the sender stops, and says the trainer is done;
3. the overflow rule: a sink whose store cannot be reached leaves every sample in the folder as an
   ordinary sample file, counted in the dump's status file, while the server answers as usual;
   the sender announces nothing and says how many were spilled.
Exit 0 when every check passes.
"""

import glob
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
REPO = os.path.abspath(os.path.join(TESTS, "..", "..", "..", ".."))
sys.path[:0] = [HERE, os.path.join(TESTS, "send"), os.path.join(REPO, "crates", "pysplice-sglang", "python")]

import tiny_tokenizer  # noqa: E402
from mooncake_stack import MooncakeStack  # noqa: E402
from pysplice_sglang import masks as slm  # noqa: E402

CHUNK = 256
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


def phase(name, t0):
    print("%7.1f s  %s" % (time.time() - t0, name), flush=True)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def start_server(tmp, name, env, patched):
    log = open(os.path.join(tmp, name + ".log"), "w")
    proc = subprocess.Popen(
        [sys.executable, os.path.join(TESTS, "send", "standin_server.py"), "--port", "0", "--patched-mock", patched,
         "--dump-dir", os.path.join(tmp, name), "--max-batch", "4", "--chunk", str(CHUNK), "--context-length", "8192"],
        stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit("the stand-in did not start: %s" % line)
    return proc, line.split()[-1]


def stop_server(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def consumer(tmp, control, env, *extra):
    log = open(os.path.join(tmp, os.path.basename(control) + "-train.log"), "w")
    return subprocess.Popen(
        [sys.executable, os.path.join(HERE, "specforge_consumer.py"), "--control-dir", control, "--run-id", "run1",
         "--hidden", "16", "--vocab", "4096", "--aux", "3", "--tiny-dir", os.path.join(tmp, "tiny-target"), *extra],
        stdout=log, stderr=subprocess.STDOUT, env=env)


def send(programs, tmp, url, dump, control, conv, env, *extra):
    cmd = [os.path.join(programs, "sglang-hs-send"), "--python", sys.executable, "--conversations", conv,
           "--tokenizer", os.path.join(tmp, "tok"), "--url", url, "--dump-dir", dump, "--progress", "none", *extra]
    if control:
        cmd += ["--publish", control]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def main():
    programs = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "target", "debug"))
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="publish-e2e-")
    patched = os.path.join(tmp, "pm", "mock_deepseek_v2_patched.py")
    subprocess.run(["bash", os.path.join(TESTS, "runtime", "patch_mock.sh"), os.path.join(tmp, "pm")], check=True,
                   capture_output=True, env=dict(os.environ, PYSPLICE=os.path.join(programs, "pysplice")))
    tiny_tokenizer.make(os.path.join(tmp, "tok"))
    cases = [c for c in tiny_tokenizer.conversations(16, seed=3) if c.kind in ("ok", "sharegpt", "long")]
    conv = os.path.join(tmp, "conv.jsonl")
    tiny_tokenizer.write_jsonl(conv, cases)
    tok = slm.load_tokenizer(os.path.join(tmp, "tok"), False, None)
    expected = dict()  # rid -> (ids, mask), as the sender renders them
    for c in cases:
        text, spans = slm.assistant_spans(tok, tiny_tokenizer.messages_of(c.line), None)
        ids, mask = slm.tokens_and_mask(tok, text, spans)
        expected[c.line["id"]] = (ids, mask)
    long = [rid for rid, (ids, _) in expected.items() if len(ids) > CHUNK]
    check(len(long) >= 2, "at least two prompts longer than a chunk (%d)" % len(long))
    phase("patched mock, tokenizer, %d conversations (%d over %d tokens)" % (len(cases), len(long), CHUNK), t0)

    with MooncakeStack(os.path.join(tmp, "mc")) as stack:
        env = dict(os.environ, **stack.env)
        phase("Mooncake master on loopback", t0)

        # 1. the whole route
        server_env = dict(env, SGLANG_HS_DUMP_SINK="mooncake://run1?keep=files", MOONCAKE_GLOBAL_SEGMENT_SIZE=str(64 << 20))
        proc, url = start_server(tmp, "dump", server_env, patched)
        control = os.path.join(tmp, "control")
        trainer = consumer(tmp, control, env, "--received", os.path.join(tmp, "received.jsonl"))
        out = send(programs, tmp, url, os.path.join(tmp, "dump"), control, conv, env)
        rc = trainer.wait(600)
        phase("1. sent and published; the trainer ended (sender %d, trainer %d)" % (out.returncode, rc), t0)
        check(out.returncode == 0, "the sender's exit status: %d\n%s" % (out.returncode, out.stderr[-3000:] + out.stdout[-2000:]))
        check(rc == 0, "the trainer's exit status: %d (%s-train.log)" % (rc, control))
        received = []
        if os.path.exists(os.path.join(tmp, "received.jsonl")):
            with open(os.path.join(tmp, "received.jsonl")) as f:
                received = [json.loads(line) for line in f]
        with open(os.path.join(control, "refs.jsonl")) as f:
            refs = [json.loads(line) for line in f]
        check(len(refs) == len(cases), "%d lines announced for %d conversations" % (len(refs), len(cases)))
        check(len(received) == len(refs), "the trainer trained on %d of %d samples" % (len(received), len(refs)))
        import torch

        rids = set()
        for r in received:
            sid = r["sample_id"]
            ref = next((x for x in refs if x["sample_id"] == sid), None)
            rid = ref["metadata"]["rid"] if ref else None
            rids.add(rid)
            path = os.path.join(tmp, "dump", sid + ".ckpt")
            if not check(rid in expected and os.path.exists(path), "%s: rid %s and its file" % (sid, rid)):
                continue
            s = torch.load(path, weights_only=True)
            ids, mask = expected[rid]
            want = dict(
                hidden_state=s["aux_hidden_state"], target=s["hidden_state"], input_ids=s["input_ids"].reshape(1, -1),
                loss_mask=torch.tensor([mask], dtype=torch.long), attention_mask=torch.ones((1, len(ids)), dtype=torch.long))
            check(s["input_ids"].tolist() == ids, "%s: the file's ids are the conversation's" % sid)
            for name, t in want.items():
                got = r["tensors"][name]
                check(got["sha256"] == sha(t.contiguous().view(torch.uint8).numpy().tobytes()) and got["shape"] == list(t.shape),
                      "%s: %s as received is not the folder route's (%s)" % (sid, name, got))
            check(r["loss"] == r["loss"] and abs(r["loss"]) != float("inf"), "%s: loss %s" % (sid, r["loss"]))
        check(rids == set(expected), "samples trained: %d of %d rids" % (len(rids & set(expected)), len(expected)))
        check(any(expected[rid][0] and len(expected[rid][0]) > CHUNK for rid in rids), "a stitched prompt was trained on")
        stop_server(proc)
        status = [json.load(open(p)) for p in glob.glob(os.path.join(tmp, "dump", ".hs_dump_status_*.json"))]
        check(all(s.get("sink", dict()).get("spilled", 0) == 0 for s in status), "nothing spilled: %s" % status)

        # 2. back-pressure: high watermark 1, a trainer that stops after 2 steps
        proc, url = start_server(tmp, "dump2", server_env, patched)
        control2 = os.path.join(tmp, "control2")
        trainer = consumer(tmp, control2, env, "--steps", "2")
        out = send(programs, tmp, url, os.path.join(tmp, "dump2"), control2, conv, env, "--high-watermark", "1")
        rc = trainer.wait(600)
        stop_server(proc)
        with open(os.path.join(control2, "refs.jsonl")) as f:
            announced = sum(1 for _ in f)
        phase("2. high watermark 1, trainer of 2 steps: %d announced (sender %d, trainer %d)" % (announced, out.returncode, rc), t0)
        check(rc == 0, "2: the trainer's exit status %d" % rc)
        check(2 <= announced <= 3, "2: %d lines announced to a trainer of 2 steps with a high watermark of 1" % announced)
        check("the trainer is done" in out.stdout, "2: the sender says the trainer is done:\n" + out.stdout[-2000:])

    # 3. overflow: the store cannot be reached (the master is gone); the samples stay files
    dead_env = dict(env, SGLANG_HS_DUMP_SINK="mooncake://run1")
    proc, url = start_server(tmp, "dump3", dead_env, patched)
    out = send(programs, tmp, url, os.path.join(tmp, "dump3"), None, conv, env)
    status = [json.load(open(p)) for p in glob.glob(os.path.join(tmp, "dump3", ".hs_dump_status_*.json"))]
    stop_server(proc)
    files = glob.glob(os.path.join(tmp, "dump3", "*.ckpt"))
    spilled = sum(s.get("sink", dict()).get("spilled", 0) for s in status)
    phase("3. no store: %d files, %d counted spilled (sender %d)" % (len(files), spilled, out.returncode), t0)
    check(out.returncode == 0, "3: the folder route still works:\n" + out.stdout[-2000:] + out.stderr[-2000:])
    check(len(files) == len(cases) and spilled == len(cases), "3: %d files, %d spilled, %d sent" % (len(files), spilled, len(cases)))
    log = open(os.path.join(tmp, "dump3.log")).read()
    check("stays in the dump folder" in log and "cannot be reached" in log, "3: the server's log names the spill and why")

    if FAILURES:
        print("%d checks failed; the run's files are in %s" % (len(FAILURES), tmp))
        return 1
    subprocess.run(["rm", "-rf", tmp])
    print("ok: %.1f s" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
