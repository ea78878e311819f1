#!/usr/bin/env python3
"""Whole-process latency of the language server over stdio, as an editor sees it.

For each keystroke (one character of a comment toggled in the file) it times, from the moment the
message is written to the moment the answer is read:
  diagnostics   didChange -> publishDiagnostics of that version
  code action   didChange + codeAction sent together -> the codeAction response
  hover         didChange + hover sent together -> the hover response
on the file as released and with the recipe applied, for a client that resolves code actions
(VS Code, Neovim 0.10+), one that runs the action's command (the server then sends
`workspace/applyEdit`), and one that can do neither (the edit is computed in the code action).

Usage: python3 scripts/lsp-bench.py SERVER [FILE] [--rounds N]
  SERVER  e.g. target/release/pysplice-lsp
  FILE    default target/sglang-corpus/0.5.23/sglang/srt/models/deepseek_v2.py (150 KB)
Needs only the standard library; the recipe is the bundled sglang-hs-dump.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


class Server:
    def __init__(self, command, root, client):
        self.proc = subprocess.Popen(
            [command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0
        # The newest diagnostics version per URI, also of those read while waiting for a response.
        self.published = {}
        code_action = {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "refactor"]}}}
        if client == "resolve":
            code_action["resolveSupport"] = {"properties": ["edit"]}
        workspace = {"applyEdit": client == "command"}
        self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {"textDocument": {"codeAction": code_action}, "workspace": workspace},
                "initializationOptions": {"recipes": ["builtin:sglang-hs-dump"]},
            },
        )
        self.notify("initialized", {})

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        length = 0
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        message = json.loads(self.proc.stdout.read(length))
        if message.get("method") == "textDocument/publishDiagnostics":
            params = message["params"]
            self.published[params["uri"]] = params.get("version")
        return message

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, send_only=False):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id if send_only else self.wait_response(self.next_id)

    def wait_response(self, id_):
        while True:
            message = self.read()
            if message.get("id") == id_ and "method" not in message:
                return message

    def wait_diagnostics(self, uri, version):
        while self.published.get(uri) != version:
            self.read()

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()


def cpu_ms(pid):
    """User + system CPU time of a process so far (Linux), in ms; None elsewhere."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def stats(samples):
    samples = sorted(samples)
    p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
    return f"median {statistics.median(samples):6.1f} ms  p90 {p90:6.1f} ms  max {samples[-1]:6.1f} ms"


def bench(server_cmd, path, text, rounds, client):
    root = path.parent
    uri = path.resolve().as_uri()
    server = Server(server_cmd, root, client)
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    server.wait_diagnostics(uri, 1)
    lines = text.split("\n")
    line = next(i for i, row in enumerate(lines) if row.lstrip().startswith("# ") and len(row) > 8)
    column = lines[line].index("# ") + 2
    version = 1
    results = {"diagnostics": [], "code action": [], "hover": []}
    flip = False

    def keystroke():
        nonlocal version, flip
        version += 1
        flip = not flip
        change = {
            "range": {"start": {"line": line, "character": column}, "end": {"line": line, "character": column + 1}},
            "text": "x" if flip else "y",
        }
        server.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )

    at = {"line": 100, "character": 4}
    cpu_before = cpu_ms(server.proc.pid)
    for _ in range(rounds):
        start = time.perf_counter()
        keystroke()
        server.wait_diagnostics(uri, version)
        results["diagnostics"].append((time.perf_counter() - start) * 1000)

        start = time.perf_counter()
        keystroke()
        id_ = server.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {"start": at, "end": at},
                "context": {"diagnostics": []},
            },
            send_only=True,
        )
        answer = server.wait_response(id_)
        results["code action"].append((time.perf_counter() - start) * 1000)
        assert answer.get("result"), answer
        server.wait_diagnostics(uri, version)

        start = time.perf_counter()
        keystroke()
        id_ = server.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": at}, send_only=True
        )
        server.wait_response(id_)
        results["hover"].append((time.perf_counter() - start) * 1000)
        server.wait_diagnostics(uri, version)
    cpu_after = cpu_ms(server.proc.pid)
    server.close()
    # Wall times include waiting for a CPU on a busy machine; the server's own CPU time per
    # keystroke (each keystroke: one re-plan and one answer) does not.
    if cpu_before is not None and cpu_after is not None:
        results["cpu"] = (cpu_after - cpu_before) / (3 * rounds)
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("file", nargs="?", default="target/sglang-corpus/0.5.23/sglang/srt/models/deepseek_v2.py")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    source = pathlib.Path(args.file)
    text = source.read_text()
    # The patched text comes from the CLI of the same build, next to the server.
    server = pathlib.Path(args.server)
    dump = next(
        (p for p in [server.with_name("sglang_hs_dump"), server.with_name("sglang-hs-dump")] if p.exists()), None
    )
    with tempfile.TemporaryDirectory(prefix="pysplice-lsp-bench-") as tmp:
        released = pathlib.Path(tmp) / "deepseek_v2.py"
        released.write_text(text)
        states = [("released", released, text)]
        if dump:
            patched = pathlib.Path(tmp) / "patched" / "deepseek_v2.py"
            patched.parent.mkdir()
            patched.write_text(text)
            if subprocess.run([str(dump), str(patched)], capture_output=True).returncode == 0:
                states.append(("applied", patched, patched.read_text()))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"{source} ({len(text.encode()) // 1024} KB), {args.rounds} keystrokes per row, {os.cpu_count()} CPUs, load {load:.1f}")
        clients = {
            "resolve": "codeAction/resolve",
            "command": "workspace/applyEdit only",
            "inline": "neither (edit inline)",
        }
        for client, title in clients.items():
            for label, path, body in states:
                results = bench(str(server.resolve()), path, body, args.rounds, client)
                cpu = results.pop("cpu", None)
                for what, samples in results.items():
                    print(f"{label:9} {title:25} {what:12} {stats(samples)}")
                if cpu is not None:
                    print(f"{label:9} {title:25} server CPU per keystroke (plan + answer): {cpu:5.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
