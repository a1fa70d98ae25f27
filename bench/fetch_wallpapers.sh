#!/usr/bin/env bash
# Unpacks the JPEG photos of Debian's wallpaper packages into DIR.
# usage: bench/fetch_wallpapers.sh DIR [PACKAGE...]   (default: mate-backgrounds)
set -euo pipefail
dir=${1:?usage: bench/fetch_wallpapers.sh DIR [PACKAGE...]}
shift
[ $# -gt 0 ] || set -- mate-backgrounds
packages=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dir"
for p in "${packages[@]}"; do
  (cd "$work" && apt-get download "$p" >/dev/null 2>&1 && dpkg-deb -x "$p"_*.deb "root-$p")
  find "$work/root-$p" -iname '*.jpg' -size +100k | while read -r f; do
    cp "$f" "$dir/$p-$(basename "$(dirname "$f")")-$(basename "$f")"
  done
done
echo "$(ls "$dir" | wc -l) photos in $dir"
