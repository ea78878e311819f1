#!/usr/bin/env bash
# Install one SGLang release into a virtual environment that serves on a CPU, or reuse it.
#
#     bash scripts/sglang-cpu-venv.sh VERSION      # prints the venv's folder
#
# SGLang 0.5.x lists GPU-only packages among its hard requirements (flashinfer, sglang-kernel,
# deep-ep, ...) and has no CPU extra, so the release goes in without its dependencies, then the
# pure-Python packages its HTTP server, tokenizer manager and scheduler import, with PyTorch and
# transformers held to the release's own pins (from its metadata; pip would upgrade them
# otherwise). PyPI's torch wheel brings the CUDA libraries, unused on a CPU: about 6 GB a venv.
# Also installed: jinja2 (the sender renders chat templates) and SpecForge's parser (no
# dependencies), the reference of crates/pysplice-sglang/tests/python/real/expect.py.
#
# The venvs live in $PYSPLICE_SGLANG_VENVS (default ~/.cache/pysplice/sglang-cpu), outside any
# checkout, so that a second run of .ci/run on the machine reuses them; a venv is reused only when
# its marker names the same package list, and one left half-installed is made again.
set -euo pipefail
version=${1:?usage: sglang-cpu-venv.sh VERSION}
root=${PYSPLICE_SGLANG_VENVS:-$HOME/.cache/pysplice/sglang-cpu}
venv=$root/$version
packages=(aiohttp fastapi uvicorn uvloop orjson msgspec pybase64 pydantic python-multipart pyzmq requests
    psutil setproctitle tokenizers numpy scipy einops regex tqdm prometheus-client packaging interegular
    partial_json_parser pillow xxhash zstandard sentencepiece tiktoken safetensors huggingface_hub distro
    easydict watchfiles python-dateutil nvidia-ml-py openai xgrammar llguidance IPython dill
    compressed-tensors gguf jsonschema soundfile jinja2 torchvision)
marker="3 sglang==$version specforge==0.2.0 ${packages[*]}"
# One installer per release at a time (CI starts one early, and a job may ask for it meanwhile):
# the second waits for the first and then finds the venv complete.
mkdir -p "$root"
exec 9>"$root/.lock-$version"
flock 9
if [ -f "$venv/.pysplice-complete" ] && [ "$(cat "$venv/.pysplice-complete")" = "$marker" ]; then
    echo "$venv"
    exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" --no-deps "sglang==$version" "specforge==0.2.0"
# The release's own version bounds (those of its requirements without markers or extras):
# PyTorch and transformers above all, which pip would upgrade otherwise.
"$venv/bin/python" - "$venv/constraints.txt" <<'PY'
import re, sys
from importlib.metadata import distribution
pins = []
for req in distribution("sglang").requires or []:
    m = re.match(r"^([A-Za-z0-9_.-]+)\s*([<>=!~][^;\[]*)$", req)
    if m:
        pins.append("%s%s" % (m.group(1), m.group(2).replace(" ", "")))
open(sys.argv[1], "w").write("\n".join(pins) + "\n")
PY
"${pip[@]}" -c "$venv/constraints.txt" torch transformers "${packages[@]}"
printf '%s' "$marker" >"$venv/.pysplice-complete"
echo "$venv"
