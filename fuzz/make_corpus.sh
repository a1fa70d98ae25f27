#!/usr/bin/env bash
# Regenerates the seed corpora of the fuzz targets from real files in
# tests/data. The output is deterministic: the same build writes the same
# bytes. Other files in fuzz/corpus are kept: inputs that fuzzing found
# (transcode/duplicate-component-id.jpg, transcode/fractional-sampling.jpg)
# and hand-written cases that cover every column type (table_input/types.csv,
# table_input/maps.jsonl).
# usage: fuzz/make_corpus.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: fuzz/make_corpus.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/tests/data
out=$root/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
convert=$build/tools/pcr-convert

# transcode: JPEG bytes. Three small real files: 1x1, grayscale, 4:1:0.
cp "$data/sample/misc/jpg-size-1x1.jpg" "$data/sample/misc/testimggray.jpg" \
  "$data/sample/video/video-001.q50.410.jpeg" "$out/transcode/"

# pcr_file: file bytes. One image file with its manifest (the spec's example),
# a table of map features, and a CSV table in three stripes.
mkdir -p "$tmp/src/c"
cp "$data/sample/misc/jpg-size-1x1.jpg" "$tmp/src/c/a.jpg"
"$convert" images "$tmp/src" "$tmp/img" --scan-script spectral --strip-metadata >/dev/null
cp "$tmp/img/records-00000.pcr" "$out/pcr_file/one-image.pcr"
cp "$tmp/img/dataset.pcrd" "$out/pcr_file/dataset.pcrd"
tail -c +2 "$out/table_input/maps.jsonl" >"$tmp/maps.jsonl"
"$convert" table "$tmp/maps.jsonl" "$tmp/maps" --encoding plain >/dev/null
cp "$tmp/maps/maps.pcr" "$out/pcr_file/maps.pcr"
head -n 40 "$data/tabular/Soybean.csv" >"$tmp/soybean.csv"
"$convert" table "$tmp/soybean.csv" "$tmp/soybean" --rows-per-stripe 13 --encoding plain >/dev/null
cp "$tmp/soybean/soybean.pcr" "$out/pcr_file/soybean-3-stripes.pcr"
# pcr_file, 0.5: the same tables with their streams encoded.
"$convert" table "$tmp/maps.jsonl" "$tmp/maps-encoded" >/dev/null
cp "$tmp/maps-encoded/maps.pcr" "$out/pcr_file/maps-encoded.pcr"
"$convert" table "$tmp/soybean.csv" "$tmp/soybean-encoded" --rows-per-stripe 13 >/dev/null
cp "$tmp/soybean-encoded/soybean.pcr" "$out/pcr_file/soybean-encoded.pcr"

# pcr_file, 0.4: two images with a field of every type and a segments stream.
mkdir -p "$tmp/fsrc"
cp "$data/sample/misc/jpg-size-1x1.jpg" "$tmp/fsrc/a.jpg"
cp "$data/segments/jpg-cmyk-2.jpg" "$tmp/fsrc/b.jpg"
printf 'a.jpg,0\nb.jpg,1\n' >"$tmp/flist.csv"
cat >"$tmp/fields.jsonl" <<'JSONL'
{"path": "a.jpg", "s": "one", "i": 1, "f": 0.5, "ids": [1, 2], "box": [0.5, 1.5], "b": "x"}
{"path": "b.jpg", "s": "two", "ids": [], "box": [2.5], "g": 1.25}
JSONL
"$convert" images "$tmp/fsrc" "$tmp/fields" --list "$tmp/flist.csv" --fields "$tmp/fields.jsonl" \
  --field-type b=bytes --field-type g=float32 --scan-script spectral >/dev/null
cp "$tmp/fields/records-00000.pcr" "$out/pcr_file/fields-and-segments.pcr"

# encoding: raw values to round-trip under each encoding, and hand-made
# encoded streams to decode (the layout is in fuzz/encoding_fuzz.cc).
mkdir -p "$out/encoding"
/usr/bin/python3 - "$out/encoding" <<'PY'
import struct, sys
out = sys.argv[1]
def put(name, data):
    open(f"{out}/{name}", "wb").write(bytes(data))
runs = b"".join(struct.pack("<q", (i // 9) * 1000 - 4000) for i in range(300))
small = b"".join(struct.pack("<I", (i * 7) % 13) for i in range(200))
decimals = b"".join(struct.pack("<d", ((i * 37) % 500 - 250) / 100) for i in range(200))
floats = b"".join(struct.pack("<f", i / 8) for i in range(100))
strings = b"".join(bytes([3]) + [b"abc", b"xy!", b"z\x00\xff"][i % 3] for i in range(60))
for e, name in [(0, "auto"), (2, "bitpack"), (3, "delta"), (4, "rle"), (5, "dictionary"), (6, "split")]:
    put(f"rt-i64-{name}", [1, e] + list(runs))
    put(f"rt-u32-{name}", [0, e] + list(small))
put("rt-f64-decimal", [3, 7] + list(decimals))
blocks = b"".join(struct.pack("<q", i * 3 + (i % 7)) for i in range(2500))  # whole 1024-value blocks
for e, name in [(2, "bitpack"), (3, "delta")]:
    put(f"rt-i64-{name}-blocks", [1, e] + list(blocks))
put("rt-f64-auto", [3, 0] + list(decimals))
put("rt-f32-rle", [2, 4] + list(floats))
put("rt-strings-dictionary", [4, 8] + list(strings))
dictionary = [5, 2, 9, 0, 7, 0, 0, 0, 8, 0, 0, 0, 11, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0b100100]
put("dec-u32-dictionary", [0x80, 5] + list(struct.pack("<I", 12)) + dictionary)
decimal = [7, 2, 9, 1, 5, 0, 0, 0, 0, 0, 0, 0, 1, 9, 1, 1, 0, 0, 0, 0, 0, 0, 0] + [0] * 6 + [0xf0, 0x7f]
put("dec-f64-decimal", [0x83, 7] + list(struct.pack("<I", 24)) + decimal)
# column mode: 40 rows of 8-byte values, all present, some present, and one value short
values = b"".join(struct.pack("<q", (i * 53) % 2000 - 1000) for i in range(40))
presence = bytes([0b10110101, 0b01101110, 0b11110000, 0b00001111, 0b10101010])
present = sum(bin(b).count("1") for b in presence)
put("column-all-present", [0x40, 0, 40, 0] + list(values))
put("column-some-present", [0x40, 5, 40, 0] + list(presence) + list(values[:8 * present]))
put("column-short-values", [0x40, 3, 40, 0] + list(presence) + list(values[:8 * present - 8]))
PY

# table_input: a format byte (even: CSV, odd: JSON Lines), then the input.
{ printf '\0'; head -n 20 "$data/tabular/Soybean.csv"; } >"$out/table_input/soybean-head.csv"
# compressed: the same rows as gzip (two members) and zstd
{ printf '\0'; head -n 10 "$data/tabular/Soybean.csv" | gzip -n -c; sed -n 11,20p "$data/tabular/Soybean.csv" | gzip -n -c; } \
  >"$out/table_input/soybean-head.csv.gz"
{ printf '\0'; head -n 20 "$data/tabular/Soybean.csv" | zstd -q -c; } >"$out/table_input/soybean-head.csv.zst"

# roundtrip: any bytes drive the generator; slices of real files.
mkdir -p "$out/roundtrip"
head -c 300 "$data/tabular/Soybean.csv" >"$out/roundtrip/soybean-head.csv"
head -c 400 "$data/sample/textures/ring.jpg" >"$out/roundtrip/ring-head.jpg"
# Three schemas that between them hold every type a table writer takes (the
# layout is in fuzz/roundtrip_fuzz.cc: a feature count, the types, 39 rows),
# then seeded random bytes for the values and the images.
/usr/bin/python3 - "$out/roundtrip" <<'PY'
import random, struct, sys
for i, types in enumerate([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11], [12, 2, 3, 6, 0, 11]]):
    head = struct.pack('<%dH' % (len(types) + 2), len(types) - 1, *types, 39)
    rng = random.Random(i)
    with open('%s/schema%d' % (sys.argv[1], i), 'wb') as f:
        f.write(head + bytes(rng.randrange(256) for _ in range(16000)))
PY
# webdataset: tar shards. One sample of a 1x1 JPEG with .txt, .cls and
# .json members (ustar, fixed times and owners), and the same cut short.
mkdir -p "$out/webdataset" "$tmp/wds"
cp "$data/sample/misc/jpg-size-1x1.jpg" "$tmp/wds/000.jpg"
printf 'a caption' >"$tmp/wds/000.txt"
printf '3\n' >"$tmp/wds/000.cls"
printf '{"score": 0.5, "n": 2, "ids": [1, 2], "box": [0.5, 1], "s": "x", "o": {"a": [1]}}' >"$tmp/wds/000.json"
tar --format=ustar --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$tmp/wds" -cf "$out/webdataset/one-sample.tar" \
  000.jpg 000.txt 000.cls 000.json
head -c 1500 "$out/webdataset/one-sample.tar" >"$out/webdataset/cut.tar"
# coefficients: a mode byte (bit 0: transcode, bit 1: with spectral rather
# than spectral5, the rest: which prefix), then JPEG bytes; pcr's own
# full-fidelity output as it is, so that mutations reach the decoder's parser.
mkdir -p "$out/coefficients" "$tmp/csrc/c"
mk() { { printf "$1"; cat "$2"; } >"$out/coefficients/$3"; }
mk '\x00' "$data/sample/misc/restarts.jpg" as-is-restarts.jpg
mk '\x01' "$data/sample/misc/jpg-size-1x1.jpg" spectral5-1x1.jpg
mk '\x11' "$data/sample/misc/testimggray.jpg" spectral5-gray-fidelity5.jpg
mk '\x07' "$data/sample/video/video-001.q50.422.jpeg" spectral-422-fidelity2.jpg
mk '\x13' "$data/sample/video/video-001.q50.440.jpeg" spectral-440-fidelity5.jpg
cp "$data/sample/video/video-001.q50.444.jpeg" "$data/sample/misc/testimggray.jpg" "$tmp/csrc/c/"
"$convert" images "$tmp/csrc" "$tmp/cpcr" --scan-script spectral5 --strip-metadata --keep-order >/dev/null
"$build/tools/pcr-dump" extract "$tmp/cpcr" "$tmp/cfull" --fidelity full >/dev/null
mk '\x00' "$tmp/cfull/c/video-001.q50.444.jpeg" pcr-444-as-is.jpg
mk '\x00' "$tmp/cfull/c/testimggray.jpg" pcr-gray-as-is.jpg
# decode: the coefficients mode byte, an options byte (bits 0-1: scale 1, 1/2,
# 1/4, 1/8; bits 2-3: native, rgb, gray; bit 4: warnings are errors; bit 5:
# crop), four crop bytes (x, y, width, height as fractions of 255), then JPEG
# bytes: every sampling pcr's decoder covers, at full and partial fidelity.
mkdir -p "$out/decode"
md() { { printf "$1"; cat "$2"; } >"$out/decode/$3"; }
md '\x11\x14\x00\x00\xff\xff' "$data/sample/video/video-001.jpeg" spectral5-420-rgb.jpg
md '\x11\x35\x31\x47\x80\x60' "$data/sample/video/video-001.jpeg" spectral5-420-half-crop.jpg
md '\x17\x16\x00\x00\xff\xff' "$data/sample/video/video-001.q50.422.jpeg" spectral-422-quarter.jpg
md '\x11\x27\x05\x09\x10\x20' "$data/sample/video/video-001.q50.440.jpeg" spectral5-440-eighth-crop.jpg
md '\x13\x18\x00\x00\xff\xff' "$data/sample/video/video-001.q50.444.jpeg" spectral-444-gray-fidelity5.jpg
md '\x11\x10\x00\x00\xff\xff' "$data/sample/video/video-001.cmyk.jpeg" spectral5-cmyk-native.jpg
md '\x11\x34\x40\x40\x40\x40' "$data/sample/misc/testimggray.jpg" spectral5-gray-rgb-crop.jpg
md '\x01\x14\x00\x00\xff\xff' "$data/sample/misc/jpg-size-1x1.jpg" spectral5-1x1.jpg
md '\x00\x04\x00\x00\xff\xff' "$tmp/cfull/c/video-001.q50.444.jpeg" pcr-444-as-is.jpg
# Partial fidelities, which libjpeg-turbo block-smooths: spectral5 groups 1,
# 2 and 4 (DC alone, then some coefficients), whole and cropped.
md '\x01\x14\x00\x00\xff\xff' "$data/sample/video/video-001.jpeg" spectral5-420-fidelity1.jpg
md '\x05\x25\x31\x47\x80\x60' "$data/sample/video/video-001.q50.422.jpeg" spectral5-422-fidelity2-crop.jpg
md '\x0d\x34\x30\x20\x40\x40' "$data/sample/video/video-001.jpeg" spectral5-420-fidelity4-crop.jpg
md '\x01\x18\x00\x00\xff\xff' "$data/sample/misc/testimggray.jpg" spectral5-gray-fidelity1.jpg
echo "seed corpora written to $out"
