#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs this build into a staging prefix inside the build tree and uses
# it as a program outside the tree would:
#  - libopenmrc.so exports the C API and the libibverbs entry points it
#    serves (ibv_*) and nothing else, carries the soname
#    libopenmrc.so.<major>, and lib_mrc.so names the same library;
#  - the headers are where OCP's programs include them (<mrc.h>, ...), and
#    OpenMRC's own under openmrc/;
#  - libopenmrc.a holds machine code only (no GCC LTO bytecode);
#  - tests/install/consumer/consumer.c is built with gcc and with clang
#    through pkg-config, through the CMake package (shared and static) and
#    through a plain makefile that links lib_mrc.so before -libverbs, and
#    each build runs a checked loopback transfer;
#  - tests/install/consumer/ocp_style.c (devices, PDs and MRs through
#    libibverbs, the rest through <mrc.h>), built by the makefile, runs as
#    server and client in two network namespaces this script creates (as
#    root; skipped with a message otherwise) and checks the data.
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

# The shared library's exports: the C API (mrc_*), openmrc_version and the
# libibverbs entry points it interposes, each in the version node
# OPENMRC_<major> (src/api/openmrc.map).
so=$(readlink -f "$lib/libopenmrc.so")
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libopenmrc\.so\.[0-9]+$ ]] || bad "soname is '$soname', expected libopenmrc.so.<major>"
[[ "$(readlink -f "$lib/lib_mrc.so")" == "$so" ]] || bad "lib_mrc.so does not name $so"
exports=$(nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@@OPENMRC_[0-9]*$//')
stray=$(grep -Ev '^(mrc_[a-z0-9_]+|openmrc_version|ibv_[a-z0-9_]+|_ibv_query_gid_(ex|table))$' <<<"$exports" || true)
[[ -z "$stray" ]] || bad "libopenmrc exports more than the C API: $(head -5 <<<"$stray" | tr '\n' ' ')"
for f in mrc_create_context mrc_create_qp mrc_post_send mrc_ctl_query_device mrc_soft_open_device \
    ibv_get_device_list ibv_open_device ibv_alloc_pd ibv_reg_mr ibv_query_gid; do
  grep -qx "$f" <<<"$exports" || bad "libopenmrc does not export $f"
done
echo "libopenmrc.so: soname $soname, $(wc -l <<<"$exports") exported symbols, the C API and ibv_* only"

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

# The OCP-style program across two network namespaces joined by a veth of
# MTU 9000 (its 4 KiB path MTU must not fragment): the gcc build with a
# configuration file naming the device, the clang build (where there is
# one) with no file, so the default device (the namespace's address).
netns_run() {
  if [[ $EUID -ne 0 ]] || ! command -v ip >/dev/null; then
    echo "SKIP: the OCP-style program across network namespaces needs root and ip(8)"
    return
  fi
  local s="omrc-s-$$" c="omrc-c-$$" vs="omrs$$" vc="omrc$$"
  if ! { ip netns add "$s" && ip netns add "$c" && ip link add "$vs" type veth peer name "$vc" &&
         ip link set "$vs" netns "$s" && ip link set "$vc" netns "$c" &&
         ip -n "$s" addr add 10.231.0.1/24 dev "$vs" && ip -n "$c" addr add 10.231.0.2/24 dev "$vc" &&
         ip -n "$s" link set "$vs" mtu 9000 up && ip -n "$c" link set "$vc" mtu 9000 up &&
         ip -n "$s" link set lo up && ip -n "$c" link set lo up; } 2>"$work/netns.log"; then
    bad "network namespaces: $(cat "$work/netns.log")"
    ip netns del "$s" 2>/dev/null || true
    ip netns del "$c" 2>/dev/null || true
    return
  fi
  printf '[[device]]\nname = "mrc_ns"\nplanes = ["10.231.0.1"]\nudp_port = 24797\n' >"$work/server.toml"
  printf '[[device]]\nname = "mrc_ns"\nplanes = ["10.231.0.2"]\nudp_port = 24797\n' >"$work/client.toml"
  local cc bin dev srv_env cli_env
  for cc in "${compilers[@]}"; do
    bin="$work/make-$cc/ocp_style"
    [[ -x "$bin" ]] || continue
    if [[ "$cc" == gcc ]]; then
      dev=mrc_ns srv_env="OPENMRC_CONFIG=$work/server.toml" cli_env="OPENMRC_CONFIG=$work/client.toml"
    elif [[ -e /etc/openmrc/devices.toml ]]; then
      echo "SKIP: the default-device run ($cc): /etc/openmrc/devices.toml exists here"
      continue
    else
      dev=mrc_soft0 srv_env="-uOPENMRC_CONFIG" cli_env="-uOPENMRC_CONFIG"
    fi
    ip netns exec "$s" env "$srv_env" timeout 30 "$bin" server "$dev" 18515 >"$work/srv-$cc.log" 2>&1 &
    local spid=$!
    if ip netns exec "$c" env "$cli_env" timeout 30 "$bin" client "$dev" 18515 10.231.0.1 >"$work/cli-$cc.log" 2>&1 &&
       wait "$spid"; then
      echo "OCP-style program across namespaces ($cc, device $dev): $(cat "$work/srv-$cc.log"); $(cat "$work/cli-$cc.log")"
    else
      wait "$spid" 2>/dev/null || true
      bad "OCP-style program across namespaces ($cc, device $dev): server: $(cat "$work/srv-$cc.log") client: $(cat "$work/cli-$cc.log")"
    fi
  done
  ip netns del "$s"
  ip netns del "$c"
}
netns_run

if ((failures)); then
  echo "$failures failure(s); logs in $work"
  exit 1
fi
rm -rf "$work"
echo "install consumer test: passed"
