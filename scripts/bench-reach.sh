#!/usr/bin/env bash
# Whole-process timing of `pysplice reach` over the newest pinned release's whole `sglang/`
# package, next to CPython's `ast.parse` of the same files, in the same run (best of 3 each).
# Prints wall seconds and peak memory. Needs `bash scripts/fetch-corpus.sh` first.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
corpus=${PYSPLICE_CORPUS:-$repo/target/sglang-corpus}
newest=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' tests/sglang-versions.txt | grep -v '^$' | sort -V | tail -n1)
package=$corpus/$newest-full/sglang
cargo build --quiet --release -p pysplice-cli --bin pysplice
best() {  # LABEL COMMAND...: best wall time and the peak RSS of that run
  local label=$1 best_wall=999999 best_rss=0
  shift
  for _ in 1 2 3; do
    /usr/bin/time -f '%e %M' -o /tmp/pysplice-bench-time "$@" >/dev/null
    read -r wall rss </tmp/pysplice-bench-time
    if awk -v a="$wall" -v b="$best_wall" 'BEGIN{exit !(a<b)}'; then best_wall=$wall; best_rss=$rss; fi
  done
  printf '%-44s %6.2f s wall, peak %4d MB\n' "$label" "$best_wall" "$((best_rss / 1024))"
  echo "$best_wall" >"/tmp/pysplice-bench-$label"
}

# A deep hierarchy: one file holding a chain of N classes (`class C1(C0)`, ...), `reach C0.f`.
chains=$(mktemp -d)
trap 'rm -rf "$chains"' EXIT
for n in 1000 4000 20000; do
  mkdir -p "$chains/$n"
  python3 -c '
import sys
n = int(sys.argv[1])
print("class C0:\n    def f(self):\n        pass")
for i in range(1, n):
    print(f"class C{i}(C{i-1}):\n    pass")
' "$n" >"$chains/$n/chain.py"
  best "chain-$n" target/release/pysplice reach "$chains/$n" C0.f
done

[ -d "$package" ] || { echo "missing $package: run bash scripts/fetch-corpus.sh" >&2; exit 1; }
files=$(find "$package" -name '*.py' | wc -l)
mb=$(find "$package" -name '*.py' -print0 | du -cb --files0-from=- | tail -n1 | awk '{printf "%.1f", $1/1e6}')
echo "package: $package ($files .py files, $mb MB)"


best reach target/release/pysplice reach "$package" DeepseekV2Model.forward
# The same package with the 20,000-class chain beside its files: a round then searches every
# file for 19,999 pending names at once.
cp -r "$package" "$chains/package"
cp "$chains/20000/chain.py" "$chains/package/chain_of_classes.py"
best chain-20000-in-package target/release/pysplice reach "$chains/package" C0.f
best cpython-ast-parse python3 -c '
import ast, pathlib, sys
for p in pathlib.Path(sys.argv[1]).rglob("*.py"):
    ast.parse(p.read_bytes())
' "$package"
awk -v a="$(cat /tmp/pysplice-bench-reach)" -v b="$(cat /tmp/pysplice-bench-cpython-ast-parse)" \
  'BEGIN{printf "reach takes %.1f%% of the time CPython needs just to parse the package\n", 100*a/b}'
