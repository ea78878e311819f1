#!/usr/bin/env python3
"""Tests of what `sglang-hs-send` checks before its first conversation, and of its tokenizers.

    SGLANG_HS_SEND=target/debug/sglang-hs-send python3 crates/pysplice-sglang/tests/python/send_preflight_test.py

Needs `transformers`, `jinja2` and `tokenizers` (the tiny tokenizer of crates/pysplice-sglang/tests/python/send/); no network,
no PyTorch. Each failure of the preflight must be one line on stderr and exit status 2: no
server listening (within 10 s), a server that is not ready, jinja2 missing (said first, before
anything else is tried), a tokenizer that does not load, a tokenizer with code of its own
without --trust-remote-code, and a dump folder the server does not dump into (found with the
first conversation, sent alone). The sender's mask for a Python tokenizer class and a
remote-code one is the fast tokenizer's.
"""

import http.server
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path[:0] = [os.path.join(HERE, "send"), os.path.join(REPO, "crates", "pysplice-sglang", "python")]
MODULES = tempfile.mkdtemp(prefix="send_preflight_modules_")
os.environ["HF_MODULES_CACHE"] = MODULES  # remote code is copied into a cache of this run's own
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import python_tokenizer  # noqa: E402
import tiny_tokenizer  # noqa: E402
from harness import send_program, start_server  # noqa: E402


def free_port():
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_send():
    """The sender's own module (crates/pysplice-sglang/python/pysplice_sglang/send.py), imported, not run."""
    return importlib.import_module("pysplice_sglang.send")


class NotReady(http.server.BaseHTTPRequestHandler):
    """A server that answers every request with 503, as SGLang does while it starts."""

    def do_GET(self):
        self.send_response(503)
        self.send_header("content-length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


class PreflightTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="send_preflight_")
        cls.tok = os.path.join(cls.tmp, "tok")
        cls.fast = tiny_tokenizer.make(cls.tok)
        cls.remote = python_tokenizer.save_remote(cls.fast, os.path.join(cls.tmp, "remote-tok"))
        cls.cases = tiny_tokenizer.conversations(12, seed=5)
        cls.conv = os.path.join(cls.tmp, "conversations.jsonl")
        tiny_tokenizer.write_jsonl(cls.conv, cls.cases)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        shutil.rmtree(MODULES, ignore_errors=True)

    def send(self, *args, env=None, tokenizer=None):
        """Run the sender: (exit status, stdout, stderr, seconds)."""
        cmd = [send_program(), "--python", sys.executable, "--conversations", self.conv,
               "--tokenizer", tokenizer or self.tok, "--progress", "none", *args]
        t0 = time.monotonic()
        full_env = dict(os.environ, HF_HUB_OFFLINE="1", **(env or {}))
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0

    def one_line(self, code, out, err, *words):
        self.assertEqual(code, 2, err)
        self.assertEqual(out, "")
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("sglang-hs-send: "), lines[0])
        for w in words:
            self.assertIn(w, lines[0])
        return lines[0]

    def test_no_server_stops_within_ten_seconds(self):
        url = "http://127.0.0.1:%d" % free_port()
        code, out, err, took = self.send("--url", url, "--record", os.path.join(self.tmp, "r0.jsonl"))
        self.one_line(code, out, err, url, "nothing answers", "3 tries")
        self.assertLess(took, 10.0)
        # with a dump folder that does not exist yet: the same line, and the folder not made
        dump = os.path.join(self.tmp, "never-made")
        code, out, err, took = self.send("--url", url, "--dump-dir", dump)
        self.one_line(code, out, err, url, "nothing answers")
        self.assertFalse(os.path.exists(dump))
        self.assertLess(took, 10.0)

    def test_a_server_not_ready_is_named_with_its_answer(self):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotReady)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = "http://127.0.0.1:%d" % server.server_address[1]
            code, out, err, took = self.send("--url", url, "--record", os.path.join(self.tmp, "r1.jsonl"))
        finally:
            server.shutdown()
            server.server_close()
        self.one_line(code, out, err, url, "HTTP 503")
        self.assertLess(took, 10.0)

    def test_missing_jinja2_is_said_first(self):
        # a folder on PYTHONPATH (absolute) whose jinja2 cannot be imported, as without it
        shadow = os.path.join(self.tmp, "shadow")
        os.makedirs(os.path.join(shadow, "jinja2"), exist_ok=True)
        with open(os.path.join(shadow, "jinja2", "__init__.py"), "w") as f:
            f.write("raise ModuleNotFoundError(\"No module named 'jinja2'\", name='jinja2')\n")
        url = "http://127.0.0.1:%d" % free_port()  # nothing there either: jinja2 is said first
        code, out, err, took = self.send("--url", url, "--record", os.path.join(self.tmp, "r2.jsonl"),
                                         env=dict(PYTHONPATH=shadow))
        line = self.one_line(code, out, err, "jinja2", "pip install jinja2")
        self.assertNotIn(url, line)
        self.assertNotIn("transformers", line.split(" for ")[0])
        self.assertLess(took, 10.0)
        # also with --dry-run, which needs no server
        code, out, err, _ = self.send("--dry-run", "--record", os.path.join(self.tmp, "r2.jsonl"), env=dict(PYTHONPATH=shadow))
        self.one_line(code, out, err, "jinja2")

    def test_a_tokenizer_that_does_not_load_is_one_line(self):
        for name in (os.path.join(self.tmp, "no-such-tokenizer"), "nobody/no-such-model"):
            code, out, err, _ = self.send("--dry-run", "--record", os.path.join(self.tmp, "r3.jsonl"), tokenizer=name)
            self.one_line(code, out, err, name, "cannot load the tokenizer")

    def test_remote_code_only_with_the_flag(self):
        record = os.path.join(self.tmp, "r4.jsonl")
        code, out, err, _ = self.send("--dry-run", "--record", record, tokenizer=self.remote)
        self.one_line(code, out, err, self.remote, "--trust-remote-code")
        code, out, err, _ = self.send("--dry-run", "--record", record, "--trust-remote-code", tokenizer=self.remote)
        self.assertEqual(code, 1, err)  # the long and rejected conversations are skipped and named
        good = sum(c.kind != "rejected" for c in self.cases)  # (no --context-length: the long ones too)
        self.assertIn("dry run: %d conversations would be sent" % good, out)

    def test_a_dump_folder_the_server_does_not_dump_into(self):
        log = os.path.join(self.tmp, "accepted.jsonl")
        proc, url = start_server("--log", log)  # answers, writes no sample
        dump = os.path.join(self.tmp, "dump")
        os.mkdir(dump, 0o700)  # as a server that dumps elsewhere may have left it
        try:
            code, out, err, took = self.send("--url", url, "--dump-dir", dump, "--land-timeout", "3")
        finally:
            proc.terminate()
            proc.wait(30)
            proc.stdout.close()
        self.one_line(code, out, err, url, dump, "SGLANG_HS_DUMP_DIR=%s" % dump)
        with open(log) as f:
            self.assertEqual(len(f.readlines()), 1, "more than the first conversation was sent")
        self.assertLess(took, 30.0)

    def test_the_senders_mask_is_the_fast_ones_for_python_tokenizers(self):
        send = load_send()
        slow = python_tokenizer.python_twin(self.fast, os.path.join(self.tmp, "python-tok"))
        from pysplice_sglang import masks as slm

        remote = slm.load_tokenizer(self.remote, trust_remote_code=True)
        compared = 0
        for case in self.cases:
            if case.kind not in ("ok", "sharegpt", "long"):
                continue
            messages = tiny_tokenizer.messages_of(case.line)
            want = send.render(self.fast, messages, None)
            self.assertGreater(sum(want[1]), 0)
            self.assertEqual(send.render(slow, messages, None), want)
            self.assertEqual(send.render(remote, messages, None), want)
            compared += 1
        self.assertGreaterEqual(compared, 8)


if __name__ == "__main__":
    unittest.main(verbosity=2)
