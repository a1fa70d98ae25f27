#!/usr/bin/env bash
# Unpacks the JPEG photos of Debian's mate-backgrounds package into DIR.
# usage: bench/fetch_wallpapers.sh DIR
set -euo pipefail
dir=${1:?usage: bench/fetch_wallpapers.sh DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download mate-backgrounds >/dev/null && dpkg-deb -x mate-backgrounds_*.deb root)
mkdir -p "$dir"
find "$work/root" -iname '*.jpg' -exec cp {} "$dir"/ \;
echo "$(ls "$dir" | wc -l) photos in $dir"
