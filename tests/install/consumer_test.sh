#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs this build into a staging prefix inside the build tree and uses
# it as a program outside the tree would:
#  - libopenmrc.so exports the C API and nothing else, carries the soname
#    libopenmrc.so.<major>, and lib_mrc.so names the same library;
#  - libopenmrc.a holds machine code only (no GCC LTO bytecode);
#  - tests/install/consumer/consumer.c is built with gcc and with clang
#    through pkg-config, through the CMake package (shared and static) and
#    through a plain makefile that links lib_mrc.so before -libverbs, and
#    each build runs a checked loopback transfer.
# usage: consumer_test.sh BUILD_DIR CONSUMER_SRC_DIR SANITIZED(0|1)
# Exits 77 (skipped) in a sanitizer build: its library needs the sanitizer
# runtime loaded first, which an ordinary consumer does not do.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
if [[ "$3" == 1 ]]; then
  echo "SKIP: a sanitizer build's libopenmrc needs the sanitizer runtime in the consumer; run this in the dev build"
  exit 77
fi
work="$build/install-test"
stage="$work/prefix"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$stage" >"$work/install.log"
pc=$(find "$stage" -name openmrc.pc | head -1)
[[ -n "$pc" ]] || { echo "FAIL: no openmrc.pc installed"; exit 1; }
libdir=$(sed -n 's/^libdir=\${prefix}\///p' "$pc")
lib="$stage/$libdir"
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The shared library's exports: the C API (mrc_*) and openmrc_version only,
# each in the version node OPENMRC_<major> (src/api/openmrc.map).
so=$(readlink -f "$lib/libopenmrc.so")
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libopenmrc\.so\.[0-9]+$ ]] || bad "soname is '$soname', expected libopenmrc.so.<major>"
[[ "$(readlink -f "$lib/lib_mrc.so")" == "$so" ]] || bad "lib_mrc.so does not name $so"
exports=$(nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@@OPENMRC_[0-9]*$//')
stray=$(grep -Ev '^(mrc_[a-z0-9_]+|openmrc_version)$' <<<"$exports" || true)
[[ -z "$stray" ]] || bad "libopenmrc exports more than the C API: $(head -5 <<<"$stray" | tr '\n' ' ')"
for f in mrc_create_context mrc_create_qp mrc_post_send mrc_ctl_query_device mrc_soft_open_device; do
  grep -qx "$f" <<<"$exports" || bad "libopenmrc does not export $f"
done
echo "libopenmrc.so: soname $soname, $(wc -l <<<"$exports") exported symbols, all of the C API"

# The headers where OCP's programs look for them (<mrc.h>, ...), OpenMRC's
# own under openmrc/, and nothing else at the include root.
inc="$stage/include"
for h in mrc.h mrc_api_ver.h mrc_ctl.h mrc_ctl_api_ver.h openmrc/mrc_soft.h openmrc/mrc.hpp openmrc/version.h; do
  [[ -f "$inc/$h" ]] || bad "header $h is not installed at $inc/$h"
done
extra=$(cd "$inc" && find . -name '*.h*' | sed 's#^\./##' | grep -Ev '^(mrc(_api_ver|_ctl|_ctl_api_ver)?\.h|openmrc/.*)$' || true)
[[ -z "$extra" ]] || bad "unexpected installed headers: $(tr '\n' ' ' <<<"$extra")"

# The static archive: machine code, no LTO sections.
sections=$(readelf -S --wide "$lib/libopenmrc.a")
! grep -q '\.gnu\.lto_' <<<"$sections" || bad "libopenmrc.a holds GCC LTO bytecode"
symbols=$(nm "$lib/libopenmrc.a" 2>/dev/null)
grep -q ' T mrc_create_qp$' <<<"$symbols" || bad "libopenmrc.a lacks mrc_create_qp"

port=24795
run() {  # run NAME BINARY
  if out=$("$2" "$port" 2>&1); then
    echo "$1: $out"
  else
    bad "$1: $out"
  fi
}
compilers=(gcc)
if command -v clang >/dev/null; then compilers+=(clang); else echo "clang not found: gcc only"; fi
export PKG_CONFIG_PATH="$lib/pkgconfig"
for cc in "${compilers[@]}"; do
  # pkg-config
  if $cc -O2 -Wall -Wextra -Werror -std=c11 $(pkg-config --cflags openmrc) -o "$work/pc-$cc" "$src/consumer.c" \
      $(pkg-config --libs openmrc) -Wl,-rpath,"$lib" 2>"$work/pc-$cc.log"; then
    run "pkg-config, $cc" "$work/pc-$cc"
  else
    bad "pkg-config build with $cc: $(cat "$work/pc-$cc.log")"
  fi
  # the CMake package, shared and static
  for link in shared static; do
    b="$work/cmake-$cc-$link"
    if cmake -S "$src" -B "$b" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$stage" -DOPENMRC_LINK=$link \
        -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" >"$b.log" 2>&1 && cmake --build "$b" >>"$b.log" 2>&1; then
      run "CMake ($link), $cc" "$b/consumer"
    else
      bad "CMake ($link) build with $cc: $(tail -20 "$b.log")"
    fi
  done
  # a plain makefile, lib_mrc.so before -libverbs
  mkdir -p "$work/make-$cc"
  if make -s -C "$work/make-$cc" -f "$src/Makefile" VPATH="$src" PREFIX="$stage" LIBDIR="$libdir" CC="$cc" \
      >"$work/make-$cc.log" 2>&1; then
    run "make, $cc" "$work/make-$cc/consumer"
  else
    bad "make with $cc: $(cat "$work/make-$cc.log")"
  fi
done
if ((failures)); then
  echo "$failures failure(s); logs in $work"
  exit 1
fi
rm -rf "$work"
echo "install consumer test: passed"
