#!/usr/bin/env python3
"""A real SGLang router (`smg`, the Shepherd Model Gateway, PyPI `smg==1.13.0`; the successor of
`sglang-router`) in front of stand-in servers, for the `send` end-to-end test.

    pip install smg==1.13.0                      # puts `smg` beside the interpreter
    python3 crates/pysplice-sglang/tests/python/send/router.py http://127.0.0.1:PORT1 http://127.0.0.1:PORT2
        -> prints `listening on http://127.0.0.1:PORT` and routes until SIGTERM / Ctrl-C

From Python:

    import router
    r = router.start(["http://127.0.0.1:P1", "http://127.0.0.1:P2"])   # waits until both are in
    ... POST r.url + "/generate" ...
    r.stop()

The command it runs (found with `smg launch --help`):

    smg launch --host 127.0.0.1 --port PORT --worker-urls URL1 URL2 --policy round_robin
        --prometheus-host 127.0.0.1 --prometheus-port PORT2 --shutdown-grace-period-secs 1
        --log-level warn

Round robin: request i goes to worker i mod N, so a test can see both workers get work.
`--prometheus-*` because smg otherwise serves /metrics on 0.0.0.0:29000, which a second router on
the machine (or a parallel test) would collide with; the grace period because smg otherwise takes
5 s to stop on SIGTERM even with nothing in flight (default grace 180 s). smg registers a worker only after it
answered its probes (health, model info, server info: the stand-in answers them as SGLang 0.5.23
does); `start` waits for GET /workers to list every worker as healthy.

The `smg` program is looked up beside sys.executable, then on PATH; SMG=/path/to/smg overrides.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    """A port the kernel just gave out (smg needs a number; there is no port 0 handshake)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smg_program():
    """The smg executable: $SMG, the one beside this interpreter, or the one on PATH."""
    if os.environ.get("SMG"):
        return os.environ["SMG"]
    here = os.path.join(os.path.dirname(sys.executable), "smg")
    return here if os.path.exists(here) else shutil.which("smg")


def _get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


class Router:
    """A running smg process; `url` is where to send requests."""

    def __init__(self, proc, url, log_path):
        self.proc, self.url, self.log_path = proc, url, log_path

    def workers(self):
        """The router's own view: GET /workers, parsed."""
        return json.loads(_get(self.url + "/workers")[1])

    def stop(self):
        """SIGTERM, then SIGKILL after 10 s; only this process."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def _healthy_urls(listing):
    rows = listing.get("workers", listing) if isinstance(listing, dict) else listing
    out = set()
    for w in rows or []:
        if isinstance(w, dict) and w.get("is_healthy") is True:  # smg 1.13 names it so
            out.add(str(w.get("url", "")).rstrip("/"))
    return out


def start(workers, policy="round_robin", timeout=60.0, extra=()):
    """Start smg in front of `workers` (URLs) and return a Router once every worker is
    registered and healthy; raise RuntimeError (with the router's log) otherwise."""
    prog = smg_program()
    if not prog:
        raise RuntimeError("no smg program: pip install smg==1.13.0")
    port, metrics = free_port(), free_port()
    cmd = [prog, "launch", "--host", "127.0.0.1", "--port", str(port), "--worker-urls", *workers,
           "--policy", policy, "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics),
           "--shutdown-grace-period-secs", "1", "--log-level", "warn", *extra]
    fd, log_path = tempfile.mkstemp(prefix="smg-", suffix=".log")
    with os.fdopen(fd, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    r = Router(proc, "http://127.0.0.1:%d" % port, log_path)
    r.command = cmd
    want = {w.rstrip("/") for w in workers}
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("smg exited %s:\n%s" % (proc.returncode, r.log()[-4000:]))
        try:
            if want <= _healthy_urls(r.workers()) and _get(r.url + "/health")[0] == 200:
                return r
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    r.stop()
    raise RuntimeError("smg did not accept %s within %.0f s:\n%s" % (sorted(want), timeout, r.log()[-4000:]))


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(description="Run smg in front of SGLang (stand-in) servers.")
    p.add_argument("workers", nargs="+", help="worker URLs")
    p.add_argument("--policy", default="round_robin")
    args = p.parse_args(argv)
    r = start(args.workers, args.policy)
    print("listening on %s" % r.url, flush=True)
    print("command: %s" % " ".join(r.command), file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *a: (r.stop(), sys.exit(0)))
    try:
        r.proc.wait()
    except KeyboardInterrupt:
        r.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
