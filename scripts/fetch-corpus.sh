#!/usr/bin/env bash
# Fetch the SGLang releases pinned in tests/sglang-versions.txt and unpack
# sglang/srt/models/** of each into $PYSPLICE_CORPUS/<version>/ (default
# <repo>/target/sglang-corpus). The newest pinned version is also unpacked in
# full into <version>-full/ (benchmark input). Archives are cached in
# $PYSPLICE_WHEELS (default <repo>/target/sglang-wheels), and a version whose
# .complete marker exists is skipped, so re-runs are offline and near-instant.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corpus=${PYSPLICE_CORPUS:-$repo/target/sglang-corpus}
wheels=${PYSPLICE_WHEELS:-$repo/target/sglang-wheels}
mkdir -p "$corpus" "$wheels"

mapfile -t versions < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$repo/tests/sglang-versions.txt" | grep -v '^$')
[ ${#versions[@]} -gt 0 ] || { echo "no versions in tests/sglang-versions.txt" >&2; exit 1; }
newest=$(printf '%s\n' "${versions[@]}" | sort -V | tail -n1)

# Print the cached archive for $1 (wheel preferred), or nothing. The `-` after
# the version keeps 0.5.2 from matching 0.5.2.post1.
cached() {
  compgen -G "$wheels/sglang-$1-*.whl" | head -n1 || compgen -G "$wheels/sglang-$1.tar.gz" | head -n1 || true
}

# Download into a scratch dir and move into the cache only when pip succeeded,
# so an interrupted run never leaves a half-written archive that looks cached.
download() {
  local v=$1 tmp="$wheels/.tmp-$1"
  rm -rf "$tmp"
  # Recent releases (0.5.14, 0.5.23) ship only cp311 manylinux_2_34 wheels, older
  # ones py3-none-any, hence the explicit interpreter/platform.
  if ! python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux_2_34_x86_64 --platform any "sglang==$v" -d "$tmp"; then
    echo "  no usable wheel for sglang $v, falling back to the sdist" >&2
    python3 -m pip download -q --no-deps --no-binary=:all: "sglang==$v" -d "$tmp"
  fi
  mv "$tmp"/sglang-* "$wheels"/
  rm -rf "$tmp"
}

# extract ARCHIVE DEST PREFIX: copy members under PREFIX (e.g. sglang/srt/models/)
# into DEST, keeping the sglang/... path. Sdists nest everything under
# sglang-<v>/, so the first path component of a tar member is dropped.
extract() {
  python3 - "$@" <<'PY'
import os, sys, tarfile, zipfile
archive, dest, prefix = sys.argv[1:4]
def members():
    if archive.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            for i in z.infolist():
                if not i.is_dir():
                    yield i.filename, lambda i=i: z.read(i)
    else:
        with tarfile.open(archive) as t:
            for m in t:
                if m.isfile():
                    yield m.name.split("/", 1)[-1], lambda m=m: t.extractfile(m).read()
n = 0
for name, read in members():
    parts = name.split("/")
    if not name.startswith(prefix) or ".." in parts:
        continue
    path = os.path.join(dest, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(read())
    n += 1
if n == 0:
    sys.exit(f"{archive}: nothing under {prefix}")
PY
}

for v in "${versions[@]}"; do
  dest="$corpus/$v" full="$corpus/$v-full" note=cached
  want_full=false
  [ "$v" = "$newest" ] && [ ! -e "$full/.complete" ] && want_full=true
  if [ ! -e "$dest/.complete" ] || $want_full; then
    start=$SECONDS
    archive=$(cached "$v")
    if [ -z "$archive" ]; then
      download "$v"
      archive=$(cached "$v")
      note="downloaded"
    else
      note="from archive cache"
    fi
    # Separate statements, not `a && b && c`: set -e ignores failures inside && lists.
    if [ ! -e "$dest/.complete" ]; then
      rm -rf "$dest"
      extract "$archive" "$dest" sglang/srt/models/
      touch "$dest/.complete"
    fi
    if $want_full; then
      rm -rf "$full"
      extract "$archive" "$full" sglang/
      touch "$full/.complete"
    fi
    note="$note $(basename "$archive") ($(du -k "$archive" | cut -f1) KiB), $((SECONDS - start))s"
  fi
  count=$(find "$dest/sglang/srt/models" -name '*.py' | wc -l)
  extra=""
  [ "$v" = "$newest" ] && extra=", full package: $(find "$full" -type f ! -name .complete | wc -l) files"
  printf '%-8s %4d model .py files%s [%s]\n' "$v" "$count" "$extra" "$note"
done

# Projects other than SGLang, for the engine's placement test on code nobody here wrote.
bash "$repo/scripts/fetch-py-corpus.sh"
