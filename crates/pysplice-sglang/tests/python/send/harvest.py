#!/usr/bin/env python3
"""End-to-end test of `sglang-hs-send --request-dumps`, without PyTorch (CI runs it).

    python3 crates/pysplice-sglang/tests/python/send/harvest.py            # exit 0 when every check passes; prints timings

Needs `transformers` and `tokenizers` (the tiny tokenizer), the wheels of SGLang 0.4.6, 0.5.9 and
0.5.23 (target/sglang-wheels, as scripts/fetch-corpus.sh leaves them, or $PYSPLICE_WHEELS) and
the `sglang-hs-send` program ($SGLANG_HS_SEND, else target/{debug,release}/sglang-hs-send).

Three stand-in production servers (production_server.py), one per release, each shaped from
its wheel (0.5.9 with --stream-output, so that a stream's dump holds its last delta only), are
turned on through the real `/configure_logging` payload and served 420 requests: native
/generate with text and with ids, /v1/completions, /v1/chat/completions, some streamed, some cut
by max_new_tokens, some aborted. Then:

0. a dry run lists each sample as a JSON line and sends nothing; --max-requests 50 lists 50;
1. all their dumps are harvested into the extraction stand-in (standin_server.py, the protocol
   level: it logs each request it accepts): every finished, naturally stopped request that a
   dump file holds is accepted exactly once, its ids the production prompt's token ids followed
   by its output ids; the record (mode 0600) has a mask of exactly the generated tokens, a source naming
   the dump file, the request's times and (0.5.x) the production model path; the skipped are
   counted by reason (length, aborted, partial streams) as the dumps say; exit status 0;
2. the sender killed with SIGKILL mid-run against a slow stand-in, then the same command: every
   sample accepted, at most --concurrency of them twice;
3. a hostile folder beside the good dumps (hostile_dumps.py: a reduce to os.system that would
   create a canary, an unknown class, 1 GiB declared in a few bytes, a 1 GiB frame, a list
   nested 100,000 deep, a truncated dump, a symlink, a FIFO): the canary never appears, each bad
   file is named with its reason, the good files' samples are all accepted, exit status 1.
"""

import collections
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
sys.path[:0] = [HERE]

import hostile_dumps  # noqa: E402
from harness import send_program, start_server  # noqa: E402
import tiny_tokenizer  # noqa: E402

RELEASES = (("0.4.6", []), ("0.5.9", ["--stream-output"]), ("0.5.23", []))
PER_RELEASE = 140
THRESHOLD = 20
CHUNK = 4
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


def wheel(release):
    folder = os.environ.get("PYSPLICE_WHEELS") or os.path.join(REPO, "target", "sglang-wheels")
    found = sorted(glob.glob(os.path.join(folder, "sglang-%s-*.whl" % release)))
    if not found:
        raise SystemExit("no wheel of sglang %s in %s: run scripts/fetch-corpus.sh" % (release, folder))
    return found[0]


def post(url, path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status, r.read()


def serve_production(url, rng, release, folder):
    """The release's traffic: 140 requests of every kind, 8 at a time."""
    status, _ = post(url, "/configure_logging", {
        "log_requests": False, "log_requests_level": 3,
        "dump_requests_folder": folder, "dump_requests_threshold": THRESHOLD})
    check(status == 200, "%s: /configure_logging answered %s" % (release, status))
    jobs = []
    for k in range(PER_RELEASE):
        words = "%s %d: %s" % (release, k, tiny_tokenizer._words(rng, rng.randint(2, 30)))
        stream = rng.random() < 0.2
        limit = 4 if rng.random() < 0.12 else 512
        api = rng.choice(("text", "ids", "completion", "chat"))
        rid = ("slow-%s-%d" % (release, k)) if rng.random() < 0.05 else None
        jobs.append((api, words, stream, limit, rid))
    # In rounds of THRESHOLD requests, each in a new second: a dump file is named by the second
    # it is written in, and a second file of the same second replaces the first.
    for start in range(0, len(jobs), THRESHOLD):
        serve_round(url, jobs[start : start + THRESHOLD])
        time.sleep(1.05 - time.time() % 1.0)


def serve_round(url, jobs):
    pending = list(jobs)
    lock = threading.Lock()

    def one():
        while True:
            with lock:
                if not pending:
                    return
                api, words, stream, limit, rid = pending.pop()
            sp = {"max_new_tokens": limit}
            if rid:
                threading.Timer(0.3, post, (url, "/abort_request", {"rid": rid})).start()
            if api == "text":
                post(url, "/generate", {"text": words, "sampling_params": sp, "stream": stream, **({"rid": rid} if rid else {})})
            elif api == "ids":
                post(url, "/generate", {"input_ids": TOK(words)["input_ids"], "sampling_params": sp, "stream": stream, **({"rid": rid} if rid else {})})
            elif api == "completion":
                post(url, "/v1/completions", {"prompt": words, "max_tokens": limit, "stream": stream, **({"rid": rid} if rid else {})})
            else:
                post(url, "/v1/chat/completions", {"messages": [{"role": "user", "content": words}], "max_tokens": limit,
                                                  "stream": stream, **({"rid": rid} if rid else {})})

    threads = [threading.Thread(target=one) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def dumped(release, log):
    """What the dump files of one release hold: [request], from the stand-in's log (a file
    written twice in one second holds its last write only, as the releases' own do)."""
    requests, files = {}, {}
    with open(log) as f:
        for line in f:
            e = json.loads(line)
            if "file" in e:
                files[e["file"]] = e["rids"]
            else:
                requests[e["rid"]] = e
    out = []
    for name, rids in files.items():
        for index, rid in enumerate(rids):
            r = dict(requests[rid], file=name, index=index, release=release)
            partial = release == "0.5.9" and r["stream"] and len(r["output"]) > CHUNK
            r["expect"] = "partial-stream" if partial and r["finish"] == "stop" else r["finish"]
            out.append(r)
    return out


def record(path):
    sent = {}
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if e.get("event") == "sent":
                sent[e["rid"]] = e
    return sent


def accepted(*logs):
    out = collections.defaultdict(list)
    for log in logs:
        if os.path.exists(log):
            with open(log) as f:
                for line in f:
                    e = json.loads(line)
                    out[e["rid"]].append(e["input_ids"])
    return out


def command(url, dirs, tok, rec, *extra):
    return [send_program(), "--python", sys.executable, "--request-dumps", *dirs, "--tokenizer", tok, "--url", url,
            "--record", rec, "--concurrency", str(CONCURRENCY), "--retries", "6", "--progress", "lines",
            "--min-age", "0", *extra]


def verify(name, got, rec, expected, duplicates=0):
    """Each expected sample accepted (at most `duplicates` twice), with its ids; its record
    entry's mask and source right."""
    by_source = {}
    for rid, e in rec.items():
        s = e.get("source") or {}
        by_source[(s.get("file"), s.get("index"), s.get("production_rid"))] = (rid, e)
    want = [r for r in expected if r["expect"] == "stop"]
    twice = 0
    for r in want:
        key = (r["file"], r["index"], r["rid"])
        hit = by_source.get(key)
        if not check(hit is not None, "%s: %s %s#%d (rid %s) not in the record" % (name, r["release"], r["file"], r["index"], r["rid"])):
            continue
        rid, e = hit
        ids = r["prompt"] + r["output"]
        sends = got.get(rid, [])
        twice += len(sends) > 1
        check(sends and all(s == ids for s in sends), "%s: %s accepted %d times, ids right: %s" % (name, rid, len(sends), [s == ids for s in sends]))
        check(e["mask"] == [[len(r["prompt"]), len(ids)]], "%s: %s mask %s, generated tokens are [%d, %d)" % (name, rid, e["mask"], len(r["prompt"]), len(ids)))
        s = e["source"]
        check(abs(s["created"] - r["created"]) < 1e-3 and s["finished"] >= s["created"], "%s: %s times %s" % (name, rid, s))
        model = None if r["release"] == "0.4.6" else "org/production-model"
        check(s["model_path"] == model and s["family"] == r["release"][:3], "%s: %s model path %r family %r" % (name, rid, s["model_path"], s["family"]))
    check(twice <= duplicates, "%s: %d samples accepted twice (at most %d may be)" % (name, twice, duplicates))
    extra = set(got) - {by_source[(r["file"], r["index"], r["rid"])][0] for r in want if (r["file"], r["index"], r["rid"]) in by_source}
    check(not extra, "%s: %d accepted that are not naturally stopped requests of the dumps: %s" % (name, len(extra), sorted(extra)[:3]))
    return len(want)


def stop_after(cmd, log, requests, sig):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while sum(len(v) for v in accepted(log).values()) < requests and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    early = proc.poll() is None
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=300)
    return early, proc.returncode, out, err


TOK = None


def production(tmp, tok, rng, procs):
    """Each release's stand-in serves its traffic and dumps it: (dump folders, [request])."""
    dirs, expected = [], []
    for release, flags in RELEASES:
        log = os.path.join(tmp, "production-%s.jsonl" % release)
        proc = subprocess.Popen([sys.executable, os.path.join(HERE, "production_server.py"), "--release", release,
                                 "--wheel", wheel(release), "--tokenizer", tok, "--log", log, "--chunk", str(CHUNK), *flags],
                                stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        url = proc.stdout.readline().split()[-1]
        folder = os.path.join(tmp, "dumps", release)
        dirs.append(folder)
        serve_production(url, rng, release, folder)
        proc.terminate()
        proc.wait(30)
        expected += dumped(release, log)
    return dirs, expected


def main():
    global TOK
    from transformers import AutoTokenizer

    t_all = t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="send-harvest-")
    procs = []
    try:
        tok = os.path.join(tmp, "tok")
        tiny_tokenizer.make(tok)
        TOK = AutoTokenizer.from_pretrained(tok)
        dirs, expected = production(tmp, tok, random.Random(36), procs)
        counts = collections.Counter(r["expect"] for r in expected)
        t0 = phase("3 production stand-ins served %d requests; their dumps hold %d: %s" % (
            PER_RELEASE * len(RELEASES), len(expected), dict(counts)), t0)
        check(counts["stop"] >= 300, "only %d naturally stopped requests dumped (300 wanted)" % counts["stop"])
        for kind in ("length", "abort", "partial-stream"):
            check(counts[kind] > 0, "no %s request in the dumps" % kind)

        # 0. a dry run: one JSON line a sample, nothing sent; --max-requests stops the read
        n_stop = counts["stop"]
        proc = subprocess.run(command("http://127.0.0.1:9", dirs, tok, os.path.join(tmp, "dry.record"), "--dry-run"),
                              capture_output=True, text=True, timeout=300)
        lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
        check(proc.returncode == 0 and len(lines) == n_stop and "dry run: %d requests would be sent" % n_stop in proc.stdout,
              "0. dry run: exit %d, %d lines for %d samples: %r" % (proc.returncode, len(lines), n_stop, proc.stdout[-300:]))
        check(all(set(x) == {"rid", "tokens", "generated", "source"} and 0 < x["generated"] < x["tokens"] for x in lines),
              "0. dry run lines: %r" % lines[:1])
        proc = subprocess.run(command("http://127.0.0.1:9", dirs, tok, os.path.join(tmp, "dry2.record"), "--dry-run", "--max-requests", "50"),
                              capture_output=True, text=True, timeout=300)
        check(sum(x.startswith("{") for x in proc.stdout.splitlines()) == 50, "0. --max-requests 50: %r" % proc.stdout[-300:])
        t0 = phase("0. dry run: %d samples listed, nothing sent; --max-requests 50 lists 50" % len(lines), t0)

        # 1. harvest everything into one extraction stand-in
        log = os.path.join(tmp, "extraction.jsonl")
        ext, url = start_server("--log", log)
        procs.append(ext)
        rec = os.path.join(tmp, "one.record")
        proc = subprocess.run(command(url, dirs, tok, rec), capture_output=True, text=True, timeout=300)
        n = verify("harvest", accepted(log), record(rec), expected)
        check(proc.returncode == 0, "1. exit status %d: %s" % (proc.returncode, proc.stderr[-600:]))
        check(os.stat(rec).st_mode & 0o777 == 0o600, "1. the record is mode %o, not 0600" % (os.stat(rec).st_mode & 0o777))
        line = [x for x in proc.stdout.splitlines() if "request dumps:" in x]
        check(line and "%d samples taken" % n in line[0], "1. summary: %r" % proc.stdout[-600:])
        for kind, words in (("length", "stopped by max_new_tokens"), ("abort", "aborted"), ("partial-stream", "streamed, only the last delta")):
            check(line and re.search(r"\b%d %s" % (counts[kind], re.escape(words)), line[0]), "1. %d %s not counted: %r" % (counts[kind], kind, line))
        ext.terminate()
        ext.wait(30)
        t0 = phase("1. harvested %d samples into the extraction stand-in: %s" % (n, line[0] if line else proc.stdout[-300:]), t0)

        # 2. SIGKILL mid-run, then the same command
        log = os.path.join(tmp, "killed.jsonl")
        ext, url = start_server("--log", log, "--delay", "0.1", "--max-batch", "4")
        procs.append(ext)
        rec = os.path.join(tmp, "killed.record")
        cmd = command(url, dirs, tok, rec)
        early, code, _, _ = stop_after(cmd, log, 60, signal.SIGKILL)
        check(early and code == -signal.SIGKILL, "2. kill: early %s, exit %s" % (early, code))
        first = sum(len(v) for v in accepted(log).values())
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        check(proc.returncode == 0, "2. rerun: exit status %d: %s" % (proc.returncode, proc.stderr[-600:]))
        verify("resume", accepted(log), record(rec), expected, duplicates=CONCURRENCY)
        twice = sum(1 for v in accepted(log).values() if len(v) > 1)
        ext.terminate()
        ext.wait(30)
        t0 = phase("2. SIGKILL after %d accepted, then rerun: exit %d, %d sent twice (at most %d)" % (first, proc.returncode, twice, CONCURRENCY), t0)

        # 3. a hostile folder beside the good dumps
        hostile = os.path.join(tmp, "hostile")
        canary = os.path.join(tmp, "CANARY")
        good = sorted(glob.glob(os.path.join(dirs[1], "*.pkl")))[0]
        want = hostile_dumps.write_all(hostile, good, canary)
        log = os.path.join(tmp, "hostile.jsonl")
        ext, url = start_server("--log", log)
        procs.append(ext)
        rec = os.path.join(tmp, "hostile.record")
        proc = subprocess.run(command(url, dirs + [hostile], tok, rec), capture_output=True, text=True, timeout=300)
        check(not os.path.exists(canary), "3. the canary exists: the reduce ran")
        check(proc.returncode == 1, "3. exit status %d, wanted 1" % proc.returncode)
        for name, words in sorted(want.items()):
            lines = [x for x in proc.stderr.splitlines() if os.path.join(hostile, name) + ": not read:" in x]
            check(lines and all(w in lines[0] for w in words), "3. %s not named with %s: %s" % (name, words, lines))
        verify("hostile", accepted(log), record(rec), expected)
        ext.terminate()
        ext.wait(30)
        t0 = phase("3. hostile folder: %d bad files named, canary absent: %s, exit %d" % (len(want), not os.path.exists(canary), proc.returncode), t0)
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
