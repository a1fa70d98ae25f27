#!/usr/bin/env bash
# The bytes conversions write are the bytes they wrote when
# tests/data/golden/outputs.sha256 was made (its README names the commit):
# tables from CSV and JSON Lines in every encoding, a reorder, the bundled
# image sample with and without fields, and, when ../shared/corpus is there,
# its tables and JPEG folders (corpus/ lines; SKIP without it). A change that
# is meant to change the bytes is a format change: it adds a spec version and
# golden files, and regenerates the digests with --update.
# usage: tests/same_output_test.sh TOOLS_DIR DATA_DIR [CORPUS_DIR] [--update]
set -euo pipefail
tools=$(cd "$1" && pwd) data=$(cd "$2" && pwd) corpus=${3:-}
update=no
[ "${4:-}" = "--update" ] && update=yes
golden=$data/golden
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/got.sha256
: >"$out"
# digest NAME DIR: one line per file under DIR, as NAME/PATH.
digest() {
  (cd "$2" && find . -type f ! -name '*.lock' | sed 's|^\./||' | LC_ALL=C sort | while read -r f; do
    echo "$(sha256sum "$f" | cut -d' ' -f1)  $1/$f"
  done) >>"$out"
}
convert() {  # NAME pcr-convert ARGS... (OUT_DIR is $work/NAME)
  local name=$1; shift
  "$tools/pcr-convert" "$@" >/dev/null 2>"$work/err" || { echo "FAIL: $name:"; cat "$work/err"; exit 1; }
  digest "$name" "$work/$name"
}
cp "$data/tabular/Soybean.csv" "$data/tabular/spam40.csv" "$work/"
convert soybean table "$work/Soybean.csv" "$work/soybean" --rows-per-stripe 64
convert spam40 table "$work/spam40.csv" "$work/spam40" --rows-per-stripe 16
for e in plain bitpack delta rle dictionary string_dictionary; do
  convert "soybean-$e" table "$work/Soybean.csv" "$work/soybean-$e" --rows-per-stripe 64 --encoding "$e"
done
for e in constant split decimal; do
  convert "spam40-$e" table "$work/spam40.csv" "$work/spam40-$e" --rows-per-stripe 16 --encoding "$e"
done
convert soybean-strings table "$work/Soybean.csv" "$work/soybean-strings" --strings --float32
convert types table "$golden/v0.6-tables/types.csv" "$work/types" --schema "$golden/v0.6-tables/types.schema.json" \
  --rows-per-stripe 3 --on-bad-value missing
convert maps table "$golden/v0.6-tables/maps.jsonl" "$work/maps" --column-type dense=float32 \
  --column-type scored=float32 --column-type 2=float64 --rows-per-stripe 2
convert maps-inferred table "$golden/v0.6-tables/maps.jsonl" "$work/maps-inferred" --rows-per-stripe 3
printf '{"feature":"date","count":3}\n{"feature":"Class","count":2}\n' >"$work/order.txt"
"$tools/pcr-convert" reorder "$work/soybean/Soybean.pcr" "$work/reordered" --popularity "$work/order.txt" >/dev/null
digest reordered "$work/reordered"
convert sample images "$data/sample" "$work/sample" --images-per-record 8 --records-per-file 2 --jobs 2
convert fields images "$golden/.." "$work/fields" --list "$golden/v0.4-fields.list" --fields "$golden/v0.4-fields.jsonl" \
  --field-type weight=float32 --field-type blob=bytes --field-type box32=float32_list --field-order caption \
  --images-per-record 3 --records-per-file 2 --jobs 2
if [ -n "$corpus" ] && [ -d "$corpus" ]; then
  for t in "$corpus"/tabular/*.csv; do
    name=corpus/$(basename "$t" .csv)
    mkdir -p "$work/corpus"
    convert "$name" table "$t" "$work/$name"
  done
  convert corpus/jpeg images "$corpus/jpeg" "$work/corpus/jpeg" --by-content --skip-bad --images-per-record 64 --jobs 2
fi
if [ "$update" = yes ]; then
  cp "$out" "$golden/outputs.sha256"
  echo "wrote $(wc -l <"$out") digests to $golden/outputs.sha256"
  exit 0
fi
expected=$work/expected.sha256
if [ -n "$corpus" ] && [ -d "$corpus" ]; then
  cp "$golden/outputs.sha256" "$expected"
else
  grep -v '  corpus/' "$golden/outputs.sha256" >"$expected"
fi
if ! diff -u "$expected" "$out" >"$work/diff"; then
  echo "FAIL: conversions wrote other bytes than before:"
  cat "$work/diff"
  exit 1
fi
echo "$(wc -l <"$out") files the same as before"
if [ -z "$corpus" ] || [ ! -d "$corpus" ]; then
  echo "SKIP: corpus files (no corpus at '${corpus}')"
  exit 77
fi
