#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/load_quality.sh --quick against the mrc-sim under test: the script
# must run every scenario, read every counter it needs from the JSON (a
# renamed counter fails it), and print the table with one row per scenario
# and transport; a missing binary must be a clear error, not a traceback.
#   load_quality_test.sh SCRIPT MRC_SIM
set -euo pipefail
script="$1" sim="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0
MRC_SIM="$sim" bash "$script" --quick --out "$tmp/table.md" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
[[ $rc == 0 ]] || { cat "$tmp/stderr" >&2; fail "the quick run exited with $rc"; }
cmp -s "$tmp/stdout" "$tmp/table.md" || fail "--out does not hold what was printed"
grep -q '^| scenario | transport | FCT p50 / time | slowdown max | Jain | data pkts | rtx | spurious rtx (% data) |' \
  "$tmp/table.md" || fail "no table header"
# 2 rack-to-rack + 2 permutation + 2 all-to-all + 1 fat tree + 3 incast (one without QP hints) + 3 x 2 all-reduce
# + 2 x 2 lossless all-to-all rows.
rows=$(grep -c '^| [a-z]' "$tmp/table.md")
[[ $rows == 21 ]] || fail "expected 21 rows (header + 20), got $rows"
for t in mrc mrc-oblivious roce roce-pfc; do grep -q "^| [^|]* | $t |" "$tmp/table.md" || fail "no $t row"; done
# Every row's goals cell is filled in, and no cell is empty.
grep '^| [a-z]' "$tmp/table.md" | grep -q '|  |' && fail "an empty cell"
[[ $(grep -c '^- rack-to-rack\|^- permutation' "$tmp/table.md") == 4 ]] || fail "goodput-over-time lines missing"
[[ $(grep -c '^- all-reduce .*: mrc .* us, roce .* us' "$tmp/table.md") == 3 ]] || fail "all-reduce lines missing"
[[ $(grep -c '^- lossless all-to-all .*: mrc .* us (p50 .*), roce-pfc .* us (p50 .*), mrc/roce [0-9.]*: \(met\|missed\)$' \
  "$tmp/table.md") == 2 ]] || fail "lossless all-to-all lines missing"

# No binary: exit 1 and say how to build it.
if MRC_SIM="$tmp/none" bash "$script" --quick >"$tmp/out2" 2>"$tmp/err2"; then fail "ran without a binary"; fi
grep -q 'cmake --build --preset release' "$tmp/err2" || fail "the missing-binary message says nothing useful"
# Unknown option: usage error.
set +e
MRC_SIM="$sim" bash "$script" --bogus >/dev/null 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || fail "--bogus exited with $rc, not 2"
echo "load_quality.sh --quick: ok ($rows table lines)"
