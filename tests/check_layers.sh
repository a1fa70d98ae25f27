#!/usr/bin/env bash
# Fails when a file includes a header of a layer above or beside its own
# (DESIGN: format/ <- io/, jpeg/ <- reader/, writer/ <- loader/ <- tools/;
# include/pcr/ includes only itself, python/ only include/pcr/), or a header
# private to another folder: reader/'s insides (*_rep.h, internals.h) only
# from reader/, its facade for tools (inspect.h) only from tools/, tests/,
# fuzz/ and bench/. The library layers and what each may include are
# meson.build's, read from the include roots it makes
# (BUILD_DIR/layer-roots/LAYER/*). Run by the build, so such an include
# stops it.
# usage: tests/check_layers.sh SOURCE_DIR BUILD_DIR STAMP
set -euo pipefail
src=$1 build=$2 stamp=$3
declare -A allowed=([include/pcr]="pcr" [python]="pcr")
below_tools="pcr"
for root in "$build"/layer-roots/*/; do
  layer=$(basename "$root")
  allowed[$layer]="$(cd "$root" && echo *) pcr"
  below_tools="$below_tools $layer"
done
if [ "$below_tools" = "pcr" ]; then
  echo "$build/layer-roots: no include roots; configure the build first" >&2
  exit 1
fi
allowed[tools]="$below_tools tools"
allowed[fuzz]="$below_tools fuzz"
allowed[bench]="$below_tools bench"
allowed[tests]="$below_tools tools tests"
# Headers only some folders may include, and which.
declare -A private=(
  ['reader/[a-z_]+_rep\.h']="reader"
  ['reader/internals\.h']="reader"
  ['reader/inspect\.h']="reader tools tests fuzz bench"
)
bad=0
for dir in "${!allowed[@]}"; do
  [ -d "$src/$dir" ] || continue
  while IFS=: read -r file line include; do
    layer=$(sed -E 's/#include ["<]([a-z]+)\/.*/\1/' <<<"$include")
    if ! grep -qw "$layer" <<<"${allowed[$dir]}"; then
      echo "$file:$line: $dir/ may not include $layer/ ($include)" >&2
      bad=1
    fi
    path=$(sed -E 's/#include ["<]([^">]+)[">]/\1/' <<<"$include")
    for header in "${!private[@]}"; do
      if grep -qxE "$header" <<<"$path" && ! grep -qw "$dir" <<<"${private[$header]}"; then
        echo "$file:$line: $dir/ may not include $path: it is for $(sed 's| |/, |g' <<<"${private[$header]}")/ only" >&2
        bad=1
      fi
    done
  done < <(grep -rnoE '#include ["<](format|io|jpeg|reader|writer|loader|tools|tests|fuzz|bench|pcr)/[^">]+[">]' \
             "$src/$dir" --include='*.h' --include='*.cc' || true)
done
[ "$bad" -eq 0 ] || exit 1
touch "$stamp"
