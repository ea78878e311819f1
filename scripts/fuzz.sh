#!/usr/bin/env bash
# Runs cargo-fuzz targets one after another for a given time each, then prints a summary.
#
#   scripts/fuzz.sh TARGET... [SECONDS]      (SECONDS defaults to 600; targets: `all` for every one)
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Each target runs as one
# libFuzzer process on one core, without AddressSanitizer (the crate has no `unsafe`) and with
# debug assertions, over its working corpus fuzz/corpus/TARGET and the seeds in fuzz/seeds/TARGET.
# A run stops at its first crash, whose input lands in fuzz/artifacts/TARGET/. The full output of
# each run is kept in fuzz/logs/TARGET.log. Extra libFuzzer flags: FUZZ_ARGS="-max_len=65536".
# Exit status: 1 if any target crashed, 2 on a usage or build error.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds=600
targets=()
for arg in "$@"; do
    if [[ "$arg" =~ ^[0-9]+$ ]]; then
        seconds="$arg"
    else
        targets+=("$arg")
    fi
done
available=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^pysplice-fuzz$')
if [[ ${#targets[@]} -eq 0 ]]; then
    echo "usage: scripts/fuzz.sh TARGET... [SECONDS]   (targets: all $(echo $available))" >&2
    exit 2
fi
if [[ "${targets[*]}" == "all" ]]; then
    read -r -a targets <<<"$(echo $available)"
fi
for target in "${targets[@]}"; do
    if ! grep -qx "$target" <<<"$available"; then
        echo "fuzz.sh: no fuzz target \`$target\` (targets: $(echo $available))" >&2
        exit 2
    fi
done

for target in "${targets[@]}"; do
    cargo +nightly fuzz build -s none -a "$target" || exit 2
done
mkdir -p fuzz/logs
summary=()
failed=0
for target in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    before=$(find "fuzz/artifacts/$target" -type f | wc -l)
    log="fuzz/logs/$target.log"
    echo "fuzzing $target for ${seconds}s (log: $log)" >&2
    status=0
    # shellcheck disable=SC2086
    cargo +nightly fuzz run -s none -a "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -timeout=30 -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1 || status=$?
    after=$(find "fuzz/artifacts/$target" -type f | wc -l)
    crashes=$((after - before))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    took=$(sed -n 's/.*Done \([0-9]*\) runs in \([0-9]*\) second.*/\2/p' "$log" | tail -1)
    if [[ $status -ne 0 || $crashes -gt 0 ]]; then
        failed=1
        crashes=$((crashes > 0 ? crashes : 1))
    fi
    summary+=("$(printf '%-12s %8s %12s %8s' "$target" "${took:-$seconds}" "${runs:-?}" "$crashes")")
done
printf '%-12s %8s %12s %8s\n' target seconds executions crashes
printf '%s\n' "${summary[@]}"
exit "$failed"
