#!/usr/bin/env python3
"""Read the server arguments of every SGLang release on PyPI and write crates/pysplice-sglang/recipes/sglang_launch.json.

For each release the script opens the published archive (wheel, else sdist) without unpacking it,
parses `sglang/srt/server_args.py` (plus `sglang/srt/arg_groups/**.py`, where later releases
declare flags as annotated dataclass fields, and `sglang/srt/model_executor/cuda_graph_config.py`
for the prefill graph default) with Python's `ast`, and records facts only:

- which of the flags the hidden-state dump cares about exist, and which are deprecated aliases;
- the default of `chunked_prefill_size` and whether chunked prefill is on by default;
- whether prefill ("piecewise") CUDA graphs are on by default, and whether `--disable-cuda-graph`
  turns them off too;
- whether the release ships `sglang/srt/models/deepseek_v2.py`.

`pysplice_sglang::launch` reads the JSON (include_str!) and derives the launch flags, the notes
and docs/sglang.md's flag table from it. When a new SGLang release appears, run

    python3 scripts/sglang-launch-flags.py            # downloads what is missing, rewrites the JSON
    python3 scripts/sglang-launch-flags.py --table    # docs/sglang.md's flag table, from the JSON

`--versions X Y` prints the facts of those releases only (tests/sglang_launch.rs compares them
with the JSON for the pinned releases).

and commit the JSON (and the table). Archives are cached in target/sglang-wheels-all/ (override
with --cache); archives already in $PYSPLICE_WHEELS are reused. `--offline` uses the cache only.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "crates" / "pysplice-sglang" / "recipes" / "sglang_launch.json"

# The flags whose presence the dump's launch advice depends on.
WATCHED = [
    "--disable-cuda-graph",
    "--disable-piecewise-cuda-graph",
    "--enable-piecewise-cuda-graph",
    "--disable-radix-cache",
    "--chunked-prefill-size",
    "--skip-server-warmup",
    "--disable-overlap-schedule",
]

SERVER_ARGS = "sglang/srt/server_args.py"
ARG_GROUPS = "sglang/srt/arg_groups/"
CUDA_GRAPH_CONFIG = "sglang/srt/model_executor/cuda_graph_config.py"
DEEPSEEK_V2 = "sglang/srt/models/deepseek_v2.py"


# ---------------------------------------------------------------------------------------------
# Releases and archives
# ---------------------------------------------------------------------------------------------


def version_key(text: str):
    """Order PyPI versions of sglang: X.Y.Z[rcN|.devN][.postN]."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?:(rc|\.dev)(\d+))?(?:\.post(\d+))?", text)
    if not m:
        return (0, 0, 0, 0, 0, 0)
    a, b, c, pre, pre_n, post = m.groups()
    stage = {"rc": 1, ".dev": 0}.get(pre, 2)
    return (int(a), int(b), int(c or 0), stage, int(pre_n or 0), int(post or 0))


def pypi_versions() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "sglang"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = re.search(r"Available versions: (.*)", out)
    if not m:
        sys.exit("pip index versions sglang: no version list in its output")
    return sorted((v.strip() for v in m.group(1).split(",")), key=version_key)


def cached(folder: Path | None, version: str) -> Path | None:
    """The archive of `version` in `folder` (wheel preferred); `-` keeps 0.5.2 from 0.5.2.post1."""
    if not folder or not folder.is_dir():
        return None
    wheels = sorted(folder.glob(f"sglang-{version}-*.whl"))
    if wheels:
        return wheels[0]
    sdist = folder / f"sglang-{version}.tar.gz"
    return sdist if sdist.is_file() else None


def download(version: str, cache: Path) -> Path:
    """Download into a scratch folder, move into the cache only when pip succeeded."""
    tmp = cache / f".tmp-{version}"
    shutil.rmtree(tmp, ignore_errors=True)
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(tmp)]
    # Recent releases ship only cp311 manylinux_2_34 wheels, older ones py3-none-any.
    wheel = pip + ["--only-binary=:all:", "--python-version", "3.11"]
    wheel += ["--platform", "manylinux_2_34_x86_64", "--platform", "any", f"sglang=={version}"]
    if subprocess.run(wheel, capture_output=True).returncode != 0:
        print(f"  sglang {version}: no usable wheel, taking the sdist", file=sys.stderr)
        subprocess.run(pip + ["--no-binary=:all:", f"sglang=={version}"], check=True)
    for item in tmp.iterdir():
        shutil.move(str(item), cache / item.name)
    shutil.rmtree(tmp)
    found = cached(cache, version)
    if not found:
        sys.exit(f"sglang {version}: pip downloaded no archive")
    return found


def read_members(archive: Path) -> dict[str, bytes]:
    """The members this script reads, keyed by their path from `sglang/` on (sdists nest them)."""

    def wanted(name: str) -> str | None:
        i = name.find("sglang/srt/")
        if i < 0 or (i > 0 and name[i - 1] != "/"):
            return None
        path = name[i:]
        if path in (SERVER_ARGS, CUDA_GRAPH_CONFIG, DEEPSEEK_V2):
            return path
        if path.startswith(ARG_GROUPS) and path.endswith(".py"):
            return path
        return None

    found: dict[str, bytes] = {}
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                path = wanted(info.filename)
                if path and path not in found:
                    found[path] = b"" if path == DEEPSEEK_V2 else z.read(info)
    else:
        with tarfile.open(archive) as t:
            for m in t:
                path = wanted(m.name) if m.isfile() else None
                if path and path not in found:
                    found[path] = b"" if path == DEEPSEEK_V2 else t.extractfile(m).read()
    return found


# ---------------------------------------------------------------------------------------------
# Facts from the syntax trees
# ---------------------------------------------------------------------------------------------


def const_str(node) -> str | None:
    """A string literal, implicit concatenations and f-string constant parts included."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = const_str(node.left), const_str(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def name_of(node) -> str:
    """`Name`, `a.b` or a string literal as text."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{name_of(node.value)}.{node.attr}"
    text = const_str(node)
    return text if text is not None else ""


class Flags:
    """Every command-line option a release declares: explicit `add_argument` calls, and
    annotated fields `name: A[T, "help"]` / `A[T, Arg(...)]` turned into options."""

    def __init__(self):
        self.options: dict[str, dict] = {}
        self.fields: dict[str, ast.AST] = {}  # field name -> default expression

    def add(self, name: str, action: str, help_text: str, new_flag: str):
        self.options.setdefault(name, {"action": action, "help": help_text, "new_flag": new_flag})

    def scan(self, tree: ast.AST):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "add_argument":
                    self.add_argument(node)
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        self.field(stmt)

    def add_argument(self, call: ast.Call):
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        action = name_of(kw["action"]) if "action" in kw else ""
        help_text = const_str(kw["help"]) or "" if "help" in kw else ""
        new_flag = const_str(kw["new_flag"]) or "" if "new_flag" in kw else ""
        for arg in call.args:
            text = const_str(arg)
            if text and text.startswith("-"):
                self.add(text, action, help_text, new_flag)

    def field(self, stmt: ast.AnnAssign):
        name = stmt.target.id
        if stmt.value is not None:
            self.fields.setdefault(name, stmt.value)
        ann = stmt.annotation
        if not (isinstance(ann, ast.Subscript) and name_of(ann.value) in ("A", "Annotated")):
            return
        parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if len(parts) < 2:
            return
        meta = parts[1]
        if const_str(meta) is not None:
            self.add("--" + name.replace("_", "-"), "", const_str(meta), "")
            return
        if not (isinstance(meta, ast.Call) and name_of(meta.func) == "Arg"):
            return
        kw = {k.arg: k.value for k in meta.keywords if k.arg}
        if isinstance(kw.get("no_cli"), ast.Constant) and kw["no_cli"].value is True:
            return
        cli = const_str(kw["cli_name"]) if "cli_name" in kw else None
        names = [cli or "--" + name.replace("_", "-")]
        if isinstance(kw.get("aliases"), (ast.List, ast.Tuple)):
            names += [s for s in map(const_str, kw["aliases"].elts) if s]
        action = name_of(kw["action"]) if "action" in kw else ""
        help_text = (const_str(kw["help"]) or "") if "help" in kw else ""
        if not help_text and meta.args:
            help_text = const_str(meta.args[0]) or ""
        for n in names:
            self.add(n, action, help_text, "")

    def deprecated(self, flag: str) -> bool:
        opt = self.options.get(flag)
        if not opt:
            return False
        text = opt["help"].lstrip("[(").lower()
        return "deprecated" in opt["action"].lower() or text.startswith("deprecated")


def int_default(node) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = int_default(node.operand)
        return -inner if inner is not None else None
    return None


def assigns_positive(trees: list[ast.AST], attr: str) -> bool:
    """Whether some `x.<attr> = <positive int>` (or `= a if c else b` with one), or a keyword
    argument `<attr>=<positive int>`, exists: the release picks a value itself when the field
    defaults to None (per GPU memory, model, ...)."""

    def positive(value) -> bool:
        if isinstance(value, ast.IfExp):
            return positive(value.body) or positive(value.orelse)
        n = int_default(value)
        return n is not None and n > 0

    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                if any(isinstance(t, ast.Attribute) and t.attr == attr for t in node.targets):
                    if positive(node.value):
                        return True
            # Later releases declare resolved values: `declare(cfg, <attr>=8192, ...)`.
            if isinstance(node, ast.keyword) and node.arg == attr and positive(node.value):
                return True
    return False


def prefill_graph_default_on(tree: ast.AST | None) -> bool | None:
    """From `CudaGraphConfig.prefill = field(default_factory=lambda: PhaseConfig(backend=X))`:
    on unless X is `Backend.DISABLED` (a helper function counts as on when it can return any
    other backend). None when the file has no such field."""
    if tree is None:
        return None
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "CudaGraphConfig"):
        for stmt in cls.body:
            if not (isinstance(stmt, ast.AnnAssign) and name_of(stmt.target) == "prefill" and stmt.value):
                continue
            for call in (n for n in ast.walk(stmt.value) if isinstance(n, ast.Call)):
                for k in call.keywords:
                    if k.arg != "backend":
                        continue
                    backend = k.value
                    if isinstance(backend, ast.Call) and name_of(backend.func) in functions:
                        returns = [n for n in ast.walk(functions[name_of(backend.func)]) if isinstance(n, ast.Return)]
                        names = {name_of(a) for r in returns for a in ast.walk(r) if isinstance(a, ast.Attribute)}
                        return any(n.startswith("Backend.") and n != "Backend.DISABLED" for n in names)
                    return name_of(backend) not in ("Backend.DISABLED", "disabled")
    return None


def facts(version: str, members: dict[str, bytes]) -> dict:
    entry = {"version": version, "deepseek_v2": DEEPSEEK_V2 in members}
    if SERVER_ARGS not in members:
        entry["server_args"] = False
        return entry
    trees = []
    flags = Flags()
    for path in sorted(members):
        if path == SERVER_ARGS or path.startswith(ARG_GROUPS):
            tree = ast.parse(members[path], filename=path)
            trees.append(tree)
            flags.scan(tree)
    cg = members.get(CUDA_GRAPH_CONFIG)
    cg_tree = ast.parse(cg, filename=CUDA_GRAPH_CONFIG) if cg is not None else None

    present = [f for f in WATCHED if f in flags.options]
    deprecated = [f for f in present if flags.deprecated(f)]

    chunk_default = None
    chunk_on = False
    if "--chunked-prefill-size" in flags.options:
        node = flags.fields.get("chunked_prefill_size")
        chunk_default = int_default(node) if node is not None else None
        if chunk_default is not None:
            chunk_on = chunk_default > 0
        else:
            chunk_on = assigns_positive(trees, "chunked_prefill_size")

    # Prefill ("piecewise") CUDA graphs: opt-in flag, on-by-default flag, or a per-phase backend.
    cuda_graph = flags.options.get("--disable-cuda-graph", {})
    covers = " ".join([cuda_graph.get("help", ""), cuda_graph.get("new_flag", "")])
    alias_covers_prefill = flags.deprecated("--disable-cuda-graph") and "prefill" in covers
    piecewise_on = False
    if "--disable-piecewise-cuda-graph" in present and "--disable-piecewise-cuda-graph" not in deprecated:
        node = flags.fields.get("disable_piecewise_cuda_graph")
        piecewise_on = isinstance(node, ast.Constant) and node.value is False
    elif alias_covers_prefill or "--cuda-graph-backend-prefill" in flags.options:
        piecewise_on = bool(prefill_graph_default_on(cg_tree))

    replacement = ""
    if flags.deprecated("--disable-cuda-graph"):
        replacement = cuda_graph.get("new_flag", "")
    entry.update(
        {
            "flags": present,
            "deprecated": deprecated,
            "chunked_prefill_default": chunk_default,
            "chunked_prefill_on": chunk_on,
            "piecewise_cuda_graph_on": piecewise_on,
            "disable_cuda_graph_covers_piecewise": alias_covers_prefill,
            "disable_cuda_graph_replacement": replacement,
        }
    )
    return entry


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def write_json(entries: list[dict], path: Path):
    """One release a line, so a new release is a one-line diff."""
    lines = [json.dumps(e, separators=(", ", ": ")) for e in entries]
    text = '{\n  "source": "scripts/sglang-launch-flags.py: server arguments of every sglang release on PyPI",\n'
    text += '  "releases": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"
    path.write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=REPO / "target" / "sglang-wheels-all")
    ap.add_argument("--offline", action="store_true", help="use cached archives only")
    ap.add_argument("--out", type=Path, default=DATA)
    ap.add_argument("--table", action="store_true", help="print docs/sglang.md's flag table (via the example) and exit")
    ap.add_argument("--versions", nargs="+", help="only these releases: their facts as JSON lines on stdout, nothing written")
    args = ap.parse_args()

    if args.table:
        cmd = ["cargo", "run", "-q", "--bin", "sglang-hs-dump", "--", "--flag-table"]
        sys.exit(subprocess.run(cmd, cwd=REPO).returncode)

    reuse = Path(os.environ["PYSPLICE_WHEELS"]) if os.environ.get("PYSPLICE_WHEELS") else None
    if not args.offline:
        args.cache.mkdir(parents=True, exist_ok=True)
    if args.versions:
        versions = args.versions
    elif args.offline:
        names = [p.name for folder in (args.cache, reuse) if folder and folder.is_dir() for p in folder.glob("sglang-*")]
        found = (re.match(r"sglang-(.+?)(?:-[^-]+-[^-]+-[^-]+\.whl|\.tar\.gz)$", n) for n in names)
        versions = sorted({m.group(1) for m in found if m}, key=version_key)
    else:
        versions = pypi_versions()

    entries = []
    for v in versions:
        archive = cached(args.cache, v) or cached(reuse, v)
        if archive is None:
            if args.offline:
                sys.exit(f"sglang {v}: not in {args.cache}")
            archive = download(v, args.cache)
        entries.append(facts(v, read_members(archive)))
        if args.versions:
            print(json.dumps(entries[-1]), flush=True)
        else:
            print(f"{v:14} {archive.name}", file=sys.stderr)
    if args.versions:
        return
    write_json(entries, args.out)
    with_model = sum(1 for e in entries if e["deepseek_v2"])
    print(f"{args.out}: {len(entries)} releases, {with_model} with deepseek_v2.py", file=sys.stderr)


if __name__ == "__main__":
    main()
