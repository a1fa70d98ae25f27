#!/usr/bin/env bash
# Kills pcr-convert with SIGKILL at several moments of an image and of a
# table conversion. What a kill leaves is never accepted by `pcr-dump verify`
# unless the conversion had finished, and the same command run again
# completes with exactly the bytes of an uninterrupted run and no leftovers,
# keeping the record files the interrupted run had finished.
# usage: crash_test.sh TOOLS_DIR TEST_DATA_DIR
set -u
tools=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*"
}
ok() { passed=$((passed + 1)); }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run_killed DELAY_MS CMD...: starts CMD, kills it after DELAY_MS.
run_killed() {
  local delay=$1
  shift
  "$@" >/dev/null 2>&1 &
  local pid=$!
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

# run_killed_when JOURNAL CMD...: starts CMD and kills it once JOURNAL lists
# a finished file that skipped images (a "skip" line, then a "done" line),
# or lets it finish.
run_killed_when() {
  local journal=$1
  shift
  "$@" >/dev/null 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if awk '/^skip / { s = 1 } /^done / && s { f = 1 } END { exit !f }' "$journal" 2>/dev/null; then
      kill -9 "$pid" 2>/dev/null
      break
    fi
    sleep 0.002
  done
  wait "$pid" 2>/dev/null
}

# same_tree A B: the two directories hold the same names and bytes.
same_tree() {
  [ "$(ls -A "$1")" = "$(ls -A "$2")" ] || return 1
  local f
  for f in "$1"/* "$1"/.[!.]*; do
    [ -e "$f" ] || continue
    cmp -s "$f" "$2/$(basename "$f")" || return 1
  done
}

# finished_inodes DIR: "name inode" of each record file the journal of an
# interrupted image conversion in DIR lists as finished. Each is also
# hard-linked into $tmp/aside, so its inode number cannot be reused.
finished_inodes() {
  local journal="$1/.pcr-convert-incomplete"
  rm -rf "$tmp/aside"
  mkdir -p "$tmp/aside"
  [ -f "$journal" ] || return 0
  awk '$1 == "done" && $3 > 0 { printf "records-%05d.pcr\n", $2 }' "$journal" | while read -r f; do
    ln "$1/$f" "$tmp/aside/$f"
    echo "$f $(stat -c %i "$1/$f")"
  done
}

# crash_cycle NAME REF_DIR OUT_DIR COMPLETE_FILE CMD...: kills CMD at several
# fractions of its uninterrupted run time, checks what is left, reruns it.
crash_cycle() {
  local name=$1 ref=$2 out=$3 complete=$4
  shift 4
  local start end duration
  start=$(now_ms)
  "$@" >/dev/null 2>&1 || fail "$name: uninterrupted run"
  end=$(now_ms)
  duration=$((end - start))
  mv "$out" "$ref"
  local interrupted=0 partial=0 kept=0 pct
  for pct in 5 15 30 50 70 90; do
    rm -rf "$out"
    run_killed $((duration * pct / 100)) "$@"
    if [ -e "$complete" ]; then
      # Finished before the kill: it must be whole (and a rerun refuses to overwrite it).
      "$tools/pcr-dump" verify "$out" >/dev/null 2>&1 && ok || fail "$name at $pct%: finished output fails verify"
      rm -f "$out/.pcr-convert-incomplete"  # killed between the manifest and its removal
    else
      interrupted=$((interrupted + 1))
      [ -n "$(ls -A "$out" 2>/dev/null)" ] && partial=$((partial + 1))
      if "$tools/pcr-dump" verify "$out" >/dev/null 2>&1; then
        fail "$name at $pct%: verify accepts an interrupted conversion"
      else
        ok
      fi
      finished_inodes "$out" >"$tmp/before"
      if "$@" >/dev/null 2>"$tmp/err"; then ok; else fail "$name at $pct%: rerun failed: $(cat "$tmp/err")"; fi
      if [ -s "$tmp/before" ]; then
        kept=$((kept + 1))
        while read -r f inode; do
          [ "$(stat -c %i "$out/$f" 2>/dev/null)" = "$inode" ] && ok || fail "$name at $pct%: finished $f was written again"
        done <"$tmp/before"
      fi
    fi
    same_tree "$out" "$ref" && ok || fail "$name at $pct%: output differs from an uninterrupted run: $(ls -A "$out")"
  done
  echo "$name: $interrupted of 6 kills interrupted the conversion, $partial left files behind, $kept left finished files that the rerun kept"
  [ "$interrupted" -ge 2 ] && ok || fail "$name: too few kills landed inside the conversion ($duration ms)"
  [ "$partial" -ge 1 ] && ok || fail "$name: no kill left partial output to recover from"
  [ "$name" != images ] || [ "$kept" -ge 1 ] && ok || fail "$name: no kill left finished files to keep"
}

# Images: 20 copies of the sample, one thread, small records.
for i in $(seq -w 1 20); do
  for class in misc textures video; do
    mkdir -p "$tmp/src/$class"
    for f in "$data/sample/$class"/*; do cp "$f" "$tmp/src/$class/$i-$(basename "$f")"; done
  done
done
crash_cycle images "$tmp/images-ref" "$tmp/images" "$tmp/images/dataset.pcrd" \
  "$tools/pcr-convert" images "$tmp/src" "$tmp/images" --images-per-record 4 --jobs 1

# A run killed while --max-pixels 20000 skips 9 of every 24 images, rerun
# without the limit: files that skipped images are converted again, so the
# result equals a conversion that never had the limit.
"$tools/pcr-convert" images "$tmp/src" "$tmp/limits-ref" --images-per-record 4 --jobs 1 --skip-bad >/dev/null 2>&1 ||
  fail "limits: reference run"
start=$(now_ms)
"$tools/pcr-convert" images "$tmp/src" "$tmp/limits" --images-per-record 4 --jobs 1 --skip-bad --max-pixels 20000 \
  >/dev/null 2>&1 || fail "limits: limited run"
duration=$(($(now_ms) - start))
limited_kills=0
# Two kills by time, and one when the first file that skipped images is
# finished, which a busy machine cannot make miss.
for pct in 30% 60% first-skip; do
  rm -rf "$tmp/limits"
  if [ "$pct" = first-skip ]; then
    run_killed_when "$tmp/limits/.pcr-convert-incomplete" "$tools/pcr-convert" images "$tmp/src" "$tmp/limits" \
      --images-per-record 4 --jobs 1 --skip-bad --max-pixels 20000
  else
    run_killed $((duration * ${pct%\%} / 100)) "$tools/pcr-convert" images "$tmp/src" "$tmp/limits" --images-per-record 4 \
      --jobs 1 --skip-bad --max-pixels 20000
  fi
  [ -e "$tmp/limits/dataset.pcrd" ] && continue
  grep -q '^skip ' "$tmp/limits/.pcr-convert-incomplete" 2>/dev/null && limited_kills=$((limited_kills + 1))
  "$tools/pcr-convert" images "$tmp/src" "$tmp/limits" --images-per-record 4 --jobs 1 --skip-bad >/dev/null 2>&1 ||
    fail "limits, kill at $pct: rerun failed"
  same_tree "$tmp/limits" "$tmp/limits-ref" && ok || fail "limits, kill at $pct: rerun kept images the old limit skipped"
done
echo "limits: $limited_kills of 3 kills left finished files with skipped images"
[ "$limited_kills" -ge 1 ] && ok || fail "limits: no kill left finished files with skipped images"

# Tables: the bundled CSV repeated 150 times.
head -n 1 "$data/tabular/Soybean.csv" >"$tmp/big.csv"
for i in $(seq 1 150); do tail -n +2 "$data/tabular/Soybean.csv" >>"$tmp/big.csv"; done
crash_cycle table "$tmp/table-ref" "$tmp/table" "$tmp/table/big.pcr" \
  "$tools/pcr-convert" table "$tmp/big.csv" "$tmp/table" --rows-per-stripe 5000

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
