#!/usr/bin/env bash
# Lay out the multi-family runtime test in one folder (default: .device/families):
#
#   DIR/pristine/sglang/...   the stand-in model files of crates/pysplice-sglang/tests/python/runtime/families, as written
#   DIR/patched/sglang/...    the same after `sglang_hs_dump DIR/patched --arch all`
#   DIR/run_families_test.py  the runtime test
#   DIR/run_families_on_device.sh
#
# Then, on any machine with PyTorch (a GPU is used when present):
#   bash DIR/run_families_on_device.sh DIR
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../../.." && pwd)
dest=${1:-$repo/.device/families}
cd "$repo"
rm -rf "$dest"
mkdir -p "$dest/pristine" "$dest/patched"
cp -r crates/pysplice-sglang/tests/python/runtime/families/sglang "$dest/pristine/"
cp -r crates/pysplice-sglang/tests/python/runtime/families/sglang "$dest/patched/"
cp crates/pysplice-sglang/tests/python/runtime/run_families_test.py crates/pysplice-sglang/tests/python/runtime/run_families_on_device.sh crates/pysplice-sglang/tests/python/runtime/dump_writers.py "$dest"/
cargo run --quiet --bin sglang-hs-dump -- "$dest/patched" --arch all >/dev/null
# the same static check as tests/sglang_models_cli.rs, before spending time on a device
python3 crates/pysplice-sglang/tests/python/check_hs_models.py "$dest/patched/sglang/srt/models" "$dest/pristine/sglang/srt/models" \
  LlamaForCausalLM Qwen3MoeForCausalLM GptOssForCausalLM VlmForConditionalGeneration >"$dest/py_check.json" ||
  { cat "$dest/py_check.json"; exit 1; }
echo "ready: bash $dest/run_families_on_device.sh $dest"
