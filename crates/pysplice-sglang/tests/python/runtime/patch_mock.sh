#!/usr/bin/env bash
# Patch a copy of the runtime mock with the real engine and lay out everything the runtime
# test needs in one folder (default: .device/hs, git-ignored through .git/info/exclude):
#
#   DIR/mock_deepseek_v2.py           the pristine mock (the test's reference)
#   DIR/mock_deepseek_v2_patched.py   the same file after `pysplice apply --spec crates/pysplice-sglang/python/pysplice_sglang/dump/sglang_hs_dump.toml`
#   DIR/run_hs_dump_test.py           the runtime test
#   DIR/run_on_device.sh              runs the test (patched and --unpatched) and prints the verdicts
#   DIR/bench_hs_dump.py              the writer's benchmark (GPU): python3 DIR/bench_hs_dump.py DIR/mock_deepseek_v2_patched.py
#   DIR/bench_chunked.py              a long prompt chunked and unchunked: python3 DIR/bench_chunked.py DIR/mock_deepseek_v2_patched.py
#   DIR/wait_idle.py                  docs/sglang.md's wait-until-idle step (5. Wait until the dump is idle), as the test runs it
#
#   PYSPLICE=pysplice bash crates/pysplice-sglang/tests/python/runtime/patch_mock.sh [DIR]   # with the installed pysplice, no cargo build
#
# Then, on any machine with PyTorch (a GPU is used when present):
#   bash DIR/run_on_device.sh DIR
# or just the patched run:
#   python3 crates/pysplice-sglang/tests/python/runtime/run_hs_dump_test.py DIR/mock_deepseek_v2_patched.py
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../../.." && pwd)
dest=${1:-$repo/.device/hs}
cd "$repo"
rm -rf "$dest"
mkdir -p "$dest"
cp crates/pysplice-sglang/tests/python/runtime/mock_deepseek_v2.py crates/pysplice-sglang/tests/python/runtime/run_hs_dump_test.py crates/pysplice-sglang/tests/python/runtime/dump_writers.py crates/pysplice-sglang/tests/python/runtime/run_on_device.sh crates/pysplice-sglang/tests/python/runtime/bench_hs_dump.py crates/pysplice-sglang/tests/python/runtime/bench_chunked.py "$dest"/
cp crates/pysplice-sglang/tests/python/runtime/mock_deepseek_v2.py "$dest/mock_deepseek_v2_patched.py"
sed -n "/<<'WAIT_IDLE'\$/,/^WAIT_IDLE\$/p" docs/sglang.md | sed '1d;$d' >"$dest/wait_idle.py"
[ -s "$dest/wait_idle.py" ] || { echo "no WAIT_IDLE block in docs/sglang.md" >&2; exit 1; }
# PYSPLICE=pysplice (the installed program, e.g. by `cargo install --path cli`) patches without a
# build; by default this checkout's debug build does.
if [ -n "${PYSPLICE:-}" ]; then
  "$PYSPLICE" apply --spec crates/pysplice-sglang/python/pysplice_sglang/dump/sglang_hs_dump.toml "$dest/mock_deepseek_v2_patched.py"
else
  cargo run --quiet --bin pysplice -- apply --spec crates/pysplice-sglang/python/pysplice_sglang/dump/sglang_hs_dump.toml "$dest/mock_deepseek_v2_patched.py"
fi
# the same static check as tests/sglang_recipe.rs, before spending time on a device
python3 crates/pysplice-sglang/tests/python/check_hs_dump.py "$dest/mock_deepseek_v2_patched.py::$dest/mock_deepseek_v2.py" >"$dest/py_check.json" ||
  { cat "$dest/py_check.json"; exit 1; }
echo "ready: bash $dest/run_on_device.sh $dest"
