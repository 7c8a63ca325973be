#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tools/fabric/fabric on a small fabric (4 hosts, 2 planes, 2 T0 + 2 T1 per
# plane): ECMP reachability and L4 spreading, SRv6 uSID paths that go through
# exactly the T1 their carrier names, failures seen in the per-link counters,
# idempotent up/down that leaves no namespace behind. Needs root, iproute2,
# tc, ethtool, nft and ping; exits 77 (ctest SKIP) with a message otherwise.
#   fabric_test.sh FABRIC
set -euo pipefail
fabric="$1"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || skip "the fabric test needs root (network namespaces)"
for c in ip tc ethtool nft ping; do
  command -v "$c" >/dev/null || skip "the fabric test needs '$c' (scripts/deps.sh installs it)"
done
prefix="mrcft$(($$ % 100000))"
ip netns add "$prefix-probe" 2>/dev/null || skip "cannot create a network namespace here"
ip netns del "$prefix-probe"

F() { "$fabric" "$@" --prefix "$prefix"; }
tmp="$(mktemp -d)"
cleanup() {
  "$fabric" down --prefix "$prefix" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
step() { echo "--- [${SECONDS}s] $*"; }
count_ns() { ip netns list | awk '{print $1}' | grep -c "^$prefix-" || true; }

# One counter of a link from `status`: LINK as "a:dev -- b:dev", COL one of
# a_tx a_rx b_tx b_rx (packets).
snap() { F status >"$tmp/$1"; }
ctr() {
  local file="$1" link="$2" col="$3" n
  case "$col" in a_tx) n=5 ;; a_rx) n=7 ;; b_tx) n=9 ;; b_rx) n=11 ;; esac
  awk -v l="$link" -v n="$n" '($1 " " $2 " " $3) == l { print $n; found = 1 } END { if (!found) print "none" }' "$tmp/$file"
}
delta() {  # before after link col
  local a b
  a="$(ctr "$1" "$3" "$4")" b="$(ctr "$2" "$3" "$4")"
  [[ "$a" != none && "$b" != none ]] || fail "no link '$3' in status"
  echo $((b - a))
}
ping_ok() { ip netns exec "$prefix-$1" ping -6 -c 1 -W 2 -q "$2" >/dev/null 2>&1; }
# After a loss or a flap the neighbour entry may have failed: the first echo
# can fail while it is resolved again, so the first of 6 tries that answers counts.
ping_some() {
  local n
  for n in 1 2 3 4 5 6; do
    ip netns exec "$prefix-$1" ping -6 -c 1 -W 0.5 -q "$2" >/dev/null 2>&1 && return 0
  done
  return 1
}
udp_burst() {  # host dst n: n datagrams, each from a new socket (a new source port)
  ip netns exec "$prefix-$1" bash -c "for i in \$(seq $3); do echo x >/dev/udp/$2/9000; done" 2>/dev/null || true
}
addr() { echo "fd68:$2:$1::1" | sed 's/^fd68:0:0::1$/fd68::1/; s/^fd68:\([1-9]\):0::1$/fd68:\1::1/'; }  # host plane

# ---------------------------------------------------------------- arguments
step "usage errors name the bad argument"
set +e
out="$(F up --hosts x 2>&1)"; rc=$?
set -e
[[ $rc == 2 && "$out" == *"--hosts 'x'"* ]] || fail "--hosts x: rc $rc, '$out'"
set +e
out="$(F link sideways h0 h1 2>&1)"; rc=$?
set -e
[[ $rc == 2 && "$out" == *"sideways"* ]] || fail "link sideways: rc $rc, '$out'"
set +e
out="$(F goodput --rounds 0 2>&1)"; rc=$?
set -e
[[ $rc == 2 && "$out" == *"--rounds '0'"* ]] || fail "goodput --rounds 0: rc $rc, '$out'"
set +e
out="$(F goodput --mode srv6 2>&1)"; rc=$?
set -e
[[ $rc == 2 && "$out" == *"ECMP mode"* ]] || fail "goodput --mode srv6: rc $rc, '$out'"

step "carriers (no fabric needed)"
F carriers h0 h3 >"$tmp/carriers"
grep -q '^0 *0 *p0 *fd68::1 *fd68:0:3::1 *fd73:6900:1:801:2:1802::$' "$tmp/carriers" || fail "carrier h0->h3 plane 0 T1 0: $(cat "$tmp/carriers")"
grep -q '^1 *1 *p1 *fd68:1::1 *fd68:1:3::1 *fd73:6901:1:802:2:1802::$' "$tmp/carriers" || fail "carrier h0->h3 plane 1 T1 1"
[[ $(grep -c fd73 "$tmp/carriers") == 4 ]] || fail "expected 4 paths (2 planes x 2 T1)"
F carriers h0 h3 --json | grep '"paths":\[{"plane":0,"port":1,"t1":0,"dev":"p0","src_addr":"fd68::1","dst_addr":"fd68:0:3::1","carrier":"fd73:6900:1:801:2:1802::"' >/dev/null ||
  fail "carriers --json"
F ev-profile h0 h3 >"$tmp/ev.toml"
grep -q '^mode = "srv6"$' "$tmp/ev.toml" && grep -q '^count = 4$' "$tmp/ev.toml" ||
  fail "ev-profile: $(cat "$tmp/ev.toml")"
grep -q '{ port = 2, value = 6 },  # fd73:6901:1:802:2:1802::' "$tmp/ev.toml" || fail "ev-profile plane 1 T1 1"

# ---------------------------------------------------------------- ECMP
step "ECMP mode: up twice"
F up --mode ecmp --rate 200mbit >/dev/null
F up --mode ecmp --rate 200mbit >/dev/null
[[ $(count_ns) == 12 ]] || fail "expected 12 namespaces, found $(count_ns)"
[[ "$(ip netns exec "$prefix-h0" ethtool -k p0 | awk '/^rx-checksumming/ {print $2}')" == off ]] || fail "rx checksum offload still on"

step "ECMP mode: every host pair on every plane"
for s in 0 1 2 3; do
  for d in 0 1 2 3; do
    ((s != d)) || continue
    for p in 0 1; do ping_ok "h$s" "$(addr "$d" "$p")" || fail "ping h$s -> h$d plane $p"; done
  done
done

step "ECMP mode: UDP source ports spread over both T1s of each plane"
for p in 0 1; do
  snap e0
  udp_burst h0 "$(addr 3 "$p")" 64
  snap e1
  for j in 0 1; do
    n="$(delta e0 e1 "p$p-t0-0:u$j -- p$p-t1-$j:d0" b_rx)"
    ((n >= 8)) || fail "plane $p: only $n of 64 datagrams through T1 $j"
  done
done

step "ECMP mode: ev-profile, info and carriers follow the mode; up says what it keeps"
F ev-profile h0 h3 >"$tmp/ecmp.toml"
grep -q '^mode = "udp"$' "$tmp/ecmp.toml" && grep -q '^count = 4$' "$tmp/ecmp.toml" &&
  grep -q '^algorithm = "uet-1.0-nscc"$' "$tmp/ecmp.toml" || fail "ecmp ev-profile: $(cat "$tmp/ecmp.toml")"
for p in 0 1; do
  for j in 0 1; do
    # The port of plane p, T1 j: one of the device's EVs of plane p that
    # h0's T0 hashes onto T1 j.
    port="$(awk -v c="# plane $p, T1 $j" 'index($0, c) && match($0, /value = [0-9]+/) { print substr($0, RSTART + 8, RLENGTH - 8) }' "$tmp/ecmp.toml")"
    [[ -n "$port" ]] && ((port >= 49152 + 16 * p && port < 49152 + 16 * (p + 1))) ||
      fail "ecmp ev-profile: plane $p T1 $j: port '$port' is not one of the plane's EVs"
    dev="$(ip -n "$prefix-p$p-t0-0" -6 route get "$(addr 3 "$p")" from "$(addr 0 "$p")" iif h0 ipproto udp sport "$port" dport 4791 |
      grep -o 'dev u[0-9]*')"
    [[ "$dev" == "dev u$j" ]] || fail "ecmp ev-profile: plane $p port $port goes to '$dev', not T1 $j"
  done
done
F info >"$tmp/info"
grep -q '^ECMP: each T0 spreads' "$tmp/info" && ! grep -q 'SRv6' "$tmp/info" || fail "info in ECMP mode: $(cat "$tmp/info")"
set +e
out="$(F carriers h0 h3 2>&1)"; rc=$?
set -e
[[ $rc == 1 && "$out" == *"ECMP mode"*"fabric ev-profile h0 h3"* ]] || fail "carriers in ECMP mode: rc $rc, '$out'"
set +e
out="$(F ev-profile h0 h1 2>&1)"; rc=$?
set -e
[[ $rc == 1 && "$out" == *"share T0 0"* ]] || fail "ev-profile of hosts on one T0: rc $rc, '$out'"
out="$(F up)"
[[ "$out" == *"re-configuring it with its own --rate 200mbit, --loss 0, --mtu 9000"* ]] || fail "up reusing state: '$out'"

step "ECMP mode: a T0-T1 link down, the T0 sends everything up the other T1"
F link down p0-t0-0 p0-t1-1 >/dev/null
snap e2
udp_burst h0 "$(addr 3 0)" 64
snap e3
n0="$(delta e2 e3 "p0-t0-0:u0 -- p0-t1-0:d0" b_rx)"
n1="$(delta e2 e3 "p0-t0-0:u1 -- p0-t1-1:d0" b_rx)"
((n0 >= 64 && n1 == 0)) || fail "with T1 1's link down: $n0 via T1 0, $n1 via T1 1"
grep -q '^p0-t0-0:u1 -- p0-t1-1:d0 *down ' "$tmp/e3" || fail "status does not show the link down"
F link up p0-t0-0 p0-t1-1 >/dev/null
snap e4
udp_burst h0 "$(addr 3 0)" 64
snap e5
n1="$(delta e4 e5 "p0-t0-0:u1 -- p0-t1-1:d0" b_rx)"
((n1 >= 8)) || fail "link back up: only $n1 datagrams through T1 1"

step "down: no namespace left"
F down >/dev/null
[[ $(count_ns) == 0 ]] || fail "namespaces left after down: $(ip netns list | grep "^$prefix-")"

# ---------------------------------------------------------------- SRv6
step "SRv6 mode: up"
# A kernel without seg6local uSID routes (CONFIG_IPV6_SEG6_LWTUNNEL) is
# refused up front by the tool, with nothing built; the SRv6 steps are then
# skipped and the rest runs in ECMP mode.
mode=srv6
if ! out="$(F up 2>&1 >/dev/null)"; then
  [[ "$out" == *"srv6 mode: this kernel refuses"* ]] || fail "up in srv6 mode: $out"
  [[ $(count_ns) == 0 ]] || fail "a refused srv6 up left namespaces behind: $(count_ns)"
  echo "SKIP (the SRv6 steps): $out"
  mode=ecmp
  F up --mode ecmp >/dev/null
fi
if [[ "$mode" == srv6 ]]; then
[[ $(count_ns) == 12 ]] || fail "expected 12 namespaces, found $(count_ns)"
ping_ok h3 "$(addr 0 0)" || fail "plain IPv6 (no SRv6) h3 -> h0 plane 0 in srv6 mode"
ping_ok h3 "$(addr 0 1)" || fail "plain IPv6 (no SRv6) h3 -> h0 plane 1 in srv6 mode"

# Sends 10 echo requests h0 -> h3 encapsulated by the kernel with the
# carrier of (plane, T1); prints "replies <n> t1 <j>:<rx from T0 0> ...
# h3 <rx on h3's plane link>".
srv6_probe() {
  local p="$1" j="$2" carrier
  carrier="$(F carriers h0 h3 | awk -v p="$p" -v j="$j" '$1 == p && $2 == j { print $6 }')"
  [[ -n "$carrier" ]] || fail "no carrier for plane $p T1 $j"
  ip -n "$prefix-h0" -6 route replace "$(addr 3 "$p")/128" encap seg6 mode encap segs "$carrier" \
    via "$(addr 0 "$p" | sed 's/1$/fe/')" dev "p$p"
  snap s0
  local replies
  replies="$(ip netns exec "$prefix-h0" ping -6 -c 10 -i 0.02 -W 0.5 -s 200 "$(addr 3 "$p")" 2>/dev/null |
    awk '/packets transmitted/ { print $4 }')"
  snap s1
  printf 'replies %s' "${replies:-0}"
  local k
  for k in 0 1; do printf ' t1_%s %s' "$k" "$(delta s0 s1 "p$p-t0-0:u$k -- p$p-t1-$k:d0" b_rx)"; done
  printf ' h3 %s\n' "$(delta s0 s1 "h3:p$p -- p$p-t0-1:h3" a_rx)"
}
# A path is taken when its 10 requests crossed the named T1 and reached h3,
# and the other T1 saw at most a few packets (neighbour discovery).
expect_path() {  # plane t1 result
  local p="$1" j="$2" r="$3"
  set -- $r
  local replies="$2" t1_0="$4" t1_1="$6" h3="$8" mine other
  if ((j == 0)); then mine=$t1_0 other=$t1_1; else mine=$t1_1 other=$t1_0; fi
  ((mine >= 10 && other <= 3 && h3 >= 10)) || fail "plane $p T1 $j: $r"
}

step "SRv6 mode: each carrier goes through exactly its T1"
for p in 0 1; do
  for j in 0 1; do
    r="$(srv6_probe "$p" "$j")"
    echo "  plane $p T1 $j: $r"
    expect_path "$p" "$j" "$r"
    [[ "$(set -- $r; echo "$2")" == 10 ]] || fail "plane $p T1 $j: replies missing: $r"
  done
done

# What the software device does in SRv6 mode: an IPv6-in-IPv6 frame written
# whole to a raw socket (outer DA = the carrier, inner = the hosts' plane
# addresses, then UDP). With checksum offload off the receiver verifies the
# UDP checksum: one over the inner header arrives, one computed over the
# carrier (the shifted address) is dropped, as on real hardware. Python only
# builds the bytes; skipped where there is no python3.
if command -v python3 >/dev/null; then
  step "SRv6 mode: raw IPv6-in-IPv6 frames to a UDP socket, checksums verified"
  cat >"$tmp/raw.py" <<'PY'
import socket, struct, sys
role, src, dst, carrier, mode = sys.argv[1:6]
a6 = lambda a: socket.inet_pton(socket.AF_INET6, a)
if role == "recv":
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.bind((dst, 4791)); s.settimeout(2)
    with open(carrier, "w") as f: f.write("ready\n")
    try: print(s.recvfrom(64)[0].decode())
    except socket.timeout: print("nothing")
    sys.exit(0)
data = b"mrc-fabric"
ulen = 8 + len(data)
def csum(b):
    b += b"\0" * (len(b) % 2)
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16: t = (t & 0xFFFF) + (t >> 16)
    return (~t & 0xFFFF) or 0xFFFF
over = dst if mode == "inner" else carrier
c = csum(a6(src) + a6(over) + struct.pack("!I3xB", ulen, 17) + struct.pack("!HHHH", 50000, 4791, ulen, 0) + data)
inner = struct.pack("!IHBB", 0x60000000, ulen, 17, 64) + a6(src) + a6(dst) + struct.pack("!HHHH", 50000, 4791, ulen, c) + data
outer = struct.pack("!IHBB", 0x60000000, len(inner), 41, 64) + a6(src) + a6(carrier) + inner
socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW).sendto(outer, (carrier, 0))
PY
  for mode in inner carrier; do
    carrier="$(F carriers h1 h2 | awk '$1 == 1 && $2 == 0 { print $6 }')"
    rm -f "$tmp/ready"
    ip netns exec "$prefix-h2" python3 "$tmp/raw.py" recv - "$(addr 2 1)" "$tmp/ready" - >"$tmp/got" &
    rpid=$!
    for _ in $(seq 50); do [[ -s "$tmp/ready" ]] && break; sleep 0.05; done
    ip netns exec "$prefix-h1" python3 "$tmp/raw.py" send "$(addr 1 1)" "$(addr 2 1)" "$carrier" "$mode"
    wait "$rpid"
    got="$(cat "$tmp/got")"
    if [[ "$mode" == inner ]]; then
      [[ "$got" == mrc-fabric ]] || fail "a raw SRv6 frame h1 -> h2 (plane 1) did not reach the UDP socket: '$got'"
    else
      [[ "$got" == nothing ]] || fail "a UDP checksum over the carrier was accepted: checksums are not verified"
    fi
  done
fi

step "SRv6 mode: a dead T0-T1 link and a dead T1"
F link down p0-t0-0 p0-t1-1 >/dev/null
F switch down p1-t1-0 >/dev/null
r="$(srv6_probe 0 1)"
set -- $r
(($4 <= 3 && $6 == 0 && $8 <= 3)) || fail "plane 0 T1 1 through the dead link: $r"
r="$(srv6_probe 0 0)"
expect_path 0 0 "$r"  # replies may go back through the dead link: only the requests count
r="$(srv6_probe 1 0)"
set -- $r
(($4 == 0 && $6 <= 3 && $8 <= 3)) || fail "plane 1 T1 0 through the dead switch: $r"
r="$(srv6_probe 1 1)"
expect_path 1 1 "$r"
snap f0
[[ $(grep -c ' down ' "$tmp/f0") == 3 ]] || fail "status should show 3 links down: $(grep ' down ' "$tmp/f0")"
F status --json >"$tmp/status.json"
grep -q '"a":"p1-t0-0","a_dev":"u0","b":"p1-t1-0","b_dev":"d0","state":"down"' "$tmp/status.json" || fail "status --json"
if command -v jq >/dev/null; then jq -e '.links | length == 16' "$tmp/status.json" >/dev/null || fail "status --json is not 16 links"; fi

step "SRv6 mode: restored"
F link up p0-t0-0 p0-t1-1 >/dev/null
F switch up p1-t1-0 >/dev/null
for p in 0 1; do
  for j in 0 1; do
    r="$(srv6_probe "$p" "$j")"
    expect_path "$p" "$j" "$r"
    [[ "$(set -- $r; echo "$2")" == 10 ]] || fail "plane $p T1 $j after restore: $r"
  done
done
[[ $(F status | grep -c ' down ') == 0 ]] || fail "links still down after restore"

fi  # the SRv6 steps

step "loss and flap"
F loss h1 p0-t0-0 100 >/dev/null
! ip netns exec "$prefix-h1" ping -6 -c 2 -i 0.2 -W 0.5 -q "$(addr 2 0)" >/dev/null 2>&1 || fail "100% loss on h1's plane-0 link let a ping through"
ping_ok h1 "$(addr 2 1)" || fail "loss on plane 0 broke plane 1"
lost="$(F status | awk '$1 == "h1:p0" { print $14 }')"
((lost >= 1)) || fail "status counts $lost packets lost on h1's plane-0 link"
F loss h1 p0-t0-0 0 >/dev/null
ping_some h1 "$(addr 2 0)" || fail "loss 0 did not restore h1's plane-0 link"
F flap p0-t0-1 p0-t1-0 --period 0.2 --count 2 >/dev/null
[[ $(F status | grep -c ' down ') == 0 ]] || fail "a link is down after flap"
ping_some h2 "$(addr 0 0)" || fail "ping after flap"

step "idempotent up and down; down after a half-built fabric"
F up --mode "$mode" >/dev/null
[[ $(count_ns) == 12 ]] || fail "second up: $(count_ns) namespaces"
ping_ok h0 "$(addr 2 1)" || fail "ping after a second up"
F down >/dev/null
F down >/dev/null
[[ $(count_ns) == 0 ]] || fail "namespaces left after down"
# What an interrupted `up` leaves: namespaces with the prefix and no state.
ip netns add "$prefix-h0"
ip netns add "$prefix-p0-t0-0"
ip -n "$prefix-h0" link add p0 type veth peer name h0 netns "$prefix-p0-t0-0"
F down >/dev/null
[[ $(count_ns) == 0 ]] || fail "down left a half-built fabric behind"
echo "fabric test: ok"
