#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The main job: installs what is missing, builds (release), and runs mrc-sim
# on its default scenario: 64 hosts on an 8-plane x 100 Gb/s 2-tier Clos run
# 8 training steps of ring all-reduce (32 MiB) while a T1 switch reboots and
# a NIC-T0 link flaps, once with MRC and once with RoCEv2 (DCQCN, one QP per
# plane), side by side. Extra arguments go to mrc-sim (try --help).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target mrc-sim mrc-demo
exec build/release/tools/mrc-sim/mrc-sim "$@"
