#!/usr/bin/env bash
# Build the Python wheel `pysplice-cli` (commands pysplice, sglang-hs-dump, sglang-hs-send,
# sglang-hs-inspect, pysplice-lsp) for hosts without Rust. Writes exactly one wheel under
# target/wheels/ and prints its path.
# maturin comes from PyPI into a private venv under target/, so nothing is installed globally.
# PYSPLICE_WHEEL_PROFILE=dev builds the commands in the dev profile (default: release).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

venv=target/maturin-venv
if [ ! -x "$venv/bin/maturin" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check 'maturin>=1.5,<2'
fi

out=target/wheels
rm -f "$out"/pysplice_cli-*.whl
case "${PYSPLICE_WHEEL_PROFILE:-release}" in
release) profile_flags=(--release) ;;
dev) profile_flags=(--profile dev) ;;
*) echo "build-wheel: PYSPLICE_WHEEL_PROFILE is release or dev" >&2; exit 2 ;;
esac
"$venv/bin/maturin" build --quiet "${profile_flags[@]}" --locked --manifest-path cli/Cargo.toml -o "$out" >&2
shopt -s nullglob
wheels=("$out"/pysplice_cli-*.whl)
if [ ${#wheels[@]} -ne 1 ]; then
  echo "build-wheel: expected exactly one wheel in $out, found ${#wheels[@]}" >&2
  exit 1
fi
echo "${wheels[0]}"
