#!/usr/bin/env bash
# Whole-process timing, side by side: `sglang_hs_dump --dry-run`, `pysplice locate` and CPython's
# bare `ast.parse` process on the same file (default: SGLang 0.5.23's deepseek_v2.py, ~150 KB).
#
#   bash scripts/bench-dry-run.sh [FILE]
#
# ROUNDS rounds (default 5) of hyperfine over the three commands (RUNS runs each after WARMUP
# warmup runs), so that load that comes and goes on a shared machine falls on all three alike;
# the ratios are taken within each round and their median is printed. PYTHON (default: the
# interpreter `python3` runs, resolved past wrappers such as pyenv shims) is timed as such.
# BASELINE=PATH adds another `sglang_hs_dump` binary (an earlier build) to every round, so that a
# change is measured against what it changes in the same rounds.
# Needs hyperfine (`apt-get install hyperfine` or `cargo install hyperfine`) and a release build
# (`cargo build --release -p pysplice-cli --bins`, done here unless NO_BUILD=1).
set -euo pipefail
cd "$(dirname "$0")/.."

corpus="${PYSPLICE_CORPUS:-target/sglang-corpus}"
file="${1:-$corpus/0.5.23/sglang/srt/models/deepseek_v2.py}"
[ -f "$file" ] || { echo "no $file; run scripts/fetch-corpus.sh or pass a file" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 2; }
python="${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}"
rounds="${ROUNDS:-5}" runs="${RUNS:-10}" warmup="${WARMUP:-3}"

[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -p pysplice-cli --bins --quiet
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The dry run writes nothing, but it works on a copy all the same.
cp "$file" "$work/deepseek_v2.py"
copy="$work/deepseek_v2.py"

baseline=()
[ -z "${BASELINE:-}" ] || baseline=(-n baseline "$BASELINE --dry-run $copy")
for round in $(seq "$rounds"); do
    hyperfine -N --style none --warmup "$warmup" --runs "$runs" --export-json "$work/round$round.json" \
        "${baseline[@]}" \
        -n dry-run "target/release/sglang-hs-dump --dry-run $copy" \
        -n locate "target/release/pysplice locate $copy" \
        -n python "$python -c 'import ast,sys; ast.parse(open(sys.argv[1],\"rb\").read())' $copy" \
        >/dev/null
done

python3 - "$work" "$rounds" "$python" "$file" <<'PY'
import json, statistics, sys
work, rounds, python, file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
per = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{work}/round{r}.json"))["results"]:
        per.setdefault(res["command"], []).append(res)
def med(name, key):
    return statistics.median(res[key] * 1000 for res in per[name])
print(f"{file}, {rounds} rounds x {len(per['python'][0]['times'])} runs, python: {python}")
print(f"{'command':10} {'median ms':>10} {'user ms':>8} {'sys ms':>7}")
names = [n for n in ("baseline", "dry-run", "locate", "python") if n in per]
for name in names:
    print(f"{name:10} {med(name, 'median'):10.1f} {med(name, 'user'):8.1f} {med(name, 'system'):7.1f}")
for name in names[:-1]:
    wall = statistics.median(a["median"] / b["median"] for a, b in zip(per[name], per["python"]))
    cpu = statistics.median((a["user"] + a["system"]) / (b["user"] + b["system"]) for a, b in zip(per[name], per["python"]))
    print(f"{name} / python: {wall:.2f}x wall, {cpu:.2f}x CPU (median of per-round ratios)")
PY
