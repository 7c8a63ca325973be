#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mrc_raw_udp's MRC-work options: with --icrc the sender's ICRC (computed in
# the staging copy's pass for GSO bursts, over the gathered pieces per
# datagram) must check at the receiver, with the soft device's own code, on
# every datagram; --place copies the payloads; bad combinations are clear
# errors (exit 2). send / recv carry paced datagrams between two addresses
# over two planes, each once.
#   raw_udp_test.sh MRC_RAW_UDP
set -euo pipefail
raw="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# One short run; its JSON must show traffic received and no ICRC failure.
check_run() {
  local name="$1"
  shift
  "$raw" --json "$tmp/$name.json" bw --size 4140 --seconds 0.3 --header-bytes 40 --icrc "$@" >"$tmp/$name.out" ||
    fail "$name: exited with $?"
  cat "$tmp/$name.out"
  grep -q '"icrc": true' "$tmp/$name.json" || fail "$name: the JSON does not say icrc"
  grep -qE '"icrc_errors": 0,?$' "$tmp/$name.json" || fail "$name: ICRC failures: $(grep icrc_errors "$tmp/$name.json")"
  grep -q "icrc:     0 datagrams failed the check" "$tmp/$name.out" || fail "$name: no ICRC line in the output"
  # The receiver's datagram count (the second "datagrams" of the JSON) is positive.
  local got
  got=$(grep -E '"datagrams": [0-9]+' "$tmp/$name.json" | sed -n 2p | tr -dc 0-9)
  [[ -n "$got" && "$got" -gt 0 ]] || fail "$name: the receiver counted no datagrams"
}
check_run gso_staged --method gso --burst 15 --batch 2 --stage --place
check_run mmsg_gathered --method mmsg --batch 8 --place
check_run gso_gathered --method gso --burst 8 --batch 2

expect2() {
  local want="$1"
  shift
  set +e
  "$raw" "$@" >/dev/null 2>"$tmp/e2"
  local r=$?
  set -e
  [[ $r == 2 ]] || fail "$* exited with $r, not 2"
  grep -q -- "$want" "$tmp/e2" || fail "$*: the message does not say '$want': $(cat "$tmp/e2")"
}
expect2 "shorter than a BTH" bw --seconds 0.1 --icrc --header-bytes 8
expect2 "shorter than a BTH" bw --seconds 0.1 --icrc
expect2 "--place: needs --header-bytes" bw --seconds 0.1 --place

# send / recv between two "hosts" over two "planes" (127.0.0.1 and
# 127.0.0.2 on loopback), paced to 100 Mbit/s a plane for 0.4 s: every
# datagram arrives once, in sequence, on both planes, at about the pace
# (2 x 100 Mbit/s less the headers the pace counts: 0.19 Gbit/s; the bounds
# are loose, the machine may be busy).
port=$((20000 + $$ % 20000))
"$raw" --json "$tmp/recv.json" recv --at 127.0.0.1,127.0.0.2 --port "$port" --idle-ms 300 --max-seconds 20 \
  >"$tmp/recv.out" 2>&1 &
recv_pid=$!
sleep 0.3
"$raw" --json "$tmp/send.json" send --from 127.0.0.1,127.0.0.2 --to 127.0.0.1,127.0.0.2 --port "$port" \
  --seconds 0.4 --rate-bps 100000000 >"$tmp/send.out" || fail "send: exited with $?"
wait "$recv_pid" || fail "recv: exited with $?"
cat "$tmp/send.out" "$tmp/recv.out"
sent=$(grep -oE '"datagrams": [0-9]+' "$tmp/send.json" | tr -dc 0-9)
got=$(grep -oE '"unique_datagrams": [0-9]+' "$tmp/recv.json" | tr -dc 0-9)
[[ -n "$sent" && "$sent" -gt 100 ]] || fail "send: only '$sent' datagrams sent"
[[ "$got" == "$sent" ]] || fail "recv: $got unique datagrams of $sent sent"
grep -qE '"missing": 0,?$' "$tmp/recv.json" || fail "recv: sequence gaps: $(grep missing "$tmp/recv.json")"
grep -qE '"duplicates": 0,?$' "$tmp/recv.json" || fail "recv: duplicates: $(grep duplicates "$tmp/recv.json")"
awk '$1 == "goodput:" { exit !($2 > 0.1 && $2 < 0.3) }' "$tmp/recv.out" || fail "recv: goodput off the pace"
# Both planes carried about half.
planes="$(tr -d ' \n' <"$tmp/recv.json" | grep -o '"plane_bytes":\[[0-9,]*\]' | tr -dc '0-9,')"
awk -F, -v p="$planes" 'BEGIN { split(p, b, ","); exit !(length(b) == 2 && b[1] > 0.4 * (b[1] + b[2]) && b[2] > 0.4 * (b[1] + b[2])) }' ||
  fail "recv: bytes per plane '$planes', not about half each"
expect2 "--from has 1 addresses, --to 2" send --from 127.0.0.1 --to 127.0.0.1,127.0.0.2 --seconds 0.1
expect2 "--to 'nowhere'" send --to nowhere --seconds 0.1
expect2 "--size 8" send --to 127.0.0.1 --size 8 --seconds 0.1
echo "raw_udp_test.sh: ok"
