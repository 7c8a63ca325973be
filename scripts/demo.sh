#!/usr/bin/env bash
# The main job: installs what is missing, builds (release), and runs mrc-demo:
# one MRC connection moving 64 MiB across a 4-plane fabric while a path dies
# and a whole plane fails and recovers. Extra arguments go to mrc-demo
# (try --help).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target mrc-demo
exec build/release/examples/mrc-demo "$@"
