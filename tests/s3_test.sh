#!/usr/bin/env bash
# Reading datasets and tables from an S3-compatible store (s3rver on
# loopback), signed with SigV4 or anonymous, as from local files; errors
# name the object. SKIP (77) without s3rver (npm install -g s3rver@3).
# usage: s3_test.sh TOOLS_DIR DATA_DIR
set -u
tools=$(cd "$1" && pwd) data=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
s3rver=$(command -v s3rver || true)
[ -n "$s3rver" ] || { echo "SKIP: s3rver is not installed"; exit 77; }
. "$(dirname "$0")/net_test_lib.sh"

mkdir -p "$tmp/up/ds" "$tmp/up/t" "$tmp/store"
"$tools/pcr-convert" images "$data/sample" "$tmp/up/ds" --images-per-record 5 --records-per-file 2 \
  --fields "$data/fields/sample.jsonl" --field-type blob=bytes >/dev/null || exit 1
"$tools/pcr-convert" table "$data/tabular/Soybean.csv" "$tmp/up/t" --rows-per-stripe 100 >/dev/null || exit 1

port=$(free_port $((25000 + $$ % 5000)))
"$s3rver" -d "$tmp/store" -a 127.0.0.1 -p "$port" -s --configure-bucket pcrtest >"$tmp/s3rver.log" 2>&1 &
pid=$!
wait_port "$port" "$pid"
endpoint="http://127.0.0.1:$port"
/usr/bin/python3 "$here/s3_put.py" "$endpoint" pcrtest "$tmp/up" || { echo "cannot upload to s3rver"; exit 1; }

export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
unset AWS_SESSION_TOKEN AWS_PROFILE
same "cat of a dataset with fields, signed" "$tmp/up/ds" "s3://pcrtest/ds" cat
same "cat of a table, signed" "$tmp/up/t/Soybean.pcr" "s3://pcrtest/t/Soybean.pcr" cat
if "$tools/pcr-dump" verify "s3://pcrtest/ds" >"$tmp/out" 2>&1 && grep -q ': OK, 3 files' "$tmp/out"; then ok; else bad "verify on S3"; cat "$tmp/out"; fi
"$tools/pcr-dump" extract "$tmp/up/ds" "$tmp/x-local" --fidelity 2 >/dev/null
if "$tools/pcr-dump" extract "s3://pcrtest/ds" "$tmp/x-s3" --fidelity 2 >/dev/null 2>"$tmp/err" &&
   diff -r "$tmp/x-local" "$tmp/x-s3" >/dev/null; then ok; else bad "extract from S3"; cat "$tmp/err"; fi
# Unknown keys are refused by name; anonymous reads need no credentials.
if ! AWS_ACCESS_KEY_ID=NOBODY "$tools/pcr-dump" "s3://pcrtest/ds" >"$tmp/out" 2>&1 &&
   grep -q 's3://pcrtest/ds/dataset.pcrd: bytes 0-[0-9]*: HTTP 403 InvalidAccessKeyId: .* (access denied: check AWS_ACCESS_KEY_ID' "$tmp/out"
then ok; else bad "403 named, with S3's code"; cat "$tmp/out"; fi
if ! "$tools/pcr-dump" "s3://pcrtest/t/missing.pcr" >"$tmp/out" 2>&1 &&
   grep -q 's3://pcrtest/t/missing.pcr: HTTP 404 NoSuchKey: ' "$tmp/out"; then ok; else bad "404 named, with S3's code"; cat "$tmp/out"; fi
# A missing bucket is no missing dataset.
if ! "$tools/pcr-dump" "s3://nobucket/ds" >"$tmp/out" 2>&1 &&
   grep -q "s3://nobucket/ds/dataset.pcrd: bytes 0-[0-9]*: HTTP 404 NoSuchBucket: .*(check the bucket's name" "$tmp/out"; then ok; else
  bad "a missing bucket named"; cat "$tmp/out"; fi
"$tools/pcr-dump" cat "$tmp/up/ds" >"$tmp/local.out"
if env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE=/nonexistent \
     "$tools/pcr-dump" cat "s3://pcrtest/ds" >"$tmp/anon.out" 2>&1 && cmp -s "$tmp/anon.out" "$tmp/local.out"; then
  ok; else bad "anonymous read"; head -3 "$tmp/anon.out"; fi
if ! "$tools/pcr-dump" "s3://pcrtest" --json >/dev/null 2>&1 && ! "$tools/pcr-dump" "s3://" >"$tmp/out" 2>&1 &&
   grep -q 'expected s3://BUCKET/KEY' "$tmp/out"; then ok; else bad "a malformed s3 path is refused"; cat "$tmp/out"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
