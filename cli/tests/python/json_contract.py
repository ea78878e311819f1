"""The JSON contract, checked from outside: every `--json` output of the programs validates against
`schemas/output.schema.json`, its statuses agree with the text output, failures carry the same
fields as successes; every bundled recipe validates against `schemas/hook-spec.schema.json`.

Usage: python cli/tests/python/json_contract.py PYSPLICE SGLANG_HS_DUMP  (needs `jsonschema` from PyPI)
"""

import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import tomllib

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
OUTPUT = jsonschema.Draft7Validator(json.loads((ROOT / "schemas" / "output.schema.json").read_text()))
RECIPES = ROOT / "crates" / "pysplice-sglang" / "python" / "pysplice_sglang" / "dump"
SPEC = jsonschema.Draft7Validator(json.loads((ROOT / "schemas" / "hook-spec.schema.json").read_text()))

checked = 0


def run(program, *args, code=None):
    """Runs a program; returns (exit code, stdout, stderr)."""
    done = subprocess.run([program, *map(str, args)], capture_output=True, text=True, timeout=120)
    if code is not None and done.returncode != code:
        raise AssertionError(f"{args}: exit {done.returncode}, wanted {code}\n{done.stdout}\n{done.stderr}")
    return done.returncode, done.stdout, done.stderr


def objects(program, *args, code=None, command=None):
    """Runs with --json; every line must be one compact object valid against the schema."""
    global checked
    rc, out, err = run(program, *args, code=code)
    lines = out.splitlines()
    assert lines, f"{args}: no JSON on stdout (stderr: {err})"
    values = []
    for line in lines:
        value = json.loads(line)
        assert line == json.dumps(value, separators=(",", ":"), ensure_ascii=False), f"not compact: {line[:80]}"
        errors = sorted(OUTPUT.iter_errors(value), key=lambda e: list(e.path))
        assert not errors, f"{args}: {errors[0].message} at {list(errors[0].path)}"
        assert value["schema_version"] == 1
        assert value["ok"] == (value["error"] is None), value
        if command:
            assert value["command"] == command, value
        values.append(value)
        checked += 1
    return values


def text_statuses(out):
    """`  - hook: status` lines of `check`'s text output."""
    found = {}
    for line in out.splitlines():
        if line.startswith("  - ") and ": " in line:
            hook, status = line[4:].split(": ", 1)
            found[hook] = status.split(":")[0]
    return found


def main(pysplice, dump):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pysplice-json-"))
    try:
        spec = FIXTURES / "engine" / "conditions.toml"
        py = tmp / "conditions.py"
        shutil.copy(FIXTURES / "engine" / "conditions.py", py)

        # locate: success, a path that is not there, a file that is not there.
        [v] = objects(pysplice, "locate", py, "--json", code=0, command="locate")
        assert v["definitions"], v
        [v] = objects(pysplice, "locate", py, "Nope.nothing", "--json", code=1, command="locate")
        assert not v["ok"] and v["definitions"] == [] and "Nope.nothing" in v["error"]["message"]
        [v] = objects(pysplice, "locate", tmp / "missing.py", "--json", code=2, command="locate")
        assert not v["ok"] and "cannot read" in v["error"]["message"]

        # check on an unpatched file: the JSON says what the text says.
        _, text, _ = run(pysplice, "check", "--spec", spec, py, code=1)
        [v] = objects(pysplice, "check", "--json", "--spec", spec, py, code=1, command="check")
        assert v["status"] == "needs-apply" and ": needs apply" in text
        words = text_statuses(text)
        assert {h["hook"]: h["status"] for h in v["hooks"]} == words, (v["hooks"], words)
        assert "missing" in words.values()

        [v] = objects(pysplice, "apply", "--dry-run", "--json", "--spec", spec, py, code=0, command="apply")
        assert v["status"] == "would-patch" and not v["written"] and v["diff"].startswith("--- a/")
        # a dry run says what applying would do, never that a hook was applied
        dry = {h["hook"]: h["status"] for h in v["hooks"]}
        assert "would-apply" in dry.values() and "applied" not in dry.values(), dry
        [v] = objects(pysplice, "apply", "--json", "--spec", spec, py, code=0, command="apply")
        assert v["status"] == "patched" and v["written"] and v["changed"]
        [v] = objects(pysplice, "apply", "--json", "--spec", spec, py, code=0, command="apply")
        assert v["status"] == "up-to-date" and not v["written"]

        _, text, _ = run(pysplice, "check", "--spec", spec, py, code=0)
        [v] = objects(pysplice, "check", "--json", "--spec", spec, py, code=0, command="check")
        assert v["status"] == "up-to-date"
        assert {h["hook"]: h["status"] for h in v["hooks"]} == text_statuses(text)

        [v] = objects(pysplice, "revert", "--json", "--spec", spec, py, code=0, command="revert")
        assert v["status"] == "reverted" and v["written"]
        [v] = objects(pysplice, "revert", "--json", "--spec", spec, py, code=0, command="revert")
        assert v["status"] == "nothing-to-revert"

        # A failure carries the same per-hook results as a success.
        bad_spec = FIXTURES / "engine" / "missing_anchor.toml"
        bad = tmp / "missing_anchor.py"
        shutil.copy(FIXTURES / "engine" / "missing_anchor.py", bad)
        for command, code in [("apply", 1), ("check", 1)]:
            [v] = objects(pysplice, command, "--json", "--spec", bad_spec, bad, code=code, command=command)
            assert v["status"] == "failed" and v["hooks"] and v["hooks"][0]["status"] == "failed", v
        [v] = objects(pysplice, "apply", "--json", "--spec", spec, tmp / "missing.py", code=2)
        assert v["status"] == "failed" and {h["status"] for h in v["hooks"]} == {"not-run"}

        # A folder run: the patched file with the recipe's notes, the others not targeted, and a
        # required hook no file defines (an error about the folder: no line, no column).
        folder = tmp / "folder"
        folder.mkdir()
        shutil.copy(FIXTURES / "engine" / "conditions.py", folder / "conditions.py")
        (folder / "other.py").write_text("x = 1\n")
        noted = tmp / "noted.toml"
        noted.write_text(spec.read_text().replace("[recipe]\n", '[recipe]\nnotes = ["a note"]\n', 1))
        values = objects(pysplice, "apply", "--json", "--spec", noted, folder, code=0, command="apply")
        by_name = {pathlib.Path(v["path"]).name: v for v in values}
        assert by_name["conditions.py"]["status"] == "patched" and by_name["conditions.py"]["notes"] == ["a note"]
        assert by_name["other.py"]["status"] == "not-targeted" and "notes" not in by_name["other.py"]
        (folder / "conditions.py").unlink()
        values = objects(pysplice, "check", "--json", "--spec", noted, folder, code=1, command="check")
        for v in values:  # one per required hook
            assert not v["ok"] and v["error"]["line"] is None and v["error"]["hook"], v

        # matrix: one object per tree, also for a tree without the file.
        model = ROOT / "crates" / "pysplice-sglang" / "data" / "demo_model.py"
        tree = tmp / "tree" / "sglang" / "srt" / "models"
        tree.mkdir(parents=True)
        shutil.copy(model, tree / "deepseek_v2.py")
        (tmp / "empty").mkdir()
        recipe = RECIPES / "sglang_hs_dump.toml"
        values = objects(pysplice, "matrix", "--json", "--spec", recipe, tmp / "tree", tmp / "empty", code=1)
        assert [v["ok"] for v in values] == [True, False] and values[0]["command"] == "matrix"

        # graph, reach, forwards over a package: successes and a failed query.
        package = tmp / "pkg"
        package.mkdir()
        shutil.copy(model, package / "model.py")
        (package / "__init__.py").write_text("")
        # Entry classes come from a recipe's conventions or from --entry-list; none without.
        [v] = objects(pysplice, "graph", package, "--json", code=0, command="graph")
        assert v["classes"] == [], v
        [v] = objects(pysplice, "graph", package, "--entry-list", "EntryClass", "--json", code=0, command="graph")
        assert v["classes"], v
        [v] = objects(pysplice, "graph", package, "--target", "DeepseekV2Model", "--json", code=1)
        assert not v["ok"], v
        sglang = ("--spec", "builtin:sglang-hs-dump-models")
        [v] = objects(pysplice, "graph", package, "--target", "DeepseekV2Model", *sglang, "--json", code=0)
        assert v["chains"], v
        [v] = objects(pysplice, "reach", package, "DeepseekV2Model.forward", "--json", code=0, command="reach")
        assert v["reach"]["method"] == "DeepseekV2Model.forward"
        [v] = objects(pysplice, "reach", package, "Nothing.here", "--json", code=1, command="reach")
        assert not v["ok"] and v["reach"] is None
        [v] = objects(pysplice, "forwards", package, "DeepseekV2ForCausalLM", "--json", code=0)
        assert v["command"] == "forwards"
        [v] = objects(pysplice, "graph", tmp / "no-such-dir", "--json", code=2, command="graph")
        assert not v["ok"]

        # sglang-hs-dump: demo, check, a failure.
        [v] = objects(dump, "--json", code=0, command="sglang-hs-dump")
        assert v["demo"] and v["status"] == "patched" and v["launch"]["flags"]
        target = tmp / "deepseek_v2.py"
        shutil.copy(model, target)
        _, text, _ = run(dump, "--check", target, code=1)
        [v] = objects(dump, "--check", "--json", target, code=1, command="sglang-hs-dump")
        assert v["status"] == "needs-apply" and "needs apply" in text
        assert {h["hook"]: h["status"] for h in v["hooks"]} == text_statuses(text)
        [v] = objects(dump, "--json", tmp / "nothing.py", code=2)
        assert not v["ok"] and v["status"] == "failed" and v["hooks"], v

        # sglang-hs-dump --arch: one object per file, then one per architecture skipped.
        families = tmp / "families"
        shutil.copytree(ROOT / "crates" / "pysplice-sglang" / "tests" / "python" / "runtime" / "families", families)
        values = objects(dump, families, "--arch", "all", "--dry-run", "--json", code=0, command="sglang-hs-dump")
        assert len(values) >= 4 and all(v["status"] == "would-patch" and v["architectures"] for v in values), values
        assert all(h["status"] != "applied" for v in values for h in v["hooks"]), values
        _, text, _ = run(dump, families, "--arch", "all", "--check", code=1)
        values = objects(dump, families, "--arch", "LlamaForCausalLM", "--check", "--json", code=1)
        assert [v["architectures"] for v in values] == [["LlamaForCausalLM"]], values
        assert values[0]["status"] == "needs-apply" and "needs apply" in text
        [v] = objects(dump, families, "--arch", "NoSuchForCausalLM", "--json", code=2, command="sglang-hs-dump")
        assert not v["ok"] and v["status"] == "failed", v

        # The hook spec schema accepts every bundled recipe and refuses an unknown key.
        bundled = sorted(RECIPES.glob("*.toml"))
        assert len(bundled) >= 2, f"no bundled recipes in {RECIPES}"
        for path in bundled:
            first = path.read_text().splitlines()[0]
            assert first.startswith("#:schema "), f"{path}: no #:schema line"
            schema = (path.parent / first[len("#:schema "):]).resolve()
            assert schema == ROOT / "schemas" / "hook-spec.schema.json", f"{path}: #:schema names {schema}"
        for path in bundled + sorted((FIXTURES / "engine").glob("*.toml")):
            errors = list(SPEC.iter_errors(tomllib.loads(path.read_text())))
            assert not errors, f"{path}: {errors[0].message}"
        wrong = tomllib.loads('[recipe]\nid = "x"\nsummary = "y"\n[[hook]]\nid = "a"\nsummary = "b"\nplace = 1\n')
        assert list(SPEC.iter_errors(wrong)), "an unknown hook key was accepted"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"JSON contract: {checked} objects valid and consistent")


if __name__ == "__main__":
    main(*sys.argv[1:3])
