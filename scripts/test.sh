#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The test suite: installs what is missing, builds the dev preset (assertions
# on, warnings are errors), runs every libFuzzer target for a bounded time
# (MRC_FUZZ_SECONDS per target, default 20; 0 skips), then the unit, harness
# and claim tests with ctest; then builds the asan preset (AddressSanitizer +
# UBSan, assertions on, any report aborts) and runs ctest again under it
# (MRC_SKIP_ASAN=1 skips this stage, for quick local runs).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/deps.sh
cmake --preset dev >/dev/null
cmake --build --preset dev
secs="${MRC_FUZZ_SECONDS:-20}"
if [[ "$secs" != 0 ]]; then
  scripts/run_fuzz.sh "$secs"
fi
ctest --preset dev
if [[ "${MRC_SKIP_ASAN:-0}" == 0 ]]; then
  cmake --preset asan >/dev/null
  cmake --build --preset asan
  ctest --preset asan
fi
