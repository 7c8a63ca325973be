#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mrc-sim's scale study: wall time, CPU time, packet-hops per CPU second and
# peak RSS (also per host-plane, and mrc-sim's estimate beside it) of one
# short run per host count and partition count, on the paper's fabric shape
# (clos2, 8 planes of 100 Gb/s, T0s of 256 hosts and 256 uplinks, 256 T1s per
# plane: 51.2T switches, up to 131,072 hosts), MRC only, a permutation
# stopped after --time-limit-ms of simulated time. Prints one
# markdown table; a run mrc-sim refuses (its memory estimate exceeds the
# machine's) is a row with the refusal.
#
#   bench/scale.sh [--bin PATH] [--hosts "4096 8192 ..."] [--partitions "1 2"]
#                  [--planes N] [--evs-per-plane N] [--time-limit-ms MS]
#                  [--bytes N] [--out FILE]
#
# Defaults: hosts 4096 8192 16384 32768 65536 131072, partitions 1 2, 8 planes,
# 16 EVs per plane, 0.05 ms, 1 MiB per flow (the run ends at the time limit).
# Each run is under `nice -n 19` and /usr/bin/time -f '%e %U %M'; CPU s is user
# time, peak RSS MB is %M / 1024 (as mrc-sim's own table), per host-plane KB
# is that over hosts x planes, and the estimate (mrc-sim's, from the refusal
# a tiny --memory-limit-gb provokes) is in 10^9 bytes. The larger
# host counts take minutes and gigabytes each: pass --hosts to run the small
# end only. Needs bash, GNU time and python3. Not part of the test suite.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/build/release/tools/mrc-sim/mrc-sim"
hosts="4096 8192 16384 32768 65536 131072"
parts="1 2"
planes=8
evs=16
limit=0.05
bytes=1048576
out=""
usage() { sed -n '3,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
need() { [[ $# -ge 2 ]] || { echo "scale.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) need "$@"; bin="$2"; shift ;;
    --hosts) need "$@"; hosts="$2"; shift ;;
    --partitions) need "$@"; parts="$2"; shift ;;
    --planes) need "$@"; planes="$2"; shift ;;
    --evs-per-plane) need "$@"; evs="$2"; shift ;;
    --time-limit-ms) need "$@"; limit="$2"; shift ;;
    --bytes) need "$@"; bytes="$2"; shift ;;
    --out) need "$@"; out="$2"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "scale.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ -x "$bin" ]] || { echo "scale.sh: no mrc-sim at $bin (cmake --preset release && cmake --build build/release --target mrc-sim, or give --bin)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "scale.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
{
  echo "| hosts | planes | partitions | wall s | CPU s | packet-hops | packet-hops per CPU s | events per hop | peak RSS MB | per host-plane KB | estimate GB |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for h in $hosts; do
    run=(--quiet --topology clos2 --hosts "$h" --planes "$planes" --t0-down 256 --t0-up 256 --t1 256
      --rate-gbps 100 --evs-per-plane "$evs" --workload permutation --bytes "$bytes" --transports mrc
      --no-default-failures --time-limit-ms "$limit")
    # mrc-sim's own memory estimate, from the refusal a tiny limit provokes
    # (nothing is built).
    est="$("$bin" "${run[@]}" --memory-limit-gb 1e-9 2>&1 | sed -n 's/.*needs about \([0-9.]*\) GB.*/\1/p' || true)"
    for p in $parts; do
      set +e
      /usr/bin/time -f '%e %U %M' -o "$tmp/t" nice -n 19 "$bin" "${run[@]}" --partitions "$p" \
        --json "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
      rc=$?
      set -e
      if [[ $rc -ne 0 ]]; then
        why="$(grep -m1 'mrc-sim' "$tmp/err" | cut -c1-160 || true)"
        echo "| $h | $planes | $p | not run (exit $rc): ${why:-see stderr} | | | | | | | ${est:--} |"
        continue
      fi
      python3 - "$tmp/t" "$tmp/r.json" "$h" "$planes" "$p" "${est:--}" <<'PYEOF'
import json, sys
wall, user, rss_kb = open(sys.argv[1]).read().split()[-3:]
run = json.load(open(sys.argv[2]))["runs"][0]
hops = run["counters"]["packet_hops"]
user = float(user)
per_cpu = "%.2f M" % (hops / user / 1e6) if user > 0 else "-"
host_planes = int(sys.argv[3]) * int(sys.argv[4])
print("| %s | %s | %s | %.1f | %.1f | %d | %s | %.2f | %.0f | %.1f | %s |" % (
    sys.argv[3], sys.argv[4], sys.argv[5], float(wall), user, hops, per_cpu,
    run["events"] / hops if hops else 0, int(rss_kb) / 1024, int(rss_kb) / 1024 * 1000 / host_planes,
    sys.argv[6]))
PYEOF
    done
  done
} | tee "${out:-/dev/null}"
