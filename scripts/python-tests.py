#!/usr/bin/env python3
"""Runs the project's Python tests, every one of them, and fails on one that did not run and pass.

    python3 scripts/python-tests.py --python PY --torch-python PY --programs DIR SUITE_DIR...
    python3 scripts/python-tests.py --store-python PY crates/pysplice-sglang/tests/python/store
    python3 scripts/python-tests.py ... SUITE_DIR --only send_test.py      # one file of a suite
    python3 scripts/python-tests.py --list SUITE_DIR                       # the inventory, as found
    python3 scripts/python-tests.py --update-inventory SUITE_DIR           # rewrite tests.txt

A suite is a folder with `suite.json`: each entry a file, how it runs and with which interpreter
("python": "torch" for --torch-python, "store" for --store-python; --python otherwise):

- "unittest": the file's TestCase classes, run in a child interpreter that reports every test's
  outcome. Every `test_*` method of every class of the file (read from its syntax tree, so a
  class that fails to load or a test that is never collected is seen) must run and pass: a skip,
  an expected failure, or a test that did not run fails the suite.
- "script": a program whose exit status is its verdict (a fuzzer, an end-to-end job, a shell
  script); it counts as one test.

Beside suite.json, `tests.txt` lists every test the suite holds (`file::Class.test_name`, or
`file` for a script), written by --update-inventory: a test deleted or renamed without that
list changing fails the run, as does a Python file named `*_test.py` that no entry runs (a
folder inside a suite that has a suite.json of its own is a suite of its own). Files
that run only elsewhere (a GPU machine, an interpreter CI does not have) are named in
suite.json's "elsewhere" with the reason, and are listed, not run.

The entries run side by side (most wait on the servers and programs they start), at most
--jobs at once, longest first. In an entry's "args" and "env", `{programs}` is the folder of the
built programs, `{python}`, `{torch_python}` and `{store_python}` the interpreters, `{tools}` the
folder of `{python}`, `{repo}` the checkout, `{work}` a scratch folder of the run. An option is
needed only when an entry that runs uses it (its interpreter, or a slot of its args and env): a
suite whose tests all run on --python needs no --torch-python. Standard library only.
"""

import argparse
import ast
import json
import os
import shutil
import string
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ("unittest", "script")
# An entry's "python" -> the slot of its interpreter; each slot -> the option that gives it.
INTERPRETERS = {None: "python", "torch": "torch_python", "store": "store_python"}
OPTIONS = {"programs": "--programs", "python": "--python", "torch_python": "--torch-python",
           "store_python": "--store-python"}

# What the child interpreter runs for a "unittest" entry: the file imported as its own module
# (its folder first on sys.path, as when it runs as a script), every TestCase of it run, and
# one JSON line per test written to the report file.
CHILD = r"""
import importlib.util, json, os, sys, unittest
path, report = sys.argv[1], sys.argv[2]
sys.argv[1:] = []
sys.path.insert(0, os.path.dirname(path))
name = os.path.splitext(os.path.basename(path))[0]
spec = importlib.util.spec_from_file_location(name, path)
module = importlib.util.module_from_spec(spec)
sys.modules[name] = module
spec.loader.exec_module(module)
out = open(report, "w")
def put(test, outcome, detail=""):
    parts = test.id().split(".")
    out.write(json.dumps({"test": ".".join(parts[-2:]), "outcome": outcome, "detail": detail}) + "\n")
    out.flush()
class Result(unittest.TextTestResult):
    def addSuccess(self, test):
        super().addSuccess(test); put(test, "passed")
    def addFailure(self, test, err):
        super().addFailure(test, err); put(test, "failed")
    def addError(self, test, err):
        super().addError(test, err)
        if isinstance(test, unittest.TestCase):
            put(test, "error")
    def addSkip(self, test, reason):
        super().addSkip(test, reason); put(test, "skipped", reason)
    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err); put(test, "expected failure")
    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test); put(test, "unexpected success")
suite = unittest.defaultTestLoader.loadTestsFromModule(module)
result = unittest.TextTestRunner(verbosity=2, resultclass=Result, stream=sys.stderr).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
"""


class SuiteError(Exception):
    """A suite that cannot be read or run as it says; the message names the file."""


def test_methods(path):
    """`Class.test_name` of every test method of every class of a Python file, from its syntax
    tree (a class whose base is not a TestCase holds none that unittest collects, so only
    classes with a base are read)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise SuiteError("%s: cannot be read: %s" % (path, exc)) from None
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.bases:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                    found.append("%s.%s" % (node.name, item.name))
    return found


def load_suite(folder):
    """(entries, elsewhere, inventory path) of a suite folder, checked."""
    path = os.path.join(folder, "suite.json")
    try:
        with open(path, encoding="utf-8") as f:
            suite = json.load(f)
    except (OSError, ValueError) as exc:
        raise SuiteError("%s: cannot be read: %s" % (path, exc)) from None
    entries = suite.get("tests")
    elsewhere = suite.get("elsewhere", {})
    if not isinstance(entries, list) or not isinstance(elsewhere, dict):
        raise SuiteError("%s: needs a list \"tests\" and a table \"elsewhere\"" % path)
    seen = set()
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kind") not in KINDS or not isinstance(entry.get("file"), str):
            raise SuiteError("%s: each test has a \"file\" and a \"kind\" (%s): %r" % (path, " or ".join(KINDS), entry))
        if not (entry.get("python") is None or isinstance(entry["python"], str) and entry["python"] in INTERPRETERS):
            raise SuiteError("%s: %s: \"python\" is %s or absent, not %r" % (
                path, entry["file"], " or ".join('"%s"' % k for k in INTERPRETERS if k), entry["python"]))
        if entry["file"] in seen or entry["file"] in elsewhere:
            raise SuiteError("%s: %s is named twice" % (path, entry["file"]))
        seen.add(entry["file"])
        if not os.path.isfile(os.path.join(folder, entry["file"])):
            raise SuiteError("%s: %s does not exist" % (path, entry["file"]))
    for name in elsewhere:
        if not os.path.isfile(os.path.join(folder, name)):
            raise SuiteError("%s: %s (elsewhere) does not exist" % (path, name))
    for root, dirs, files in os.walk(folder):
        # A folder with a suite.json of its own is a suite of its own.
        dirs[:] = sorted(d for d in dirs
                         if d != "__pycache__" and not os.path.isfile(os.path.join(root, d, "suite.json")))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), folder)
            if name.endswith("_test.py") and rel not in seen and rel not in elsewhere:
                raise SuiteError("%s: %s is a test file that no entry runs (add it, or name it in \"elsewhere\")" % (path, rel))
    return entries, elsewhere, os.path.join(folder, "tests.txt")


def inventory(folder, entries):
    """Every test of the suite's entries: `file::Class.test_name`, or `file` for a script."""
    names = []
    for entry in entries:
        if entry["kind"] == "unittest":
            methods = test_methods(os.path.join(folder, entry["file"]))
            if not methods:
                raise SuiteError("%s: holds no test method" % os.path.join(folder, entry["file"]))
            names += ["%s::%s" % (entry["file"], m) for m in methods]
        else:
            names.append(entry["file"])
    return names


class Job:
    """One entry of a suite, run in a child process; `problems` says why it did not pass."""

    def __init__(self, folder, entry, values, work):
        self.folder, self.entry, self.values, self.work = folder, entry, values, work
        self.name = os.path.join(os.path.relpath(folder, REPO), entry["file"])
        self.problems, self.output, self.seconds = [], "", 0.0

    def fill(self, text):
        try:
            return text.format(**self.values)
        except (KeyError, IndexError, ValueError) as exc:
            raise SuiteError("%s: %r: unknown slot %s" % (self.name, text, exc)) from None

    def missing_options(self):
        """The options this entry needs and the run was not given (its interpreter, its slots)."""
        slots = {INTERPRETERS[self.entry.get("python")]}
        for text in list(self.entry.get("args", [])) + list(self.entry.get("env", {}).values()):
            try:
                slots.update(field for _, field, _, _ in string.Formatter().parse(text) if field)
            except ValueError as exc:
                raise SuiteError("%s: %r: %s" % (self.name, text, exc)) from None
        return sorted(OPTIONS[slot] for slot in slots if slot in OPTIONS and self.values.get(slot) is None)

    def run(self):
        start = time.monotonic()
        try:
            self._run()
        except SuiteError as exc:
            self.problems.append(str(exc))
        except OSError as exc:
            self.problems.append("cannot be started: %s" % exc)
        self.seconds = time.monotonic() - start

    def _run(self):
        entry = self.entry
        path = os.path.join(self.folder, entry["file"])
        python = self.values[INTERPRETERS[entry.get("python")]]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.update({k: self.fill(v) for k, v in entry.get("env", {}).items()})
        args = [self.fill(a) for a in entry.get("args", [])]
        timeout = entry.get("timeout", 900)
        report = None
        if entry["kind"] == "unittest":
            report = os.path.join(self.work, self.name.replace("/", "_") + ".report")
            command = [python, "-c", CHILD, path, report]
        elif path.endswith(".sh"):
            command = ["bash", path] + args
        else:
            command = [python, path] + args
        try:
            done = subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired as exc:
            self.output = (exc.stdout or b"").decode("utf-8", "replace")
            self.problems.append("did not finish in %d s" % timeout)
            return
        self.output = done.stdout.decode("utf-8", "replace")
        if done.returncode != 0:
            self.problems.append("exit status %d" % done.returncode)
        if report is not None:
            self.judge(path, report)

    def judge(self, path, report):
        """Every test method of the file ran and passed, none skipped."""
        outcomes = {}
        try:
            with open(report, encoding="utf-8") as f:
                for line in f:
                    item = json.loads(line)
                    outcomes[item["test"]] = (item["outcome"], item.get("detail", ""))
        except (OSError, ValueError):
            pass
        for name in test_methods(path):
            outcome, detail = outcomes.get(name, ("did not run", ""))
            if outcome != "passed":
                self.problems.append("%s: %s%s" % (name, outcome, ": " + detail if detail else ""))


def run_jobs(jobs, width):
    """Runs the jobs, at most `width` at once, in the order given; prints each as it ends."""
    pending = list(jobs)
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                job = pending.pop(0)
            job.run()
            with lock:
                verdict = "ok" if not job.problems else "FAILED"
                print("%-60s %6.1f s  %s" % (job.name, job.seconds, verdict), flush=True)

    threads = [threading.Thread(target=worker) for _ in range(max(1, width))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main(argv):
    parser = argparse.ArgumentParser(
        prog="python-tests.py", description=__doc__.split("\n\n")[0],
        epilog='An entry of a suite.json names its interpreter: "python": "torch" (--torch-python), "store" '
        "(--store-python), none (--python). An option is needed only by the entries that run and use it.")
    parser.add_argument("suites", nargs="+", metavar="SUITE_DIR")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of most tests")
    parser.add_argument("--torch-python", help="the interpreter of the tests that need PyTorch")
    parser.add_argument("--store-python", help="the interpreter of the tests that need the Mooncake store and "
                        "SpecForge's online trainer (scripts/store-venv.sh prints its venv)")
    parser.add_argument("--programs", help="the folder of the built programs")
    parser.add_argument("--only", action="append", default=[], help="run only this file of the suites")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--list", action="store_true", help="print the tests found; run nothing")
    parser.add_argument("--update-inventory", action="store_true", help="rewrite each suite's tests.txt")
    args = parser.parse_args(argv)
    try:
        suites = [(os.path.abspath(s),) + load_suite(os.path.abspath(s)) for s in args.suites]
        problems = []
        for folder, entries, elsewhere, listed in suites:
            names = inventory(folder, entries)
            if args.list:
                print("\n".join(os.path.join(os.path.relpath(folder, REPO), n) for n in names))
                continue
            if args.update_inventory:
                with open(listed, "w", encoding="utf-8") as f:
                    f.write("".join(n + "\n" for n in names))
                print("wrote %s (%d tests)" % (os.path.relpath(listed, REPO), len(names)))
                continue
            try:
                with open(listed, encoding="utf-8") as f:
                    expected = [line.rstrip("\n") for line in f if line.strip()]
            except OSError as exc:
                raise SuiteError("%s: cannot be read: %s" % (listed, exc)) from None
            gone = sorted(set(expected) - set(names))
            new = sorted(set(names) - set(expected))
            rel = os.path.relpath(listed, REPO)
            problems += ["%s: %s is listed but no longer exists" % (rel, n) for n in gone]
            problems += ["%s: %s is not listed" % (rel, n) for n in new]
            for name, why in sorted(elsewhere.items()):
                print("%-60s not run here: %s" % (os.path.join(os.path.relpath(folder, REPO), name), why))
        if args.list or args.update_inventory:
            return 0
        if problems:
            print("\n".join(problems + ["(run scripts/python-tests.py --update-inventory SUITE_DIR after adding, renaming or deleting a test on purpose)"]))
            return 1
        work = tempfile.mkdtemp(prefix="python-tests-")
        python, torch_python, store_python = (
            None if p is None else os.path.abspath(p) if os.sep in p else p
            for p in (args.python, args.torch_python, args.store_python))
        values = dict(programs=args.programs and os.path.abspath(args.programs), python=python,
                      torch_python=torch_python, store_python=store_python, tools=os.path.dirname(python),
                      repo=REPO, work=work)
        jobs = []
        for folder, entries, _, _ in suites:
            for entry in entries:
                if args.only and entry["file"] not in args.only:
                    continue
                jobs.append(Job(folder, entry, values, work))
        missing = ["%s needs %s" % (job.name, ", ".join(job.missing_options()))
                   for job in jobs if job.missing_options()]
        if missing:
            shutil.rmtree(work, ignore_errors=True)
            raise SuiteError("; ".join(missing))
        jobs.sort(key=lambda j: -j.entry.get("weight", 1))
        start = time.monotonic()
        run_jobs(jobs, args.jobs)
        failed = [j for j in jobs if j.problems]
        for job in failed:
            print("\n==== %s ====\n%s" % (job.name, job.output[-6000:]))
            print("\n".join("%s: %s" % (job.name, p) for p in job.problems))
        print("\n%d files, %d failed, %.0f s" % (len(jobs), len(failed), time.monotonic() - start))
        if not failed:
            shutil.rmtree(work, ignore_errors=True)
        return 1 if failed else 0
    except SuiteError as exc:
        print("python-tests.py: %s" % exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
