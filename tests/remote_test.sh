#!/usr/bin/env bash
# Reading datasets and tables over HTTP from nginx on loopback, as from local
# files: summary, verify, cat and extract by the tools and reads from Python
# give the same answers, with few requests to open a dataset, and errors
# name the URL. A fault-injecting server (fault_server.py) shows server
# errors, dropped connections and short bodies retried to the same answer,
# and a changed byte refused. SKIP (77) without nginx.
# usage: remote_test.sh TOOLS_DIR DATA_DIR
set -u
tools=$(cd "$1" && pwd) data=$(cd "$2" && pwd)
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "SKIP: nginx is not installed"; exit 77; }
. "$(dirname "$0")/net_test_lib.sh"

mkdir -p "$tmp/www/t"
"$tools/pcr-convert" images "$data/sample" "$tmp/www/ds" --images-per-record 5 --records-per-file 2 \
  --fields "$data/fields/sample.jsonl" --field-type blob=bytes >/dev/null || exit 1
"$tools/pcr-convert" table "$data/tabular/Soybean.csv" "$tmp/www/t" --rows-per-stripe 100 >/dev/null || exit 1
chmod -R a+rX "$tmp"

# A free port, and nginx serving $tmp/www with byte ranges.
port=$(free_port $((20000 + $$ % 5000)))
start_nginx "$tmp/www" "$port"
pid=$nginx_pid
url="http://127.0.0.1:$port"

same "cat of a dataset with fields" "$tmp/www/ds" "$url/ds" cat
same "cat of a table" "$tmp/www/t/Soybean.pcr" "$url/t/Soybean.pcr" cat
if "$tools/pcr-dump" verify "$url/ds" >"$tmp/out" 2>&1 && grep -q ': OK, 3 files' "$tmp/out"; then ok; else bad "verify over HTTP"; cat "$tmp/out"; fi
if "$tools/pcr-dump" verify "$url/t/Soybean.pcr" >"$tmp/out" 2>&1; then ok; else bad "verify a table over HTTP"; cat "$tmp/out"; fi
for k in 1 full; do
  "$tools/pcr-dump" extract "$tmp/www/ds" "$tmp/x-local-$k" --fidelity "$k" >/dev/null
  if "$tools/pcr-dump" extract "$url/ds" "$tmp/x-remote-$k" --fidelity "$k" >/dev/null 2>"$tmp/err" &&
     diff -r "$tmp/x-local-$k" "$tmp/x-remote-$k" >/dev/null; then ok; else bad "extract at fidelity $k"; cat "$tmp/err"; fi
done

# Opening the dataset: the manifest, then every file's header and footer and
# then its index, each batch in flight together: no request per record.
: >"$tmp/logs/access.log"
"$tools/pcr-dump" "$url/ds" --json >/dev/null
requests=$(wc -l <"$tmp/logs/access.log")
files=3 records=5
if [ "$requests" -le $((4 + 3 * files + records)) ] && [ "$requests" -ge 4 ]; then ok; else bad "opening took $requests requests"; fi
if grep -q '" 206 ' "$tmp/logs/access.log"; then ok; else bad "no byte-range answers in the access log"; fi

# Errors name the URL.
if ! "$tools/pcr-dump" verify "$url/nothing-here" >"$tmp/out" 2>&1 && grep -q "$url/nothing-here" "$tmp/out" &&
   grep -q 'not a pcr dataset' "$tmp/out"; then ok; else bad "a missing dataset is named"; cat "$tmp/out"; fi
if ! "$tools/pcr-dump" "$url/t/missing.pcr" >"$tmp/out" 2>&1 && grep -q "$url/t/missing.pcr: HTTP 404 (not found)" "$tmp/out"; then
  ok; else bad "a missing file is named with its status"; cat "$tmp/out"; fi

# Faults: server errors, dropped connections, short bodies and stalls are
# retried to the same answer; a changed byte is caught by a checksum, never
# returned. Stalls end after PCR_REMOTE_TIMEOUT_MS without a byte.
# start_fault FAULT EVERY: fault_server.py on a free port ($fport, pid $fpid).
start_fault() {
  fport=$(free_port $((15000 + $$ % 5000)))
  /usr/bin/python3 "$(dirname "$0")/fault_server.py" "$tmp/www" "$fport" "$1" "$2" &
  fpid=$!
  wait_port "$fport" "$fpid"
}
stop_fault() { kill "$fpid"; wait "$fpid" 2>/dev/null; }
export PCR_REMOTE_TIMEOUT_MS=1000
for spec in 503:3 drop:3 short:3 stall:7; do
  fault=${spec%:*}
  start_fault "$fault" "${spec#*:}"
  if "$tools/pcr-dump" cat "http://127.0.0.1:$fport/ds" >"$tmp/fault.out" 2>"$tmp/fault.err" &&
     "$tools/pcr-dump" cat "$tmp/www/ds" | cmp -s - "$tmp/fault.out"; then ok; else bad "fault $fault every ${spec#*:} requests"; cat "$tmp/fault.err"; fi
  stop_fault
done
start_fault shift 2
if ! "$tools/pcr-dump" cat "http://127.0.0.1:$fport/ds" >"$tmp/fault.out" 2>&1 && grep -q "answered with Content-Range" "$tmp/fault.out"; then
  ok; else bad "an answer for another range is refused"; cat "$tmp/fault.out"; fi
stop_fault
# A byte changed the same way at every read is stored so; one changed in
# some answers is read again.
start_fault flip 1
if ! "$tools/pcr-dump" cat "http://127.0.0.1:$fport/ds" >"$tmp/fault.out" 2>&1 && grep -q 'Corruption: http://127.0.0.1' "$tmp/fault.out"; then
  ok; else bad "a changed byte is caught"; cat "$tmp/fault.out"; fi
stop_fault
for every in 3 5; do
  start_fault flip "$every"
  for what in "cat ds" "verify ds" "cat t/Soybean.pcr"; do
    set -- $what
    if "$tools/pcr-dump" "$1" "http://127.0.0.1:$fport/$2" >"$tmp/fault.out" 2>"$tmp/fault.err" &&
       "$tools/pcr-dump" "$1" "$tmp/www/$2" | sed "s|$tmp/www|http://127.0.0.1:$fport|g" | cmp -s - "$tmp/fault.out"; then ok; else
      bad "pcr-dump $what with one GET in $every damaged"; cat "$tmp/fault.err"; fi
  done
  stop_fault
done
start_fault 503 1
if ! "$tools/pcr-dump" "http://127.0.0.1:$fport/t/Soybean.pcr" >"$tmp/fault.out" 2>&1 &&
   grep -q "http://127.0.0.1:$fport/t/Soybean.pcr: bytes .*: HTTP 503 SlowDown: .* after 5 attempts" "$tmp/fault.out"; then
  ok; else bad "a server that always fails is named after the retries"; cat "$tmp/fault.out"; fi
stop_fault
start_fault stall 1
if ! PCR_REMOTE_RETRIES=1 "$tools/pcr-dump" cat "http://127.0.0.1:$fport/ds" >"$tmp/fault.out" 2>&1 &&
   grep -q "http://127.0.0.1:$fport/ds/.*: bytes .*: stalled: no byte for 1000 ms after 2 attempts" "$tmp/fault.out"; then
  ok; else bad "a server that always stalls is named after the retries"; cat "$tmp/fault.out"; fi
stop_fault
# An endpoint that accepts connections and never answers fails after the
# answer timeout, however many retries are left.
start_fault hang 1
started=$(date +%s)
if ! PCR_REMOTE_ANSWER_TIMEOUT_MS=3000 PCR_REMOTE_TIMEOUT_MS=30000 PCR_REMOTE_RETRIES=20 \
     "$tools/pcr-dump" "http://127.0.0.1:$fport/ds" >"$tmp/fault.out" 2>&1 &&
   grep -q "http://127.0.0.1:$fport/ds/dataset.pcrd: bytes 0-[0-9]*: no answer in [0-9]* ms" "$tmp/fault.out" &&
   [ $(($(date +%s) - started)) -lt 20 ]; then ok; else bad "a hung endpoint fails after the answer timeout"; cat "$tmp/fault.out"; fi
stop_fault
if ! PCR_REMOTE_CONCURRENCY=0 "$tools/pcr-dump" "$url/ds" >"$tmp/out" 2>&1 && grep -q "PCR_REMOTE_CONCURRENCY='0': expected 1..1024" "$tmp/out"; then
  ok; else bad "a bad PCR_REMOTE_CONCURRENCY is refused"; cat "$tmp/out"; fi
unset PCR_REMOTE_TIMEOUT_MS

# Python reads the same bytes and fields.
python=/usr/bin/python3
if [ -d "$tools/../python/pcr" ] && "$python" -c 'import numpy' 2>/dev/null; then
  if PYTHONPATH="$tools/../python" "$python" - "$tmp/www/ds" "$url/ds" >"$tmp/out" 2>&1 <<'PY'
import sys
import pcr
local, remote = pcr.ImageDataset(sys.argv[1]), pcr.ImageDataset(sys.argv[2], remote={"concurrency": 2, "timeout_ms": 5000})
assert len(local) == len(remote) == 24
for i in range(len(local)):
    assert local.read(i, 2) == remote.read(i, 2), i
    assert local.fields(i, ["caption", "tags"]) == remote.fields(i, ["caption", "tags"]), i
# Threads sharing one remote dataset each get their own images.
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(6) as pool:
    got = list(pool.map(lambda i: remote.read(i % len(remote), 1 + i % 3), range(4 * len(remote))))
for i, image in enumerate(got):
    assert image == local.read(i % len(local), 1 + i % 3), i
# A forked process (a DataLoader worker) reads with a client of its own and
# drops the parent's without waiting for its thread.
import os
pid = os.fork()
if pid == 0:
    same = remote.read(3, 2) == local.read(3, 2)
    del remote
    os._exit(0 if same else 1)
assert os.waitpid(pid, 0)[1] == 0
assert remote.read(4, 1) == local.read(4, 1)
PY
  then ok; else bad "Python over HTTP"; cat "$tmp/out"; fi
  # Opening a dataset is one GET of its manifest: its size comes with it.
  : >"$tmp/logs/access.log"
  if PYTHONPATH="$tools/../python" "$python" -c '
import sys, pcr
ds = pcr.ImageDataset(sys.argv[1])
assert (len(ds), ds.num_records, ds.classes) == (24, 5, ["misc", "textures", "video"]), (len(ds), ds.num_records, ds.classes)' "$url/ds" >"$tmp/out" 2>&1 &&
     [ "$(wc -l <"$tmp/logs/access.log")" -eq 1 ] && grep -q '"GET /ds/dataset.pcrd HTTP/1.1" 206 ' "$tmp/logs/access.log"; then
    ok; else bad "opening is one GET"; cat "$tmp/out" "$tmp/logs/access.log"; fi
  # A read's first touch of a file: its header, and its tail holding the
  # footer and the index, then the image with its record's labels and keys.
  : >"$tmp/logs/access.log"
  if PYTHONPATH="$tools/../python" "$python" -c '
import sys, pcr
local, remote = pcr.ImageDataset(sys.argv[1]), pcr.ImageDataset(sys.argv[2])
assert remote.read(7, 2) == local.read(7, 2) and remote.sample(7) == local.sample(7)' "$tmp/www/ds" "$url/ds" >"$tmp/out" 2>&1 &&
     [ "$(wc -l <"$tmp/logs/access.log")" -eq 4 ] && [ "$(grep -c '/ds/records-' "$tmp/logs/access.log")" -eq 3 ]; then
    ok; else bad "a file's first touch is one round trip"; cat "$tmp/out" "$tmp/logs/access.log"; fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
