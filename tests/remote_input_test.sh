#!/usr/bin/env bash
# Conversions from remote inputs: images listed from an s3:// prefix (several
# listing pages), WebDataset shards streamed from s3:// (s3rver) and http://
# (nginx), tables, list and fields files from both, each converted to local
# and to s3:// outputs byte for byte as the same files from local disk. A
# fault server and a misbehaving S3 proxy answer 503s, drop connections, cut
# bodies short and stall while inputs stream: the same bytes. Bad inputs are
# clear errors naming the object, or skipped and listed with --skip-bad; an
# interrupted conversion resumes. SKIP (77) without s3rver or nginx.
# usage: remote_input_test.sh TOOLS_DIR DATA_DIR
set -u
tools=$(cd "$1" && pwd) data=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
s3rver=$(command -v s3rver || true)
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -n "$s3rver" ] || { echo "SKIP: s3rver is not installed"; exit 77; }
[ -x "$nginx" ] || { echo "SKIP: nginx is not installed"; exit 77; }
. "$here/net_test_lib.sh"
nginx_pid= aux_pid=
trap '[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null; [ -n "$aux_pid" ] && kill "$aux_pid" 2>/dev/null; cleanup' EXIT

# The inputs, under $tmp/up: the sample as an ImageFolder with a list and a
# fields file, three WebDataset shards of its images, a table, and bad
# inputs.
up=$tmp/up
mkdir -p "$up/wds" "$tmp/store"
cp -r "$data/sample" "$up/sample"
(cd "$up/sample" && find . -name '*.jp*g' | sed 's:^\./::' | sort | awk '{print $0 "," NR % 3}') >"$up/list.csv"
cp "$data/fields/sample.jsonl" "$up/fields.jsonl"
cp "$data/tabular/Soybean.csv" "$up/Soybean.csv"
i=0
for f in $(cd "$up/sample" && find . -name '*.jp*g' | sort); do
  key=$(printf 's%03d' "$i")
  cp "$up/sample/$f" "$tmp/$key.jpg"
  echo $((i % 3)) >"$tmp/$key.cls"
  printf '{"caption": "image %d", "source": "%s"}\n' "$i" "$f" >"$tmp/$key.json"
  i=$((i + 1))
done
for s in 0 1 2; do
  (cd "$tmp" && tar -cf "$up/wds/shard-$s.tar" $(ls s*.jpg | awk -v s="$s" 'NR % 3 == s' | sed 's/\.jpg$//' |
    while read -r k; do echo "$k.cls $k.jpg $k.json"; done))
done
# cut.tar: shard 0 up to the middle of its first member of over 4 KiB.
/usr/bin/python3 -c '
import sys, tarfile
m = next(m for m in tarfile.open(sys.argv[1]) if m.size > 4096)
sys.stdout.buffer.write(open(sys.argv[1], "rb").read()[: m.offset_data + m.size // 2])' "$up/wds/shard-0.tar" >"$up/wds/cut.tar"
cp "$up/Soybean.csv" "$up/wds/table.tar"              # not a tar
mkdir -p "$up/bad/a" && cp "$up/sample/misc/testimggray.jpg" "$up/bad/a/good.jpg"
echo "not a JPEG" >"$up/bad/a/text.jpg"
chmod -R a+rX "$tmp"

# The same from local disk.
"$tools/pcr-convert" images "$up/sample" "$tmp/l-img" --images-per-record 5 >/dev/null || exit 1
"$tools/pcr-convert" images "$up/sample" "$tmp/l-img5" >/dev/null || exit 1
"$tools/pcr-convert" images "$up/sample" "$tmp/l-list" --list "$up/list.csv" --fields "$up/fields.jsonl" \
  --images-per-record 5 >/dev/null || exit 1
"$tools/pcr-convert" images "$up/sample" "$tmp/l-content" --by-content --images-per-record 5 >/dev/null || exit 1
"$tools/pcr-convert" webdataset "$up/wds/shard-{0..2}.tar" "$tmp/l-wds" --images-per-record 4 >/dev/null || exit 1
"$tools/pcr-convert" table "$up/Soybean.csv" "$tmp/l-table" --rows-per-stripe 100 >/dev/null || exit 1

port=$(free_port $((10000 + $$ % 4000)))
# Its continuation tokens need the legacy OpenSSL provider on Node 17 and later.
NODE_OPTIONS=--openssl-legacy-provider "$s3rver" -d "$tmp/store" -a 127.0.0.1 -p "$port" -s --configure-bucket pcrtest \
  >"$tmp/s3rver.log" 2>&1 &
pid=$!
wait_port "$port" "$pid"
endpoint="http://127.0.0.1:$port"
/usr/bin/python3 "$here/s3_put.py" "$endpoint" pcrtest "$up" || { echo "cannot upload to s3rver"; exit 1; }
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export TMPDIR="$tmp"
unset AWS_SESSION_TOKEN AWS_PROFILE

hport=$(free_port $((port + 200)))
start_nginx "$up" "$hport"
http="http://127.0.0.1:$hport"

# same_dir DESCRIPTION LOCAL_DIR DIR: the same files, byte for byte.
same_dir() {
  if diff -r "$2" "$3" >/dev/null 2>&1; then ok; else bad "$1"; ls -l "$2" "$3" 2>&1 | head; fi
}
# convert DESCRIPTION ARGS...: pcr-convert ARGS succeeds.
convert() {
  local what=$1
  shift
  if "$tools/pcr-convert" "$@" >"$tmp/out" 2>"$tmp/err"; then ok; else bad "$what"; cat "$tmp/err"; fi
}
# refused DESCRIPTION PATTERN ARGS...: pcr-convert ARGS fails with PATTERN in its error.
refused() {
  local what=$1 pattern=$2
  shift 2
  if ! "$tools/pcr-convert" "$@" >"$tmp/out" 2>"$tmp/err" && grep -q -- "$pattern" "$tmp/err"; then ok; else
    bad "$what"; cat "$tmp/err"; fi
}

# Images from an s3:// prefix, listed five keys a page.
PCR_REMOTE_LIST_PAGE_SIZE=5 convert "images from s3" images s3://pcrtest/sample "$tmp/r-img" --images-per-record 5
same_dir "images from s3" "$tmp/l-img" "$tmp/r-img"
convert "images from s3 into s3" images s3://pcrtest/sample s3://pcrtest/out-img --images-per-record 5
same_objects "images from s3 into s3" "$tmp/l-img" out-img
convert "a list and fields from s3" images s3://pcrtest/sample "$tmp/r-list" --list s3://pcrtest/list.csv \
  --fields s3://pcrtest/fields.jsonl --images-per-record 5
same_dir "a list and fields from s3" "$tmp/l-list" "$tmp/r-list"
convert "a list and fields over http" images s3://pcrtest/sample "$tmp/h-list" --list "$http/list.csv" \
  --fields "$http/fields.jsonl" --images-per-record 5
same_dir "a list and fields over http" "$tmp/l-list" "$tmp/h-list"
PCR_REMOTE_LIST_PAGE_SIZE=7 convert "--by-content from s3" images s3://pcrtest/sample "$tmp/r-content" \
  --by-content --images-per-record 5
same_dir "--by-content from s3" "$tmp/l-content" "$tmp/r-content"

# WebDataset shards from s3:// and http://.
convert "shards from s3" webdataset "s3://pcrtest/wds/shard-{0..2}.tar" "$tmp/r-wds" --images-per-record 4
same_dir "shards from s3" "$tmp/l-wds" "$tmp/r-wds"
convert "shards from s3 into s3" webdataset "s3://pcrtest/wds/shard-{0..2}.tar" s3://pcrtest/out-wds \
  --images-per-record 4
same_objects "shards from s3 into s3" "$tmp/l-wds" out-wds
convert "shards over http" webdataset "$http/wds/shard-{0..2}.tar" "$tmp/h-wds" --images-per-record 4
same_dir "shards over http" "$tmp/l-wds" "$tmp/h-wds"

# Tables.
convert "a table from s3" table s3://pcrtest/Soybean.csv "$tmp/r-table" --rows-per-stripe 100
same_dir "a table from s3" "$tmp/l-table" "$tmp/r-table"
convert "a table over http into s3" table "$http/Soybean.csv" s3://pcrtest/out-table --rows-per-stripe 100
same_objects "a table over http into s3" "$tmp/l-table" out-table

# Faults while inputs stream: the same bytes.
aux_port=$(free_port $((hport + 100)))
aux() {  # aux PROGRAM ARGS...: a helper server on $aux_port, in place of the last one
  [ -n "$aux_pid" ] && kill "$aux_pid" 2>/dev/null && wait "$aux_pid" 2>/dev/null
  /usr/bin/python3 "$@" &
  aux_pid=$!
  wait_port "$aux_port" "$aux_pid"
}
# Every third GET fails; each is retried up to 8 times.
export PCR_REMOTE_RETRIES=8
for fault in 503 drop short; do
  aux "$here/fault_server.py" "$up" "$aux_port" "$fault" 3
  rm -rf "$tmp/f-wds"
  convert "shards over http, $fault" webdataset "http://127.0.0.1:$aux_port/wds/shard-{0..2}.tar" "$tmp/f-wds" \
    --images-per-record 4
  same_dir "shards over http, $fault" "$tmp/l-wds" "$tmp/f-wds"
done
aux "$here/fault_server.py" "$up" "$aux_port" stall 3
rm -rf "$tmp/f-wds"
PCR_REMOTE_TIMEOUT_MS=1000 convert "shards over http, stalls" webdataset \
  "http://127.0.0.1:$aux_port/wds/shard-{0..2}.tar" "$tmp/f-wds" --images-per-record 4
same_dir "shards over http, stalls" "$tmp/l-wds" "$tmp/f-wds"
aux "$here/s3_proxy.py" "$aux_port" "$port" flaky-gets
proxied="http://127.0.0.1:$aux_port"
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_LIST_PAGE_SIZE=5 convert "images from a flaky store" \
  images s3://pcrtest/sample "$tmp/f-img" --images-per-record 5
same_dir "images from a flaky store" "$tmp/l-img" "$tmp/f-img"
AWS_ENDPOINT_URL=$proxied convert "shards from a flaky store" \
  webdataset "s3://pcrtest/wds/shard-{0..2}.tar" "$tmp/f-wds2" --images-per-record 4
same_dir "shards from a flaky store" "$tmp/l-wds" "$tmp/f-wds2"
AWS_ENDPOINT_URL=$proxied convert "a table from a flaky store" table s3://pcrtest/Soybean.csv "$tmp/f-table" \
  --rows-per-stripe 100
same_dir "a table from a flaky store" "$tmp/l-table" "$tmp/f-table"

# Damaged bodies: a byte changed in one of every five object GETs is caught
# by what the store says of the object (the listing's or HEAD's ETag, or its
# x-amz-checksum-crc32c) and read again: the same bytes.
for flags in flip-gets flip-gets,crc32c; do
  aux "$here/s3_proxy.py" "$aux_port" "$port" "$flags"
  rm -rf "$tmp"/d-*
  AWS_ENDPOINT_URL=$proxied PCR_REMOTE_LIST_PAGE_SIZE=5 convert "images through damaged GETs ($flags)" \
    images s3://pcrtest/sample "$tmp/d-img" --images-per-record 5
  same_dir "images through damaged GETs ($flags)" "$tmp/l-img" "$tmp/d-img"
  AWS_ENDPOINT_URL=$proxied convert "shards through damaged GETs ($flags)" \
    webdataset "s3://pcrtest/wds/shard-{0..2}.tar" "$tmp/d-wds" --images-per-record 4
  same_dir "shards through damaged GETs ($flags)" "$tmp/l-wds" "$tmp/d-wds"
  AWS_ENDPOINT_URL=$proxied convert "a table through damaged GETs ($flags)" table s3://pcrtest/Soybean.csv \
    "$tmp/d-table" --rows-per-stripe 100
  same_dir "a table through damaged GETs ($flags)" "$tmp/l-table" "$tmp/d-table"
done
# Every GET damaged: data loss naming the object and the digest, never a
# bad image or shard that --skip-bad would pass over.
aux "$here/s3_proxy.py" "$aux_port" "$port" flip-all
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_RETRIES=1 refused "an image always damaged" \
  "Data loss: s3://pcrtest/sample/.*: the bytes read do not match the store's ETag [0-9a-f]* (they have [0-9a-f]*) in 2 attempts" \
  images s3://pcrtest/sample "$tmp/x" --skip-bad
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_RETRIES=1 refused "a shard always damaged" \
  "Data loss: s3://pcrtest/wds/shard-0.tar: the bytes read do not match the store's ETag" \
  webdataset s3://pcrtest/wds/shard-0.tar "$tmp/x" --skip-bad
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_RETRIES=1 refused "a table always damaged" \
  "Data loss: s3://pcrtest/Soybean.csv: the bytes read do not match the store's ETag" table s3://pcrtest/Soybean.csv "$tmp/x"
aux "$here/s3_proxy.py" "$aux_port" "$port" flip-all,crc32c
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_RETRIES=1 refused "a table always damaged, crc32c" \
  "Data loss: s3://pcrtest/Soybean.csv: .*store's x-amz-checksum-crc32c" table s3://pcrtest/Soybean.csv "$tmp/x"
# SSE-KMS: ETags that are not MD5s, as the answers' headers say: the same
# bytes. A store whose ETags are not MD5s without saying so needs
# PCR_REMOTE_ETAG_IS_MD5=0.
aux "$here/s3_proxy.py" "$aux_port" "$port" kms
rm -rf "$tmp"/d-*
AWS_ENDPOINT_URL=$proxied convert "images from an SSE-KMS bucket" images s3://pcrtest/sample "$tmp/d-img" \
  --images-per-record 5
same_dir "images from an SSE-KMS bucket" "$tmp/l-img" "$tmp/d-img"
rm -rf "$tmp/d-img"
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_RETRIES=0 convert "images from an SSE-KMS bucket, no retries" \
  images s3://pcrtest/sample "$tmp/d-img" --images-per-record 5
same_dir "images from an SSE-KMS bucket, no retries" "$tmp/l-img" "$tmp/d-img"
AWS_ENDPOINT_URL=$proxied convert "a table from an SSE-KMS bucket" table s3://pcrtest/Soybean.csv "$tmp/d-table" \
  --rows-per-stripe 100
same_dir "a table from an SSE-KMS bucket" "$tmp/l-table" "$tmp/d-table"
aux "$here/s3_proxy.py" "$aux_port" "$port" etag-not-md5
rm -rf "$tmp"/d-*
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_RETRIES=1 refused "ETags that are not MD5s" "Data loss: s3://pcrtest/Soybean.csv" \
  table s3://pcrtest/Soybean.csv "$tmp/x"
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_ETAG_IS_MD5=0 convert "PCR_REMOTE_ETAG_IS_MD5=0" \
  table s3://pcrtest/Soybean.csv "$tmp/d-table" --rows-per-stripe 100
same_dir "PCR_REMOTE_ETAG_IS_MD5=0" "$tmp/l-table" "$tmp/d-table"
# A listing that repeats keys at its page boundaries is refused.
aux "$here/s3_proxy.py" "$aux_port" "$port" repeat-keys
AWS_ENDPOINT_URL=$proxied PCR_REMOTE_LIST_PAGE_SIZE=5 refused "a listing that repeats keys" \
  "s3://pcrtest/sample/: the listing gives key 'sample/.*' after 'sample/.*' again" images s3://pcrtest/sample "$tmp/x"
# HTTP: each body's Content-MD5, the file's Repr-Digest, or, from a server
# that sends neither (nginx), what is read twice: the same bytes, or data
# loss naming the shard.
for spec in flip:2:content-md5 flip:3:repr-digest; do
  IFS=: read -r fault every digest <<<"$spec"
  aux "$here/fault_server.py" "$up" "$aux_port" "$fault" "$every" "$digest"
  rm -rf "$tmp"/d-*
  convert "shards over http, $spec" webdataset "http://127.0.0.1:$aux_port/wds/shard-{0..2}.tar" "$tmp/d-wds" \
    --images-per-record 4
  same_dir "shards over http, $spec" "$tmp/l-wds" "$tmp/d-wds"
  convert "a table over http, $spec" table "http://127.0.0.1:$aux_port/Soybean.csv" "$tmp/d-table" --rows-per-stripe 100
  same_dir "a table over http, $spec" "$tmp/l-table" "$tmp/d-table"
done
for every in 3 4 5; do
  aux "$here/fault_server.py" "$up" "$aux_port" flip "$every"
  rm -rf "$tmp/d-wds"
  if "$tools/pcr-convert" webdataset "http://127.0.0.1:$aux_port/wds/shard-{0..2}.tar" "$tmp/d-wds" \
      --images-per-record 4 >/dev/null 2>"$tmp/err"; then
    same_dir "shards over http without digests, flip every $every" "$tmp/l-wds" "$tmp/d-wds"
  elif grep -q "Data loss: http://127.0.0.1:$aux_port/wds/shard-[0-2].tar" "$tmp/err"; then ok; else
    bad "shards over http without digests, flip every $every"; cat "$tmp/err"; fi
done
unset PCR_REMOTE_RETRIES

# Interrupted: with no retries, the 20th GET (about the 14th image's)
# fails after some record files are written; the same command run again
# keeps them and ends with the same bytes.
aux "$here/fault_server.py" "$up" "$aux_port" 503 20
shards="http://127.0.0.1:$aux_port/wds/shard-{0..2}.tar"
PCR_REMOTE_RETRIES=0 "$tools/pcr-convert" webdataset "$shards" "$tmp/i-wds" --images-per-record 1 \
  --records-per-file 1 >/dev/null 2>"$tmp/err" && bad "a conversion whose 20th GET fails succeeded" || ok
grep -q "HTTP 503" "$tmp/err" && ok || { bad "the failed GET named"; cat "$tmp/err"; }
ls "$tmp/i-wds"/records-*.pcr >/dev/null 2>&1 && ok || bad "no record file written before the failure"
aux "$here/fault_server.py" "$up" "$aux_port" none 1
convert "the interrupted conversion resumed" webdataset "http://127.0.0.1:$aux_port/wds/shard-{0..2}.tar" \
  "$tmp/i-wds" --images-per-record 1 --records-per-file 1
grep -q "kept [1-9][0-9]* files finished by an interrupted run" "$tmp/out" && ok || { bad "files kept"; cat "$tmp/out"; }
"$tools/pcr-convert" webdataset "$up/wds/shard-{0..2}.tar" "$tmp/l-wds1" --images-per-record 1 --records-per-file 1 \
  >/dev/null
same_dir "the resumed conversion" "$tmp/l-wds1" "$tmp/i-wds"

# doc/network.md's commands, on the test's store, server and files.
n=0
while read -r line; do
  n=$((n + 1))
  line=${line%%#*}
  line=${line//s3:\/\/bucket\/train/s3://pcrtest/sample}
  line=${line//\'https:\/\/host\/shards-\{0000..0099\}.tar\'/$http/wds/shard-\{0..2\}.tar}
  line=${line//s3:\/\/bucket\/events.jsonl/s3://pcrtest/Soybean.csv}
  line=${line//OUT_DIR/$tmp/readme-$n}
  if eval "\"\$tools/\"$line" >/dev/null 2>"$tmp/err"; then ok; else bad "doc/network.md: $line"; cat "$tmp/err"; fi
done < <(grep -A2 '^pcr-convert images s3://bucket/train OUT_DIR' "$here/../doc/network.md")
[ "$n" -eq 3 ] && ok || bad "doc/network.md's three remote input commands not found"
same_dir "doc/network.md's images" "$tmp/l-img5" "$tmp/readme-1"

# Bad inputs: errors name the object.
refused "a missing bucket" "s3://nobucket/sample/: cannot list: HTTP 404 NoSuchBucket" images s3://nobucket/sample "$tmp/x"
refused "an empty prefix" "s3://pcrtest/nothing/: no objects under this prefix" images s3://pcrtest/nothing "$tmp/x"
AWS_ACCESS_KEY_ID=NOBODY refused "access denied" "s3://pcrtest/sample/: cannot list: HTTP 403" \
  images s3://pcrtest/sample "$tmp/x"
AWS_ACCESS_KEY_ID=NOBODY refused "a shard refused" "s3://pcrtest/wds/shard-0.tar: HTTP 403 InvalidAccessKeyId: .* (access denied: check AWS_ACCESS_KEY_ID" \
  webdataset s3://pcrtest/wds/shard-0.tar "$tmp/x"
refused "a missing shard" "s3://pcrtest/wds/shard-9.tar: HTTP 404 NoSuchKey: .* (not found)" webdataset "s3://pcrtest/wds/shard-{0,9}.tar" "$tmp/x"
refused "a missing shard, --skip-bad" "s3://pcrtest/wds/shard-9.tar: HTTP 404 NoSuchKey: .* (not found)" \
  webdataset "s3://pcrtest/wds/shard-{0,9}.tar" "$tmp/x" --skip-bad
refused "not a tar" "s3://pcrtest/wds/table.tar: bad tar header checksum at offset 0" webdataset s3://pcrtest/wds/table.tar "$tmp/x"
refused "a shard cut short" "s3://pcrtest/wds/cut.tar: member .* is cut short by the end of the file" \
  webdataset "s3://pcrtest/wds/cut.tar" "$tmp/x"
# A shard whose GETs all fail (a fault server answering 503 to every GET),
# beside good ones, local and remote.
aux "$here/fault_server.py" "$up" "$aux_port" 503 1
failing="http://127.0.0.1:$aux_port/wds/shard-2.tar"
PCR_REMOTE_RETRIES=1 convert "--skip-bad passes over bad shards" webdataset "s3://pcrtest/wds/{shard-1,cut,table}.tar" \
  "$failing" "$up/wds/shard-0.tar" "$tmp/s-wds" --skip-bad
for shard in s3://pcrtest/wds/cut.tar s3://pcrtest/wds/table.tar "$failing"; do
  grep -q "$shard" "$tmp/s-wds/skipped.tsv" 2>/dev/null && ok ||
    { bad "$shard listed as skipped"; cat "$tmp/s-wds/skipped.tsv" 2>/dev/null; }
done
grep -q "$failing.*HTTP 503.*the shard is skipped" "$tmp/s-wds/skipped.tsv" && ok || bad "the failing shard's 503 listed"
PCR_REMOTE_RETRIES=1 refused "a shard whose GETs fail" "$failing: bytes 0-.*HTTP 503" webdataset "$failing" "$tmp/x"
# Local and remote shards together: the same as all local.
convert "local and remote shards" webdataset "$up/wds/shard-0.tar" "s3://pcrtest/wds/shard-{1..2}.tar" "$tmp/m-wds" \
  --images-per-record 4
same_dir "local and remote shards" "$tmp/l-wds" "$tmp/m-wds"
refused "an object that is not a JPEG" "s3://pcrtest/bad/a/text.jpg" images s3://pcrtest/bad "$tmp/x"
convert "--skip-bad passes over an object that is not a JPEG" images s3://pcrtest/bad "$tmp/s-img" --skip-bad
grep -q "a/text.jpg" "$tmp/s-img/skipped.tsv" 2>/dev/null && ok || bad "the object that is not a JPEG listed"
refused "images over http" "images are listed from s3:// prefixes" images "$http/sample" "$tmp/x"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
