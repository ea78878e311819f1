#!/usr/bin/env bash
# Run the sglang-hs-dump runtime test on a machine with PyTorch, from a folder laid out by
# crates/pysplice-sglang/tests/python/runtime/patch_mock.sh (default: the folder of this script):
#
#   bash DIR/run_on_device.sh DIR
#
# 1. the engine-patched mock, on the default device (CUDA when available): must pass every case;
# 2. the same on the CPU (skipped when 1 already ran on the CPU);
# 3. the pristine mock (--unpatched): cases must fail there, which shows that they can.
# Prints each run's last line (`N passed, M failed`, or the unpatched verdict); logs go to
# $OUT (when set) or DIR. Exit status 0 only when all runs give the expected verdict.
set -uo pipefail

dir=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")}" && pwd)
logs=${OUT:-$dir}
export PYTHONUNBUFFERED=1
status=0

python3 - <<'PY'
import sys, torch
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
print("python %s, torch %s, GPU: %s" % (sys.version.split()[0], torch.__version__, gpu))
PY

run() {  # NAME EXPECTED_STATUS ARGS...
  local name=$1 want=$2
  shift 2
  echo "== $name"
  python3 "$dir/run_hs_dump_test.py" "$@" >"$logs/$name.log" 2>&1
  local got=$?
  if [ "$name" = unpatched ]; then
    grep -c '^FAIL ' "$logs/$name.log" | sed 's/^/FAIL lines: /'
  else
    grep -E '^(FAIL|skip) ' "$logs/$name.log"
  fi
  tail -n 1 "$logs/$name.log"
  if [ "$got" -ne "$want" ]; then
    echo "unexpected exit status $got (wanted $want); full log:"
    cat "$logs/$name.log"
    status=1
  fi
}

run patched 0 "$dir/mock_deepseek_v2_patched.py"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  HS_TEST_DEVICE=cpu run patched-cpu 0 "$dir/mock_deepseek_v2_patched.py"
fi
run unpatched 0 --unpatched
exit $status
