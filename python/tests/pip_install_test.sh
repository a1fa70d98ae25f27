#!/usr/bin/env bash
# pip install --no-build-isolation of a copy of the source tree (its git
# files) into a fresh virtual environment that sees the system's packages,
# then, from outside the tree: import pcr, convert, read, and the tools.
# Usage: pip_install_test.sh SOURCE_DIR PYTHON VERSION TEST_DATA_DIR
set -euo pipefail
src=$1 python=$2 version=$3 data=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$src" ls-files -co --exclude-standard | tar -C "$src" --ignore-failed-read -cf - -T - 2>/dev/null |
    tar -C "$tmp/src" -xf -
else
  tar -C "$src" --exclude='./build*' --exclude='./.mesonpy-*' -cf - . | tar -C "$tmp/src" -xf -
fi
if ! "$python" -c 'import mesonpy, ensurepip' 2>/dev/null; then
  echo "SKIP: pip install needs meson-python and venv (apt-get install python3-mesonpy python3-venv)"
  exit 77
fi
"$python" -m venv --system-site-packages "$tmp/venv"
if ! PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$tmp/venv/bin/pip" install -v --no-build-isolation "$tmp/src" \
    >"$tmp/pip.log" 2>&1; then
  tail -n 60 "$tmp/pip.log"
  echo "FAIL: pip install -v --no-build-isolation" >&2
  exit 1
fi
# The README's -v shows the compile's progress, one line per step.
if ! grep -qE '^ *\[[0-9]+/[0-9]+\] Compiling C\+\+ object' "$tmp/pip.log"; then
  tail -n 30 "$tmp/pip.log"
  echo "FAIL: pip install -v printed no build progress" >&2
  exit 1
fi
cd "$tmp"
"$tmp/venv/bin/python" - "$version" "$data" "$tmp" <<'PY'
import os
import sys

import pcr

version, data, tmp = sys.argv[1:]
assert pcr.__file__.startswith(sys.prefix + os.sep), f"pcr imported from {pcr.__file__}, not the environment"
assert pcr.__version__ == version, (pcr.__version__, version)
summary = pcr.convert_images(os.path.join(data, "sample"), os.path.join(tmp, "ds"), images_per_record=8,
                             progress=False)
ds = pcr.ImageDataset(os.path.join(tmp, "ds"))
assert len(ds) == summary["images"] == 24
for i in range(len(ds)):
    assert pcr.decode(ds.read(i)).ndim == 3
table = pcr.Table(pcr.convert_table(os.path.join(data, "tabular", "Soybean.csv"), os.path.join(tmp, "t"))["path"])
rows = sum(1 for _ in open(os.path.join(data, "tabular", "Soybean.csv"), "rb")) - 1
try:
    import pandas  # noqa: F401
except ImportError:
    assert len(table.read(["Class"])["Class"]["presence"]) == rows
else:
    assert table.to_pandas().shape == (rows, len(table.schema))
print(f"pcr {pcr.__version__} from {os.path.dirname(pcr.__file__)}: converted and read {len(ds)} images, {rows} rows")
PY
"$tmp/venv/bin/pcr-dump" verify "$tmp/ds" >/dev/null
"$tmp/venv/bin/pcr-convert" table "$data/tabular/spam40.csv" "$tmp/spam" >/dev/null
summary=$("$tmp/venv/bin/pcr-dump" "$tmp/spam/spam40.pcr")
grep -q "rows" <<<"$summary"
echo "OK: pip install --no-build-isolation, import pcr, conversions and reads, the tools"
