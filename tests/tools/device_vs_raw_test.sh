#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/device_vs_raw.sh on the build under test, one short round of a
# bandwidth mode and a latency mode: it must run both tools and the raw
# program (plain, and with MRC's per-byte work), read a figure from each output (a changed column fails it) and
# print one table per mode with a row per round and a median row; bad
# arguments and a missing build must be clear errors (exit 2).
#   device_vs_raw_test.sh SCRIPT BUILD_DIR
set -euo pipefail
script="$1" build="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Ports of this run only (ctest runs other device tests beside it).
port=$((33000 + $$ % 2000))
udp=$((36000 + $$ % 2000))
rc=0
bash "$script" --rounds 1 --seconds 1 --modes burst,block --bin "$build" --port "$port" --udp-port "$udp" \
  >"$tmp/out" 2>"$tmp/err" || rc=$?
if [[ $rc != 0 ]]; then
  if grep -q "Address already in use\|cannot bind" "$tmp/err"; then echo "SKIP: ports in use"; exit 77; fi
  cat "$tmp/out" "$tmp/err" >&2
  fail "one round exited with $rc"
fi
cat "$tmp/out"
grep -q '^## burst (Gbit/s; goal: ratio >= 0.70)$' "$tmp/out" || fail "no burst table"
grep -q '^## block (us one way; goal: ratio <= 2.00)$' "$tmp/out" || fail "no block table"
# Each table: a round row and a median row of positive numbers. Latency:
# device, raw, device / raw. Bandwidth adds the raw program with MRC's
# per-byte work (w), w / raw and device / w.
num='[0-9]+\.?[0-9]*' q='[0-9]+\.[0-9]{3}'
grep -qE "^\| 1 \| $num \| $num \| $q \| $num \| $q \| $q \|\$" "$tmp/out" || fail "no bandwidth round row"
grep -qE "^\| 1 \| $num \| $num \| $q \|\$" "$tmp/out" || fail "no latency round row"
[[ $(grep -cE "^\| median( \| $num)+ \|\$" "$tmp/out") == 2 ]] || fail "median rows missing"
awk -F'|' '$2 ~ /^ 1 $/ { d = $3 + 0; r = $4 + 0; q = $5 + 0
  ok = d > 0 && r > 0 && q > d / r - 0.001 && q < d / r + 0.001
  if (NF > 6) { w = $6 + 0; ok = ok && w > 0 && $7 + 0 > w / r - 0.001 && $7 + 0 < w / r + 0.001 &&
                                       $8 + 0 > d / w - 0.001 && $8 + 0 < d / w + 0.001 }
  if (!ok) { print "bad row:" $0; bad = 1 } }
  END { exit bad }' "$tmp/out" || fail "a ratio is not device / raw, work / raw or device / work"

# Usage errors exit 2 and name the argument; a missing build says how to build.
expect2() {
  local want="$1"
  shift
  set +e
  bash "$script" "$@" >/dev/null 2>"$tmp/e2"
  local r=$?
  set -e
  [[ $r == 2 ]] || fail "$* exited with $r, not 2"
  grep -q -- "$want" "$tmp/e2" || fail "$*: the message does not say '$want': $(cat "$tmp/e2")"
}
expect2 "--rounds '0'" --rounds 0
expect2 "unknown mode 'foo'" --modes foo --bin "$build"
expect2 "port '70000'" --port 70000
expect2 "unknown argument '--bogus'" --bogus
expect2 "cmake --build --preset release" --bin "$tmp/none"
echo "device_vs_raw.sh: ok"
