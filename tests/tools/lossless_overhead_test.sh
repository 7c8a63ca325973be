#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/lossless_overhead.sh on a small all-reduce against the mrc-sim under
# test: it must read the counters it needs from the JSON (a renamed one
# fails it) and print one filled row per MTU and QP count; bad arguments
# and a missing binary must be clear errors.
#   lossless_overhead_test.sh SCRIPT MRC_SIM
set -euo pipefail
script="$1" sim="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0
MRC_SIM="$sim" bash "$script" --mtus "2048 4096" --qps 8 --bytes $((2 << 20)) --out "$tmp/table.md" \
  >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
[[ $rc == 0 ]] || { cat "$tmp/stderr" >&2; fail "the run exited with $rc"; }
cmp -s "$tmp/stdout" "$tmp/table.md" || fail "--out does not hold what was printed"
grep -q '^| MTU | QPs/peer | RoCE us | MRC us (gap) |' "$tmp/table.md" || fail "no table header"
for mtu in 2048 4096; do
  # MTU, QPs, three times, the header time and a signed difference.
  grep -Eq "^\| $mtu \| 8 \| [0-9.]+ \| [0-9.]+ \([+-][0-9.]+\) \| [0-9.]+ \([+-][0-9.]+\) \| [0-9.]+ \| [+-][0-9.]+ \|$" \
    "$tmp/table.md" || fail "no complete row for MTU $mtu"
done
h2=$(awk -F'|' '$2 ~ /2048/ {print $7}' "$tmp/table.md")
h4=$(awk -F'|' '$2 ~ /4096/ {print $7}' "$tmp/table.md")
# (Printed to 0.1 us, which at this size allows no closer check than "longer".)
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a > b > 0 else 1)" \
  "$h2" "$h4" || fail "header time at MTU 2048 ($h2) is not longer than at 4096 ($h4)"

if MRC_SIM="$tmp/none" bash "$script" >"$tmp/out2" 2>"$tmp/err2"; then fail "ran without a binary"; fi
grep -q 'cmake --build --preset release' "$tmp/err2" || fail "the missing-binary message says nothing useful"
set +e
MRC_SIM="$sim" bash "$script" --bogus >/dev/null 2>&1
rc=$?
MRC_SIM="$sim" bash "$script" --mtus >/dev/null 2>&1
rc2=$?
set -e
[[ $rc == 2 ]] || fail "--bogus exited with $rc, not 2"
[[ $rc2 == 2 ]] || fail "--mtus without a value exited with $rc2, not 2"
echo "lossless_overhead.sh: ok"
