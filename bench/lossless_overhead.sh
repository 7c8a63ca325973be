#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Where MRC's time goes against RoCE on the lossless ring all-reduce (issue
# 13's "MRC >= RoCE at any QP count"): runs the release mrc-sim's fault-free
# all-reduce (default clos2: 64 hosts, 8 planes x 100G) at several path MTUs
# and QP counts with RoCE, with MRC as configured by default (a SACK per 16
# KiB, the reference's ACK_Gen_Trigger), and with MRC acknowledging as
# seldom as RoCE does (a SACK per 16 packets, like RoCE's default ACK), and
# prints one markdown table: each MRC figure's gap to RoCE beside the time
# MRC's larger data headers take on a host's plane link.
#
# Every MRC data packet carries METH (4 B), TSETH (4 B) and RETH (16 B)
# after its BTH (reference 3.3, 3.6: the RETH is what lets any packet be
# placed on arrival, whatever path it took); RoCE's middle packets carry the
# BTH alone. A ring step is bound by each host's plane links, so MRC's step
# is longer by those 24 bytes times the packets a host sends on a plane, at
# 100 Gb/s, whatever the transport's schedule; halving the MTU doubles it.
#
#   bench/lossless_overhead.sh [--mtus "1024 2048 4096"] [--qps "8 16"] [--bytes N] [--out FILE]
#
# MRC_SIM    the mrc-sim binary (default: build/release/tools/mrc-sim/mrc-sim)
#
# Needs bash and python3 (standard library only). About a minute on a 2-core
# machine with the defaults; not part of the test suite.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sim="${MRC_SIM:-$root/build/release/tools/mrc-sim/mrc-sim}"
mtus="1024 2048 4096"
qps="8 16"
bytes=$((32 << 20))
out=""
usage() { sed -n '3,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
need() { [[ $# -ge 2 ]] || { echo "lossless_overhead.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mtus) need "$@"; mtus="$2"; shift ;;
    --qps) need "$@"; qps="$2"; shift ;;
    --bytes) need "$@"; bytes="$2"; shift ;;
    --out) need "$@"; out="$2"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "lossless_overhead.sh: unknown argument '$1' (--mtus, --qps, --bytes, --out)" >&2; exit 2 ;;
  esac
  shift
done
if [[ ! -x "$sim" ]]; then
  echo "lossless_overhead.sh: $sim not found or not executable." >&2
  echo "Build it first: cmake --preset release && cmake --build --preset release -j2 (or set MRC_SIM)" >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "lossless_overhead.sh: python3 is needed to read mrc-sim's JSON" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
hosts=64 planes=8 gbps=100  # mrc-sim's default clos2, named here so the arithmetic below can use them

# One line per run: mtu, QPs per peer, variant, JSON file.
manifest="$tmp/manifest.tsv"
: >"$manifest"
n=0
for mtu in $mtus; do
  for q in $qps; do
    for variant in roce mrc mrc-sack16pkt; do
      n=$((n + 1))
      json="$tmp/run$n.json"
      case "$variant" in
        roce) extra=(--transports roce) ;;
        mrc) extra=(--transports mrc) ;;
        mrc-sack16pkt) extra=(--transports mrc --mrc-sack-bytes $((16 * mtu))) ;;
      esac
      cmd=("$sim" --workload allreduce --hosts "$hosts" --planes "$planes" --rate-gbps "$gbps" --bytes "$bytes"
        --mtu "$mtu" --qps-per-peer "$q" "${extra[@]}" --seed 1 --no-default-failures --quiet --json "$json")
      echo "lossless_overhead: ${cmd[*]#"$root/"}" >&2
      if ! "${cmd[@]}" >"$tmp/run$n.log" 2>&1; then
        echo "lossless_overhead.sh: mrc-sim failed:" >&2
        cat "$tmp/run$n.log" >&2
        exit 1
      fi
      printf '%s\t%s\t%s\t%s\n' "$mtu" "$q" "$variant" "$json" >>"$manifest"
    done
  done
done

python3 - "$manifest" "$hosts" "$planes" "$gbps" "$bytes" >"$tmp/table.md" <<'PY'
import json
import sys

manifest, hosts, planes, gbps, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
EXTRA_HEADER_BYTES = 24  # METH + TSETH + RETH on every MRC data packet; RoCE's middle packets have none of them

runs = {}
for line in open(manifest):
    mtu, q, variant, path = line.rstrip("\n").split("\t")
    run = json.load(open(path))["runs"][0]
    if not run["completed"]:
        sys.exit(f"lossless_overhead.sh: the {variant} run at MTU {mtu}, {q} QPs did not complete")
    runs[(int(mtu), int(q), variant)] = (run["steps"][0]["allreduce_us"], run["counters"]["data_packets"])

print(f"Lossless ring all-reduce of {size >> 20} MiB, {hosts} hosts, {planes} x {gbps:.0f}G planes (mrc-sim, seed 1). "
      "Gaps are MRC's time less RoCE's; the header time is what MRC's 24 extra bytes per data packet take on "
      "one host's plane link over the whole all-reduce.")
print()
print("| MTU | QPs/peer | RoCE us | MRC us (gap) | MRC, SACK per 16 packets, us (gap) | MRC's extra header bytes, us | "
      "that gap less the header time, us |")
print("|---|---|---|---|---|---|---|")
for mtu, q in sorted({(m, q) for m, q, _ in runs}):
    roce, _ = runs[(mtu, q, "roce")]
    mrc, pkts = runs[(mtu, q, "mrc")]
    m16, _ = runs[(mtu, q, "mrc-sack16pkt")]
    per_link = pkts / (hosts * planes)  # a ring step loads every host's plane links alike
    header_us = per_link * EXTRA_HEADER_BYTES * 8 / (gbps * 1e3)
    print(f"| {mtu} | {q} | {roce:.1f} | {mrc:.1f} ({mrc - roce:+.1f}) | {m16:.1f} ({m16 - roce:+.1f}) | {header_us:.1f} | "
          f"{m16 - roce - header_us:+.1f} |")
PY

cat "$tmp/table.md"
if [[ -n "$out" ]]; then cp "$tmp/table.md" "$out"; fi
