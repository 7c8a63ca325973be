#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mrc_raw_udp's MRC-work options: with --icrc the sender's ICRC (computed in
# the staging copy's pass for GSO bursts, over the gathered pieces per
# datagram) must check at the receiver, with the soft device's own code, on
# every datagram; --place copies the payloads; bad combinations are clear
# errors (exit 2).
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
  "$raw" bw --seconds 0.1 "$@" >/dev/null 2>"$tmp/e2"
  local r=$?
  set -e
  [[ $r == 2 ]] || fail "$* exited with $r, not 2"
  grep -q -- "$want" "$tmp/e2" || fail "$*: the message does not say '$want': $(cat "$tmp/e2")"
}
expect2 "shorter than a BTH" --icrc --header-bytes 8
expect2 "shorter than a BTH" --icrc
expect2 "--place: needs --header-bytes" --place
echo "raw_udp_test.sh: ok"
