#!/usr/bin/env bash
# Builds libjpeg-turbo from Debian's source package (the version the system
# library is built from) as a static, position-independent library (libpcr.so
# links it) instrumented for libFuzzer
# coverage, AddressSanitizer and UndefinedBehaviorSanitizer, and installs it
# into PREFIX. A -Dfuzz=true build set up with
# PKG_CONFIG_PATH=PREFIX/lib/pkgconfig links it instead of the system
# library, so the fuzzers see inside the JPEG parser.
# Needs clang, cmake, ninja, dpkg-dev and a deb-src line for Debian's main
# archive (apt-get source).
# usage: fuzz/build_libjpeg.sh PREFIX
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 PREFIX" >&2; exit 2; }
prefix=$(realpath -m "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get source -qq libjpeg-turbo >apt.log 2>&1; then
  cat apt.log >&2
  echo "$0: apt-get source libjpeg-turbo failed; add a deb-src entry for Debian's main archive and run apt-get update" >&2
  exit 1
fi
src=$(find . -maxdepth 1 -type d -name 'libjpeg-turbo-*' | head -n 1)
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined"
CC=clang CFLAGS="$flags" cmake -S "$src" -B build -G Ninja -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DENABLE_SHARED=0 -DENABLE_STATIC=1 \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DWITH_SIMD=0 -DWITH_TURBOJPEG=0 -DWITH_JAVA=0 \
  >cmake.log 2>&1 || { cat cmake.log >&2; exit 1; }
ninja -C build jpeg-static >ninja.log 2>&1 || { tail -n 40 ninja.log >&2; exit 1; }
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
cp build/libjpeg.a "$prefix/lib/"
cp build/jconfig.h "$src/jpeglib.h" "$src/jmorecfg.h" "$src/jerror.h" "$prefix/include/"
version=$(basename "$src" | sed 's/libjpeg-turbo-//')
cat >"$prefix/lib/pkgconfig/libjpeg.pc" <<PC
prefix=$prefix
Name: libjpeg
Description: libjpeg-turbo $version with libFuzzer coverage and sanitizers
Version: $version
Libs: -L\${prefix}/lib -ljpeg
Cflags: -I\${prefix}/include
PC
echo "libjpeg-turbo $version with fuzzer coverage and sanitizers in $prefix"
