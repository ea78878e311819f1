#!/usr/bin/env python3
"""The dump's store sink and the sender's publisher feeding SpecForge's own online trainer.

    PY=$(bash scripts/store-venv.sh)/bin/python; $PY crates/pysplice-sglang/tests/python/store/publish_e2e.py PROGRAMS_DIR [--only=5,6]

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
2. (with 3) back-pressure: a high watermark of 1: at most one line announced beyond what the
   trainer has taken, so a trainer that stops in its third step sees at most 4 lines;
3. a trainer that fails (its loss raises in its third step; SpecForge writes .consumer_failed):
   the sender stops, names the failure, exits 1, and nothing is announced after the failure;
4. a sample with a missing tensor: its `target` object removed from the store after the server
   put it: never announced (named, exit 1), and the trainer trains on every other one;
5. the sender killed with SIGKILL mid-run and started again, the objects in a segment host (a
   `mooncake_client` process, so that they outlive the process that put them): every sample
   the server wrote is announced exactly once (by sample and by rid) and trained on;
6. the overflow rule, a full store: its one segment filled with hard-pinned ballast but for 6 MiB,
   width 512, a prompt whose sample (over 6.1 MB) cannot fit and three short ones: the server
   answers every request (the forward never waits), the big one stays in the folder, counted as
   spilled in the dump's status file, and gets its mask there; the others are trained on; the
   sender says so and exits 1;
7. the overflow rule, no store at all (the master gone): every sample stays a file, counted, the
   server's log says why once, and the folder route works as before;
8. a draft config whose aux layer ids are not the samples': one line says so before anything is
   announced, the channel gets .failed, exit 2.
Cases 3 to 8 send six prompts of at most four chunks (two or more of them stitched), so that
the trainer's steps stay cheap; case 1 sends two prompts of about 4,700 tokens as well. Exit 0
when every check passes. CI runs 3 to 8 but 7 (--only=3,4,5,6,8), within its time budget; case
1's whole route runs there on SGLang itself (the real-server job's store route, real/job.py
--store). All of them by hand: about 140 s.
"""

import glob
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

import harness  # noqa: E402
import tiny_tokenizer  # noqa: E402
from harness import FAILURES, check  # noqa: E402
import same_bytes  # noqa: E402
from mooncake_stack import MooncakeStack  # noqa: E402
from pysplice_sglang import masks as slm  # noqa: E402

CHUNK = 256


def phase(name, t0):
    print("%7.1f s  %s" % (time.time() - t0, name), flush=True)


def start_server(tmp, name, env, patched, *extra):
    log = open(os.path.join(tmp, name + ".log"), "w")
    return harness.start_server("--patched-mock", patched, "--dump-dir", os.path.join(tmp, name), "--max-batch", "4",
                                "--chunk", str(CHUNK), "--context-length", "8192", *extra, env=env, stderr=log)


def stop_server(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def consumer(tmp, control, env, *extra):
    log = open(os.path.join(tmp, os.path.basename(control) + "-train.log"), "w")
    # One compute thread: a tiny draft gains nothing from more, and idle OpenMP threads spin.
    return subprocess.Popen(
        [sys.executable, os.path.join(HERE, "specforge_consumer.py"), "--control-dir", control, "--run-id", "run1",
         "--hidden", "16", "--vocab", "4096", "--aux", "3", "--tiny-dir", os.path.join(tmp, "tiny-target"), *extra],
        stdout=log, stderr=subprocess.STDOUT, env=dict(env, OMP_NUM_THREADS="1"))


def send(programs, tmp, url, dump, control, conv, env, *extra):
    cmd = [os.path.join(programs, "sglang-hs-send"), "--python", sys.executable, "--conversations", conv,
           "--tokenizer", os.path.join(tmp, "tok"), "--url", url, "--dump-dir", dump, "--progress", "none", *extra]
    if control:
        cmd += ["--publish", control]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def store_client(stack):
    """This process's own store client, without a segment of its own (loopback, quiet)."""
    os.environ.update(stack.env, GLOG_minloglevel="2")
    from mooncake.store import MooncakeDistributedStore

    client = MooncakeDistributedStore()
    rc = client.setup("127.0.0.1", stack.env["MOONCAKE_METADATA_SERVER"], 0, 16 << 20, "tcp", "", stack.env["MOONCAKE_MASTER_SERVER_ADDR"])
    check(rc == 0, "the test's store client: setup answered %s" % rc)
    return client


def fill_store(stack, leave):
    """Puts hard-pinned 1 MiB objects until the store refuses one, then removes the first ones
    until `leave` bytes are free again; the keys kept."""
    from mooncake.store import ReplicateConfig

    client = store_client(stack)
    config = ReplicateConfig()
    config.replica_num = 1
    config.with_hard_pin = True
    block = bytes(1 << 20)
    keys = []
    while len(keys) < 1024:
        key = "ballast/%d" % len(keys)
        if client.put(key, block, config) != 0:
            break
        keys.append(key)
    for key in keys[: leave // len(block)]:
        check(client.remove(key, True) == 0, "removing ballast %s" % key)
    return keys[leave // len(block):]


ONLY = set()


def want(case):
    return not ONLY or case in ONLY


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--only=")]
    ONLY.update(int(n) for a in sys.argv[1:] if a.startswith("--only=") for n in a[len("--only="):].split(","))
    programs = os.path.abspath(args[0] if args else os.path.join(REPO, "target", "debug"))
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="publish-e2e-")
    patched = os.path.join(tmp, "pm", "mock_deepseek_v2_patched.py")
    subprocess.run(["bash", os.path.join(TESTS, "runtime", "patch_mock.sh"), os.path.join(tmp, "pm")], check=True,
                   capture_output=True, env=dict(os.environ, PYSPLICE=os.path.join(programs, "pysplice")))
    tiny_tokenizer.make(os.path.join(tmp, "tok"))
    every = [c for c in tiny_tokenizer.conversations(16, seed=3) if c.kind in ("ok", "sharegpt", "long")]
    cases = [c for c in every if c.kind == "long"][:2] + [c for c in every if c.kind != "long"][:3]  # 5: a trainer's few steps
    conv = os.path.join(tmp, "conv.jsonl")
    tiny_tokenizer.write_jsonl(conv, cases)
    tok = slm.load_tokenizer(os.path.join(tmp, "tok"), False, None)
    expected = dict()  # rid -> (ids, mask), as the sender renders them
    for c in every:
        text, spans = slm.assistant_spans(tok, tiny_tokenizer.messages_of(c.line), None)
        ids, mask = slm.tokens_and_mask(tok, text, spans)
        expected[c.line["id"]] = (ids, mask)
    # The cases about the channel's rules (3, 4, 5, 7, 8) send six prompts of at most four chunks:
    # a trainer's step on a prompt of thousands of tokens costs seconds of CPU, which they need not pay.
    short = [c for c in every if len(expected[c.line["id"]][0]) <= 4 * CHUNK][:6]
    conv_short = os.path.join(tmp, "conv-short.jsonl")
    tiny_tokenizer.write_jsonl(conv_short, short)
    long = [c.line["id"] for c in cases if len(expected[c.line["id"]][0]) > CHUNK]
    check(len(long) >= 2, "at least two prompts longer than a chunk (%d)" % len(long))
    check(len(short) == 6, "six short conversations (%d)" % len(short))
    check(sum(len(expected[c.line["id"]][0]) > CHUNK for c in short) >= 2, "short prompts longer than a chunk (stitched)")
    expected_short = {c.line["id"]: expected[c.line["id"]] for c in short}
    phase("patched mock, tokenizer, %d conversations (%d over %d tokens), %d short ones (at most %d tokens)" % (
        len(cases), len(long), CHUNK, len(short), max(len(expected_short[r][0]) for r in expected_short)), t0)

    with MooncakeStack(os.path.join(tmp, "mc")) as stack:
        env = dict(os.environ, **stack.env)
        phase("Mooncake master on loopback", t0)

        server_env = dict(env, SGLANG_HS_DUMP_SINK="mooncake://run1?keep=files", MOONCAKE_GLOBAL_SEGMENT_SIZE=str(64 << 20))
        # 1. the whole route
        if want(1):
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
                # the file's tensors under SpecForge's names; its loss mask the conversation's (the
                # publishing sender puts it; the file kept beside it has the dump's all-ones one)
                wanted = same_bytes.online(s)
                wanted["loss_mask"] = torch.tensor([mask], dtype=torch.long)
                check(s["input_ids"].tolist() == ids, "%s: the file's ids are the conversation's" % sid)
                for name, t in wanted.items():
                    got = r["tensors"][name]
                    check(got == same_bytes.describe(t), "%s: %s as received is not the folder route's (%s)" % (sid, name, got))
                check(r["loss"] == r["loss"] and abs(r["loss"]) != float("inf"), "%s: loss %s" % (sid, r["loss"]))
            want_rids = {c.line["id"] for c in cases}
            check(rids == want_rids, "samples trained: %d of %d rids" % (len(rids & want_rids), len(want_rids)))
            check(any(expected[rid][0] and len(expected[rid][0]) > CHUNK for rid in rids), "a stitched prompt was trained on")
            stop_server(proc)
            status = [json.load(open(p)) for p in glob.glob(os.path.join(tmp, "dump", ".hs_dump_status_*.json"))]
            check(all(s.get("sink", dict()).get("spilled", 0) == 0 for s in status), "nothing spilled: %s" % status)

        # 3. a trainer that fails in its third step
        if want(3):
            proc, url = start_server(tmp, "dump3", server_env, patched)
            control3 = os.path.join(tmp, "control3")
            trainer = consumer(tmp, control3, env, "--fail-after-steps", "2")
            out = send(programs, tmp, url, os.path.join(tmp, "dump3"), control3, conv_short, env, "--high-watermark", "1")
            rc = trainer.wait(600)
            stop_server(proc)
            refs_path = os.path.join(control3, "refs.jsonl")
            failed = refs_path + ".consumer_failed"
            with open(refs_path) as f:
                announced = sum(1 for _ in f)
            phase("3. a trainer failing in step 3: %d announced (sender %d, trainer %d)" % (announced, out.returncode, rc), t0)
            check(rc != 0 and os.path.exists(failed), "3: the trainer failed and said so (exit %d)" % rc)
            check(out.returncode == 1 and "the trainer failed" in out.stdout, "3: the sender names the failure:\n" + out.stdout[-2000:])
            check(2 <= announced <= 4, "2, 3: %d announced to a trainer that failed in step 3, high watermark 1" % announced)
            check(os.path.exists(failed) and os.path.getmtime(refs_path) <= os.path.getmtime(failed) + 0.5, "3: a line announced after the failure")
            check(not os.path.exists(refs_path + ".closed"), "3: .closed written after the trainer failed")

        # 4. a sample with a missing tensor is never announced
        if want(4):
            proc, url = start_server(tmp, "dump4", server_env, patched)
            record = os.path.join(tmp, "record4.jsonl")
            out = send(programs, tmp, url, os.path.join(tmp, "dump4"), None, conv_short, env, "--record", record)  # the folder route first
            tickets = sorted(glob.glob(os.path.join(tmp, "dump4", "*.store.json")))
            check(out.returncode == 0 and len(tickets) == len(short), "4: %d tickets left by the folder route (sender %d)" % (len(tickets), out.returncode))
            broken = json.load(open(tickets[0]))
            client = store_client(stack)
            check(client.remove(broken["objects"]["target"]["key"], True) == 0, "4: the target object removed")
            control4 = os.path.join(tmp, "control4")
            trainer = consumer(tmp, control4, env, "--received", os.path.join(tmp, "received4.jsonl"))
            out = send(programs, tmp, url, os.path.join(tmp, "dump4"), control4, conv_short, env, "--record", record, "--land-grace", "2")
            rc = trainer.wait(600)
            stop_server(proc)
            with open(os.path.join(control4, "refs.jsonl")) as f:
                sids = [json.loads(line)["sample_id"] for line in f]
            phase("4. one target missing: %d of %d announced (sender %d, trainer %d)" % (len(sids), len(short), out.returncode, rc), t0)
            check(broken["sample_id"] not in sids and len(sids) == len(short) - 1, "4: announced %d, the broken one %s" % (len(sids), broken["sample_id"] in sids))
            check(out.returncode == 1 and "not announced: the store lost its target" in out.stdout + out.stderr, "4: named:\n" + out.stdout[-2000:])
            check(rc == 0, "4: the trainer's exit status %d" % rc)

        # 8. the draft config names other aux layers: refused before the trainer reads anything
        if want(8):
            proc, url = start_server(tmp, "dump8", server_env, patched)
            draft = os.path.join(tmp, "draft.json")
            with open(draft, "w") as f:
                json.dump(dict(target_hidden_size=16, eagle_config=dict(eagle_aux_hidden_state_layer_ids=[1, 2, 5])), f)
            control8 = os.path.join(tmp, "control8")
            out = send(programs, tmp, url, os.path.join(tmp, "dump8"), control8, conv_short, env, "--draft-config", draft, "--consumer-wait", "1")
            stop_server(proc)
            refs8 = os.path.join(control8, "refs.jsonl")
            phase("8. a draft config of other aux layers (sender %d)" % out.returncode, t0)
            check(out.returncode == 2 and "aux layer ids [1, 3, 4], the trainer expects [1, 2, 5]" in out.stdout + out.stderr,
                  "8: one line names the mismatch:\n" + out.stdout[-1500:] + out.stderr[-1500:])
            check(not os.path.exists(refs8) or os.path.getsize(refs8) == 0, "8: nothing announced")
            check(os.path.exists(refs8 + ".failed"), "8: the channel's .failed written")

    # 5. the sender killed and started again; the objects in a segment host
    if want(5):
        with MooncakeStack(os.path.join(tmp, "mc5"), segment="256MB") as stack:
            env = dict(os.environ, **stack.env, MOONCAKE_GLOBAL_SEGMENT_SIZE="0")
            proc, url = start_server(tmp, "dump5", dict(env, SGLANG_HS_DUMP_SINK="mooncake://run1"), patched)
            control5 = os.path.join(tmp, "control5")
            trainer = consumer(tmp, control5, env, "--received", os.path.join(tmp, "received5.jsonl"))
            refs_path = os.path.join(control5, "refs.jsonl")
            cmd = [os.path.join(programs, "sglang-hs-send"), "--python", sys.executable, "--conversations", conv_short, "--tokenizer",
                   os.path.join(tmp, "tok"), "--url", url, "--dump-dir", os.path.join(tmp, "dump5"), "--progress", "none",
                   "--publish", control5, "--concurrency", "2"]
            first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            deadline = time.time() + 300
            while time.time() < deadline and first.poll() is None:
                if os.path.exists(refs_path) and sum(1 for _ in open(refs_path)) >= 2:
                    break
                time.sleep(0.05)
            killed = first.poll() is None
            first.kill()
            first.wait()
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
            rc = trainer.wait(600)
            stop_server(proc)
            refs = [json.loads(line) for line in open(refs_path)]
            rids = [r["metadata"]["rid"] for r in refs]
            trained = [json.loads(line)["sample_id"] for line in open(os.path.join(tmp, "received5.jsonl"))]
            left = glob.glob(os.path.join(tmp, "dump5", "*.store.json")) + glob.glob(os.path.join(tmp, "dump5", "*.ckpt"))
            phase("5. sender SIGKILLed after 2 lines and rerun: %d announced, %d trained (sender %d, trainer %d)" % (
                len(refs), len(trained), out.returncode, rc), t0)
            check(killed, "5: the first sender was killed mid-run")
            check(out.returncode == 0 and rc == 0, "5: exit statuses %d, %d:\n%s" % (out.returncode, rc, out.stdout[-2000:]))
            check(len(set(r["sample_id"] for r in refs)) == len(refs) and len(set(rids)) == len(rids), "5: a sample or rid announced twice")
            check(set(rids) == set(expected_short) and sorted(trained) == sorted(r["sample_id"] for r in refs), "5: announced %d rids, trained %d" % (len(set(rids)), len(trained)))
            check(not left, "5: tickets or files left in the folder: %s" % left[:3])

    # 6. a full store: its one segment (a 16 MiB segment host) filled with hard-pinned ballast but
    # for 6 MiB before the server starts: three short prompts' objects (at most about 1 MB each at
    # width 512) fit there, one of 1,000 to 2,000 tokens (over 6.1 MB) never does
    if want(6):
        with MooncakeStack(os.path.join(tmp, "mc6"), segment="16MB") as stack:
            env = dict(os.environ, **stack.env, MOONCAKE_GLOBAL_SEGMENT_SIZE="0")
            big = [c for c in every if 1000 < len(expected[c.line["id"]][0]) <= 2000][:1]
            few = big + sorted(short, key=lambda c: len(expected[c.line["id"]][0]))[:3]
            check(len(few) == 4 and len(expected[few[0].line["id"]][0]) * 512 * 8 > 6 << 20, "6: a prompt too big for 6 MiB, three short ones")
            ballast = fill_store(stack, 6 << 20)
            check(len(ballast) >= 8, "6: the store's segment filled (%d MiB of ballast)" % len(ballast))
            conv6 = os.path.join(tmp, "conv6.jsonl")
            tiny_tokenizer.write_jsonl(conv6, few)
            proc, url = start_server(tmp, "dump6", dict(env, SGLANG_HS_DUMP_SINK="mooncake://run6"), patched, "--hidden-size", "512")
            control6 = os.path.join(tmp, "control6")
            trainer = consumer(tmp, control6, env, "--run-id", "run6", "--hidden", "512", "--tiny-dir", os.path.join(tmp, "tiny-512"))
            out = send(programs, tmp, url, os.path.join(tmp, "dump6"), control6, conv6, env, "--land-grace", "2")
            rc = trainer.wait(600)
            status = [json.load(open(p)) for p in glob.glob(os.path.join(tmp, "dump6", ".hs_dump_status_*.json"))]
            stop_server(proc)
            spilled = sum(st.get("sink", dict()).get("spilled", 0) for st in status)
            stored = sum(st.get("sink", dict()).get("stored", 0) for st in status)
            files = glob.glob(os.path.join(tmp, "dump6", "*.ckpt"))
            refs6 = os.path.join(control6, "refs.jsonl")
            announced = sum(1 for _ in open(refs6)) if os.path.exists(refs6) else 0
            phase("6. a full store: %d stored, %d spilled, %d files, %d announced (sender %d, trainer %d)" % (
                stored, spilled, len(files), announced, out.returncode, rc), t0)
            check(spilled == 1 and stored == 3, "6: %d spilled and %d stored of %d (the big one spilled)" % (spilled, stored, len(few)))
            check(len(files) == spilled and announced == stored, "6: %d files for %d spilled, %d announced" % (len(files), spilled, announced))
            masked = [f for f in files if slm.Sample(f).mask() == expected[slm.Sample(f).data["rid"]][1]]
            check(len(masked) == len(files), "6: %d of %d spilled files got their masks" % (len(masked), len(files)))
            check(out.returncode == 1 and "got their loss masks there" in out.stdout, "6: the sender says so:\n" + out.stdout[-2000:])
            check(rc == 0, "6: the trainer's exit status %d" % rc)

    # 7. overflow: the store cannot be reached (the master is gone); the samples stay files
    if want(7):
        dead_env = dict(env, SGLANG_HS_DUMP_SINK="mooncake://run1")
        proc, url = start_server(tmp, "dump7", dead_env, patched)
        out = send(programs, tmp, url, os.path.join(tmp, "dump7"), None, conv_short, env)
        status = [json.load(open(p)) for p in glob.glob(os.path.join(tmp, "dump7", ".hs_dump_status_*.json"))]
        stop_server(proc)
        files = glob.glob(os.path.join(tmp, "dump7", "*.ckpt"))
        spilled = sum(s.get("sink", dict()).get("spilled", 0) for s in status)
        phase("7. no store: %d files, %d counted spilled (sender %d)" % (len(files), spilled, out.returncode), t0)
        check(out.returncode == 0, "7: the folder route still works:\n" + out.stdout[-2000:] + out.stderr[-2000:])
        check(len(files) == len(short) and spilled == len(short), "7: %d files, %d spilled, %d sent" % (len(files), spilled, len(short)))
        log = open(os.path.join(tmp, "dump7.log")).read()
        check("stays in the dump folder" in log and "does not answer" in log, "7: the server's log names the spill and why")

    if FAILURES:
        print("%d checks failed; the run's files are in %s" % (len(FAILURES), tmp))
        return 1
    subprocess.run(["rm", "-rf", tmp])
    print("ok: %.1f s" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
