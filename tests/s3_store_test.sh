#!/usr/bin/env bash
# Conversions into the S3 test servers that check what s3rver does not:
# fauxqs (the multipart lifecycle as S3 has it: parts of at least 5 MiB,
# part ETags, md5-N object ETags, NoSuchUpload once aborted) and
# @20minutes/s3rver (SigV4 signatures: a wrong secret gets 403). Each part
# reports SKIP unless its server is installed (npm install -g fauxqs@1.9.2;
# npm install --prefix /usr/local/lib/pcr-s3rver-sigv4 @20minutes/s3rver@4.0.4).
# usage: s3_store_test.sh TOOLS_DIR DATA_DIR
set -u
tools=$(cd "$1" && pwd) data=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/net_test_lib.sh"
fauxqs="$(npm root -g 2>/dev/null)/fauxqs/dist/app.js"
sigv4=/usr/local/lib/pcr-s3rver-sigv4/node_modules/@20minutes/s3rver
[ -f "$fauxqs" ] || [ -d "$sigv4" ] || { echo "SKIP: neither fauxqs nor @20minutes/s3rver is installed"; exit 77; }
proxy_pid= sigv4_pid=
trap '[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null; [ -n "$sigv4_pid" ] && kill "$sigv4_pid" 2>/dev/null; cleanup' EXIT
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export TMPDIR="$tmp"  # default work directories, apart from other tests
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL

# proxy MODE UPSTREAM_PORT: s3_proxy.py in front of the next commands.
proxy() {
  [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null
  local p
  p=$(free_port $((31300 + $$ % 1200 + 200)))
  /usr/bin/python3 "$here/s3_proxy.py" "$p" "$2" "$1" &
  proxy_pid=$!
  wait_port "$p" "$proxy_pid"
  proxy_endpoint="http://127.0.0.1:$p"
}

# same_signed_objects DESCRIPTION ENDPOINT LOCAL_DIR PREFIX: every file of LOCAL_DIR
# is the object pcrtest/PREFIX/NAME, byte for byte.
same_signed_objects() {
  local what=$1 endpoint=$2 dir=$3 prefix=$4 f n differ=0
  for f in "$dir"/*; do
    n=$(basename "$f")
    curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user S3RVER:S3RVER -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -o "$tmp/object" "$endpoint/pcrtest/$prefix/$n" &&
      cmp -s "$f" "$tmp/object" || { differ=1; echo "  $n differs"; }
  done
  [ "$differ" -eq 0 ] && ok || bad "$what"
}

# killed_upload DIR PREFIX: the big conversion through the slow proxy, killed
# (-9) once a multipart upload is open; sets $id to that upload's id.
killed_upload() {
  AWS_ENDPOINT_URL=$proxy_endpoint "$tools/pcr-convert" $big "s3://pcrtest/$2" --work-dir "$1" >/dev/null 2>&1 &
  local victim=$!
  for _ in $(seq 600); do grep -q '^open' "$1/upload.journal" 2>/dev/null && break; sleep 0.1; done
  kill -9 "$victim" 2>/dev/null
  wait "$victim" 2>/dev/null
  id=$(awk -F'\t' '$1 == "open" { print $2; exit }' "$1/upload.journal" 2>/dev/null)
}

# One file of about 12 MiB (three 5 MiB parts), its local conversion, and a
# small dataset.
mkdir -p "$tmp/big/c"
for i in $(seq 64); do
  for f in "$data"/sample/*/*; do cp "$f" "$tmp/big/c/$i-$(basename "$f")"; done
done
"$tools/pcr-convert" images "$tmp/big" "$tmp/biglocal" --images-per-record 4096 >/dev/null
"$tools/pcr-convert" images "$data/sample" "$tmp/local" --images-per-record 5 >/dev/null
big="images $tmp/big --images-per-record 4096 --part-size-mib 5 --multipart-threshold-mib 5"

if [ -f "$fauxqs" ]; then
  port=$(free_port $((31300 + $$ % 1200)))
  node "$here/fauxqs_server.mjs" "$port" pcrtest >"$tmp/fauxqs.log" 2>&1 &
  pid=$!
  wait_port "$port" "$pid"
  for _ in $(seq 100); do grep -q '^ready' "$tmp/fauxqs.log" && break; sleep 0.1; done  # the bucket is made
  store="http://127.0.0.1:$port"

  # Multipart into a store that checks parts as S3 does; the object's md5-N
  # ETag is checked too.
  if AWS_ENDPOINT_URL=$store "$tools/pcr-convert" $big s3://pcrtest/big >/dev/null 2>"$tmp/err"; then ok; else
    bad "multipart upload to fauxqs"; cat "$tmp/err"; fi
  same_signed_objects "multipart upload to fauxqs" "$store" "$tmp/biglocal" big
  AWS_ENDPOINT_URL=$store "$tools/pcr-dump" verify s3://pcrtest/big >/dev/null 2>&1 && ok || bad "verify on fauxqs"
  if AWS_ENDPOINT_URL=$store "$tools/pcr-convert" table "$data/tabular/Soybean.csv" s3://pcrtest/t >/dev/null 2>"$tmp/err"
  then ok; else bad "table to fauxqs"; cat "$tmp/err"; fi

  # Killed with a multipart upload open: the rerun aborts it (a part sent to
  # it afterwards gets NoSuchUpload) and finishes with the same bytes.
  proxy slow-parts "$port"
  killed_upload "$tmp/wk" killed
  [ -n "$id" ] && ok || bad "no multipart upload was open when killed"
  AWS_ENDPOINT_URL=$store "$tools/pcr-dump" s3://pcrtest/killed >/dev/null 2>&1 && bad "a manifest after a kill" || ok
  if AWS_ENDPOINT_URL=$store "$tools/pcr-convert" $big s3://pcrtest/killed --work-dir "$tmp/wk" >/dev/null 2>"$tmp/err"
  then ok; else bad "rerun after a kill"; cat "$tmp/err"; fi
  same_signed_objects "rerun after a kill" "$store" "$tmp/biglocal" killed
  code=$(curl -s -X PUT -H 'Content-Type: application/octet-stream' --data-binary x \
           "$store/pcrtest/killed/records-00000.pcr?partNumber=1&uploadId=$id" | sed -n 's:.*<Code>\(.*\)</Code>.*:\1:p')
  [ "$code" = NoSuchUpload ] && ok || bad "the upload left open by the kill answers '$code', not NoSuchUpload"

  # Killed again, then started over with --restart: the upload left open is
  # aborted all the same.
  proxy slow-parts "$port"
  killed_upload "$tmp/wr" restarted
  if [ -n "$id" ] && AWS_ENDPOINT_URL=$store "$tools/pcr-convert" $big s3://pcrtest/restarted --work-dir "$tmp/wr" \
       --restart >/dev/null 2>"$tmp/err"; then ok; else bad "--restart after a kill"; cat "$tmp/err"; fi
  code=$(curl -s -X PUT -H 'Content-Type: application/octet-stream' --data-binary x \
           "$store/pcrtest/restarted/records-00000.pcr?partNumber=1&uploadId=$id" | sed -n 's:.*<Code>\(.*\)</Code>.*:\1:p')
  [ "$code" = NoSuchUpload ] && ok || bad "the upload left open before --restart answers '$code', not NoSuchUpload"

  # CompleteMultipartUpload answered 200 with an <Error> body: retried when
  # it passes; when it never does, a clear error naming the object, and no
  # manifest.
  proxy complete-error-once "$port"
  if AWS_ENDPOINT_URL=$proxy_endpoint "$tools/pcr-convert" $big s3://pcrtest/once >/dev/null 2>"$tmp/err"; then ok; else
    bad "a complete that failed once"; cat "$tmp/err"; fi
  same_signed_objects "a complete that failed once" "$store" "$tmp/biglocal" once
  proxy complete-error "$port"
  if ! AWS_ENDPOINT_URL=$proxy_endpoint "$tools/pcr-convert" $big s3://pcrtest/never --work-dir "$tmp/wn" >/dev/null \
         2>"$tmp/err" &&
     grep -q 's3://pcrtest/never/records-00000.pcr: cannot complete the multipart upload: HTTP 200 InternalError' "$tmp/err"
  then ok; else bad "a complete that always fails"; cat "$tmp/err"; fi
  AWS_ENDPOINT_URL=$store "$tools/pcr-dump" s3://pcrtest/never >/dev/null 2>&1 && bad "a manifest after a failed complete" || ok
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=
else
  echo "SKIP: fauxqs is not installed"
fi

if [ -d "$sigv4" ]; then
  port=$(free_port $((31300 + $$ % 1200 + 100)))
  mkdir -p "$tmp/sigv4"
  node "$here/s3rver_sigv4.cjs" "$sigv4" "$port" "$tmp/sigv4" >"$tmp/sigv4.log" 2>&1 &
  sigv4_pid=$!
  wait_port "$port" "$sigv4_pid"
  store="http://127.0.0.1:$port"
  # A wrong secret: refused before converting, the object and the code named.
  if ! AWS_ENDPOINT_URL=$store AWS_SECRET_ACCESS_KEY=wrong "$tools/pcr-convert" images "$data/sample" s3://pcrtest/img \
         --images-per-record 5 --work-dir "$tmp/ws" >/dev/null 2>"$tmp/err" &&
     grep -q 's3://pcrtest/img/dataset.pcrd: HTTP 403 SignatureDoesNotMatch' "$tmp/err" && [ ! -e "$tmp/ws/out" ]; then ok
  else bad "a wrong secret"; cat "$tmp/err"; fi
  # Signed single PUTs and multipart uploads.
  if AWS_ENDPOINT_URL=$store "$tools/pcr-convert" images "$data/sample" s3://pcrtest/img --images-per-record 5 \
       >/dev/null 2>"$tmp/err"; then ok; else bad "signed single PUTs"; cat "$tmp/err"; fi
  same_signed_objects "signed single PUTs" "$store" "$tmp/local" img
  if AWS_ENDPOINT_URL=$store "$tools/pcr-convert" $big s3://pcrtest/big >/dev/null 2>"$tmp/err"; then ok; else
    bad "a signed multipart upload"; cat "$tmp/err"; fi
  same_signed_objects "a signed multipart upload" "$store" "$tmp/biglocal" big
  AWS_ENDPOINT_URL=$store "$tools/pcr-dump" verify s3://pcrtest/big >/dev/null 2>&1 && ok || bad "verify, signed"

  # Credentials as the AWS SDKs find them, each checked by the signatures:
  # ~/.aws/config's profile (its region and endpoint_url too) and
  # credential_process, a container's endpoint and an instance's IMDSv2
  # (stand-ins on loopback). A profile named and missing is an error.
  cport=$(free_port $((port + 10)))
  /usr/bin/python3 "$here/credentials_server.py" "$cport" S3RVER S3RVER >"$tmp/creds.log" &
  creds_pid=$!
  wait_port "$cport" "$creds_pid"
  mkdir -p "$tmp/home/.aws"
  cat >"$tmp/home/.aws/config" <<CONF
[profile store]
region = us-east-1
endpoint_url = $store
aws_access_key_id = S3RVER
aws_secret_access_key = S3RVER

[profile process]
endpoint_url = $store
credential_process = printf '{"Version": 1, "AccessKeyId": "S3RVER", "SecretAccessKey": "S3RVER"}'

[profile wrong]
endpoint_url = $store
aws_access_key_id = S3RVER
aws_secret_access_key = wrong
CONF
  plain() { env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_REGION HOME="$tmp/home" "$@"; }
  for profile in store process; do
    if plain AWS_PROFILE=$profile "$tools/pcr-dump" verify s3://pcrtest/img >"$tmp/out" 2>&1; then ok; else
      bad "the config file's profile $profile"; cat "$tmp/out"; fi
  done
  if ! plain AWS_PROFILE=wrong "$tools/pcr-dump" s3://pcrtest/img >"$tmp/out" 2>&1 &&
     grep -q "HTTP 403 SignatureDoesNotMatch" "$tmp/out"; then ok; else bad "a profile's wrong secret is used"; cat "$tmp/out"; fi
  if ! plain AWS_PROFILE=stroe "$tools/pcr-dump" s3://pcrtest/img >"$tmp/out" 2>&1 &&
     grep -q "AWS_PROFILE=stroe: no such profile in $tmp/home/.aws/credentials or $tmp/home/.aws/config" "$tmp/out"; then ok
  else bad "a mistyped AWS_PROFILE"; cat "$tmp/out"; fi
  if plain AWS_ENDPOINT_URL=$store AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$cport/creds" \
       AWS_CONTAINER_AUTHORIZATION_TOKEN=container-token "$tools/pcr-dump" verify s3://pcrtest/img >"$tmp/out" 2>&1 &&
     grep -q "GET /creds 200" "$tmp/creds.log"; then ok; else bad "container credentials"; cat "$tmp/out"; fi
  if ! plain AWS_ENDPOINT_URL=$store AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$cport/creds" \
       AWS_CONTAINER_AUTHORIZATION_TOKEN=other "$tools/pcr-dump" s3://pcrtest/img >"$tmp/out" 2>&1 &&
     grep -q "the container credentials endpoint http://127.0.0.1:$cport/creds: HTTP 401" "$tmp/out"; then ok; else
    bad "container credentials refused"; cat "$tmp/out"; fi
  if plain AWS_ENDPOINT_URL=$store AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$cport" \
       "$tools/pcr-dump" verify s3://pcrtest/img >"$tmp/out" 2>&1 &&
     grep -q "GET /latest/meta-data/iam/security-credentials/pcr-role 200" "$tmp/creds.log"; then ok; else
    bad "instance credentials (IMDSv2)"; cat "$tmp/out"; fi
  # AWS_ENDPOINT_URL_S3 goes before AWS_ENDPOINT_URL.
  if plain AWS_PROFILE=store AWS_ENDPOINT_URL=http://127.0.0.1:9 AWS_ENDPOINT_URL_S3=$store \
       "$tools/pcr-dump" verify s3://pcrtest/img >"$tmp/out" 2>&1; then ok; else bad "AWS_ENDPOINT_URL_S3"; cat "$tmp/out"; fi
  kill "$creds_pid" 2>/dev/null
else
  echo "SKIP: @20minutes/s3rver is not installed"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
