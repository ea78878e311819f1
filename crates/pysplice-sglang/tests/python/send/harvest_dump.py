#!/usr/bin/env python3
"""`sglang-hs-send --request-dumps` into an extraction stand-in running the real injected dump.

    python3 crates/pysplice-sglang/tests/python/send/harvest_dump.py       # exit 0 when every check passes; prints timings

Needs what crates/pysplice-sglang/tests/python/send/e2e.py needs (PyTorch on the CPU, transformers, `specforge==0.2.0`, the
pysplice and sglang-hs-send programs of this checkout) and what crates/pysplice-sglang/tests/python/send/harvest.py needs (the
wheels of 0.4.6, 0.5.9 and 0.5.23). The production side is harvest.py's: stand-in servers of the
three releases serve 420 requests and dump them. The extraction stand-in runs the patched mock,
so the recipe's injected dump writes the sample files, and the sender sets their masks. Checks:
every naturally stopped request of the dumps is exactly one complete sample, its `input_ids` the
production prompt's ids followed by its output ids, its `loss_mask` 1 on exactly the generated
tokens; SpecForge's offline reader reads every sample with the same mask; and for the chat
requests, SpecForge's own parser (its ChatML template) of the conversation the server answered
(the user's turn, then the completion as the assistant's) gives the same ids and mask over the
sample's tokens, differing only past them, in the template's text after the end of turn that
the model never generated.
"""

import os
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

import harvest  # noqa: E402  (the production side and its checks' helpers)
import selftest  # noqa: E402
import specforge_ref  # noqa: E402
import tiny_tokenizer  # noqa: E402

check, phase, FAILURES = harvest.check, harvest.phase, harvest.FAILURES


def main():
    import random

    import torch
    from transformers import AutoTokenizer

    t_all = t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="send-harvest-dump-")
    procs = []
    try:
        tok = os.path.join(tmp, "tok")
        tiny_tokenizer.make(tok)
        harvest.TOK = tokenizer = AutoTokenizer.from_pretrained(tok)
        dirs, expected = harvest.production(tmp, tok, random.Random(36), procs)
        want = [r for r in expected if r["expect"] == "stop"]
        t0 = phase("production stand-ins: %d requests dumped, %d naturally stopped" % (len(expected), len(want)), t0)
        mock = selftest.patch_mock(tmp)
        dump = os.path.join(tmp, "samples")
        proc, url = selftest.start_server("--patched-mock", mock, "--dump-dir", dump)
        procs.append(proc)
        rec = os.path.join(tmp, "record.jsonl")
        run = subprocess.run(harvest.command(url, dirs, tok, rec, "--dump-dir", dump, "--land-grace", "3"),
                             capture_output=True, text=True, timeout=900)
        check(run.returncode == 0, "exit status %d: %s" % (run.returncode, run.stderr[-800:]))
        t0 = phase("harvested: %s" % run.stdout.strip().splitlines()[-1:], t0)
        record = harvest.record(rec)
        by_source = {(e["source"]["file"], e["source"]["index"], e["source"]["production_rid"]): rid for rid, e in record.items()}
        samples = {}
        for root, _, names in os.walk(dump):
            for name in names:
                if name.endswith(".ckpt") or name.endswith(".ckpt.partial"):
                    path = os.path.join(root, name)
                    check(name.endswith(".ckpt"), "a partial sample %s" % path)
                    s = torch.load(path, map_location="cpu", weights_only=True)
                    check(s["rid"] not in samples, "rid %s twice" % s["rid"])
                    samples[s["rid"]] = (path, s)
        check(len(samples) == len(want), "%d samples, %d naturally stopped requests" % (len(samples), len(want)))
        chats = 0
        for r in want:
            rid = by_source.get((r["file"], r["index"], r["rid"]))
            if not check(rid in samples, "%s %s#%d: no sample" % (r["release"], r["file"], r["index"])):
                continue
            _, s = samples[rid]
            ids = r["prompt"] + r["output"]
            mask = [0] * len(r["prompt"]) + [1] * len(r["output"])
            check(s["input_ids"].tolist() == ids, "%s: input_ids differ from the production prompt + output" % rid)
            check(s["loss_mask"].tolist() == mask, "%s: loss_mask is not 1 on exactly the generated tokens" % rid)
            if r.get("messages"):
                chats += 1
                reply = tokenizer.decode(r["output"][:-1], skip_special_tokens=True)
                sf_ids, sf_mask = specforge_ref.parse(tokenizer, r["messages"] + [{"role": "assistant", "content": reply}])
                n = len(ids)
                check(sf_ids[:n] == ids and sf_mask[:n] == mask,
                      "%s: SpecForge's parse differs over the sample's tokens (%s)" % (rid, tokenizer.decode(sf_ids[n:])))
                check(all(sf_mask[n:]) and tokenizer.decode(sf_ids[n:]).strip() == "",
                      "%s: SpecForge's parse goes on past the end of turn with %r" % (rid, tokenizer.decode(sf_ids[n:])))
        check(chats > 20, "only %d chat requests compared with SpecForge's parse" % chats)
        refs = specforge_ref.read(dump)
        check(len(refs) == len(samples), "SpecForge's offline reader yields %d samples, %d on disk" % (len(refs), len(samples)))
        for ref in refs:
            path = ref["path"]
            rid = next((k for k, (p, _) in samples.items() if p == path), None)
            if check(rid is not None, "the reader's %s is not a sample" % path):
                check(ref["tensors"]["loss_mask"].tolist() == samples[rid][1]["loss_mask"].tolist(), "reader's mask of %s" % path)
        proc.send_signal(signal.SIGTERM)
        check(proc.wait(60) == 0, "the extraction stand-in did not stop cleanly")
        t0 = phase("%d samples checked (%d chats against SpecForge's parse); SpecForge's reader read %d" % (len(samples), chats, len(refs)), t0)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%7.2f s  total" % (time.time() - t_all))
    print("%d checks failed" % len(FAILURES) if FAILURES else "all checks passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
