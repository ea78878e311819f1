#!/usr/bin/env python3
"""The whole extraction job against the real SGLang server on a CPU, as docs/sglang.md tells a user.

    VENV/bin/python crates/pysplice-sglang/tests/python/real/job.py --venv VENV --release X --arch ARCH --bin DIR --work DIR [--live]

VENV holds the `sglang` release X installed without GPU packages (scripts/sglang-cpu-venv.sh);
DIR holds the programs (sglang-hs-dump, sglang-hs-send, sglang-hs-inspect). ARCH is a model of
crates/pysplice-sglang/tests/python/real/tiny_models.py. The steps, each checked:

1. Revert anything a previous run left, and check that every model file of the install is the
   wheel's (the sha256 of its RECORD).
2. With --live, the live-traffic route first: the unpatched server, its request dump turned on by
   the real `POST /configure_logging`, prompts from several clients at once, the server stopped.
3. Patch: `sglang-hs-dump --installed --python VENV/bin/python` (with `--arch` for models other
   than DeepSeek), its printed flags read from `--json`.
4. Launch `python -m sglang.launch_server` with those flags on a free port, SGLANG_HS_DUMP_DIR set,
   chunked prefill at 64 tokens so that long prompts arrive in real scheduler chunks.
5. `sglang-hs-send --conversations` (several in flight at once, so batches mix), and with --live
   `sglang-hs-send --request-dumps` of step 2's folder to the same server.
6. Wait until the dump is idle: the block of the guide's step 5, read from docs/sglang.md.
7. `sglang-hs-inspect`: every sample complete, one provenance.
8. Stop the server the way SGLang stops (SIGTERM to the launcher; SIGKILL of its process group
   only after a time-out, which fails the job).
9. Every sample against transformers' float32 forward (crates/pysplice-sglang/tests/python/real/reference.py), ids and masks
   against SpecForge's parser (crates/pysplice-sglang/tests/python/real/expect.py).
10. Revert, and every model file is the wheel's again.

With --store PY (PY: the store venv's python, scripts/store-venv.sh; 0.5.10 or newer) the server
also runs the dump's store sink (SGLANG_HS_DUMP_SINK=mooncake://job?keep=files, a Mooncake master
on loopback started and stopped here): after step 6, and before the server stops (the objects are
in its segment), `sglang-hs-send --publish` announces every sample to SpecForge's own online
trainer (crates/pysplice-sglang/tests/python/store/specforge_consumer.py), which must train on
each, every tensor it receives the bytes of the sample's file (its loss mask the one step 5 set).

CPU specifics (crates/pysplice-sglang/tests/python/real/standin/sgl_kernel on PYTHONPATH, `SGLANG_USE_CPU_ENGINE=1`, the
launch wrapper crates/pysplice-sglang/tests/python/real/launch.py for DeepSeek's attention backend) are in
docs/sglang.md's compatibility section. Prints one line per step; exit 0 when all hold.
"""

import argparse
import base64
import concurrent.futures
import csv
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "crates", "pysplice-sglang", "tests", "python", "send"))
import tiny_tokenizer  # noqa: E402

ARCH_CLASS = {"llama": "LlamaForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM", "deepseek_v2": "DeepseekV2ForCausalLM"}
DEEPSEEK = ("deepseek_v3", "deepseek_v2")
CHUNK = 64
READY_TIMEOUT = 600
STOP_TIMEOUT = 90


class JobFailed(Exception):
    pass


def records_rids(release):
    """Whether a release's samples carry their request's rid (0.5.10 and later)."""
    return tuple(int(x) for x in re.findall(r"\d+", release)[:3]) >= (0, 5, 10)


def step(message):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), message), flush=True)


def run(cmd, env=None, ok=(0,), capture=True, timeout=900):
    shown = " ".join(str(c) for c in cmd)
    proc = subprocess.run([str(c) for c in cmd], env=env, capture_output=capture, text=True, timeout=timeout)
    if proc.returncode not in ok:
        raise JobFailed("%s exited %d\n%s%s" % (shown, proc.returncode, proc.stdout or "", proc.stderr or ""))
    return proc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


class Install:
    """The release's site-packages: its sglang/srt/models files against the wheel's RECORD."""

    def __init__(self, venv):
        self.python = os.path.join(venv, "bin", "python")
        out = run([self.python, "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout
        self.site = out.strip()
        records = [d for d in os.listdir(self.site) if d.startswith("sglang-") and d.endswith(".dist-info")]
        if len(records) != 1:
            raise JobFailed("%s: expected one sglang dist-info, found %s" % (self.site, records))
        self.record = os.path.join(self.site, records[0], "RECORD")

    def model_files_differing(self):
        differ, count = [], 0
        with open(self.record, newline="") as f:
            for row in csv.reader(f):
                path, digest = row[0], row[1] if len(row) > 1 else ""
                if not path.startswith("sglang/srt/models/") or not path.endswith(".py") or not digest:
                    continue
                count += 1
                algo, want = digest.split("=", 1)
                with open(os.path.join(self.site, path), "rb") as g:
                    got = base64.urlsafe_b64encode(hashlib.new(algo, g.read()).digest()).rstrip(b"=").decode()
                if got != want:
                    differ.append(path)
        return count, differ


STORE = os.path.join(REPO, "crates", "pysplice-sglang", "tests", "python", "store")


class Store:
    """A Mooncake master on loopback for the store route (store/mooncake_stack.py, by PID)."""

    def __init__(self, python, work):
        self.python, self.logs = python, os.path.join(work, "mooncake")
        out = run([python, os.path.join(STORE, "mooncake_stack.py"), "start", "--log-dir", self.logs], ok=(0,)).stdout
        self.env = dict(re.findall(r"^export (\w+)=(\S*)$", out, re.M))
        self.site = run([python, "-I", "-c", "import os, mooncake; print(os.path.dirname(os.path.dirname(mooncake.__file__)))"]).stdout.strip()

    def stop(self):
        run([self.python, os.path.join(STORE, "mooncake_stack.py"), "stop", "--log-dir", self.logs], ok=(0, 1))


class Server:
    """`python -m sglang.launch_server` (or the DeepSeek wrapper) on a free port, its log in a file."""

    def __init__(self, job, dump_dir, flags, name):
        self.job, self.port = job, free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log_path = os.path.join(job.work, "%s.log" % name)
        env = dict(os.environ)
        env.pop("SGLANG_HS_DUMP_DIR", None)
        env.update(SGLANG_USE_CPU_ENGINE="1", PYTHONPATH=os.path.join(HERE, "standin"), PYTHONUNBUFFERED="1")
        if dump_dir:
            env["SGLANG_HS_DUMP_DIR"] = dump_dir
        if dump_dir and job.store is not None:  # the store sink: mooncake importable, the store's address
            env.update(job.store.env, SGLANG_HS_DUMP_SINK="mooncake://job?keep=files", MOONCAKE_GLOBAL_SEGMENT_SIZE=str(256 << 20))
            env["PYTHONPATH"] += os.pathsep + job.store.site
        deepseek = job.arch in DEEPSEEK
        entry = [os.path.join(HERE, "launch.py")] if deepseek else ["-m", "sglang.launch_server"]
        cmd = [job.install.python] + entry + [
            "--model-path", job.model, "--device", "cpu", "--host", "127.0.0.1", "--port", str(self.port),
            "--attention-backend", "intel_amx" if deepseek else "torch_native",
            "--sampling-backend", "pytorch", "--max-total-tokens", "16384", "--chunked-prefill-size", str(CHUNK),
            "--max-running-requests", "8", "--mem-fraction-static", "0.1", "--log-level", "warning",
            # the scheduler polls without pause when idle otherwise: a core taken from everything else
            "--sleep-on-idle",
        ] + flags
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.started = time.monotonic()

    def tail(self, n=40):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def wait_ready(self):
        while time.monotonic() - self.started < READY_TIMEOUT:
            if self.proc.poll() is not None:
                raise JobFailed("the server exited %d before it was ready:\n%s" % (self.proc.returncode, self.tail()))
            try:
                if http(self.url + "/health", timeout=5)[0] == 200:
                    return time.monotonic() - self.started
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(1)
        raise JobFailed("the server was not ready in %d s:\n%s" % (READY_TIMEOUT, self.tail()))

    def stop(self):
        """SIGTERM to the launcher, as Ctrl-C or `kill PID` does; the job fails on a hang."""
        began = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_TIMEOUT)
            hung = False
        except subprocess.TimeoutExpired:
            hung = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of its tree is left
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()
        if hung:
            raise JobFailed("the server did not stop within %d s of SIGTERM:\n%s" % (STOP_TIMEOUT, self.tail()))
        return time.monotonic() - began


class Job:
    def __init__(self, args):
        self.args, self.arch, self.release = args, args.arch, args.release
        self.work = os.path.abspath(args.work)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work, mode=0o700)
        self.install = Install(args.venv)
        self.bin = lambda name: os.path.join(args.bin, name)
        self.model = os.path.join(self.work, "model")
        self.dump = os.path.join(self.work, "dump")
        self.requests = os.path.join(self.work, "requests")
        self.live = []
        # Samples carry their request's rid from 0.5.10: before, the sender cannot match them to
        # what it sent, so it sends with a record only and the masks stay all ones (the guide).
        self.rids = records_rids(self.release)
        self.store = Store(args.store, self.work) if args.store else None

    def hs_dump(self, *extra, ok=(0,)):
        arch = [] if self.arch in DEEPSEEK else ["--arch", ARCH_CLASS[self.arch]]
        return run([self.bin("sglang-hs-dump"), "--installed", "--python", self.install.python] + arch + list(extra), ok=ok)

    def check_pristine(self, when):
        count, differ = self.install.model_files_differing()
        if differ:
            raise JobFailed("%s: %d of %d model files differ from the wheel: %s" % (when, len(differ), count, differ[:5]))
        step("%s: all %d model files are the wheel's" % (when, count))

    def prepare(self):
        run([self.bin("sglang-hs-dump"), "--installed", "--python", self.install.python, "--revert"], ok=(0, 1, 2))
        self.check_pristine("before")
        run([self.install.python, os.path.join(HERE, "tiny_models.py"), self.model, self.arch])
        convs = self.conversations()
        self.conv_path = os.path.join(self.work, "train.jsonl")
        with open(self.conv_path, "w") as f:
            for c in convs:
                f.write(json.dumps(c) + "\n")
        step("model %s and %d conversations (%s tokens)" % (ARCH_CLASS[self.arch], len(convs), ", ".join(str(c["_len"]) for c in convs)))

    def conversations(self):
        """Conversations of 20 to 700 tokens: several longer than a chunk, a few several chunks long."""
        import transformers

        tok = transformers.AutoTokenizer.from_pretrained(self.model)
        out, short, long = [], 0, 0
        for case in tiny_tokenizer.conversations(400, seed=11):
            if case.kind != "ok" or "messages" not in case.line:
                continue
            text = tok.apply_chat_template(case.line["messages"], tokenize=False)
            n = len(tok(text, add_special_tokens=False)["input_ids"])
            if 20 <= n < CHUNK and short < 4:
                short += 1
            elif 3 * CHUNK <= n <= 700 and long < 6:
                long += 1
            elif CHUNK <= n < 3 * CHUNK and len(out) - short - long < 2:
                pass
            else:
                continue
            out.append({"id": "conv-%d" % len(out), "messages": case.line["messages"], "_len": n})
            if short == 4 and long == 6 and len(out) >= 12:
                break
        return out

    def live_route(self):
        """The unpatched server: request dumps on, traffic from four clients, the server stopped."""
        server = Server(self, None, [], "production")
        ready = server.wait_ready()
        step("unpatched server ready in %.0f s on %s" % (ready, server.url))
        os.makedirs(self.requests, mode=0o700)
        prompts = [self.chat_prompt(i) for i in range(8)]
        # Some requests stop naturally: on the token greedy decoding gives third (found before the
        # request dump is on, so that it holds the traffic alone).
        stops = {i: self.third_token(server, prompts[i]) for i in range(1, len(prompts), 2)}
        http(server.url + "/configure_logging", {"dump_requests_folder": self.requests, "dump_requests_threshold": len(prompts)})

        def ask(i):
            body = {"text": prompts[i], "sampling_params": {"max_new_tokens": 6 + i, "temperature": 0}}
            if i in stops:
                body["sampling_params"]["stop_token_ids"] = [stops[i]]
            status, raw = http(server.url + "/generate", body, timeout=300)
            answer = json.loads(raw)
            return {"prompt": prompts[i], "output_ids": answer["output_ids"], "meta": answer["meta_info"]}

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(len(prompts))))
        deadline = time.monotonic() + 60
        while not any(n.endswith(".pkl") for n in os.listdir(self.requests)):
            if time.monotonic() > deadline:
                raise JobFailed("no request dump in %s within 60 s:\n%s" % (self.requests, server.tail()))
            time.sleep(0.5)
        stopped = server.stop()
        import transformers

        tok = transformers.AutoTokenizer.from_pretrained(self.model)
        for a in answers:
            prompt_ids = tok(a["prompt"])["input_ids"]  # as the TokenizerManager tokenizes text
            out = list(a["output_ids"])
            fr = a["meta"].get("finish_reason") or {}
            if fr.get("type") == "stop" and isinstance(fr.get("matched"), int) and (not out or out[-1] != fr["matched"]):
                out.append(fr["matched"])
            self.live.append({"prompt_ids": prompt_ids, "output_ids": out, "finish": fr.get("type")})
        with open(os.path.join(self.work, "live.json"), "w") as f:
            json.dump(self.live, f)
        step("live traffic: %d requests answered (%s), dumped to %s, server stopped in %.0f s" % (
            len(answers), ", ".join(sorted({a["finish"] for a in self.live})), os.listdir(self.requests), stopped))

    def chat_prompt(self, i):
        cases = [c for c in tiny_tokenizer.conversations(60, seed=23 + i) if c.kind == "ok" and "messages" in c.line]
        user = [m for m in cases[0].line["messages"] if m["role"] == "user"][0]
        words = user["content"].split()[: 12 + 9 * i]
        return "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n" % " ".join(words)

    def third_token(self, server, prompt):
        body = {"text": prompt, "sampling_params": {"max_new_tokens": 3, "temperature": 0}}
        return json.loads(http(server.url + "/generate", body, timeout=300)[1])["output_ids"][-1]

    def patch(self):
        out = json.loads(self.hs_dump("--json").stdout)
        if not out.get("ok"):
            raise JobFailed("sglang-hs-dump: %s" % out)
        self.flags = list(out["launch"]["flags"])
        step("patched %s: flags %s" % (self.release, " ".join(self.flags)))

    def extract(self):
        server = Server(self, self.dump, self.flags, "patched")
        try:
            ready = server.wait_ready()
            step("patched server ready in %.0f s on %s" % (ready, server.url))
            began = time.monotonic()
            send = [self.bin("sglang-hs-send"), "--python", self.install.python, "--tokenizer", self.model,
                    "--url", server.url, "--concurrency", "4", "--progress", "lines"]
            if self.rids:
                send += ["--dump-dir", self.dump]
            else:
                send += ["--record", os.path.join(self.work, "record.jsonl")]
            out = run(send + ["--conversations", self.conv_path], ok=(0,), timeout=900)
            step("sent the conversations in %.0f s: %s" % (time.monotonic() - began, out.stdout.strip().splitlines()[-1]))
            if self.args.live:
                began = time.monotonic()
                out = run(send + ["--request-dumps", self.requests, "--min-age", "0", "--keep-finish", "stop,length"], timeout=900)
                step("sent the request dumps in %.0f s: %s" % (time.monotonic() - began, out.stdout.strip().splitlines()[-1]))
            self.wait_idle()
            if self.store is not None:
                self.publish(send)
        finally:
            stopped = server.stop()
            if self.store is not None:
                self.store.stop()
        step("patched server stopped in %.0f s" % stopped)

    def publish(self, send):
        """The store route: every sample announced to SpecForge's trainer, which trains on it
        with the bytes of the sample's file."""
        began = time.monotonic()
        control, received = os.path.join(self.work, "control"), os.path.join(self.work, "received.jsonl")
        env = dict(os.environ, **self.store.env)
        trainer = subprocess.Popen(
            [self.store.python, os.path.join(STORE, "specforge_consumer.py"), "--control-dir", control, "--run-id", "job",
             "--tiny-dir", self.model, "--hidden", "64", "--vocab", "1024", "--received", received],
            # one compute thread: the tiny draft gains nothing from more, and idle OpenMP threads spin
            stdout=open(os.path.join(self.work, "trainer.log"), "w"), stderr=subprocess.STDOUT, env=dict(env, OMP_NUM_THREADS="1"))
        cmd = [self.store.python if a == self.install.python else a for a in send]
        try:
            out = run(cmd + ["--conversations", self.conv_path, "--publish", control], ok=(0,), timeout=900, env=env)
            rc = trainer.wait(600)
        finally:
            if trainer.poll() is None:
                trainer.kill()
        if rc != 0:
            raise JobFailed("SpecForge's trainer exited %d (%s/trainer.log)" % (rc, self.work))
        files = dict()
        for name in os.listdir(self.dump):
            if name.endswith(".ckpt"):
                files[name[: -len(".ckpt")]] = os.path.join(self.dump, name)
        with open(received) as f:
            got = [json.loads(line) for line in f]
        if sorted(r["sample_id"] for r in got) != sorted(files):
            raise JobFailed("the trainer trained on %d samples, the folder holds %d" % (len(got), len(files)))
        check = [self.store.python, os.path.join(STORE, "same_bytes.py"), received, self.dump]
        run(check, ok=(0,), timeout=300)
        step("store route: %d samples announced and trained on, each tensor the file's bytes, in %.0f s: %s" % (
            len(got), time.monotonic() - began, out.stdout.strip().splitlines()[-1]))

    def wait_idle(self):
        """The guide's own block of step 5, as docs/sglang.md prints it."""
        with open(os.path.join(REPO, "docs", "sglang.md")) as f:
            guide = f.read()
        block = re.search(r"^python3 - \"\$SGLANG_HS_DUMP_DIR\" <<'WAIT_IDLE'\n(.*?)^WAIT_IDLE$", guide, re.S | re.M)
        if not block:
            raise JobFailed("docs/sglang.md has no WAIT_IDLE block in step 5")
        proc = subprocess.run([self.install.python, "-", self.dump], input=block.group(1), capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise JobFailed("the wait for an idle dump exited %d: %s%s" % (proc.returncode, proc.stdout, proc.stderr))
        step("guide step 5: %s" % proc.stdout.strip())

    def inspect_and_compare(self):
        out = run([self.bin("sglang-hs-inspect"), self.dump, "--python", self.install.python, "--json"])
        report = json.loads(out.stdout)
        if not report.get("ok") or report.get("partial"):
            raise JobFailed("sglang-hs-inspect: %s" % out.stdout[:2000])
        step("sglang-hs-inspect: %d complete, %d tokens, one provenance" % (report["complete"], report["tokens"]["complete"]))
        expect = os.path.join(self.work, "expect.json")
        live = ["--live", os.path.join(self.work, "live.json")] if self.args.live else []
        live += [] if self.rids else ["--masks-unset"]
        run([self.install.python, os.path.join(HERE, "expect.py"), self.model, self.conv_path, expect] + live)
        proc = subprocess.run([self.install.python, os.path.join(HERE, "reference.py"), self.dump, self.model,
                               "--release", self.release, "--arch", ARCH_CLASS[self.arch], "--expect", expect],
                              capture_output=True, text=True, timeout=900)
        with open(os.path.join(self.work, "reference.txt"), "w") as f:
            f.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise JobFailed("reference comparison failed:\n%s%s" % (proc.stdout[-6000:], proc.stderr[-3000:]))
        step("reference: %s" % proc.stdout.strip().splitlines()[-1])

    def revert(self):
        self.hs_dump("--revert")
        self.check_pristine("after revert")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", required=True)
    parser.add_argument("--release", required=True)
    parser.add_argument("--arch", required=True, choices=sorted(ARCH_CLASS))
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--live", action="store_true", help="also the live-traffic route")
    parser.add_argument("--store", metavar="PY", help="also the store route, with the store venv's python")
    args = parser.parse_args()
    if (args.live or args.store) and not records_rids(args.release):
        parser.error("--live and --store need 0.5.10 or newer (the sender masks by rid)")
    began = time.monotonic()
    job = Job(args)
    try:
        job.prepare()
        if args.live:
            job.live_route()
        job.patch()
        job.extract()
        job.inspect_and_compare()
        job.revert()
    except (JobFailed, subprocess.TimeoutExpired) as exc:
        print("FAIL sglang %s %s: %s" % (args.release, args.arch, exc), flush=True)
        try:
            job.hs_dump("--revert", ok=(0, 1, 2))
        except Exception:  # noqa: BLE001  (the failure above is what matters)
            pass
        sys.exit(1)
    print("OK sglang %s %s%s in %.0f s" % (args.release, args.arch, " with live traffic" if args.live else "", time.monotonic() - began))


if __name__ == "__main__":
    main()
