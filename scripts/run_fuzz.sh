#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the libFuzzer targets (the `fuzz` preset, clang) and runs each one for
# a bounded time on a scratch copy of its seed corpus.
#
#   scripts/run_fuzz.sh [seconds-per-target]      (default 30)
#
# The committed corpus under fuzz/corpus/ is never modified: each run starts
# from fuzz/corpus/<target>/ plus freshly generated seeds in a temp directory.
# Crash inputs land in build/fuzz/artifacts/, logs in build/fuzz/logs/.
# The mutations follow a fixed seed, MRC_FUZZ_SEED (default 1), so a run that
# fails fails again with the same seed, and a longer local run with it covers
# what a shorter one does; MRC_FUZZ_SEED=random lets libFuzzer pick one per
# target (it prints it in the log). Extra libFuzzer flags can be passed in
# MRC_FUZZ_ARGS. Exits non-zero if any target crashes, leaks, times out on an
# input, or fails to start.
set -euo pipefail

secs="${1:-30}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [[ "$secs" -eq 0 ]]; then
  echo "usage: $0 [seconds-per-target]" >&2
  exit 2
fi
seed="${MRC_FUZZ_SEED:-1}"
if [[ "$seed" == random ]]; then
  seed_flag=()
elif [[ "$seed" =~ ^[1-9][0-9]{0,8}$ ]]; then
  seed_flag=("-seed=$seed")
else
  echo "$0: MRC_FUZZ_SEED must be a number from 1 to 999999999, or 'random' (got '$seed')" >&2
  exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target fuzzers

bin="$root/build/fuzz/fuzz"
artifacts="$root/build/fuzz/artifacts"
logs="$root/build/fuzz/logs"
mkdir -p "$artifacts" "$logs"
work="$(mktemp -d "${TMPDIR:-/tmp}/mrc-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Seeds: the generator's output, then the committed corpus on top.
"$bin/fuzz_gen_corpus" "$work/corpus" >/dev/null
cp -R "$root/fuzz/corpus/." "$work/corpus/"

targets=()
for exe in "$bin"/fuzz_*; do
  name="$(basename "$exe")"
  [[ -x "$exe" && "$name" != fuzz_gen_corpus ]] && targets+=("${name#fuzz_}")
done

failed=()
for t in "${targets[@]}"; do
  corpus="$work/corpus/$t"
  mkdir -p "$corpus"
  log="$logs/$t.log"
  # shellcheck disable=SC2086  # MRC_FUZZ_ARGS is a list of flags
  if "$bin/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       ${seed_flag[@]+"${seed_flag[@]}"} -print_final_stats=1 -artifact_prefix="$artifacts/$t-" ${MRC_FUZZ_ARGS:-} \
       "$corpus" >"$log" 2>&1; then
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)"
    printf '%-14s ok    %10s runs  %s  corpus %s\n' "$t" "${runs:-?}" "${cov:-}" \
      "$(find "$corpus" -type f | wc -l)"
  else
    printf '%-14s FAIL  (log: %s)\n' "$t" "$log"
    grep -E 'ERROR|check failed|SUMMARY|Test unit written' "$log" | head -5 | sed 's/^/    /'
    failed+=("$t")
  fi
done

if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${secs}s without a crash (seed $seed)"
