#!/usr/bin/env bash
# The real-server job (crates/pysplice-sglang/tests/python/real/job.py) on several SGLang releases and architectures.
#
#     bash crates/pysplice-sglang/tests/python/real/matrix.sh PROGRAMS_DIR WORK_DIR
#
# Two lanes side by side, one per set of venvs (jobs of one release patch the same install, so
# they run one after the other); each venv comes from scripts/sglang-cpu-venv.sh, installed or
# reused. Which releases and models, and why:
#   0.5.23 DeepSeek-V3 (MLA, MoE; deepseek_v2.py, the main target), with the live-traffic route:
#          the newest release, on which the request-dump reader once read nothing
#   0.5.23 Llama (llama.py through --arch: the EAGLE-3 family with its own model file), with
#          PYSPLICE_REAL_ALL=1 only: CI's time budget holds three jobs, and 0.5.9 runs llama.py
#   0.5.10 DeepSeek-V2 (V2-Lite's shape: no q LoRA, softmax routing): the first release whose
#          samples carry their rid, the release of Kimi-K2.5's first aux capture; with
#          PYSPLICE_STORE_PYTHON (the store venv's python, scripts/store-venv.sh; CI sets it where
#          SpecForge's pinned copy is) also the store route: the server's store sink, the sender's
#          --publish, SpecForge's own online trainer (job.py --store)
#   0.5.9  Llama: the newest release before rids, where chunks are stitched by their KV slots
#          and the sender sends with a record only (masks stay all ones)
# Each job's log is WORK_DIR/<release>-<arch>.log; a failed job leaves its folder (server logs,
# samples) for a look. Exit 0 when every job passed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../../.." && pwd)
programs=$(cd "${1:?usage: matrix.sh PROGRAMS_DIR WORK_DIR}" && pwd)
work=${2:?usage: matrix.sh PROGRAMS_DIR WORK_DIR}
mkdir -p "$work"
work=$(cd "$work" && pwd)

lane() { # "RELEASE ARCH [--live]"... : the jobs of one lane, in order
    local job fields venv status=0
    for job in "$@"; do
        read -r -a fields <<<"$job"
        local release=${fields[0]} arch=${fields[1]} log="$work/${fields[0]}-${fields[1]}.log"
        if ! venv=$(bash "$repo/scripts/sglang-cpu-venv.sh" "$release" 2>"$work/venv-$release.log"); then
            echo "FAIL sglang $release: the venv could not be installed (see $work/venv-$release.log)" | tee "$log"
            status=1
            continue
        fi
        if "$venv/bin/python" "$repo/crates/pysplice-sglang/tests/python/real/job.py" --venv "$venv" --release "$release" --arch "$arch" \
            --bin "$programs" --work "$work/$release-$arch" "${fields[@]:2}" >"$log" 2>&1; then
            rm -rf "$work/$release-$arch"
        else
            status=1
        fi
        tail -n 1 "$log"
    done
    return $status
}

began=$SECONDS
first_lane=("0.5.23 deepseek_v3 --live")
[ "${PYSPLICE_REAL_ALL:-0}" != 1 ] || first_lane+=("0.5.23 llama")
lane "${first_lane[@]}" &
first=$!
second_lane=("0.5.10 deepseek_v2${PYSPLICE_STORE_PYTHON:+ --store $PYSPLICE_STORE_PYTHON}" "0.5.9 llama")
lane "${second_lane[@]}" &
second=$!
status=0
wait $first || status=1
wait $second || status=1
for log in "$work"/*-*.log; do
    case $log in */venv-*) continue ;; esac
    echo "---- $(basename "$log")"
    grep -v '^ok   ' "$log" | tail -n 40
done
echo "real-server jobs: $((SECONDS - began)) s"
exit $status
