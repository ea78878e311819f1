#!/usr/bin/env bash
# Run the multi-family runtime test from a folder laid out by crates/pysplice-sglang/tests/python/runtime/patch_families.sh:
#
#   bash DIR/run_families_on_device.sh DIR
#
# 1. the patched stand-ins on the default device (CUDA when available): every case passes;
# 2. the same on the CPU (when 1 ran on CUDA);
# 3. the pristine stand-ins (--unpatched): every case fails, which shows that they can.
# Exit status 0 only when all runs give the expected verdict.
set -uo pipefail

dir=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")}" && pwd)
logs=${OUT:-$dir}
export PYTHONUNBUFFERED=1
status=0
python3 -c 'import sys, torch; print("python %s, torch %s, GPU: %s" % (sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"))'

run() {  # NAME ARGS...
  local name=$1
  shift
  echo "== $name"
  python3 "$dir/run_families_test.py" "$@" >"$logs/families-$name.log" 2>&1
  local got=$?
  cat "$logs/families-$name.log"
  [ "$got" -eq 0 ] || { echo "unexpected exit status $got"; status=1; }
}

run patched "$dir/patched"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  HS_TEST_DEVICE=cpu run patched-cpu "$dir/patched"
fi
run unpatched "$dir/pristine" --unpatched
exit $status
