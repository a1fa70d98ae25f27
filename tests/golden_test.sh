#!/usr/bin/env bash
# Files written by every earlier format version are read by today's tools
# with the content the version that wrote them gave (tests/data/golden/,
# README there): image datasets at every fidelity, tables cell by cell,
# parts of a sharded conversion merged, and fields value by value.
# usage: tests/golden_test.sh TOOLS_DIR GOLDEN_DIR
set -euo pipefail
tools=$(cd "$1" && pwd) golden=$(cd "$2" && pwd)
python=${PYTHON:-/usr/bin/python3}
same_cells="$(cd "$(dirname "$0")" && pwd)/same_cells.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
check() {  # NAME COMMAND...
  local name=$1; shift
  if "$@" >"$work/out" 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: $name"; cat "$work/out"
  fi
}
# pcr-dump refuses DIR, naming the merge that joins it.
refused_as_part() {
  ! "$tools/pcr-dump" "$1" 2>"$work/err" && grep -q "pcr-convert merge" "$work/err"
}
# Extracts DATASET at every fidelity its expected list names and compares.
same_images() {  # DATASET EXPECTED [EXTRACT_OPTION...]
  local out; out=$(mktemp -d -p "$work")
  for k in $(cut -d' ' -f3 "$2" | cut -d/ -f1 | sort -un); do
    "$tools/pcr-dump" extract "$1" "$out/$k" --fidelity "$k" "${@:3}" >/dev/null
  done
  (cd "$out" && sha256sum --quiet -c "$2") &&
    [ "$(cd "$out" && find . -type f | wc -l)" -eq "$(wc -l < "$2")" ]
}

check "0.1 image dataset verifies" "$tools/pcr-dump" verify "$golden/v0.1-images"
check "0.1 image dataset reads at every fidelity" same_images "$golden/v0.1-images" "$golden/v0.1-images.sha256"
for t in soybean40 maps; do
  check "0.2 table $t verifies" "$tools/pcr-dump" verify "$golden/v0.2-tables/$t.pcr"
  check "0.2 table $t reads every cell" \
    bash -c '"$1/pcr-dump" cat "$2.pcr" | "$3" "$4" - "$2.expected.csv"' _ "$tools" "$golden/v0.2-tables/$t" \
    "$python" "$same_cells"
done
for p in part0 part1; do
  check "0.3 $p is refused as a dataset" refused_as_part "$golden/v0.3-parts/$p"
  check "0.3 $p verifies its files" bash -c 'for f in "$1"/records-*.pcr; do "$2/pcr-dump" verify "$f"; done' _ \
    "$golden/v0.3-parts/$p" "$tools"
done
# Merge links the parts' files, so the parts are copied beside the output first.
cp -r "$golden/v0.3-parts" "$work/parts"
check "0.3 parts merge" "$tools/pcr-convert" merge "$work/merged" "$work/parts/part0" "$work/parts/part1"
check "0.3 merged dataset verifies" "$tools/pcr-dump" verify "$work/merged"
check "0.3 merged dataset reads at every fidelity" same_images "$work/merged" "$golden/v0.3-parts.sha256"
check "0.4 image dataset with fields verifies" "$tools/pcr-dump" verify "$golden/v0.4-fields"
check "0.4 image dataset reads at every fidelity, segments put back" \
  same_images "$golden/v0.4-fields" "$golden/v0.4-fields.sha256" --metadata
check "0.4 image dataset reads every field" \
  bash -c '"$1/pcr-dump" cat "$2" | "$3" "$4" - "$2.expected.csv"' _ "$tools" "$golden/v0.4-fields" "$python" \
  "$same_cells"
for f in "$golden"/v0.5-tables/*.pcr; do
  t=$(basename "$f" .pcr)
  check "0.5 table $t verifies" "$tools/pcr-dump" verify "$f"
  check "0.5 table $t reads every cell" \
    bash -c '"$1/pcr-dump" cat "$2" | "$4" "$5" - "$3.expected.csv"' _ "$tools" "$f" "$golden/v0.5-tables/${t%%-*}" \
    "$python" "$same_cells"
done
for f in "$golden"/v0.6-tables/*.pcr; do
  t=$(basename "$f" .pcr)
  check "0.6 table $t verifies" "$tools/pcr-dump" verify "$f"
  check "0.6 table $t is stamped 0.6" bash -c '[ "$(od -An -tu1 -j9 -N1 "$1" | tr -d " ")" = 6 ]' _ "$f"
  check "0.6 table $t reads every cell" \
    bash -c '"$1/pcr-dump" cat "$2" | "$4" "$5" - "$3.expected.csv"' _ "$tools" "$f" "$golden/v0.6-tables/${t%%-*}" \
    "$python" "$same_cells"
done
for t in types maps; do
  check "0.6 table $t reads every value as JSON Lines" \
    bash -c '"$1/pcr-dump" cat "$2.pcr" --format jsonl | cmp - "$2.expected.jsonl"' _ "$tools" "$golden/v0.6-tables/$t"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
