#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/scale.sh on a small fabric against the mrc-sim under test: one
# filled row per partition count, the same packet-hops on 1 and 2 partitions
# (the parallel engine's results do not depend on the split) with the RSS
# per host-plane and mrc-sim's memory estimate beside it, a refusal row
# for a fabric too large to build, and clear errors for bad arguments and a
# missing binary.
#   scale_test.sh SCRIPT MRC_SIM
set -euo pipefail
script="$1" sim="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0
bash "$script" --bin "$sim" --hosts 512 --partitions "1 2" --time-limit-ms 0.005 --out "$tmp/table.md" \
  >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
[[ $rc == 0 ]] || { cat "$tmp/stderr" >&2; fail "the run exited with $rc"; }
cmp -s "$tmp/stdout" "$tmp/table.md" || fail "--out does not hold what was printed"
grep -q '^| hosts | planes | partitions | wall s | CPU s | packet-hops |' "$tmp/table.md" || fail "no table header"
for p in 1 2; do
  grep -Eq "^\| 512 \| 8 \| $p \| [0-9.]+ \| [0-9.]+ \| [1-9][0-9]* \| ([0-9.]+ M|-) \| [0-9.]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \|$" "$tmp/table.md" ||
    fail "no complete row for $p partition(s)"
done
h1=$(awk -F'|' '$4 ~ /^ 1 $/ {print $7}' "$tmp/table.md")
h2=$(awk -F'|' '$4 ~ /^ 2 $/ {print $7}' "$tmp/table.md")
[[ "$h1" == "$h2" ]] || fail "packet-hops differ between 1 ($h1) and 2 ($h2) partitions"

# 32 planes x 131,072 hosts is far beyond any CI machine: refused before building.
bash "$script" --bin "$sim" --hosts 131072 --planes 32 --partitions 1 >"$tmp/big" 2>&1 || fail "a refused run failed the script"
grep -Eq '^\| 131072 \| 32 \| 1 \| not run \(exit 2\): mrc-sim: this run needs about' "$tmp/big" ||
  fail "no refusal row for a fabric too large: $(cat "$tmp/big")"

if bash "$script" --bin "$tmp/none" >"$tmp/out2" 2>"$tmp/err2"; then fail "ran without a binary"; fi
grep -q 'cmake --build build/release --target mrc-sim' "$tmp/err2" || fail "the missing-binary message says nothing useful"
set +e
bash "$script" --bin "$sim" --bogus >/dev/null 2>&1
rc=$?
bash "$script" --bin "$sim" --hosts >/dev/null 2>&1
rc2=$?
set -e
[[ $rc == 2 ]] || fail "--bogus exited with $rc, not 2"
[[ $rc2 == 2 ]] || fail "--hosts without a value exited with $rc2, not 2"
echo "scale.sh: ok"
