#!/usr/bin/env bash
# Fails when a file includes a header of a layer above or beside its own
# (DESIGN: format/ <- io/, jpeg/ <- reader/, writer/ <- loader/ <- tools/;
# include/pcr/ includes only itself, python/ only include/pcr/), a public
# header of such a layer (each pcr/ header belongs to the layer that
# implements it, named below), or a header private to another folder:
# reader/'s insides (*_rep.h, internals.h) only from reader/, its facade for
# tools (inspect.h) only from tools/, tests/, fuzz/ and bench/. fuzz/ may
# include tests/ (the in-process shard driver, tests/table_shards.h). The library
# layers and what each may include are meson.build's, read from the include
# roots it makes (BUILD_DIR/layer-roots/LAYER/*). Run by the build, so such
# an include stops it.
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
allowed[fuzz]="$below_tools fuzz tests"
allowed[bench]="$below_tools bench"
allowed[tests]="$below_tools tools tests"
# The layer each public header belongs to; "all": the whole library's.
declare -A owner=(
  [bytes.h]=format [export.h]=format [status.h]=format [types.h]=format [version.h]=format
  [io.h]=io
  [decode.h]=jpeg
  [image_dataset.h]=reader [table.h]=reader [verify.h]=reader
  [convert.h]=writer [convert_images.h]=writer [convert_table.h]=writer [option_names.h]=writer [popularity.h]=writer
  [decode_iterator.h]=loader [image_loader.h]=loader [record_iterator.h]=loader [sample_iterator.h]=loader
  [table_loader.h]=loader [transform.h]=loader
  [pcr.h]=all
)
# Headers only some folders may include, and which.
declare -A private=(
  ['reader/[a-z_]+_rep\.h']="reader"
  ['reader/internals\.h']="reader"
  ['reader/inspect\.h']="reader tools tests fuzz bench"
)
rules=$(mktemp)
trap 'rm -f "$rules"' EXIT
{
  for dir in "${!allowed[@]}"; do printf 'allowed\t%s\t%s\n' "$dir" "${allowed[$dir]}"; done
  for header in "${!owner[@]}"; do printf 'owner\t%s\t%s\n' "$header" "${owner[$header]}"; done
  for header in "${!private[@]}"; do printf 'private\t%s\t%s\n' "$header" "${private[$header]}"; done
} >"$rules"
# One grep over every folder, one awk over its includes.
for dir in "${!allowed[@]}"; do
  [ -d "$src/$dir" ] || continue
  grep -rnoE '#include ["<](format|io|jpeg|reader|writer|loader|tools|tests|fuzz|bench|pcr)/[^">]+[">]' \
    "$src/$dir" --include='*.h' --include='*.cc' | sed "s|^|$dir\t|" || true
done | awk -F'\t' -v rules="$rules" '
  function has(list, word,   n, w, i) {
    n = split(list, w, " ")
    for (i = 1; i <= n; i++) if (w[i] == word) return 1
    return 0
  }
  function spaced(list) { gsub(/ /, "/, ", list); return list }
  BEGIN {
    while ((getline line < rules) > 0) {
      split(line, r, "\t")
      if (r[1] == "allowed") allowed[r[2]] = r[3]
      else if (r[1] == "owner") owner[r[2]] = r[3]
      else { private[r[2]] = r[3]; patterns[++np] = r[2] }
    }
    bad = 0
  }
  {
    dir = $1
    match($2, /:[0-9]+:#include /)
    file = substr($2, 1, RSTART - 1)
    lineno = substr($2, RSTART + 1, RLENGTH - 11)
    include = substr($2, RSTART + RLENGTH - 9)
    path = substr(include, 11, length(include) - 11)
    layer = path; sub(/\/.*/, "", layer)
    if (!has(allowed[dir], layer)) {
      printf "%s:%s: %s/ may not include %s/ (%s)\n", file, lineno, dir, layer, include > "/dev/stderr"
      bad = 1
    }
    for (i = 1; i <= np; i++) {
      if (path ~ ("^" patterns[i] "$") && !has(private[patterns[i]], dir)) {
        printf "%s:%s: %s/ may not include %s: it is for %s/ only\n", file, lineno, dir, path,
               spaced(private[patterns[i]]) > "/dev/stderr"
        bad = 1
      }
    }
    if (layer != "pcr") next
    header = substr(path, 5)
    if (!(header in owner)) {
      printf "%s:%s: pcr/%s belongs to no layer: name its layer in tests/check_layers.sh\n", file, lineno,
             header > "/dev/stderr"
      bad = 1
      next
    }
    # A library layer, and a public header of one, includes the public
    # headers of its own layer and those below.
    own = ""
    if (dir == "include/pcr") {
      base = file; sub(/.*\//, "", base)
      if (!(base in owner)) {
        printf "%s:%s: pcr/%s belongs to no layer: name its layer in tests/check_layers.sh\n", file, lineno,
               base > "/dev/stderr"
        bad = 1
        next
      }
      own = owner[base]
    } else if (has(allowed[dir], dir) && dir != "tools" && dir != "tests" && dir != "fuzz" && dir != "bench") {
      own = dir
    }
    if (own == "" || own == "all") next
    if (owner[header] == "all" || !has(allowed[own], owner[header])) {
      printf "%s:%s: %s/ may not include pcr/%s: it is a header of %s\n", file, lineno, dir, header,
             (owner[header] == "all" ? "the whole library" : owner[header] "/") > "/dev/stderr"
      bad = 1
    }
  }
  END { exit bad }
' || exit 1
touch "$stamp"
