#!/usr/bin/env python3
"""Runs docs/sglang.md's two rehearsals (9.1 conversations, 9.2 live traffic) as the page prints
them, side by side, and checks what they print.

    PY=/path/to/python [REHEARSAL_PROGRAMS=DIR] python3 crates/pysplice-sglang/tests/python/doc_rehearsals.py

Each block is the first ```sh block under its heading, taken from the page's own text and run
with `bash -c` from the repository's root, unchanged. `PY` is the interpreter the blocks use
(PyTorch, transformers, jinja2); the blocks find `sglang-hs-dump`, `sglang-hs-send` and
`sglang-hs-inspect` on PATH, with REHEARSAL_PROGRAMS (a folder of them) put first. Also checked
here: the wait-until-idle code each block carries is step 5's block, byte for byte.

Exit status 0 when both blocks exit 0 and print what the page says they print; the folder of a
block that passed is removed, that of one that failed is kept.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
PAGE = os.path.join(REPO, "docs", "sglang.md")
LIMIT = 600  # seconds a block may take

# heading -> what its output must hold (regular expressions)
REHEARSALS = {
    "### 9.1 Conversations: `sglang-hs-send --conversations`": [
        r"Successfully patched ",
        r"36 conversations sent \(\d+ tokens\); 0 already complete on disk; 36 loss masks set; 5 skipped",
        r"0 conversations sent \(0 tokens\); 36 already complete on disk; 36 loss masks set; 5 skipped",
        r"idle: 36 files, 0 passes dropped, 0 chunked prompts unfinished",
        r"36 complete",
        r"Reverted ",
        r"rehearsal: OK",
    ],
    "### 9.2 Live traffic: `sglang-hs-send --request-dumps`": [
        r"Successfully patched ",
        r"dry run: 16 requests would be sent",
        r"16 requests sent \(\d+ tokens\); 0 already complete on disk; 16 loss masks set",
        r"4 stopped by max_new_tokens",
        r"idle: 16 files, 0 passes dropped, 0 chunked prompts unfinished",
        r"16 complete",
        r"Reverted ",
        r"rehearsal: OK",
    ],
}


def block_under(text, heading):
    """The first ```sh block after the line `heading`."""
    lines = text.split("\n")
    if heading not in lines:
        raise SystemExit("docs/sglang.md has no heading %r" % heading)
    start = lines.index(heading)
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("#"):
            break
        if lines[i] == "```sh":
            end = lines.index("```", i + 1)
            return "\n".join(lines[i + 1 : end]) + "\n"
    raise SystemExit("no ```sh block under %r in docs/sglang.md" % heading)


def heredoc(text, marker):
    """The body of each `<<'MARKER'` here-document in `text`."""
    return re.findall(r"<<'%s'\n(.*?\n)%s\n" % (marker, marker), text, re.S)


def run(name, code, env, results):
    start = time.time()
    with tempfile.TemporaryFile("w+") as out:
        try:
            proc = subprocess.run(["bash", "-c", code], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=LIMIT)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            status = "timed out after %d s" % LIMIT
        out.seek(0)
        results[name] = (status, time.time() - start, out.read())


def main():
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    idle = heredoc(text, "WAIT_IDLE")
    if len(idle) != 1:
        raise SystemExit("docs/sglang.md: %d WAIT_IDLE blocks, wanted step 5's one" % len(idle))
    blocks = {heading: block_under(text, heading) for heading in REHEARSALS}
    failures = []  # (heading, what)
    for heading, code in blocks.items():
        copies = heredoc(code, "IDLE")
        if copies != idle:
            failures.append((heading, "its wait-until-idle code is not step 5's block"))
    env = dict(os.environ)
    if "PY" not in env:
        raise SystemExit("PY: the interpreter with PyTorch, transformers and jinja2 the blocks use")
    if env.get("REHEARSAL_PROGRAMS"):
        env["PATH"] = os.path.abspath(env["REHEARSAL_PROGRAMS"]) + os.pathsep + env.get("PATH", "")
    results = {}
    threads = [threading.Thread(target=run, args=(h, code, env, results)) for h, code in blocks.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for heading, wanted in REHEARSALS.items():
        status, seconds, output = results[heading]
        missing = [w for w in wanted if not re.search(w, output)]
        ok = status == 0 and not missing
        print("==== %s: exit %s in %.1f s%s" % (heading, status, seconds, "" if ok else ", FAILED"))
        print(output)
        if status != 0:
            failures.append((heading, "exit status %s" % status))
        elif not missing:  # what a rehearsal that passed wrote is of no further use
            for folder in re.findall(r"^rehearsal: in (/\S+)$", output, re.M):
                shutil.rmtree(folder, ignore_errors=True)
        for w in missing:
            failures.append((heading, "nothing printed matches %r" % w))
    for heading, what in failures:
        print("FAIL: %s: %s" % (heading, what))
    failed = len({heading for heading, _ in failures})
    print("%d passed, %d failed" % (len(REHEARSALS) - failed, failed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
