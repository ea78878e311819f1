#!/usr/bin/env python3
"""Self-test of the `send` harness, without `send`: proves the pieces fit before send uses them.

    python3 crates/pysplice-sglang/tests/python/send/selftest.py            # exit 0 when every check passes; prints timings

Needs PyTorch (CPU), transformers, tokenizers, `smg==1.13.0` and `specforge==0.2.0` (--no-deps)
in the running interpreter's environment, and the `pysplice` program: $PYSPLICE, else
target/{debug,release}/pysplice of this checkout, else `cargo run --bin pysplice`.

What it does, in a temporary folder:
1. saves the tiny tokenizer and patches a copy of crates/pysplice-sglang/tests/python/runtime/mock_deepseek_v2.py with the
   real recipe (crates/pysplice-sglang/python/pysplice_sglang/dump/sglang_hs_dump.toml);
2. starts two stand-in servers with the real dump, each into its own folder (the multi-node
   layout), and the smg router in front of them (round robin);
3. POSTs conversations by hand (urllib) through the router: the chat template's text tokenized
   without special tokens, an explicit rid, max_new_tokens 1; checks the error answers (context
   length, duplicate rid in flight, malformed JSON) and --fail-first's transient failures;
4. SIGTERMs the servers (each waits until its dump is idle) and checks that every rid sent
   landed exactly once, as a complete .ckpt with the ids sent, and that both servers got work;
5. runs SpecForge's offline reader over the parent folder and SpecForge's parser on each
   conversation: its ids must equal the tokenizer's rendering; its loss mask is compared with
   crates/pysplice-sglang/python/pysplice_sglang/masks.py's (the mask `send` is to set), and any difference is printed.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
sys.path[:0] = [HERE, os.path.join(REPO, "crates", "pysplice-sglang", "python")]

import router  # noqa: E402
from harness import start_server  # noqa: E402  (e2e.py calls it as selftest.start_server)
import specforge_ref  # noqa: E402
import tiny_tokenizer  # noqa: E402

TIMES = []
FAILURES = []


def phase(name, t0):
    TIMES.append((name, time.time() - t0))
    return time.time()


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)


def pysplice():
    if os.environ.get("PYSPLICE"):
        return [os.environ["PYSPLICE"]]
    for kind in ("debug", "release"):
        p = os.path.join(REPO, "target", kind, "pysplice")
        if os.path.exists(p):
            return [p]
    return ["cargo", "run", "--quiet", "--bin", "pysplice", "--"]


def patch_mock(tmp):
    dest = os.path.join(tmp, "mock_deepseek_v2_patched.py")
    shutil.copy(os.path.join(REPO, "crates", "pysplice-sglang", "tests", "python", "runtime", "mock_deepseek_v2.py"), dest)
    spec = os.path.join(REPO, "crates", "pysplice-sglang", "python", "pysplice_sglang", "dump", "sglang_hs_dump.toml")
    subprocess.run(pysplice() + ["apply", "--spec", spec, dest], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return dest


def post(url, body, raw=None, timeout=30):
    """(status, parsed body or text); a dropped connection gives (None, the exception)."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url + "/generate", data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text.decode(errors="replace")
    except (ConnectionError, urllib.error.URLError) as e:
        return None, e


def render(tok, messages):
    text = tok.apply_chat_template(messages, tokenize=False)
    return tok(text, add_special_tokens=False)["input_ids"]


def main():
    import torch
    from transformers import AutoTokenizer

    t_all = t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="send-selftest-")
    procs = []
    try:
        tiny_tokenizer.make(os.path.join(tmp, "tok"))
        tok = AutoTokenizer.from_pretrained(os.path.join(tmp, "tok"))
        mock = patch_mock(tmp)
        t0 = phase("tokenizer + patched mock", t0)

        dumps = os.path.join(tmp, "dump")
        servers = []
        for i in range(2):
            proc, url = start_server("--patched-mock", mock, "--dump-dir", os.path.join(dumps, "node%d" % i),
                                     "--log", os.path.join(tmp, "node%d.log" % i))
            procs.append(proc)
            servers.append((proc, url))
        t0 = phase("two stand-ins up (torch import, model build)", t0)
        r = router.start([u for _, u in servers])
        print("router:", " ".join(r.command), flush=True)
        t0 = phase("smg router up, both workers accepted", t0)

        cases = tiny_tokenizer.conversations(40, seed=3)
        sent = {}
        for case in cases:
            msgs = tiny_tokenizer.messages_of(case.line)
            if case.kind == "rejected":
                try:
                    render(tok, msgs)
                    check(False, "the template accepted the rejected conversation")
                except Exception as e:
                    check("alternate" in str(e), "rejected conversation: %s" % e)
                continue
            ids = render(tok, msgs)
            status, out = post(r.url, {"input_ids": ids, "rid": case.line["id"],
                                       "sampling_params": {"max_new_tokens": 1, "temperature": 0}})
            if case.kind == "long":
                want = "The input (%d tokens) is longer than the model's context length (4096 tokens)." % len(ids)
                check(status == 400 and out == {"error": {"message": want}}, "long: %s %r" % (status, out))
                continue
            check(status == 200 and out["meta_info"]["id"] == case.line["id"]
                  and out["meta_info"]["prompt_tokens"] == len(ids)
                  and out["meta_info"]["finish_reason"] == {"type": "length", "length": 1}
                  and len(out["output_ids"]) == 1, "send %s: %s %r" % (case.line["id"], status, out))
            sent[case.line["id"]] = (msgs, ids)
        t0 = phase("%d conversations POSTed through the router" % len(sent), t0)

        # errors, on a worker directly: a duplicate rid in one batch, malformed JSON, a bad field
        w = servers[0][1]
        status, out = post(w, {"input_ids": [[5, 6], [7]], "rid": ["dup", "dup"]})
        check((status, out) == (400, {"error": {"message": "Duplicate request ID detected: dup"}}), "dup: %r" % (out,))
        status, out = post(w, None, raw=b'{"input_ids": [1, 2')
        check(status == 400 and out.get("code") == 400 and out.get("type") == "Bad Request", "bad json: %r" % (out,))
        status, out = post(w, {"input_ids": [1], "sampling_params": {"max_tokens": 1}})
        check(status == 400 and out["error"].startswith("unknown field `max_tokens`"), "bad field: %r" % (out,))
        # transient failures, on a stand-in without a dump
        proc, flaky = start_server("--fail-first", "2")
        procs.append(proc)
        got = [post(flaky, {"input_ids": [1, 2], "rid": "f%d" % k})[0] for k in range(3)]
        check(got == [503, None, 200], "--fail-first 2: %r" % got)
        t0 = phase("error answers", t0)

        r.stop()
        t0 = phase("router stopped (SIGTERM)", t0)
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc, _ in servers:
            tail = proc.stdout.read()
            check(proc.wait(60) == 0 and "idle:" in tail, "server stop: rc %s, %r" % (proc.returncode, tail))
        procs[-1].wait(30)
        t0 = phase("servers stopped after their dumps were idle", t0)

        landed, per_node = {}, []
        for node in sorted(glob.glob(os.path.join(dumps, "node*"))):
            files = glob.glob(os.path.join(node, "*.ckpt"))
            per_node.append(len(files))
            check(not glob.glob(os.path.join(node, "*.partial")), "partial samples in %s" % node)
            for path in files:
                s = torch.load(path, map_location="cpu", weights_only=True)
                check(s["rid"] not in landed, "rid %s twice" % s["rid"])
                landed[s["rid"]] = s
        check(sorted(landed) == sorted(sent), "landed %d of %d rids" % (len(set(landed) & set(sent)), len(sent)))
        check(len(per_node) == 2 and min(per_node) > 0, "round robin: files per node %r" % per_node)
        for rid, (_msgs, ids) in sent.items():
            if rid in landed:
                s = landed[rid]
                check(s["input_ids"].tolist() == ids and s["prefix_len"] == 0 and s["loss_mask"].tolist() == [1] * len(ids)
                      and tuple(s["aux_hidden_state"].shape) == (1, len(ids), 48), "sample %s" % rid)
        t0 = phase("samples checked (%d, per node %r)" % (len(landed), per_node), t0)

        refs = specforge_ref.read(dumps)
        by_path = {os.path.realpath(p): s for p in glob.glob(os.path.join(dumps, "*", "*.ckpt"))
                   for s in [p]}
        check(len(refs) == len(sent) and all(os.path.realpath(x["path"]) in by_path for x in refs),
              "SpecForge's reader: %d samples" % len(refs))
        for x in refs:
            s = torch.load(x["path"], map_location="cpu", weights_only=True)
            check(x["tensors"]["input_ids"].tolist() == s["input_ids"].tolist()
                  and set(x["tensors"]) == {"input_ids", "loss_mask", "hidden_state", "aux_hidden_state"},
                  "SpecForge's reader on %s" % x["path"])
        t0 = phase("SpecForge's offline reader over both folders", t0)

        from pysplice_sglang import masks as slm

        differ, stock_differs = [], 0
        for rid, (msgs, ids) in sent.items():
            sf_ids, sf_mask = specforge_ref.parse(tok, msgs)
            check(sf_ids == ids, "SpecForge's parser ids differ for %s" % rid)
            if sf_mask != slm.loss_mask(tok, msgs, ids):
                differ.append(rid)
            if msgs[0]["role"] != "system":
                stock_differs += specforge_ref.parse(tok, msgs, "qwen")[0] != ids
        t0 = phase("SpecForge's parser on %d conversations" % len(sent), t0)
        print("SpecForge's mask vs crates/pysplice-sglang/python/pysplice_sglang/masks.py: %d of %d differ%s"
              % (len(differ), len(sent), (" (e.g. %s)" % differ[0]) if differ else ""))
        check(not differ, "SpecForge's mask differs from the script's on %d conversations" % len(differ))
        if differ:
            msgs, ids = sent[differ[0]]
            a, b = specforge_ref.parse(tok, msgs)[1], slm.loss_mask(tok, msgs, ids)
            at = [k for k in range(len(a)) if a[k] != b[k]]
            print("  positions %s: SpecForge %s, script %s; tokens %r"
                  % (at[:6], [a[k] for k in at[:6]], [b[k] for k in at[:6]], tok.convert_ids_to_tokens([ids[k] for k in at[:6]])))
        print("stock 'qwen' template (adds a default system prompt): ids differ on %d conversations without a system turn"
              % stock_differs)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    for name, dt in TIMES:
        print("%7.2f s  %s" % (dt, name))
    print("%7.2f s  total" % (time.time() - t_all))
    print("%d passed, %d failed" % (0 if FAILURES else 1, 1 if FAILURES else 0))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
