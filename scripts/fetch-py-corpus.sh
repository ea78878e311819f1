#!/usr/bin/env bash
# Fetch the projects pinned in tests/py-corpus.txt (pure-Python wheels from PyPI) and unpack
# every .py file of each into $PYSPLICE_PY_CORPUS/<name>-<version>/ (default
# <repo>/target/py-corpus), and those of tests/py-packages.txt into $PYSPLICE_PY_PACKAGES
# (default <repo>/target/py-packages). Wheels are cached in $PYSPLICE_PY_WHEELS (default
# <repo>/target/py-wheels) and a project whose .complete marker exists is skipped, so re-runs
# are offline and near-instant. Called by scripts/fetch-corpus.sh.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corpus=${PYSPLICE_PY_CORPUS:-$repo/target/py-corpus}
wheels=${PYSPLICE_PY_WHEELS:-$repo/target/py-wheels}
mkdir -p "$corpus" "$wheels"

packages=${PYSPLICE_PY_PACKAGES:-$repo/target/py-packages}
mkdir -p "$packages"

# name==version lines of a list, comments and blanks left out.
pins_of() { sed -e 's/#.*//' -e 's/[[:space:]]//g' "$1" | grep -v '^$' || true; }
mapfile -t corpus_pins < <(pins_of "$repo/tests/py-corpus.txt")
mapfile -t package_pins < <(pins_of "$repo/tests/py-packages.txt")
[ ${#corpus_pins[@]} -gt 0 ] || { echo "no projects in tests/py-corpus.txt" >&2; exit 1; }
pins=()
for pin in "${corpus_pins[@]}"; do pins+=("$pin=$corpus"); done
for pin in "${package_pins[@]}"; do pins+=("$pin=$packages"); done

for entry in "${pins[@]}"; do
  pin=${entry%=*} into=${entry##*=}
  name=${pin%%==*} version=${pin#*==}
  dest="$into/$name-$version" note=cached
  if [ ! -e "$dest/.complete" ]; then
    start=$SECONDS
    wheel=$(compgen -G "$wheels/$name-$version-py3-none-any.whl" | head -n1 || true)
    if [ -z "$wheel" ]; then
      # Into a scratch folder first, so an interrupted download never looks cached.
      tmp="$wheels/.tmp-$name"
      rm -rf "$tmp"
      python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
        --platform any "$pin" -d "$tmp"
      mv "$tmp"/"$name"-"$version"-py3-none-any.whl "$wheels"/
      rm -rf "$tmp"
      wheel="$wheels/$name-$version-py3-none-any.whl"
      note=downloaded
    else
      note="from wheel cache"
    fi
    rm -rf "$dest"
    python3 - "$wheel" "$dest" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1:3]
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        parts = info.filename.split("/")
        if info.is_dir() or not info.filename.endswith(".py") or ".." in parts:
            continue
        path = os.path.join(dest, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(z.read(info))
        n += 1
if n == 0:
    sys.exit(f"{wheel}: no .py files")
PY
    touch "$dest/.complete"
    note="$note, $((SECONDS - start))s"
  fi
  printf '%-20s %5d .py files [%s]\n' "$name-$version" "$(find "$dest" -name '*.py' | wc -l)" "$note"
done
