#!/usr/bin/env bash
# Conversions into an S3-compatible store (s3rver on loopback, and a proxy
# in front of it that fails or slows uploads): the objects are the files of
# the same local conversion byte for byte, by single PUTs and by multipart
# uploads of 5 MiB parts, the manifest last; a store that fails leaves no
# manifest, and the same command run again finishes the dataset. SKIP (77)
# without s3rver (npm install -g s3rver@3).
# usage: s3_output_test.sh TOOLS_DIR DATA_DIR
set -u
tools=$(cd "$1" && pwd) data=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
s3rver=$(command -v s3rver || true)
[ -n "$s3rver" ] || { echo "SKIP: s3rver is not installed"; exit 77; }
. "$here/net_test_lib.sh"
proxy_pid=
trap '[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null; cleanup' EXIT

port=$(free_port $((30000 + $$ % 1200)))
mkdir -p "$tmp/store"
"$s3rver" -d "$tmp/store" -a 127.0.0.1 -p "$port" -s --configure-bucket pcrtest >"$tmp/s3rver.log" 2>&1 &
pid=$!
wait_port "$port" "$pid"
endpoint="http://127.0.0.1:$port"
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export TMPDIR="$tmp"  # default work directories, apart from other tests
unset AWS_SESSION_TOKEN AWS_PROFILE

# proxy MODE: a misbehaving proxy to s3rver in front of the next commands.
proxy() {
  [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null
  local p
  p=$(free_port $((port + 100)))
  /usr/bin/python3 "$here/s3_proxy.py" "$p" "$port" "$1" &
  proxy_pid=$!
  wait_port "$p" "$proxy_pid"
  proxy_endpoint="http://127.0.0.1:$p"
}

# kill_mid_upload PREFIX WORK_DIR: the big conversion into s3://pcrtest/PREFIX
# through the proxy, killed (-9) once a multipart upload is open.
kill_mid_upload() {
  AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$tmp/big" "s3://pcrtest/$1" --images-per-record 4096 \
    --part-size-mib 5 --multipart-threshold-mib 5 --work-dir "$2" >/dev/null 2>&1 &
  local victim=$!
  for _ in $(seq 600); do grep -q '^open' "$2/upload.journal" 2>/dev/null && break; sleep 0.1; done
  kill -9 "$victim" 2>/dev/null
  wait "$victim" 2>/dev/null
}

# Images, single PUTs: the local conversion's bytes; the work directory goes.
"$tools/pcr-convert" images "$data/sample" "$tmp/local" --images-per-record 5 --records-per-file 2 >/dev/null
if "$tools/pcr-convert" images "$data/sample" s3://pcrtest/img --images-per-record 5 --records-per-file 2 \
     --work-dir "$tmp/w1" >"$tmp/out" 2>"$tmp/err"; then ok; else bad "convert into s3"; cat "$tmp/err"; fi
grep -q "converting into $tmp/w1, then uploading to s3://pcrtest/img" "$tmp/err" && ok || bad "work directory named"
same_objects "images uploaded" "$tmp/local" img
[ ! -e "$tmp/w1/out" ] && [ ! -e "$tmp/w1/upload.journal" ] && ok || bad "work directory left behind"
if "$tools/pcr-dump" verify s3://pcrtest/img >"$tmp/out" 2>&1 && grep -q ': OK, 3 files' "$tmp/out"; then ok; else
  bad "verify the upload"; cat "$tmp/out"; fi
if ! "$tools/pcr-convert" images "$data/sample" s3://pcrtest/img >/dev/null 2>"$tmp/err" &&
   grep -q 's3://pcrtest/img already holds a pcr dataset' "$tmp/err"; then ok; else bad "second conversion refused"; cat "$tmp/err"; fi

# s3rver has no ListMultipartUploads (501): asked once before the uploads
# and once after, never again as if the store were busy.
S3_PROXY_LOG="$tmp/requests" proxy none
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/img501 \
     --images-per-record 5 >/dev/null 2>"$tmp/err" && [ "$(grep -c '^GET /pcrtest?uploads' "$tmp/requests")" = 2 ]
then ok; else bad "a store without ListMultipartUploads"; cat "$tmp/err"; grep uploads "$tmp/requests"; fi

# WebDataset shards.
mkdir -p "$tmp/wds"
cp "$data/sample/video/video-001.jpeg" "$tmp/wds/a.jpg"
cp "$data/sample/misc/testimggray.jpg" "$tmp/wds/b.jpg"
echo 1 >"$tmp/wds/a.cls"
echo 2 >"$tmp/wds/b.cls"
tar -C "$tmp/wds" -cf "$tmp/shard.tar" a.jpg a.cls b.jpg b.cls
"$tools/pcr-convert" webdataset "$tmp/shard.tar" "$tmp/wlocal" >/dev/null
if "$tools/pcr-convert" webdataset "$tmp/shard.tar" s3://pcrtest/wds >/dev/null 2>"$tmp/err"; then ok; else
  bad "webdataset into s3"; cat "$tmp/err"; fi
same_objects "webdataset uploaded" "$tmp/wlocal" wds

# A table.
"$tools/pcr-convert" table "$data/tabular/Soybean.csv" "$tmp/tlocal" --rows-per-stripe 100 >/dev/null
if "$tools/pcr-convert" table "$data/tabular/Soybean.csv" s3://pcrtest/t --rows-per-stripe 100 >"$tmp/out" 2>"$tmp/err" &&
   grep -q '^s3://pcrtest/t/Soybean.pcr' "$tmp/out"; then ok; else bad "table into s3"; cat "$tmp/out" "$tmp/err"; fi
same_objects "table uploaded" "$tmp/tlocal" t
if ! "$tools/pcr-convert" table "$data/tabular/Soybean.csv" s3://pcrtest/t >/dev/null 2>"$tmp/err" &&
   grep -q 's3://pcrtest/t already holds a pcr table (Soybean.pcr)' "$tmp/err"; then ok; else bad "second table refused"; cat "$tmp/err"; fi

# Multipart: one file of about 12 MiB in 5 MiB parts, with every other part
# answered 503 and whole-object PUTs dropped at first: retried, the same bytes.
mkdir -p "$tmp/big/c"
for i in $(seq 64); do
  for f in "$data"/sample/*/*; do cp "$f" "$tmp/big/c/$i-$(basename "$f")"; done
done
"$tools/pcr-convert" images "$tmp/big" "$tmp/biglocal" --images-per-record 4096 >/dev/null
size=$(stat -c %s "$tmp/biglocal/records-00000.pcr")
[ "$size" -gt $((10 << 20)) ] && ok || bad "the multipart file is $size bytes"
proxy flaky-parts
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$tmp/big" s3://pcrtest/big --images-per-record 4096 \
     --part-size-mib 5 --multipart-threshold-mib 5 >/dev/null 2>"$tmp/err"; then ok; else bad "multipart upload"; cat "$tmp/err"; fi
same_objects "multipart upload" "$tmp/biglocal" big
"$tools/pcr-dump" verify s3://pcrtest/big >/dev/null 2>&1 && ok || bad "verify the multipart upload"
# Files go up several at a time, within --upload-concurrency (default 8)
# and --upload-memory-mib: the proxy counts the PUTs it handles at once.
"$tools/pcr-convert" images "$tmp/big" "$tmp/manylocal" --images-per-record 64 >/dev/null
peak() { awk '/^PUT .* puts=/ { split($3, n, "="); split($4, b, "="); if (n[2] > p) p = n[2]; if (b[2] > m) m = b[2] }
              END { print p + 0, m + 0 }' "$1"; }
for what in "many 8 256" "one 1 256" "tight 8 1"; do
  set -- $what
  rm -f "$tmp/requests"
  S3_PROXY_LOG="$tmp/requests" proxy slow-puts
  if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$tmp/big" "s3://pcrtest/$1" --images-per-record 64 \
       --upload-concurrency "$2" --upload-memory-mib "$3" >/dev/null 2>"$tmp/err"; then ok; else
    bad "uploads $1"; cat "$tmp/err"; fi
  same_objects "uploads $1" "$tmp/manylocal" "$1"
  read -r puts bytes < <(peak "$tmp/requests")
  case $1 in
    many) [ "$puts" -ge 2 ] && [ "$puts" -le 8 ] ;;
    one) [ "$puts" = 1 ] ;;
    tight) [ "$bytes" -le $((1 << 20)) ] ;;
  esac && ok || bad "uploads $1: $puts PUTs and $bytes bytes at once"
done

# Bodies damaged on their way: the store checks each one's Content-MD5 (the
# proxy does as S3 does, answering 400 BadDigest), and it is sent again.
proxy flip-puts
for what in "big 4096" "sample 5"; do
  set -- $what
  if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$([ "$1" = big ] && echo "$tmp/big" || echo "$data/sample")" \
       "s3://pcrtest/flipped-$1" --images-per-record "$2" --part-size-mib 5 --multipart-threshold-mib 5 \
       >/dev/null 2>"$tmp/err"; then ok; else bad "uploads with damaged bodies ($1)"; cat "$tmp/err"; fi
done
same_objects "uploads with damaged bodies" "$tmp/biglocal" flipped-big
# The answer to CompleteMultipartUpload lost: the retry's NoSuchUpload is
# checked against the object, which is complete.
proxy complete-lost
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$tmp/big" s3://pcrtest/lost-complete \
     --images-per-record 4096 --part-size-mib 5 --multipart-threshold-mib 5 >/dev/null 2>"$tmp/err"; then ok; else
  bad "a lost answer to CompleteMultipartUpload"; cat "$tmp/err"; fi
same_objects "a lost answer to CompleteMultipartUpload" "$tmp/biglocal" lost-complete
# Multipart uploads left open are aborted: one of a run killed, then run
# again with another work directory, and one whose answer to
# CreateMultipartUpload was lost (the proxy answers ListMultipartUploads,
# which s3rver cannot).
open_uploads() { curl -s "$proxy_endpoint/pcrtest?uploads&prefix=$1/" | grep -c '<Upload>'; }
proxy slow-parts,list-uploads
kill_mid_upload orphans "$tmp/wo1"
[ "$(open_uploads orphans)" = 1 ] && ok || bad "no multipart upload open after the kill"
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$tmp/big" s3://pcrtest/orphans --images-per-record 4096 \
     --part-size-mib 5 --multipart-threshold-mib 5 --work-dir "$tmp/wo2" >/dev/null 2>"$tmp/err"; then ok; else
  bad "a rerun with another work directory"; cat "$tmp/err"; fi
[ "$(open_uploads orphans)" = 0 ] && ok || bad "the killed run's upload is left open after a rerun with another work directory"
same_objects "a rerun with another work directory" "$tmp/biglocal" orphans
proxy create-lost
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$tmp/big" s3://pcrtest/created --images-per-record 4096 \
     --part-size-mib 5 --multipart-threshold-mib 5 >/dev/null 2>"$tmp/err"; then ok; else
  bad "a lost answer to CreateMultipartUpload"; cat "$tmp/err"; fi
[ "$(open_uploads created)" = 0 ] && ok || bad "the upload whose creation's answer was lost is left open"
same_objects "a lost answer to CreateMultipartUpload" "$tmp/biglocal" created
# Started over with --restart and other options: record files of the first
# run that the dataset does not hold are deleted once its manifest is up.
proxy no-manifest
AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/stale --images-per-record 1 \
  --records-per-file 1 --work-dir "$tmp/wst" >/dev/null 2>&1 && bad "a conversion whose manifest is refused succeeded" || ok
if "$tools/pcr-convert" images "$data/sample" s3://pcrtest/stale --images-per-record 5 --records-per-file 2 \
     --work-dir "$tmp/wst" --restart >/dev/null 2>"$tmp/err"; then ok; else bad "--restart with other options"; cat "$tmp/err"; fi
same_objects "--restart with other options" "$tmp/local" stale
listed=$(curl -s "$endpoint/pcrtest?list-type=2&prefix=stale/" | grep -o '<Key>[^<]*</Key>' | wc -l)
[ "$listed" = "$(ls "$tmp/local" | wc -l)" ] && ok || bad "--restart left $listed objects for $(ls "$tmp/local" | wc -l) files"
# A role without s3:ListBucket writes all the same; one without
# s3:PutObject fails before anything is converted.
proxy no-list
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/nolist --images-per-record 5 \
     --records-per-file 2 >/dev/null 2>"$tmp/err"; then ok; else bad "a role without s3:ListBucket"; cat "$tmp/err"; fi
same_objects "a role without s3:ListBucket" "$tmp/local" nolist
# An existing dataset a role may not read (403, as without s3:GetObject or
# kms:Decrypt) but may list is refused, never written over.
proxy no-get
if ! AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/img --images-per-record 5 \
       --records-per-file 2 >/dev/null 2>"$tmp/err" && grep -q "s3://pcrtest/img already holds a pcr dataset" "$tmp/err"
then ok; else bad "an unreadable dataset written over"; cat "$tmp/err"; fi
same_objects "an unreadable dataset kept" "$tmp/local" img
proxy no-put
if ! AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/noput --images-per-record 5 \
       --work-dir "$tmp/wnp" >/dev/null 2>"$tmp/err" &&
   grep -q "s3://pcrtest/noput: cannot write there (s3:PutObject): s3://pcrtest/noput/.pcr-write-check-.*HTTP 403 AccessDenied" \
     "$tmp/err" && [ ! -e "$tmp/wnp/out" ]; then ok; else bad "a role without s3:PutObject"; cat "$tmp/err"; fi
# SSE-KMS: ETags that are not MD5s, as the answers say; uploads go as to any store.
proxy kms
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$tmp/big" s3://pcrtest/kms \
     --images-per-record 4096 --part-size-mib 5 --multipart-threshold-mib 5 >/dev/null 2>"$tmp/err"; then ok; else
  bad "multipart upload to an SSE-KMS bucket"; cat "$tmp/err"; fi
same_objects "multipart upload to an SSE-KMS bucket" "$tmp/biglocal" kms
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/kms-small \
     --images-per-record 5 >/dev/null 2>"$tmp/err"; then ok; else bad "uploads to an SSE-KMS bucket"; cat "$tmp/err"; fi

# Each record file goes up as soon as it is finished: the first is in the
# store before the last is written.
proxy no-manifest
AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$tmp/big" s3://pcrtest/eager --images-per-record 128 \
  --jobs 1 --work-dir "$tmp/we" >/dev/null 2>&1
first_up=$(stat -c %.9Y "$(find "$tmp/store/pcrtest" -path '*eager/records-00000.pcr*' -name '*_S3rver_object' | head -1)" 2>/dev/null)
last_written=$(stat -c %.9Y "$(ls "$tmp/we/out"/records-*.pcr | tail -1)")
if [ -n "$first_up" ] && [ "$(ls "$tmp/we/out"/records-*.pcr | wc -l)" -gt 4 ] &&
   awk -v a="$first_up" -v b="$last_written" 'BEGIN { exit !(a < b) }'; then ok; else
  bad "the first record file went up at $first_up, the last was written at $last_written"; fi

# Merge into the store: the parts' record files, the manifest last.
for i in 0 1; do
  "$tools/pcr-convert" images "$data/sample" "$tmp/part$i" --images-per-record 5 --shard $i --num-shards 2 >/dev/null
done
"$tools/pcr-convert" merge "$tmp/mlocal" "$tmp/part0" "$tmp/part1" >/dev/null
if "$tools/pcr-convert" merge s3://pcrtest/merged "$tmp/part0" "$tmp/part1" --work-dir "$tmp/wm" >"$tmp/out" 2>"$tmp/err" &&
   grep -q '^2 parts: 24 images in 5 files' "$tmp/out"; then ok; else bad "merge into s3"; cat "$tmp/out" "$tmp/err"; fi
same_objects "merged into s3" "$tmp/mlocal" merged
"$tools/pcr-dump" verify s3://pcrtest/merged >/dev/null 2>&1 && ok || bad "verify the merged upload"
[ -e "$tmp/part0/part.pcrd" ] && [ ! -e "$tmp/wm/out" ] && ok || bad "merge left its work or lost a part"
# Parts cut inside files (5 records in files of 2, 3 shards): the pieces are
# joined and uploaded, the bytes those of a one-machine conversion.
"$tools/pcr-convert" images "$data/sample" "$tmp/one-rpf2" --images-per-record 5 --records-per-file 2 >/dev/null
for i in 0 1 2; do
  "$tools/pcr-convert" images "$data/sample" "$tmp/cut$i" --images-per-record 5 --records-per-file 2 --shard $i \
    --num-shards 3 >/dev/null
done
"$tools/pcr-convert" merge s3://pcrtest/cutmerged "$tmp/cut0" "$tmp/cut1" "$tmp/cut2" --work-dir "$tmp/wc" >/dev/null \
  2>"$tmp/err" && ok || { bad "merge pieces into s3"; cat "$tmp/err"; }
same_objects "pieces merged into s3" "$tmp/one-rpf2" cutmerged

# Parts in the store: each shard uploads its part, part.pcrd last, and merge
# has the store copy their record files (PUTs without a body), each checked
# before and after, then puts the manifest.
for i in 0 1; do
  "$tools/pcr-convert" images "$data/sample" s3://pcrtest/parts/p$i --images-per-record 5 --shard $i --num-shards 2 \
    >/dev/null 2>"$tmp/err" && ok || { bad "shard $i into s3"; cat "$tmp/err"; }
  same_objects "shard $i uploaded" "$tmp/part$i" parts/p$i
done
rm -f "$tmp/requests"
S3_PROXY_LOG="$tmp/requests" proxy none
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" merge s3://pcrtest/smerged s3://pcrtest/parts/p0 \
     s3://pcrtest/parts/p1 >"$tmp/out" 2>"$tmp/err" && grep -q '^2 parts: 24 images in 5 files' "$tmp/out"; then ok; else
  bad "merge parts in the store"; cat "$tmp/out" "$tmp/err"; fi
same_objects "merged in the store" "$tmp/mlocal" smerged
[ "$(grep -c '^PUT /pcrtest/smerged/records-.* bytes=0$' "$tmp/requests")" = 5 ] &&
  ! grep '^PUT /pcrtest/smerged/records-' "$tmp/requests" | grep -vq ' bytes=0$' && ok ||
  { bad "record files copied by the store"; grep '^PUT' "$tmp/requests"; }
# A merge stopped before its manifest: run again, it keeps the copies made.
proxy no-manifest
if ! AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" merge s3://pcrtest/sresume s3://pcrtest/parts/p0 \
     s3://pcrtest/parts/p1 >/dev/null 2>"$tmp/err" && [ -e "$tmp/store/pcrtest/sresume/records-00004.pcr._S3rver_object" ] &&
   [ ! -e "$tmp/store/pcrtest/sresume/dataset.pcrd._S3rver_object" ]; then ok; else
  bad "a merge stopped before its manifest"; cat "$tmp/err"; fi
rm -f "$tmp/requests"
S3_PROXY_LOG="$tmp/requests" proxy none
if AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" merge s3://pcrtest/sresume s3://pcrtest/parts/p0 \
     s3://pcrtest/parts/p1 >/dev/null 2>"$tmp/err" && ! grep -q '^PUT /pcrtest/sresume/records-' "$tmp/requests"; then
  ok; else bad "the merge run again copied again"; cat "$tmp/err"; grep '^PUT' "$tmp/requests"; fi
same_objects "a merge run again" "$tmp/mlocal" sresume
# A part's record file replaced in the store: refused, naming it, before anything is copied.
/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from s3_put import put; put(sys.argv[2], "pcrtest", "parts/p1/records-00003.pcr", open(sys.argv[3], "rb").read())' \
  "$here" "$endpoint" "$tmp/mlocal/records-00000.pcr"
if ! "$tools/pcr-convert" merge s3://pcrtest/sbad s3://pcrtest/parts/p0 s3://pcrtest/parts/p1 >/dev/null 2>"$tmp/err" &&
   grep -q 's3://pcrtest/parts/p1/records-00003.pcr: size or index checksum differs from s3://pcrtest/parts/p1/part.pcrd' \
     "$tmp/err" && [ ! -e "$tmp/store/pcrtest/sbad" ]; then ok; else
  bad "a damaged part in the store"; cat "$tmp/err"; ls "$tmp/store/pcrtest/sbad"; fi
for args in "s3://pcrtest/smix s3://pcrtest/parts/p0 $tmp/part1" "$tmp/slocal s3://pcrtest/parts/p0 s3://pcrtest/parts/p1"; do
  # shellcheck disable=SC2086
  if ! "$tools/pcr-convert" merge $args >/dev/null 2>"$tmp/err" &&
     grep -q 'parts in object storage merge into an s3:// output in their store' "$tmp/err"; then ok; else
    bad "merge $args refused"; cat "$tmp/err"; fi
done

# A part upload left unanswered: given up after the timeout, sent again.
proxy stall-parts
if AWS_ENDPOINT_URL="$proxy_endpoint" PCR_REMOTE_TIMEOUT_MS=2000 "$tools/pcr-convert" images "$tmp/big" \
     s3://pcrtest/stalled --images-per-record 4096 --part-size-mib 5 --multipart-threshold-mib 5 >/dev/null 2>"$tmp/err"
then ok; else bad "a stalled part"; cat "$tmp/err"; fi
same_objects "a stalled part" "$tmp/biglocal" stalled

# A store that refuses writes: no manifest, the object and status named; the
# same command against a working store then finishes from the work directory.
proxy down
if ! AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/retry \
       --images-per-record 5 >/dev/null 2>"$tmp/err" &&
   grep -q 's3://pcrtest/retry/records-0000[0-4].pcr: upload failed: HTTP 503 SlowDown' "$tmp/err" &&
   grep -q 'the same command run again resumes' "$tmp/err"; then ok; else bad "a failing store"; cat "$tmp/err"; fi
"$tools/pcr-dump" s3://pcrtest/retry >/dev/null 2>&1 && bad "a manifest after a failed upload" || ok
if "$tools/pcr-convert" images "$data/sample" s3://pcrtest/retry --images-per-record 5 >"$tmp/out" 2>"$tmp/err" &&
   grep -q 'kept 5 files' "$tmp/out"; then ok; else bad "rerun after a failed upload"; cat "$tmp/out" "$tmp/err"; fi
"$tools/pcr-convert" images "$data/sample" "$tmp/local5" --images-per-record 5 >/dev/null
same_objects "rerun after a failed upload" "$tmp/local5" retry

# Inputs from one store and the output to another (--input-endpoint,
# --output-endpoint), whatever AWS_ENDPOINT_URL says: the same objects as a
# local conversion.
port2=$(free_port $((port + 300)))
mkdir -p "$tmp/store2" "$tmp/up/src"
cp -r "$data/sample/." "$tmp/up/src/"
cp "$data/tabular/Soybean.csv" "$tmp/up/"
"$s3rver" -d "$tmp/store2" -a 127.0.0.1 -p "$port2" -s --configure-bucket pcrtest >"$tmp/s3rver2.log" 2>&1 &
pid2=$!
trap '[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null; kill "$pid2" 2>/dev/null; cleanup' EXIT
wait_port "$port2" "$pid2"
endpoint2="http://127.0.0.1:$port2"
/usr/bin/python3 "$here/s3_put.py" "$endpoint" pcrtest "$tmp/up" || bad "inputs into the first store"
if AWS_ENDPOINT_URL=http://127.0.0.1:9 "$tools/pcr-convert" images s3://pcrtest/src s3://pcrtest/two --images-per-record 5 \
     --input-endpoint "$endpoint" --output-endpoint "$endpoint2" >/dev/null 2>"$tmp/err"; then ok; else
  bad "images between two stores"; cat "$tmp/err"; fi
endpoint="$endpoint2" same_objects "images between two stores" "$tmp/local5" two
if AWS_ENDPOINT_URL=http://127.0.0.1:9 "$tools/pcr-convert" table s3://pcrtest/Soybean.csv s3://pcrtest/t2 \
     --rows-per-stripe 100 --input-endpoint "$endpoint" --output-endpoint "$endpoint2" >/dev/null 2>"$tmp/err"; then ok
else bad "a table between two stores"; cat "$tmp/err"; fi
endpoint="$endpoint2" same_objects "a table between two stores" "$tmp/tlocal" t2
# Without them, the environment's endpoint is the one asked, and named.
if ! AWS_ENDPOINT_URL=http://127.0.0.1:9 "$tools/pcr-convert" images s3://pcrtest/src "$tmp/nowhere" >/dev/null \
     2>"$tmp/err" && grep -q "127.0.0.1 port 9" "$tmp/err"; then ok; else bad "the default endpoint"; cat "$tmp/err"; fi
"$tools/pcr-convert" images "$data/sample" s3://pcrtest/x --output-endpoint ftp://h >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--output-endpoint needs an http(s):// URL" "$tmp/err" && ok || bad "a bad endpoint"
kill "$pid2" 2>/dev/null

# Killed after the local conversion wrote its manifest but before it removed
# its journal: the rerun uploads what was converted.
proxy down
AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/late-journal --images-per-record 5 \
  --work-dir "$tmp/wl" >/dev/null 2>&1
[ -f "$tmp/wl/out/dataset.pcrd" ] && ok || bad "no local manifest after a failed upload"
printf 'journal\n' >"$tmp/wl/out/.pcr-convert-incomplete"
if "$tools/pcr-convert" images "$data/sample" s3://pcrtest/late-journal --images-per-record 5 --work-dir "$tmp/wl" \
     >/dev/null 2>"$tmp/err"; then ok; else bad "rerun after a kill before the journal went"; cat "$tmp/err"; fi
same_objects "rerun after a kill before the journal went" "$tmp/local5" late-journal

# Another conversion into an output whose conversion did not finish is
# refused, not given the first one's files.
proxy down
AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/other --images-per-record 5 \
  --work-dir "$tmp/wo" >/dev/null 2>&1
if ! "$tools/pcr-convert" images "$data/sample" s3://pcrtest/other --images-per-record 7 --work-dir "$tmp/wo" \
       >/dev/null 2>"$tmp/err" &&
   grep -q 'holds a finished conversion into s3://pcrtest/other of other inputs or options, not yet uploaded' "$tmp/err"
then ok; else bad "another conversion into an unfinished output"; cat "$tmp/err"; fi

# A work directory holding files pcr-convert did not make is refused, and
# its files are left alone.
mkdir -p "$tmp/wf/out"
echo mine >"$tmp/wf/out/results.txt"
if ! "$tools/pcr-convert" images "$data/sample" s3://pcrtest/foreign --work-dir "$tmp/wf" >/dev/null 2>"$tmp/err" &&
   grep -q "$tmp/wf: not empty, and not a work directory of pcr-convert" "$tmp/err" &&
   [ "$(cat "$tmp/wf/out/results.txt")" = mine ]; then ok; else bad "a foreign work directory"; cat "$tmp/err"; fi

# A conversion that failed on a bad image, run again with --skip-bad as the
# error says, finishes.
mkdir -p "$tmp/badsrc/c"
cp "$data"/sample/misc/testimg*.jpg "$tmp/badsrc/c/"
head -c 3000 "$data/sample/misc/testimgari.jpg" >"$tmp/badsrc/c/cut.jpg"
if ! "$tools/pcr-convert" images "$tmp/badsrc" s3://pcrtest/skip --work-dir "$tmp/wb" >/dev/null 2>"$tmp/err" &&
   grep -q 'cut.jpg' "$tmp/err" &&
   "$tools/pcr-convert" images "$tmp/badsrc" s3://pcrtest/skip --work-dir "$tmp/wb" --skip-bad >/dev/null 2>"$tmp/err"
then ok; else bad "--skip-bad after a failure"; cat "$tmp/err"; fi
"$tools/pcr-dump" verify s3://pcrtest/skip >/dev/null 2>&1 && ok || bad "verify after --skip-bad"

# Another writer's file in the output: found before the manifest goes up.
proxy no-manifest
AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/race --images-per-record 5 \
  --work-dir "$tmp/wr" >/dev/null 2>&1
/usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=b"other", method="PUT"))' \
  "$endpoint/pcrtest/race/records-00001.pcr"
if ! "$tools/pcr-convert" images "$data/sample" s3://pcrtest/race --images-per-record 5 --work-dir "$tmp/wr" \
       >/dev/null 2>"$tmp/err" &&
   grep -q 's3://pcrtest/race/records-00001.pcr: changed in the store since this conversion uploaded it' "$tmp/err"
then ok; else bad "another writer's file"; cat "$tmp/err"; fi
"$tools/pcr-dump" s3://pcrtest/race >/dev/null 2>&1 && bad "a manifest over another writer's file" || ok

# Killed after the manifest went up but before the work directory went: the
# same command finds its own manifest and cleans up.
proxy slow-manifest
AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/late --images-per-record 5 \
  --work-dir "$tmp/wl2" >/dev/null 2>&1 &
victim=$!
for _ in $(seq 300); do "$tools/pcr-dump" s3://pcrtest/late >/dev/null 2>&1 && break; sleep 0.1; done
kill -9 "$victim" 2>/dev/null
wait "$victim" 2>/dev/null
[ -e "$tmp/wl2/out/dataset.pcrd" ] && ok || bad "killed before the work directory went"
if "$tools/pcr-convert" images "$data/sample" s3://pcrtest/late --images-per-record 5 --work-dir "$tmp/wl2" \
     >/dev/null 2>"$tmp/err" && [ ! -e "$tmp/wl2/out" ]; then ok; else bad "rerun after the manifest went up"; cat "$tmp/err"; fi
same_objects "rerun after the manifest went up" "$tmp/local5" late

# Files the journal holds as up but the store lost (or another store) are
# sent again before the manifest.
proxy no-manifest
AWS_ENDPOINT_URL="$proxy_endpoint" "$tools/pcr-convert" images "$data/sample" s3://pcrtest/lost --images-per-record 5 \
  --work-dir "$tmp/wl" >/dev/null 2>&1 && bad "a manifest refused yet success"
grep -c '^done' "$tmp/wl/upload.journal" | grep -q '^5$' && ok || bad "the record files were not up"
/usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], method="DELETE"))' \
  "$endpoint/pcrtest/lost/records-00002.pcr"
if "$tools/pcr-convert" images "$data/sample" s3://pcrtest/lost/ --images-per-record 5 --work-dir "$tmp/wl" >/dev/null \
     2>"$tmp/err"; then ok; else bad "rerun after a lost object"; cat "$tmp/err"; fi
same_objects "rerun after a lost object" "$tmp/local5" lost
"$tools/pcr-dump" verify s3://pcrtest/lost >/dev/null 2>&1 && ok || bad "verify after a lost object"
if ! "$tools/pcr-convert" images "$data/sample" s3://nobucket/x >/dev/null 2>"$tmp/err" &&
   grep -q 's3://nobucket/x/dataset.pcrd: HTTP 404 NoSuchBucket' "$tmp/err"; then ok; else bad "a missing bucket named"; cat "$tmp/err"; fi

# Killed in the middle of a multipart upload: no manifest and an upload left
# open, which the rerun aborts (s3rver has no abort and keeps its parts)
# before it finishes with the same bytes.
proxy slow-parts
kill_mid_upload killed "$tmp/wk"
grep -q '^open' "$tmp/wk/upload.journal" 2>/dev/null && ok || bad "no multipart upload was open when killed"
"$tools/pcr-dump" s3://pcrtest/killed >/dev/null 2>&1 && bad "a manifest after a kill" || ok
if "$tools/pcr-convert" images "$tmp/big" s3://pcrtest/killed --images-per-record 4096 --part-size-mib 5 \
     --multipart-threshold-mib 5 --work-dir "$tmp/wk" >/dev/null 2>"$tmp/err"; then ok; else bad "rerun after a kill"; cat "$tmp/err"; fi
same_objects "rerun after a kill" "$tmp/biglocal" killed

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
