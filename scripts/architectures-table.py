"""Prints docs/sglang.md's table of supported architectures from the pinned releases.

For every release in tests/sglang-versions.txt, runs `sglang-hs-dump MODELS --arch all --dry-run
--json` on its unpacked models folder and records which architectures get which files. An
architecture's first release is the first pinned release that patches it (every release in which
a model file gains `set_eagle3_layers_to_capture` is pinned); its last release is the last
pinned release that patches it, when a newer pinned release no longer does (the class lost its
aux capture, or left the folder); its files are those of the newest pinned release that has it.

Usage: python3 scripts/architectures-table.py SGLANG_HS_DUMP [CORPUS]
(CORPUS defaults to $PYSPLICE_CORPUS or target/sglang-corpus.)
"""

import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def pinned():
    out = []
    for line in (ROOT / "tests" / "sglang-versions.txt").read_text().splitlines():
        version = line.split("#", 1)[0].strip()
        if version:
            out.append(version)
    return out


def version_key(text):
    return [int(p) if p.isdigit() else p for p in re.split(r"[.]|post", text) if p != ""]


def main(dump, corpus):
    first, last, files, defined = {}, {}, {}, {}
    releases = sorted(pinned(), key=version_key)
    for version in releases:
        models = pathlib.Path(corpus) / version / "sglang" / "srt" / "models"
        done = subprocess.run([dump, str(models), "--arch", "all", "--dry-run", "--json"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            # Releases without any architecture with capture say so and exit 2.
            continue
        served = {}
        for line in done.stdout.splitlines():
            value = json.loads(line)
            if value["status"] == "skipped":
                continue
            name = pathlib.Path(value["path"]).name
            for arch in value["architectures"]:
                served.setdefault(arch, []).append(name)
        for arch, names in served.items():
            first.setdefault(arch, version)
            last[arch] = version
            files[arch] = names
    for arch in first:
        defined[arch] = arch_file(pathlib.Path(corpus), arch, files[arch])
    print("| architecture (`--arch`) | defined in | first release with capture | last release with capture | files patched (newest pinned release that has it) |")
    print("|---|---|---|---|---|")
    for arch in sorted(first, key=lambda a: (defined[a], a)):
        until = last[arch] if last[arch] != releases[-1] else "still there"
        print(f"| `{arch}` | {defined[arch]} | {first[arch]} | {until} | {', '.join(files[arch])} |")


def arch_file(corpus, arch, names):
    """The file of the newest pinned release whose `EntryClass` names `arch` (else that defines it)."""
    newest = sorted(pinned(), key=version_key)[-1]
    models = corpus / newest / "sglang" / "srt" / "models"
    texts = {path.name: path.read_text(errors="replace") for path in sorted(models.glob("*.py"))}
    for name, text in texts.items():
        entry = text[text.rfind("\nEntryClass"):] if "\nEntryClass" in text else ""
        if re.search(r"\b%s\b" % re.escape(arch), entry):
            return name
    for name, text in texts.items():
        if re.search(r"^class %s\b" % re.escape(arch), text, re.M):
            return name
    return names[-1]


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    corpus = sys.argv[2] if len(sys.argv) == 3 else os.environ.get("PYSPLICE_CORPUS", str(ROOT / "target" / "sglang-corpus"))
    main(sys.argv[1], corpus)
