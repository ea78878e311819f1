#!/usr/bin/env bash
# Whole-process timing, side by side, on a whole package: `pysplice apply --dry-run` of a recipe
# with one pattern-anchored hook over the pinned transformers package (tests/py-packages.txt),
# against `ast-grep run -p PATTERN` searching the same folder for the same pattern.
#
#   bash scripts/bench-package.sh
#
# ROUNDS rounds (default 15); each round runs both commands once, in turn, so that load that comes
# and goes on a shared machine falls on both alike; the ratio is taken within each round and its
# median printed, with each command's median wall time. Both write to /dev/null.
# Needs ast-grep (`python3 -m pip install ast-grep-cli`), the package (`bash scripts/fetch-corpus.sh`)
# and a release build (`cargo build --release -p pysplice-cli --bin pysplice`, done here unless
# NO_BUILD=1).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^transformers==//p' tests/py-packages.txt)
package="${PYSPLICE_PY_PACKAGES:-target/py-packages}/transformers-$version/transformers"
[ -d "$package" ] || { echo "no $package; run scripts/fetch-corpus.sh" >&2; exit 2; }
command -v ast-grep >/dev/null || { echo "needs ast-grep: python3 -m pip install ast-grep-cli" >&2; exit 2; }
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -p pysplice-cli --bin pysplice --quiet

pattern='hidden_states = self.norm(hidden_states)'
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/record.toml" <<TOML
[recipe]
id = "record-hidden"
summary = "Record Llama hidden states"

[[hook]]
id = "record"
summary = "Recorded the post-norm hidden states"
in = "LlamaModel.forward"
at = { after = "$pattern" }
code = "self._recorded = hidden_states.detach()"
TOML

python3 - "$package" "$work/record.toml" "$pattern" "${ROUNDS:-15}" <<'PY'
import statistics, subprocess, sys, time
package, spec, pattern, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
commands = {
    "pysplice apply --dry-run": ["target/release/pysplice", "apply", "--spec", spec, "--dry-run", package],
    "ast-grep run -p": ["ast-grep", "run", "-l", "python", "-p", pattern, package],
}
def once(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{argv[0]} exited {done.returncode}")
    return wall
for argv in commands.values():  # warm the page cache
    once(argv)
walls = {name: [] for name in commands}
ratios = []
for _ in range(rounds):
    a, b = (once(argv) for argv in commands.values())
    walls["pysplice apply --dry-run"].append(a)
    walls["ast-grep run -p"].append(b)
    ratios.append(a / b)
files = sum(1 for _ in __import__("pathlib").Path(package).rglob("*.py"))
print(f"{files} .py files, {rounds} rounds")
for name, times in walls.items():
    print(f"{name:28} median {statistics.median(times) * 1000:7.1f} ms  (min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f})")
print(f"ratio pysplice / ast-grep: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
PY
