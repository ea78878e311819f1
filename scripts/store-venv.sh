#!/usr/bin/env bash
# A virtual environment with the Mooncake store client and what SpecForge's online trainer imports,
# for the store tests (crates/pysplice-sglang/tests/python/store/); made once, then reused.
#
#     bash scripts/store-venv.sh      # prints the venv's folder
#
# PyTorch is not installed a second time (PyPI's wheel brings about 5 GB of CUDA libraries): the
# venv reads the SGLang 0.5.23 CPU venv's packages (scripts/sglang-cpu-venv.sh, made first if
# missing) through a .pth file, behind its own site-packages; only Mooncake's non-CUDA wheel and the
# small packages that venv lacks go into this one. SpecForge's consumer runs on that venv's torch and
# transformers, newer than SpecForge's own pins (torch 2.11.0, transformers 5.8.1).
#
# mooncake_master and mooncake_client link libibverbs.so.1 (Debian's libibverbs1), even on TCP.
#
# The venv lives in $PYSPLICE_STORE_VENV (default ~/.cache/pysplice/store-venv), outside any
# checkout; it is reused only when its marker names the same packages and the same SGLang venv, and
# one left half-installed is made again.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${PYSPLICE_STORE_VENV:-$HOME/.cache/pysplice/store-venv}
mooncake="mooncake-transfer-engine-non-cuda==0.3.13.post1"
base_release=0.5.23

ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
if ! "$ldconfig" -p 2>/dev/null | grep 'libibverbs\.so\.1 ' >/dev/null; then
    echo "store-venv.sh: libibverbs.so.1 is missing (Mooncake's binaries link it): apt-get install -y libibverbs1" >&2
    exit 1
fi

base=$(bash "$repo/scripts/sglang-cpu-venv.sh" "$base_release" | tail -n 1)
base_site=$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
marker="1 $mooncake base=$base_site $(cat "$base/.pysplice-complete")"

# One installer at a time (CI starts one early, and a job may ask for it meanwhile).
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [ -f "$venv/.pysplice-complete" ] && [ "$(cat "$venv/.pysplice-complete")" = "$marker" ]; then
    echo "$venv"
    exit 0
fi
rm -rf "$venv"
# The SGLang venv's own interpreter makes this one: the same Python, so its packages load here.
"$base/bin/python" -m venv "$venv"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n' "$base_site" >"$site/pysplice-sglang-$base_release.pth"
# Its dependencies (aiohttp, requests) are the SGLang venv's; msgpack comes in here.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$mooncake"
"$venv/bin/python" - <<'PY'
import importlib, os
for name in ("mooncake.store", "torch", "transformers", "safetensors", "huggingface_hub", "pydantic", "yaml", "triton"):
    importlib.import_module(name)
import mooncake
for binary in ("mooncake_master", "mooncake_client"):
    path = os.path.join(os.path.dirname(mooncake.__file__), binary)
    if not os.access(path, os.X_OK):
        raise SystemExit("store-venv.sh: %s is missing from the Mooncake wheel" % path)
PY
"$(dirname "$("$venv/bin/python" -c 'import mooncake; print(mooncake.__file__)')")/mooncake_master" --version >/dev/null
printf '%s' "$marker" >"$venv/.pysplice-complete"
echo "$venv"
