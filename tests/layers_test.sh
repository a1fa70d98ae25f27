#!/usr/bin/env bash
# tests/check_layers.sh passes the tree as it is and refuses each include
# planted into a copy of one of its files; and a library layer's include root
# (BUILD_DIR/layer-roots/LAYER) compiles an include of its own and lower
# layers' headers but not one of a layer above or beside.
# usage: layers_test.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
check="$src/tests/check_layers.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
if bash "$check" "$src" "$build" "$tmp/stamp" 2>"$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: the tree itself is refused:"
  cat "$tmp/err"
fi
# plant FILE INCLUDE MESSAGE: a copy of FILE's folder with INCLUDE added to
# FILE must be refused with MESSAGE.
plant() {
  local file=$1 include=$2 message=$3 dir
  dir=$(dirname "$file")
  rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/$dir" && cp -r "$src/$dir/." "$tmp/tree/$dir/"
  sed -i "1a #include \"$include\"" "$tmp/tree/$file"
  if bash "$check" "$tmp/tree" "$build" "$tmp/stamp" 2>"$tmp/err"; then
    failed=$((failed + 1))
    echo "FAIL: $include in $file is not refused"
  elif grep -qF "$file:2: $message" "$tmp/err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $include in $file: expected '$file:2: $message', got:"
    cat "$tmp/err"
  fi
}
plant tools/pcr_dump.cc reader/image_dataset_rep.h "tools/ may not include reader/image_dataset_rep.h: it is for reader/ only"
plant tests/table_test.cc reader/table_rep.h "tests/ may not include reader/table_rep.h: it is for reader/ only"
plant loader/record_iterator.cc reader/inspect.h "loader/ may not include reader/inspect.h: it is for reader/, tools/, tests/, fuzz/, bench/ only"
plant loader/record_iterator.cc reader/internals.h "loader/ may not include reader/internals.h: it is for reader/ only"
plant fuzz/transcode_fuzz.cc tools/cli.h "fuzz/ may not include tools/ (#include \"tools/cli.h\")"
plant bench/make_table.cc tests/test_util.h "bench/ may not include tests/"
plant python/pcr/binding/module.cc reader/inspect.h "python/ may not include reader/"
plant format/json.cc io/pcr_file.h "format/ may not include io/"
plant writer/table_writer.cc reader/inspect.h "writer/ may not include reader/"
plant include/pcr/table.h format/coding.h "include/pcr/ may not include format/"
plant format/json.cc pcr/image_loader.h "format/ may not include pcr/image_loader.h: it is a header of loader/"
plant writer/table_writer.cc pcr/table.h "writer/ may not include pcr/table.h: it is a header of reader/"
plant loader/transform.cc pcr/pcr.h "loader/ may not include pcr/pcr.h: it is a header of the whole library"
plant include/pcr/table.h pcr/convert_table.h "include/pcr/ may not include pcr/convert_table.h: it is a header of writer/"
plant reader/verify.cc pcr/unknown.h "pcr/unknown.h belongs to no layer: name its layer in tests/check_layers.sh"
# compiles LAYER WANT HEADER: a file in LAYER/ including HEADER compiles
# (WANT yes) or does not (no) with LAYER's include root alone.
compiles() {
  local layer=$1 want=$2 header=$3 got=no
  printf '#include "%s"\n' "$header" >"$tmp/planted.cc"
  if c++ -std=c++20 -fsyntax-only -I"$build/layer-roots/$layer" -I"$src/include" "$tmp/planted.cc" 2>"$tmp/err"; then
    got=yes
  fi
  if [ "$got" = "$want" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $layer/ including $header compiles: $got, expected $want"
    cat "$tmp/err"
  fi
}
compiles format yes format/coding.h
compiles format no io/pcr_file.h
compiles io yes io/pcr_file.h
compiles io no jpeg/coefficients.h
compiles jpeg no io/io_engine.h
compiles reader yes io/location.h
compiles reader no writer/atomic_file.h
compiles writer yes jpeg/coefficients.h
compiles writer no reader/inspect.h
compiles loader yes reader/record_reads.h
compiles loader no tools/cli.h
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
