#!/usr/bin/env python3
"""A Mooncake store on loopback for tests: a master, optionally a segment host, stopped by PID.

    python mooncake_stack.py start --log-dir DIR [--segment 256MB]   # prints `export K=V` lines
    python mooncake_stack.py stop --log-dir DIR
    python mooncake_stack.py run --log-dir DIR [--segment 256MB] -- COMMAND...   # start, run, stop

As a module (the store venv's python, scripts/store-venv.sh):

    with MooncakeStack(log_dir, segment="256MB") as stack:
        env = dict(os.environ, **stack.env)   # for every Mooncake client of the test

The master is the real `mooncake_master` binary of the wheel (site-packages/mooncake/; the one on
PATH is a Python stub that execs it), with its metadata server over HTTP; the segment host is a
`mooncake_client` mounting a global segment of the given size, where objects put by a client
without a segment of its own land, and which keeps them after that client exits. Ports are picked
free on 127.0.0.1 (or given, and refused when busy: a second master on busy ports dies on bind,
and the first one would answer the readiness probe). `MC_TCP_BIND_ADDRESS=127.0.0.1` goes to every
process: without it the TCP transport advertises the host's own address and peers dial that.
Each process logs into LOG_DIR (master.log, segment.log); stack.json there names the PIDs and ports
for `stop`. Stopping is by PID, the segment host first: SIGTERM, SIGKILL after 10 s.
"""

import argparse
import errno
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
STOP_GRACE_S = 10.0


def binaries():
    """(mooncake_master, mooncake_client): the wheel's real programs."""
    import mooncake

    folder = os.path.dirname(os.path.abspath(mooncake.__file__))
    found = tuple(os.path.join(folder, name) for name in ("mooncake_master", "mooncake_client"))
    for path in found:
        if not os.access(path, os.X_OK):
            raise RuntimeError("%s is missing: is this the store venv (scripts/store-venv.sh)?" % path)
    return found


def port_is_free(port):
    """True when nothing listens on the port, on loopback or on every address (a connection of
    a server gone, in TIME_WAIT, does not count: the servers bind with SO_REUSEADDR)."""
    for address in (HOST, "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((address, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return False
                raise
    return True


def free_ports(count, taken=()):
    """`count` distinct ports that are free now (the kernel's choice, checked on 0.0.0.0 too)."""
    ports = []
    while len(ports) < count:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port not in ports and port not in taken and port_is_free(port):
            ports.append(port)
    return ports


def accepts_tcp(port):
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def metadata_answers(port):
    """True when the HTTP metadata server answers a GET (404 for the unknown key is an answer)."""
    try:
        conn = http.client.HTTPConnection(HOST, port, timeout=1.0)
        try:
            conn.request("GET", "/metadata?key=x")
            conn.getresponse().read()
        finally:
            conn.close()
        return True
    except (OSError, http.client.HTTPException):
        return False


def client_env(rpc_port, metadata_port):
    """The variables a Mooncake client needs (the names SpecForge's online trainer reads)."""
    return {
        "MOONCAKE_METADATA_SERVER": "http://%s:%d/metadata" % (HOST, metadata_port),
        "MOONCAKE_MASTER_SERVER_ADDR": "%s:%d" % (HOST, rpc_port),
        "MOONCAKE_LOCAL_HOSTNAME": HOST,
        "MOONCAKE_PROTOCOL": "tcp",
        "MC_TCP_BIND_ADDRESS": HOST,
    }


def _exe_of(pid):
    """The program a PID runs; None once it has exited (a zombie included)."""
    try:
        return os.path.realpath(os.readlink("/proc/%d/exe" % pid))
    except OSError:
        return None


def stop_pid(pid, program, grace_s=STOP_GRACE_S):
    """Stops a process this one did not start (the CLI's `stop`): SIGTERM, SIGKILL after `grace_s`.
    A PID that no longer runs `program` (gone, or reused by another process) is not signalled."""
    program = os.path.realpath(program)
    if _exe_of(pid) != program:
        return "gone"
    start = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    while time.monotonic() - start < grace_s:
        if _exe_of(pid) != program:
            return "exited in %.1f s" % (time.monotonic() - start)
        time.sleep(0.05)
    if _exe_of(pid) == program:
        os.kill(pid, signal.SIGKILL)
    return "killed after %.0f s" % grace_s


def end_with_parent():
    """A Popen preexec_fn: the child gets SIGTERM when this process ends, a crash included (Linux's
    PR_SET_PDEATHSIG; it fires when the thread that started the child ends: start from the main
    thread)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))


def stop_child(proc, grace_s=STOP_GRACE_S):
    """stop_pid for a child of this process (a Popen), which is reaped."""
    if proc.poll() is not None:
        return "had exited with status %s" % proc.returncode
    start = time.monotonic()
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
        return "exited in %.1f s" % (time.monotonic() - start)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return "killed after %.0f s" % grace_s


class PortLost(RuntimeError):
    """A program of the stack exited on start while one of its ports was taken by another process."""


class MooncakeStack:
    """A master (and a segment host when `segment` is a size such as "256MB") on 127.0.0.1."""

    def __init__(self, log_dir, segment=None, rpc_port=None, metadata_port=None, metrics_port=None,
                 segment_port=None, timeout_s=30.0, die_with_parent=True):
        self.log_dir = os.path.abspath(log_dir)
        self.segment = segment
        self.timeout_s = timeout_s
        # The children get SIGTERM when this process dies, so a crashed test leaves no store behind
        # (not for the CLI's `start`, whose stack outlives it).
        self.die_with_parent = die_with_parent
        self.master_bin, self.client_bin = binaries()
        self.asked = {"rpc": rpc_port, "metadata": metadata_port, "metrics": metrics_port}
        if segment:
            self.asked["segment"] = segment_port
        self.procs = {}  # name -> Popen, in start order
        self.ports = self.env = None
        self.ready_s = {}

    def _pick_ports(self):
        """The ports asked for, refused when busy, and free ones for the rest."""
        busy = ["%s %d" % (name, port) for name, port in self.asked.items() if port and not port_is_free(port)]
        if busy:
            raise RuntimeError("ports in use: %s (another mooncake_master?)" % ", ".join(busy))
        given = [port for port in self.asked.values() if port]
        picked = iter(free_ports(sum(1 for port in self.asked.values() if not port), taken=given))
        self.ports = {name: port or next(picked) for name, port in self.asked.items()}
        self.env = client_env(self.ports["rpc"], self.ports["metadata"])

    # -- starting ------------------------------------------------------------------------------
    def _spawn(self, name, argv):
        os.makedirs(self.log_dir, exist_ok=True)
        with open(os.path.join(self.log_dir, name + ".log"), "ab") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=dict(os.environ, MC_TCP_BIND_ADDRESS=HOST), start_new_session=True,
                                    preexec_fn=end_with_parent if self.die_with_parent else None)
        self.procs[name] = proc
        self._write_state()
        return proc

    def _wait_ready(self, name, proc, ready):
        start = time.monotonic()
        while True:
            # Our own child first: a master that died on bind leaves a port some other process
            # may still answer on.
            if proc.poll() is not None:
                lost = [port for port in self.ports.values() if not port_is_free(port)]
                raise (PortLost if lost else RuntimeError)("%s exited with status %s while starting%s; see %s" % (
                    name, proc.returncode, " (ports taken: %s)" % lost if lost else "",
                    os.path.join(self.log_dir, name + ".log")))
            if ready():
                if proc.poll() is None:
                    return time.monotonic() - start
                continue
            if time.monotonic() - start > self.timeout_s:
                raise RuntimeError("%s not ready after %.0f s; see %s" % (
                    name, self.timeout_s, os.path.join(self.log_dir, name + ".log")))
            time.sleep(0.05)

    def start(self):
        """Starts the master, then the segment host; returns the client environment. Ports picked
        here may be taken by another process before the master binds them: then it starts again on
        other ones (three tries)."""
        for attempt in range(3):
            try:
                return self._start()
            except PortLost:
                if attempt == 2 or all(self.asked.values()):
                    raise
        raise AssertionError("unreachable")

    def _start(self):
        self._pick_ports()
        try:
            ports = self.ports
            master = self._spawn("master", [
                self.master_bin,
                "--rpc_port=%d" % ports["rpc"],
                "--rpc_address=" + HOST,
                "--enable_http_metadata_server=true",
                "--http_metadata_server_host=" + HOST,
                "--http_metadata_server_port=%d" % ports["metadata"],
                "--metrics_host=" + HOST,
                "--metrics_port=%d" % ports["metrics"],
            ])
            # Ready once its three ports answer (the metrics one last, about a second in), its own
            # process still running.
            self.ready_s = {"master": self._wait_ready("master", master, lambda: accepts_tcp(ports["rpc"]) and (
                metadata_answers(ports["metadata"]) and accepts_tcp(ports["metrics"])))}
            if self.segment:
                host = self._spawn("segment", [
                    self.client_bin,
                    "--host=" + HOST,
                    "--port=%d" % ports["segment"],
                    "--global_segment_size=%s" % self.segment,
                    "--master_server_address=%s:%d" % (HOST, ports["rpc"]),
                    "--metadata_server=" + self.env["MOONCAKE_METADATA_SERVER"],
                    "--protocol=tcp",
                ])
                self.ready_s["segment"] = self._wait_ready("segment", host, lambda: accepts_tcp(ports["segment"]))
        except BaseException:
            self.stop()
            raise
        return self.env

    # -- stopping ------------------------------------------------------------------------------
    def stop(self):
        """Stops what was started, the segment host first; returns {name: how it ended}."""
        ended = {}
        for name in ("segment", "master"):
            proc = self.procs.pop(name, None)
            if proc is not None:
                ended[name] = stop_child(proc)
        self._write_state()
        return ended

    def _write_state(self):
        path = os.path.join(self.log_dir, "stack.json")
        state = {"ports": self.ports, "env": self.env,
                 "pids": {name: [proc.pid, self.master_bin if name == "master" else self.client_bin]
                          for name, proc in self.procs.items()}}
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1)
        os.replace(path + ".tmp", path)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def stop_from_state(log_dir):
    """Stops the processes a `start` in another process recorded in LOG_DIR/stack.json."""
    path = os.path.join(log_dir, "stack.json")
    with open(path, encoding="utf-8") as f:
        state = json.load(f)
    ended = {}
    for name in ("segment", "master"):
        if name in state["pids"]:
            pid, program = state["pids"].pop(name)
            ended[name] = stop_pid(pid, program)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1)
    return ended


def main(argv):
    parser = argparse.ArgumentParser(prog="mooncake_stack.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop", "run"))
    parser.add_argument("--log-dir", required=True, help="where the logs and stack.json go")
    parser.add_argument("--segment", help="also a mooncake_client segment host of this size (e.g. 256MB)")
    parser.add_argument("--rpc-port", type=int)
    parser.add_argument("--metadata-port", type=int)
    parser.add_argument("--metrics-port", type=int)
    parser.add_argument("--segment-port", type=int)
    command = []
    if "--" in argv:  # run's command: everything after the first --
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1:]
    args = parser.parse_args(argv)
    try:
        if args.action == "stop":
            for name, how in stop_from_state(args.log_dir).items():
                print("%s: %s" % (name, how), file=sys.stderr)
            return 0
        stack = MooncakeStack(args.log_dir, segment=args.segment, rpc_port=args.rpc_port,
                              metadata_port=args.metadata_port, metrics_port=args.metrics_port,
                              segment_port=args.segment_port, die_with_parent=args.action == "run")
        if args.action == "start":
            stack.start()
            for name, seconds in stack.ready_s.items():
                print("%s ready in %.2f s (pid %d)" % (name, seconds, stack.procs[name].pid), file=sys.stderr)
            for key, value in stack.env.items():
                print("export %s=%s" % (key, value))
            return 0
        if not command:
            parser.error("run needs a command after --")
        with stack:
            return subprocess.call(command, env=dict(os.environ, **stack.env))
    except RuntimeError as exc:
        print("mooncake_stack.py: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
