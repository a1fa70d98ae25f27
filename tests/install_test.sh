#!/usr/bin/env bash
# Installs pcr into a staging directory (meson install --destdir) and builds
# a program against that install alone, through pkg-config with a plain
# compiler command line and an rpath, as doc/cpp.md says (MODE=pkg-config),
# or through the installed CMake package (MODE=cmake, find_package(pcr
# MAJOR.MINOR), which takes no other minor version). The program reads a
# dataset that the installed pcr-convert wrote at fidelity 2, and its images
# must equal what the installed pcr-dump extracts. pcr.pc is relocatable, and
# every public header compiles on its own under -Wconversion
# -Wsign-conversion with g++ and clang++.
set -euo pipefail
mode=$1 build=$2 consumer=$3 data=$4
unset LD_LIBRARY_PATH  # meson test points it at the build tree
[ "$mode" != skip ] || { echo "SKIP: an instrumented build links only instrumented programs"; exit 77; }
for tool in pkg-config c++ ${mode/pkg-config/}; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
meson install -C "$build" --destdir "$stage/root" --no-rebuild --quiet
pc=$(find "$stage/root" -name pcr.pc)
[ -n "$pc" ] || { echo "FAIL: no pcr.pc installed"; exit 1; }
grep -q '^prefix=${pcfiledir}' "$pc" || { echo "FAIL: pcr.pc is not relocatable: $(head -n 1 "$pc")"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(dirname "$(dirname "$pc")")
[ "$(realpath "$(pkg-config --variable=libdir pcr)")" = "$(realpath "$libdir")" ] ||
  { echo "FAIL: pcr.pc's libdir is not where it was installed"; exit 1; }
bin=$(dirname "$(find "$stage/root" -name pcr-convert -type f)")
includedir=$(pkg-config --variable=includedir pcr)
soname=$(objdump -p "$libdir/libpcr.so" | awk '/SONAME/ {print $2}')
[[ "$soname" == libpcr.so.[0-9]* ]] || { echo "FAIL: SONAME '$soname'"; exit 1; }

# libpcr exports pcr's symbols alone (libpcr.map), and a shared-only
# install asks pkg-config for no dependency's -dev package.
others=$(nm -D --defined-only "$libdir/libpcr.so" | c++filt | cut -d' ' -f3- |
  grep -v -e '^pcr::' -e '^typeinfo for pcr::' -e '^typeinfo name for pcr::' -e '^vtable for pcr::' || true)
[ -z "$others" ] || { echo "FAIL: libpcr exports symbols outside pcr::"; head -n 20 <<<"$others"; exit 1; }
[ "$(nm -D --defined-only "$libdir/libpcr.so" | grep -c ' [TWVBDR] ')" -gt 50 ] ||
  { echo "FAIL: libpcr exports almost nothing"; exit 1; }
if ! find "$stage/root" -name libpcr.a | grep -q .; then
  if grep -q '^Requires' "$pc"; then echo "FAIL: pcr.pc requires packages the shared library's users need not have:"; grep '^Requires' "$pc"; exit 1; fi
fi

# The public headers give no way into a class's private parts.
if grep -n 'rep()\|Rep&' "$includedir"/pcr/*.h; then echo "FAIL: a public header exposes its Rep"; exit 1; fi
compilers=c++
command -v clang++ >/dev/null && compilers="c++ clang++"
for cxx in $compilers; do
  for h in "$includedir"/pcr/*.h; do
    echo "#include <pcr/$(basename "$h")>" |
      $cxx -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Werror \
        -I"$includedir" -x c++ - || { echo "FAIL: $h does not compile on its own with $cxx"; exit 1; }
  done
done

"$bin/pcr-convert" images "$data/sample" "$stage/ds" --images-per-record 8 >/dev/null
"$bin/pcr-dump" extract "$stage/ds" "$stage/expected" --fidelity 2 >/dev/null
mkdir -p "$stage/expected-all" && ln -s "$stage/expected" "$stage/expected-all/2"
version=$(sed -n 's/^Version: //p' "$pc")
IFS=. read -r major minor _ <<<"$version"
case $mode in
  pkg-config)
    # shellcheck disable=SC2046
    c++ -std=c++20 "$consumer/consumer.cc" $(pkg-config --cflags --libs pcr) \
      -Wl,-rpath,"$(realpath "$(pkg-config --variable=libdir pcr)")" -o "$stage/consumer" ;;
  cmake)
    config=$(find "$stage/root" -name pcrConfig.cmake)
    cmake -S "$consumer" -B "$stage/cmake" -DCMAKE_BUILD_TYPE=Release -Dpcr_DIR="$(dirname "$config")" \
      -DPCR_WANT="$major.$minor" >/dev/null
    cmake --build "$stage/cmake" >/dev/null
    cp "$stage/cmake/consumer" "$stage/consumer"
    # The SONAME changes with every minor version before 1.0: no other
    # minor version is compatible.
    for want in "$major.$minor" "$major.$((minor + 1))" "$major.$((minor > 0 ? minor - 1 : 1))"; do
      mkdir -p "$stage/find-$want"
      printf 'cmake_minimum_required(VERSION 3.16)\nproject(find LANGUAGES CXX)\nfind_package(pcr %s REQUIRED)\n' \
        "$want" >"$stage/find-$want/CMakeLists.txt"
      if cmake -S "$stage/find-$want" -B "$stage/find-$want/build" -Dpcr_DIR="$(dirname "$config")" >/dev/null 2>&1
      then found=yes; else found=no; fi
      expected=no
      [ "$want" = "$major.$minor" ] && expected=yes
      [ "$found" = "$expected" ] || { echo "FAIL: find_package(pcr $want) with $version installed: $found"; exit 1; }
    done ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
# pkg-config: the rpath finds libpcr; CMake sets the build tree's rpath.
"$stage/consumer" "$stage/ds" "$stage/got"
diff -r "$stage/expected" "$stage/got" >/dev/null || { echo "FAIL: images differ from pcr-dump extract"; exit 1; }
# (Captured first: grep -q may stop reading early, and pipefail would then
# report ldd's SIGPIPE.)
loaded=$(ldd "$stage/consumer")
lib=$(awk '/libpcr\.so/ {print $3}' <<<"$loaded")
[ -n "$lib" ] && [ "$(dirname "$(realpath "$lib")")" = "$(realpath "$libdir")" ] ||
  { echo "FAIL: the consumer does not load the staged libpcr: $loaded"; exit 1; }
# The Python package, when built, imports from the staged site-packages
# and reads the dataset through the staged libpcr.
init=$(find "$stage/root" -path '*/pcr/__init__.py' | head -n 1)
if [ "$mode" = pkg-config ] && [ -n "$init" ]; then
  PYTHONPATH=$(dirname "$(dirname "$init")") LD_LIBRARY_PATH="$libdir" /usr/bin/python3 -c '
import sys, pcr
ds = pcr.ImageDataset(sys.argv[1])
assert len(ds) == 24 and ds.read(0, 2) == open(sys.argv[2] + "/2/" + ds.sample(0)[1], "rb").read(), "read differs"
assert pcr.__file__.startswith(sys.argv[3]), pcr.__file__
' "$stage/ds" "$stage/expected-all" "$stage/root" || { echo "FAIL: the staged Python package"; exit 1; }
fi
echo "$mode consumer: 1 passed, 0 failed"
