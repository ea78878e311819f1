"""What the send tests and the send benchmark share, needing nothing beyond the standard library:
the `sglang-hs-send` program of this checkout and a stand-in server started on a free port."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))


def send_program(kinds=("debug", "release")):
    """$SGLANG_HS_SEND, else target/KIND/sglang-hs-send of this checkout, the first that exists;
    as an absolute path (tests run it from folders of their own)."""
    if os.environ.get("SGLANG_HS_SEND"):
        return os.path.abspath(os.environ["SGLANG_HS_SEND"])
    for kind in kinds:
        p = os.path.join(REPO, "target", kind, "sglang-hs-send")
        if os.path.exists(p):
            return p
    raise SystemExit("no sglang-hs-send: cargo build --bin sglang-hs-send, or set SGLANG_HS_SEND")


FAILURES = []  # what check() found, for a script's exit status


def check(cond, what):
    """Note and print a failed check; `cond` as it was."""
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


def start_server(*args, env=None, stderr=None):
    """Start crates/pysplice-sglang/tests/python/send/standin_server.py with `args` on a free port: (process, its URL)."""
    cmd = [sys.executable, os.path.join(HERE, "standin_server.py"), "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, stderr=stderr)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError("stand-in did not start: %r" % line)
    return proc, line.split()[-1]
