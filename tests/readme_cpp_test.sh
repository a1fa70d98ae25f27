#!/usr/bin/env bash
# Every ```cpp block of the README and doc/ is a whole translation unit that
# compiles against include/ with g++ and clang++ (when installed) under
# -Werror and the warnings a careful C++ project turns on.
# usage: readme_cpp_test.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '
  FNR == 1 { name = FILENAME; sub(".*/", "", name); sub("[.]md$", "", name) }
  /^```cpp$/ { n++; file = sprintf("%s/%s-snippet%02d.cc", dir, name, n); inside = 1; next }
  /^```/ && inside { inside = 0; close(file); next }
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
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
