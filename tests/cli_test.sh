#!/usr/bin/env bash
# Command-line contract of pcr-convert and pcr-dump: outputs, exit statuses
# (0 ok, 1 bad input or corrupt data, 2 usage) and messages.
# usage: cli_test.sh TOOLS_DIR DATA_DIR
set -u
tools=$(cd "$1" && pwd)
data=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# expect STATUS DESCRIPTION COMMAND...: runs COMMAND, keeps stdout in $tmp/out
# and stderr in $tmp/err, and checks its exit status.
expect() {
  local want=$1 what=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -eq "$want" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $what: exit $got, expected $want"
    sed 's/^/  stderr: /' "$tmp/err"
  fi
}

# check DESCRIPTION PATTERN FILE: FILE matches the extended regex PATTERN.
check() {
  if grep -Eq -- "$2" "$3"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $1: no match for '$2' in:"
    sed 's/^/  /' "$3"
  fi
}

expect 0 "convert sample" "$tools/pcr-convert" images "$data/sample" "$tmp/ds" --images-per-record 8 --jobs 2
check "convert summary" '^24 images in 3 records \(3 files\)' "$tmp/out"
expect 1 "convert into an existing dataset" "$tools/pcr-convert" images "$data/sample" "$tmp/ds"
check "existing dataset message" 'already holds a pcr dataset' "$tmp/err"
expect 2 "convert without OUT_DIR" "$tools/pcr-convert" images "$data/sample"
expect 2 "convert with a bad option" "$tools/pcr-convert" images "$data/sample" "$tmp/x" --jobs zero
expect 1 "convert an unknown scan script" "$tools/pcr-convert" images "$data/sample" "$tmp/x" --scan-script nope
check "scan script message" 'neither a built-in name' "$tmp/err"
expect 1 "convert under a small pixel limit" "$tools/pcr-convert" images "$data/sample" "$tmp/x" --max-pixels 1000
check "pixel limit named" 'over the limit of 1000' "$tmp/err"
expect 2 "convert with a zero memory budget" "$tools/pcr-convert" images "$data/sample" "$tmp/x" --memory-mb 0
# --help after any command prints that command's usage; a usage error says
# what is wrong, the command's synopsis and where the options are.
for command in images webdataset merge table reorder; do
  expect 0 "convert $command --help" "$tools/pcr-convert" "$command" --help
  check "convert $command --help" "^usage: pcr-convert $command " "$tmp/out"
done
expect 0 "convert images SRC --help" "$tools/pcr-convert" images "$data/sample" --help
check "every option of images" '^  --keep-order +write images in source order' "$tmp/out"
expect 2 "convert with --shuffle and --keep-order" "$tools/pcr-convert" images "$data/sample" "$tmp/x" --shuffle 3 --keep-order
check "usage error first" '^pcr-convert: --shuffle and --keep-order exclude each other$' "$tmp/err"
check "then the synopsis" '^usage: pcr-convert images SRC_DIR OUT_DIR' "$tmp/err"
check "then where the options are" '^\(pcr-convert images --help gives every option\)$' "$tmp/err"
[ "$(wc -l <"$tmp/err")" -le 12 ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: a usage error printed $(wc -l <"$tmp/err") lines"; }
for tool in pcr-convert pcr-dump pcr-bench; do
  expect 0 "$tool --version" "$tools/$tool" --version
  check "$tool version" "^$tool [0-9]+\.[0-9]+\.[0-9]+$" "$tmp/out"
done
expect 0 "pcr-dump extract --help" "$tools/pcr-dump" extract "$tmp/ds" --help
check "pcr-dump usage" '^usage: pcr-dump ' "$tmp/out"
expect 0 "pcr-bench read --help" "$tools/pcr-bench" read --help
check "pcr-bench usage" 'pcr-bench read PATH' "$tmp/out"

mkdir -p "$tmp/mixed/ok" "$tmp/mixed/bad"
cp "$data/sample/video/video-001.jpeg" "$tmp/mixed/ok/"
cp "$data/bad/testorig12.jpg" "$tmp/mixed/bad/"
expect 1 "convert with a 12-bit file" "$tools/pcr-convert" images "$tmp/mixed" "$tmp/m1"
check "bad file named with reason and the fix" 'mixed/bad/testorig12.jpg: 12-bit JPEG is not supported.*\(--skip-bad skips it\)' "$tmp/err"
[ ! -e "$tmp/m1/dataset.pcrd" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: failed conversion left a manifest"; }
expect 0 "convert with --skip-bad" "$tools/pcr-convert" images "$tmp/mixed" "$tmp/m2" --skip-bad
check "skip list" '^bad/testorig12.jpg	Not supported' "$tmp/m2/skipped.tsv"

# Three shards and a merge give the files of a one-machine conversion.
for i in 0 1 2; do
  expect 0 "convert shard $i of 3" "$tools/pcr-convert" images "$data/sample" "$tmp/part$i" \
    --images-per-record 4 --shard $i --num-shards 3
done
expect 2 "--shard beyond --num-shards" "$tools/pcr-convert" images "$data/sample" "$tmp/x" --shard 3 --num-shards 3
expect 1 "dump a part" "$tools/pcr-dump" "$tmp/part0"
check "part message" 'one part of a sharded conversion.*pcr-convert merge' "$tmp/err"
expect 1 "merge with a shard missing" "$tools/pcr-convert" merge "$tmp/merged" "$tmp/part0" "$tmp/part2"
check "missing shard named" 'missing shards 1 of 3' "$tmp/err"
expect 2 "merge without parts" "$tools/pcr-convert" merge "$tmp/merged"
expect 0 "merge" "$tools/pcr-convert" merge "$tmp/merged" "$tmp/part2" "$tmp/part0" "$tmp/part1"
check "merge summary" '^3 parts: 24 images in 6 files' "$tmp/out"
# An output that cannot be written there is refused, never made a local
# directory (s3:// outputs of images: s3_output_test).
(
  cd "$tmp" || exit 1
  expect 1 "images into http://" "$tools/pcr-convert" images "$data/sample" http://host/out
  check "http output refused" 'http://host/out: not a local directory; images, webdataset, table and merge also write' \
    "$tmp/err"
  expect 1 "table into https://" "$tools/pcr-convert" table "$data/tabular/Soybean.csv" https://host/out
  expect 1 "merge into http://" "$tools/pcr-convert" merge http://host/merged "$tmp/part0" "$tmp/part1" "$tmp/part2"
  check "merge output refused" 'http://host/merged: not a local directory' "$tmp/err"
  [ ! -e "$tmp/s3:" ] && [ ! -e "$tmp/http:" ] && [ ! -e "$tmp/https:" ] && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: a URL output made a local directory"; }
  echo "$passed $failed" >"$tmp/counts"
)
read -r passed failed <"$tmp/counts"
expect 0 "one-machine conversion" "$tools/pcr-convert" images "$data/sample" "$tmp/whole" --images-per-record 4
[ "$(ls -A "$tmp/merged")" = "$(ls -A "$tmp/whole")" ] && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL: merged files differ in names"; }
for f in "$tmp/whole"/*; do
  cmp -s "$f" "$tmp/merged/$(basename "$f")" && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: merged $(basename "$f") differs"; }
done

expect 0 "dump summary" "$tools/pcr-dump" "$tmp/ds"
check "summary images" '^  images +24$' "$tmp/out"
check "summary group 5 is all" '^  5 .* 1\.0000$' "$tmp/out"
expect 0 "dump json" "$tools/pcr-dump" "$tmp/ds" --json
check "json keys" '^\{"path":.*"images":24,"records":3,.*"scan_groups":5,.*"groups":\[\{"group":1,"bytes":[0-9]+,.*"cumulative_bytes":' "$tmp/out"
expect 0 "dump one file lists structures" "$tools/pcr-dump" "$tmp/ds/records-00000.pcr"
check "structure offsets" '^  @16 +stripe 0 ' "$tmp/out"
check "footer offset" '^  @[0-9]+ +footer +32 bytes' "$tmp/out"
expect 2 "dump with a bad flag" "$tools/pcr-dump" "$tmp/ds" --yaml
expect 0 "quality report" "$tools/pcr-dump" "$tmp/ds" --quality --sample 5
check "quality report header" '^  fidelity report: 5 of 24 images' "$tmp/out"
check "quality at full fidelity" '^  5 .* 1\.0000 +1\.00 +1\.0000 +1\.0000 .* 100\.00 +100\.00$' "$tmp/out"
expect 0 "quality report as JSON" "$tools/pcr-dump" "$tmp/ds" --quality --json
check "quality keys" '"group":1,.*"speedup":[0-9.]+,"ssim_mean":0\.[0-9]+,"ssim_p5":[0-9.]+,.*"psnr_mean":[0-9.]+.*"quality_sample":24\}$' "$tmp/out"
expect 2 "quality with a zero sample" "$tools/pcr-dump" "$tmp/ds" --quality --sample 0

expect 0 "verify" "$tools/pcr-dump" verify "$tmp/ds"
check "verify ok" ': OK, 3 files, 3 records, 18 streams' "$tmp/out"
cp -r "$tmp/ds" "$tmp/bad"
printf '\xff' | dd of="$tmp/bad/records-00001.pcr" bs=1 seek=200 conv=notrunc status=none
expect 1 "verify a corrupt file" "$tools/pcr-dump" verify "$tmp/bad"
check "corruption names file, stripe, stream and offset" 'records-00001.pcr: stripe 0 stream [0-9]+ at offset [0-9]+ length [0-9]+: checksum mismatch' "$tmp/err"
expect 1 "verify a missing path" "$tools/pcr-dump" verify "$tmp/none"

expect 0 "extract at fidelity 1" "$tools/pcr-dump" extract "$tmp/ds" "$tmp/x1" --fidelity 1
expect 0 "extract at full fidelity" "$tools/pcr-dump" extract "$tmp/ds" "$tmp/xf" --fidelity full
n1=$(find "$tmp/x1" -name '*.jp*g' | wc -l)
s1=$(du -sb "$tmp/x1" | cut -f1)
sf=$(du -sb "$tmp/xf" | cut -f1)
if [ "$n1" -eq 24 ] && [ -s "$tmp/xf/textures/ring.jpg" ] && [ "$s1" -lt "$sf" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: extract wrote $n1 files, $s1 bytes at k=1 vs $sf at full"
fi
expect 2 "extract at fidelity 6 of 5" "$tools/pcr-dump" extract "$tmp/ds" "$tmp/x6" --fidelity 6
# At full fidelity extract gives the originals' segments back (a comment kept
# apart here) unless --no-metadata; below it, only with --metadata.
mkdir -p "$tmp/seg/c" && cp "$data/segments/jpg-cmyk-2.jpg" "$tmp/seg/c/"
expect 0 "convert an image with a comment" "$tools/pcr-convert" images "$tmp/seg" "$tmp/segds"
expect 0 "extract at full fidelity" "$tools/pcr-dump" extract "$tmp/segds" "$tmp/sfull" --fidelity full
expect 0 "extract --no-metadata" "$tools/pcr-dump" extract "$tmp/segds" "$tmp/sbare" --fidelity full --no-metadata
expect 0 "extract at fidelity 1" "$tools/pcr-dump" extract "$tmp/segds" "$tmp/s1" --fidelity 1
expect 0 "extract at fidelity 1 --metadata" "$tools/pcr-dump" extract "$tmp/segds" "$tmp/s1m" --fidelity 1 --metadata
for got in "full:$tmp/sfull:1" "no-metadata:$tmp/sbare:0" "fidelity 1:$tmp/s1:0" "fidelity 1 --metadata:$tmp/s1m:1"; do
  IFS=: read -r what dir want <<<"$got"
  if [ "$(grep -c 'CMYK test im' "$dir/c/jpg-cmyk-2.jpg")" -eq "$want" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: extract ($what) should hold the comment $want times"
  fi
done

mkdir -p "$tmp/named/ok"
cp "$data/sample/video/video-001.jpeg" "$tmp/named/ok/"
cp "$data/sample/textures/ring.jpg" "$tmp/named/ok/ring.mpo"
expect 0 "convert with a JPEG named .mpo" "$tools/pcr-convert" images "$tmp/named" "$tmp/n1"
check "one image taken" '^1 images in 1 records' "$tmp/out"
check "ignored file counted and named" '^pcr-convert: ignored 1 files not named .*\(e\.g\. ok/ring\.mpo\); --by-content' "$tmp/err"
expect 0 "convert by content" "$tools/pcr-convert" images "$tmp/named" "$tmp/n2" --by-content
check "both images taken" '^2 images in 1 records' "$tmp/out"
expect 2 "--by-content with --list" "$tools/pcr-convert" images "$tmp/named" "$tmp/n3" --by-content --list "$tmp/x.csv"

# Decode errors name the file, the image and its key.
cp -r "$data/sample" "$tmp/src-bad"
echo "not a JPEG" >"$tmp/src-bad/textures/ring.jpg"
expect 1 "decode bench with a bad original" "$tools/pcr-bench" decode "$tmp/ds" --src "$tmp/src-bad" --fidelity 1 \
  --min-seconds 0 --rounds 1
check "bad original named" "^pcr-bench: (Corruption|Not supported): .*src-bad/textures/ring.jpg: " "$tmp/err"

# Every fidelity decoded by each decoder and checked against the other.
for d in pcr libjpeg; do
  expect 0 "decode bench, --decoder $d" "$tools/pcr-bench" decode "$tmp/ds" --decoder $d --min-seconds 0 --rounds 1
  groups=$(grep -o '"mismatches":0[,}]' "$tmp/out" | wc -l)
  if [ "$groups" -eq 5 ] && ! grep -q '"mismatches":[1-9]' "$tmp/out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: decode bench --decoder $d: want 5 fidelities without mismatches, got:"
    sed 's/^/  /' "$tmp/out"
  fi
  # The sample's 4:1:1 and 4:1:0 frames are outside pcr's decoder.
  [ $d = pcr ] && check "frames outside pcr's decoder counted" '"fidelity":1,[^}]*"fallbacks":[1-9]' "$tmp/out"
done

# pcr's entropy decoder against libjpeg-turbo on every image of a dataset.
expect 0 "coefficients bench" "$tools/pcr-bench" coefficients "$tmp/ds" --src "$data/sample" --min-seconds 0 --rounds 1
check "coefficients compared" '"images":24,.*"mismatches":0,"not_handled":[1-9]' "$tmp/out"
check "coefficients timed" '"pcr_images_per_s":[0-9.]+,"libjpeg_images_per_s":[0-9.]+,"originals_images_per_s":[0-9.]+' "$tmp/out"
expect 2 "coefficients bench without --src" "$tools/pcr-bench" coefficients "$tmp/ds"
check "coefficients usage" 'coefficients needs PATH and --src SRC_DIR' "$tmp/err"
expect 1 "coefficients bench with a bad original" "$tools/pcr-bench" coefficients "$tmp/ds" --src "$tmp/src-bad" \
  --min-seconds 0 --rounds 1
check "bad original named by coefficients" "^pcr-bench: .*src-bad/textures/ring.jpg: " "$tmp/err"

# Non-regular files are refused, never waited on; missing things say why.
for name in records-00001.pcr dataset.pcrd; do
  rm -rf "$tmp/fifo" && cp -r "$tmp/ds" "$tmp/fifo" && rm "$tmp/fifo/$name" && mkfifo "$tmp/fifo/$name"
  for verb in "pcr-dump" "pcr-dump verify" "pcr-dump extract" "pcr-bench decode" "pcr-bench read"; do
    read -r tool sub <<<"$verb"
    case $verb in
      "pcr-dump") args=("$tmp/fifo") ;;
      "pcr-dump extract") args=(extract "$tmp/fifo" "$tmp/fx" --fidelity 1) ;;
      "pcr-bench decode") args=(decode "$tmp/fifo" --min-seconds 0) ;;
      "pcr-bench read") args=(read "$tmp/fifo" --fidelity 1) ;;
      *) args=("$sub" "$tmp/fifo") ;;
    esac
    expect 1 "$verb with $name a FIFO" timeout 30 "$tools/$tool" "${args[@]}"
    check "FIFO $name refused" "fifo/$name: not a regular file \(a FIFO\)" "$tmp/err"
  done
done
mkdir -p "$tmp/notds"
expect 1 "dump a directory that is not a dataset" "$tools/pcr-dump" "$tmp/notds"
check "not a dataset" "^pcr-dump: Not found: .*notds: not a pcr dataset: no dataset.pcrd" "$tmp/err"
ln -s dataset.pcrd "$tmp/notds/dataset.pcrd"
expect 1 "dump a dataset whose manifest is a symlink loop" "$tools/pcr-dump" "$tmp/notds"
check "symlink loop named" "notds/dataset.pcrd: cannot open: Too many levels of symbolic links" "$tmp/err"
printf 'sample/video/video-001.jpeg,0\nmissing.jpg,1\nfifo.jpg,1\n' >"$tmp/list.csv"
mkdir -p "$tmp/lsrc/sample/video" && cp "$data/sample/video/video-001.jpeg" "$tmp/lsrc/sample/video/" && mkfifo "$tmp/lsrc/fifo.jpg"
expect 1 "convert a list naming a missing file" timeout 30 "$tools/pcr-convert" images "$tmp/lsrc" "$tmp/l1" --list "$tmp/list.csv" --keep-order
check "missing source with its reason" "^pcr-convert: Not found: .*lsrc/missing.jpg: cannot open: No such file or directory" "$tmp/err"
expect 0 "convert a list naming a FIFO, skipping it" timeout 30 "$tools/pcr-convert" images "$tmp/lsrc" "$tmp/l2" --list "$tmp/list.csv" --skip-bad
check "FIFO source skipped with its reason" "^fifo.jpg	Invalid argument: not a regular file \(a FIFO\)" "$tmp/l2/skipped.tsv"
mkfifo "$tmp/fifo.csv"
expect 1 "convert a FIFO table" timeout 30 "$tools/pcr-convert" table "$tmp/fifo.csv" "$tmp/tf"
check "FIFO table refused" "fifo.csv: not a regular file \(a FIFO\)" "$tmp/err"

# Tables.
csv="$data/tabular/Soybean.csv"
expect 0 "convert a CSV table" "$tools/pcr-convert" table "$csv" "$tmp/t" --rows-per-stripe 300
check "table summary" 'Soybean.pcr: 683 rows, 36 features, 3 stripes' "$tmp/out"
expect 1 "convert over an existing table" "$tools/pcr-convert" table "$csv" "$tmp/t"
check "existing table message" 't/Soybean.pcr: already exists' "$tmp/err"
expect 0 "dump a table" "$tools/pcr-dump" "$tmp/t"
check "schema with statistics" '^  plant.stand +int64 +0\.9473 ' "$tmp/out"
check "stream order" '^  @16 +Class +presence 0 lengths [0-9]+ values [0-9]+$' "$tmp/out"
# The bench's over-read counts what opening read (header, footer, index); data_over_read does not.
expect 0 "bench a table projection" "$tools/pcr-bench" table "$tmp/t/Soybean.pcr" --features date
cp "$tmp/out" "$tmp/bench.json"
expect 0 "over-read with and without the index" /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["open_bytes_read"] > 0 and j["bytes_read"] > j["open_bytes_read"], j
assert abs(j["over_read"] / (j["bytes_read"] / j["bytes_selected"]) - 1) < 1e-5, j
assert abs(j["data_over_read"] / ((j["bytes_read"] - j["open_bytes_read"]) / j["bytes_selected"]) - 1) < 1e-5, j' "$tmp/bench.json"
expect 0 "dump a table's streams" "$tools/pcr-dump" streams "$tmp/t/Soybean.pcr"
check "streams: version" 'Soybean.pcr: version 0\.5$' "$tmp/out"
check "streams: a string dictionary with derived lengths" '^  Class +lengths +[0-9]+ +0 +0  derived_lengths$' "$tmp/out"
check "streams: encodings with raw, encoded and stored bytes" '^  date +values +[0-9]+ +[0-9]+ +[0-9]+  (bitpack|dictionary|rle)' "$tmp/out"
expect 0 "convert a table with plain streams" "$tools/pcr-convert" table "$csv" "$tmp/tp" --encoding plain
expect 0 "dump a plain table's streams" "$tools/pcr-dump" streams "$tmp/tp/Soybean.pcr"
check "plain streams: stamped as before 0.5" 'Soybean.pcr: version 0\.2$' "$tmp/out"
expect 2 "unknown encoding" "$tools/pcr-convert" table "$csv" "$tmp/tx" --encoding zip
check "unknown encoding message" '--encoding needs auto, plain or an encoding' "$tmp/err"
{ echo n; seq 1 200 | sed 's/^150$/abc/'; } >"$tmp/word.csv"
expect 1 "a word among numbers" "$tools/pcr-convert" table "$tmp/word.csv" "$tmp/tw1"
check "the word named, with the ways past it" "line 151, column 1: 'abc' in column 'n' is not a number.*--column-type n=string.*--on-bad-value missing" "$tmp/err"
expect 0 "a word among numbers, as missing" "$tools/pcr-convert" table "$tmp/word.csv" "$tmp/tw2" --on-bad-value missing
expect 0 "dump it" "$tools/pcr-dump" "$tmp/tw2"
check "the column stays numeric, the word missing" '^  n +int64 +0\.9950 ' "$tmp/out"
expect 0 "a word among numbers, declared text" "$tools/pcr-convert" table "$tmp/word.csv" "$tmp/tw3" --column-type n=string
expect 2 "a bad --on-bad-value" "$tools/pcr-convert" table "$tmp/word.csv" "$tmp/tw4" --on-bad-value skip
expect 2 "an unknown --column-type" "$tools/pcr-convert" table "$tmp/word.csv" "$tmp/tw4" --column-type n=int32
check "the types are listed" 'TYPE one of bool, int64, uint64' "$tmp/err"
expect 1 "a schema file that is missing" "$tools/pcr-convert" table "$tmp/word.csv" "$tmp/tw4" --schema "$tmp/none.json"
check "the schema file is named" "none.json" "$tmp/err"
printf '{"n": "timestamp"}' >"$tmp/schema.json"
expect 1 "a declared type a cell does not fit" "$tools/pcr-convert" table "$tmp/word.csv" "$tmp/tw4" --schema "$tmp/schema.json"
check "the cell, its column and the way past it" "line 151, column 1: 'abc' in column 'n' is not an ISO 8601 time .*--on-bad-value missing" "$tmp/err"
expect 0 "--strings keeps every column as text" "$tools/pcr-convert" table "$tmp/word.csv" "$tmp/tw5" --strings
expect 0 "dump it" "$tools/pcr-dump" "$tmp/tw5"
check "the numbers are strings" '^  n +string ' "$tmp/out"
expect 2 "streams of an image dataset" "$tools/pcr-dump" streams "$tmp/ds"
expect 2 "schema of an image dataset" "$tools/pcr-dump" schema "$tmp/ds"
expect 0 "a table's schema file" "$tools/pcr-dump" schema "$tmp/t/Soybean.pcr"
check "names to types" '^\{"Class": "string", "date": "int64", ' "$tmp/out"
expect 0 "dump a table as JSON" "$tools/pcr-dump" "$tmp/t/Soybean.pcr" --json
check "json feature order" '"feature_order":\["Class","date"' "$tmp/out"
expect 0 "cat a projection" "$tools/pcr-dump" cat "$tmp/t" --features Class,hail
check "cat header" '^"Class","hail"$' "$tmp/out"
check "cat missing values are empty" '^"2-4-d-injury",$' "$tmp/out"
# Output of several MiB, written in pieces: every row exactly once.
{ echo a,b; seq 1 300000 | awk '{print $1 "," $1 * 2}'; } >"$tmp/big.csv"
expect 0 "convert a table of 300000 rows" "$tools/pcr-convert" table "$tmp/big.csv" "$tmp/big"
expect 0 "cat it" "$tools/pcr-dump" cat "$tmp/big"
if tail -n +2 "$tmp/out" | cmp -s - <(tail -n +2 "$tmp/big.csv"); then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: cat of 300000 rows differs from its source"; fi
expect 0 "cat it as JSON Lines" "$tools/pcr-dump" cat "$tmp/big" --format jsonl
if [ "$(wc -l <"$tmp/out")" -eq 300000 ] && [ "$(sort -u "$tmp/out" | wc -l)" -eq 300000 ]; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: JSON Lines cat of 300000 rows"; fi
printf 'a\n\n1\n' >"$tmp/one.csv"
expect 0 "a one-column table whose first row is missing" "$tools/pcr-convert" table "$tmp/one.csv" "$tmp/one"
expect 0 "cat it" "$tools/pcr-dump" cat "$tmp/one"
if [ "$(cat "$tmp/out")" = "$(printf '"a"\nNA\n1')" ]; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: a missing one-column row is NA:"; cat "$tmp/out"; fi
expect 0 "cat every feature" "$tools/pcr-dump" cat "$tmp/t" --format csv
tr -d '"' <"$tmp/out" >"$tmp/cat.csv"
tr -d '"' <"$csv" | sed 's/\bNA\b//g' >"$tmp/src.csv"
if cmp -s "$tmp/cat.csv" "$tmp/src.csv"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: cat differs from the source CSV"; fi
expect 2 "cat as yaml" "$tools/pcr-dump" cat "$tmp/t" --format yaml
check "the formats are named" "unknown format yaml \(csv or jsonl\)" "$tmp/err"
expect 0 "cat as JSON Lines" "$tools/pcr-dump" cat "$tmp/t" --features Class,hail --format jsonl
check "a JSON object per row, missing as null" '^\{"Class":"2-4-d-injury","hail":null\}$' "$tmp/out"
expect 1 "cat an unknown feature" "$tools/pcr-dump" cat "$tmp/t" --features Class,nope
check "unknown feature named" "no feature 'nope'" "$tmp/err"
# An image dataset's fields: every sample's key and label, in sample order.
expect 0 "cat an image dataset" "$tools/pcr-dump" cat "$tmp/ds" --features label,key
head -1 "$tmp/out" >"$tmp/cat-head"
check "image fields header" '^"label","key"$' "$tmp/cat-head"
if [ "$(tail -n +2 "$tmp/out" | wc -l)" -eq 24 ] && [ "$(tail -n +2 "$tmp/out" | cut -d, -f2 | tr -d '"' | sort)" = "$(cd "$data/sample" && find . -type f | sed 's|^\./||' | sort)" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL: cat of the image dataset does not list every sample's key"
fi
expect 1 "cat an image field the dataset lacks" "$tools/pcr-dump" cat "$tmp/ds" --features key,caption
check "missing image field named" "no field 'caption' \(fields: none\)" "$tmp/err"
# Fields: converted from the bundled JSON Lines file, shown, verified and printed.
fields="$data/fields/sample.jsonl"
expect 0 "convert with fields" "$tools/pcr-convert" images "$data/sample" "$tmp/fds" --fields "$fields" \
  --field-type weight=float32 --field-type blob=bytes --field-type box32=float32_list --field-order tags,caption
expect 0 "summary of a dataset with fields" "$tools/pcr-dump" "$tmp/fds"
check "field table lists a field's type and coverage" '^  tags +id_list +0\.9583 ' "$tmp/out"
check "fields sit before scan group 1, in --field-order" 'stream 1 +tags presence' "$tmp/out"
expect 0 "verify a dataset with fields" "$tools/pcr-dump" verify "$tmp/fds"
expect 0 "cat fields" "$tools/pcr-dump" cat "$tmp/fds" --features key,caption,tags,blob
check "cat fields header" '^"key","caption","tags","blob"$' "$tmp/out"
check "cat a field row" '^"textures/ring.jpg","progressive test image","\[6,113,-14000042\]","62696e004ec3bf"$' "$tmp/out"
check "cat quotes a caption's quotes" '"two dancers, mid-step, on a ""wooden"" floor"' "$tmp/out"
expect 2 "an unknown field type" "$tools/pcr-convert" images "$data/sample" "$tmp/fds2" --fields "$fields" \
  --field-type blob=blob
check "unknown field type named" "--field-type blob=blob: unknown type" "$tmp/err"
expect 2 "--field-type without --fields" "$tools/pcr-convert" images "$data/sample" "$tmp/fds2" --field-type a=int64
head -3 "$fields" >"$tmp/short.jsonl"
expect 1 "images without a row" "$tools/pcr-convert" images "$data/sample" "$tmp/fds3" --fields "$tmp/short.jsonl"
check "image without a row named" "sample/[a-z]+/[^/:]+\.jpe?g: no row in .*short.jsonl \(--skip-bad skips it\)" "$tmp/err"
[ ! -e "$tmp/fds3/dataset.pcrd" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: a refused conversion left a manifest"; }
# WebDataset shards: members by key, a brace pattern, a damaged shard.
mkdir -p "$tmp/wds"
cp "$data/sample/textures/ring.jpg" "$tmp/wds/r1.jpg"
printf 'a ring' >"$tmp/wds/r1.txt"
printf '4' >"$tmp/wds/r1.cls"
cp "$data/sample/misc/testimggray.jpg" "$tmp/wds/g2.jpg"
printf '{"score": 0.5}' >"$tmp/wds/g2.json"
tar --format=ustar -C "$tmp/wds" -cf "$tmp/wds-000.tar" r1.jpg r1.txt r1.cls
tar --format=ustar -C "$tmp/wds" -cf "$tmp/wds-001.tar" g2.jpg g2.json
expect 0 "convert WebDataset shards" "$tools/pcr-convert" webdataset "$tmp/wds-{000..001}.tar" "$tmp/wdsout"
expect 0 "cat a WebDataset conversion" "$tools/pcr-dump" cat "$tmp/wdsout"
check "WebDataset fields" '^"r1",4,"a ring",4,$' "$tmp/out"
check "WebDataset json field" '^"g2",,,,0.5$' "$tmp/out"
head -c 2000 "$tmp/wds-000.tar" >"$tmp/wds-cut.tar"
expect 1 "a cut WebDataset shard" "$tools/pcr-convert" webdataset "$tmp/wds-cut.tar" "$tmp/wdscut"
check "cut shard named with its offset" 'wds-cut.tar: member r1.jpg of [0-9]+ bytes is cut short by the end of the file at offset 0' "$tmp/err"
expect 2 "webdataset refuses --fields" "$tools/pcr-convert" webdataset "$tmp/wds-000.tar" "$tmp/wdsx" --fields "$fields"
expect 0 "verify a table" "$tools/pcr-dump" verify "$tmp/t"
printf '{"features":["hail","date"]}\n{"features":["hail"]}\n' >"$tmp/access.log"
expect 0 "popularity from an access log" "$tools/pcr-dump" popularity "$tmp/access.log"
cp "$tmp/out" "$tmp/popularity.jsonl"
check "popularity counts" '^\{"feature":"hail","count":2\}$' "$tmp/popularity.jsonl"
expect 0 "reorder" "$tools/pcr-convert" reorder "$tmp/t" "$tmp/r" --popularity "$tmp/popularity.jsonl"
expect 0 "dump the reordered table" "$tools/pcr-dump" "$tmp/r/Soybean.pcr" --json
check "popular features first" '"feature_order":\["hail","date","Class"' "$tmp/out"
expect 0 "cat the reordered table" "$tools/pcr-dump" cat "$tmp/r" --features Class,hail
expect 2 "reorder without popularity" "$tools/pcr-convert" reorder "$tmp/t" "$tmp/r2"
printf 'a,b\n1,2\n3\n' >"$tmp/bad.csv"
expect 1 "convert a malformed CSV" "$tools/pcr-convert" table "$tmp/bad.csv" "$tmp/tb"
check "malformed CSV names line and column" 'bad.csv: line 3, column 1: row has 1 cells' "$tmp/err"
[ -z "$(ls -A "$tmp/tb")" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: failed table conversion left files"; }
cp "$tmp/t/Soybean.pcr" "$tmp/bad.pcr"
printf '\xff' | dd of="$tmp/bad.pcr" bs=1 seek=100 conv=notrunc status=none
expect 1 "verify a corrupt table" "$tools/pcr-dump" verify "$tmp/bad.pcr"
check "table corruption names stripe, stream and offset" 'bad.pcr: stripe 0 stream [0-9]+ at offset [0-9]+ length [0-9]+: checksum mismatch' "$tmp/err"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
