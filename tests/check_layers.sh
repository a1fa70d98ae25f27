#!/usr/bin/env bash
# Fails when a file includes a header of a layer above or beside its own
# (DESIGN: format/ <- io/, jpeg/ <- reader/, writer/ <- loader/ <- tools/;
# include/pcr/ includes only itself, python/ only include/pcr/). Run by the
# build, so such an include stops it.
# usage: tests/check_layers.sh SOURCE_DIR STAMP
set -euo pipefail
src=$1 stamp=$2
declare -A allowed=(
  [include/pcr]="pcr"
  [format]="format pcr"
  [io]="format io pcr"
  [jpeg]="format jpeg pcr"
  [reader]="format io reader pcr"
  [writer]="format io jpeg writer pcr"
  [loader]="format io jpeg reader loader pcr"
  [python]="pcr"
)
bad=0
for dir in "${!allowed[@]}"; do
  while IFS=: read -r file line include; do
    layer=$(sed -E 's/#include ["<]([a-z]+)\/.*/\1/' <<<"$include")
    if ! grep -qw "$layer" <<<"${allowed[$dir]}"; then
      echo "$file:$line: $dir/ may not include $layer/ ($include)" >&2
      bad=1
    fi
  done < <(grep -rnoE '#include ["<](format|io|jpeg|reader|writer|loader|tools|tests|fuzz|bench|pcr)/[^">]+[">]' \
             "$src/$dir" --include='*.h' --include='*.cc' || true)
done
[ "$bad" -eq 0 ] || exit 1
touch "$stamp"
