#!/usr/bin/env bash
# Every ```cpp block of the README and doc/ is a whole translation unit that
# compiles against include/ with g++ and clang++ (when installed) under
# -Werror and the warnings a careful C++ project turns on. Then each block
# runs on the bundled sample: one with a main is linked against the build's
# libpcr and run in a directory holding train-pcr (the sample converted,
# with its fields) and rows.pcr (a table); one without takes the main its
# `<!-- main: STATEMENTS -->` line after the block gives (statements that
# return a pcr::Status). A block with neither fails the test.
# usage: readme_cpp_test.sh SOURCE_DIR [BUILD_DIR DATA_DIR | skip]
set -u
src=$1 build=${2:-skip} data=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '
  FNR == 1 { name = FILENAME; sub(".*/", "", name); sub("[.]md$", "", name) }
  /^```cpp$/ { n++; file = sprintf("%s/%s-snippet%02d.cc", dir, name, n); inside = 1; next }
  /^```/ && inside { inside = 0; close(file); last = file; next }
  /^<!-- main: .* -->$/ && last != "" {
    body = $0; sub("^<!-- main: ", "", body); sub(" -->$", "", body)
    print body > (last ".main"); close(last ".main"); last = ""; next
  }
  { if (!inside) last = "" }
  inside { print > file }
' "$src/README.md" "$src"/doc/*.md
snippets=("$tmp"/*snippet*.cc)
[ -e "${snippets[0]}" ] || { echo "FAIL: no cpp block in README.md or doc/"; exit 1; }
compilers=c++
command -v clang++ >/dev/null && compilers="c++ clang++"
passed=0 failed=0
for cxx in $compilers; do
  for f in "${snippets[@]}"; do
    if $cxx -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Werror \
         -I"$src/include" "$f" 2>"$tmp/err"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "FAIL: cpp block $(basename "$f" .cc) with $cxx:"
      cat "$tmp/err"
    fi
  done
done
echo "compiled: $passed passed, $failed failed"
if [ "$build" = skip ]; then
  echo "SKIP running the blocks: an instrumented build links only instrumented programs"
  [ "$failed" -eq 0 ]
  exit
fi

# The data the blocks read.
work=$tmp/work
mkdir -p "$work"
"$build/tools/pcr-convert" images "$data/sample" "$work/train-pcr" --images-per-record 4 \
  --fields "$data/fields/sample.jsonl" >/dev/null || { echo "FAIL: converting the sample"; exit 1; }
for r in $(seq 0 199); do
  echo "{\"label\": $r, \"dense\": {\"101\": $r.5, \"9\": $((r % 5))}, \"sparse\": {\"7\": [$r, $((r + 1))]}}"
done >"$work/rows.jsonl"
"$build/tools/pcr-convert" table "$work/rows.jsonl" "$work/table" --rows-per-stripe 64 >/dev/null &&
  mv "$work/table/rows.pcr" "$work/rows.pcr" || { echo "FAIL: converting the table"; exit 1; }
ran=0
for f in "${snippets[@]}"; do
  name=$(basename "$f" .cc)
  if ! grep -q '^int main(' "$f"; then
    if [ ! -e "$f.main" ]; then
      echo "FAIL: cpp block $name has no main and no <!-- main: ... --> line after it"
      failed=$((failed + 1))
      continue
    fi
    printf '\n#include <iostream>\nint main() {\n  const pcr::Status st = [&]() -> pcr::Status { %s }();\n  if (!st.ok()) std::cerr << st.ToString() << "\\n";\n  return st.ok() ? 0 : 1;\n}\n' \
      "$(cat "$f.main")" >>"$f"
  fi
  if ! c++ -std=c++20 "$f" -I"$src/include" -L"$build" -lpcr -Wl,-rpath,"$(realpath "$build")" -o "$tmp/$name" \
       2>"$tmp/err"; then
    echo "FAIL: cpp block $name does not link:"
    cat "$tmp/err"
    failed=$((failed + 1))
    continue
  fi
  if ! (cd "$work" && "$tmp/$name" train-pcr >"$tmp/out" 2>&1); then
    echo "FAIL: cpp block $name, run in a directory holding train-pcr and rows.pcr:"
    cat "$tmp/out"
    failed=$((failed + 1))
    continue
  fi
  ran=$((ran + 1))
done
echo "ran on the sample: $ran passed, $failed failed"
[ "$failed" -eq 0 ]
