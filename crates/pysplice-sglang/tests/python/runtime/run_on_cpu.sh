#!/usr/bin/env bash
# The runtime test of the injected dump on the CPU, as CI runs it: the mock patched by this
# checkout's pysplice (patch_mock.sh), then every case with HS_TEST_DEVICE=cpu, none skipped
# (SpecForge's reader from the send harness, on PYTHONPATH).
#
#   PY=/path/to/python-with-torch bash run_on_cpu.sh PROGRAMS_DIR WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYSPLICE="$1/pysplice" bash "$here/patch_mock.sh" "$2" >/dev/null
PYTHONPATH="$here/../send${PYTHONPATH:+:$PYTHONPATH}" HS_TEST_DEVICE=cpu HS_TEST_NO_SKIP=1 \
    "$PY" "$2/run_hs_dump_test.py" "$2/mock_deepseek_v2_patched.py"
