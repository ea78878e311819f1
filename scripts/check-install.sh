#!/usr/bin/env bash
# The two ways users install pysplice, tried from this checkout as a new user would:
#   1. `cargo install --locked --path cli` into an empty root: the five commands run;
#   2. the wheel from scripts/build-wheel.sh, `pip install`ed into a fresh venv: the five
#      commands run, `pysplice --version` and the demo (`sglang-hs-dump` with no path) work, the
#      spec schema is installed where `pysplice schema --path` says.
# PYSPLICE_INSTALL_PROFILE=dev builds both in the dev profile instead of release (CI: it reuses
# the build of `cargo test` rather than compiling the workspace again with optimisations).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Every crate takes its version from the workspace's `[workspace.package]`.
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$version" ] || { echo "check-install: no version in Cargo.toml's [workspace.package]" >&2; exit 1; }

expect_version() { # COMMAND NAME
  local got
  got=$("$1" --version)
  [ "$got" = "$2 $version" ] || { echo "check-install: '$1 --version' printed '$got', expected '$2 $version'" >&2; exit 1; }
}

profile=${PYSPLICE_INSTALL_PROFILE:-release}
case "$profile" in
release) install_flags=() ;;
dev) install_flags=(--debug) ;;
*) echo "check-install: PYSPLICE_INSTALL_PROFILE is release or dev, not '$profile'" >&2; exit 2 ;;
esac

echo "-- cargo install --locked --path cli ($profile profile)"
# Shares target/ with the wheel build, so the binaries are compiled once.
CARGO_TARGET_DIR="$repo/target" cargo install --quiet --locked --path cli --root "$scratch/cargo-root" ${install_flags[@]+"${install_flags[@]}"}
ls "$scratch/cargo-root/bin"
expect_version "$scratch/cargo-root/bin/pysplice" pysplice
expect_version "$scratch/cargo-root/bin/sglang-hs-dump" sglang-hs-dump
expect_version "$scratch/cargo-root/bin/pysplice-lsp" pysplice-lsp
expect_version "$scratch/cargo-root/bin/sglang-hs-send" sglang-hs-send
# The sender starts python3 on the program built into it: its help comes from that program.
"$scratch/cargo-root/bin/sglang-hs-send" --help | grep -q -- '--conversations' || { echo "check-install: sglang-hs-send --help" >&2; exit 1; }
expect_version "$scratch/cargo-root/bin/sglang-hs-inspect" sglang-hs-inspect
# The folder checker too: its help comes from the program built into it (no torch needed for it).
"$scratch/cargo-root/bin/sglang-hs-inspect" --help | grep -q -- '--png' || { echo "check-install: sglang-hs-inspect --help" >&2; exit 1; }

echo "-- wheel into a fresh venv"
wheel=$(PYSPLICE_WHEEL_PROFILE="$profile" bash scripts/build-wheel.sh)
echo "$wheel"
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel"
for cmd in pysplice sglang-hs-dump sglang-hs-send sglang-hs-inspect pysplice-lsp; do
  expect_version "$scratch/venv/bin/$cmd" "$cmd"
done
# The spec schema: installed under the prefix, found by `pysplice schema --path`, the same bytes
# as `pysplice schema` and the checked-in schemas/hook-spec.schema.json.
schema="$scratch/venv/share/pysplice/hook-spec.schema.json"
cmp "$schema" schemas/hook-spec.schema.json || { echo "check-install: the wheel did not install $schema as schemas/ has it" >&2; exit 1; }
[ "$("$scratch/venv/bin/pysplice" schema --path)" = "$schema" ] || { echo "check-install: 'pysplice schema --path' does not name $schema" >&2; exit 1; }
"$scratch/venv/bin/pysplice" schema | cmp - schemas/hook-spec.schema.json || { echo "check-install: 'pysplice schema' differs from schemas/" >&2; exit 1; }
# The demo, run from an unrelated folder with only the venv's bin on PATH.
(cd "$scratch" && PATH="$scratch/venv/bin:/usr/bin:/bin" sglang-hs-dump > demo.out)
grep -q "Successfully patched" "$scratch/demo.out" || { cat "$scratch/demo.out" >&2; echo "check-install: the demo did not patch" >&2; exit 1; }
echo "check-install: OK"
