#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# ECMP against UEC htsim: the two permutations of the htsim comparison
# (docs/simulator.md, "ECMP and htsim"), run by mrc-sim in each routing and
# EV configuration below over seeds 1-3 (each seed is another permutation
# and another ECMP hash salt); prints one markdown table of FCT p50 and max
# per seed, trims and ECN path swaps.
#
#   bench/ecmp_htsim.sh [--quick] [--out FILE]
#
# --quick     the 128-host shape only (a few seconds); the 1024-host 3-tier
#             shape takes about 5 s per run on 2 cores
# --out FILE  also write the table to FILE
# MRC_SIM     the mrc-sim binary (default: build/release/tools/mrc-sim/mrc-sim)
#
# Configurations: SRv6 (the default routing), ECMP with SRv6's EV set (32
# EVs per plane, half active), and ECMP with its defaults (256 EVs per plane
# and EV recycling), with ECN marked when a packet joins the queue (the
# default) and when it leaves it (--ecn-at-dequeue, as htsim marks).
# Needs bash and python3 (standard library only). Not part of the test suite.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sim="${MRC_SIM:-$root/build/release/tools/mrc-sim/mrc-sim}"
quick=0
out=""
usage() { sed -n '3,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) [[ $# -ge 2 ]] || { echo "ecmp_htsim.sh: --out needs a value" >&2; exit 2; }; out="$2"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "ecmp_htsim.sh: unknown argument '$1' (--quick, --out)" >&2; exit 2 ;;
  esac
  shift
done
[[ -x "$sim" ]] || { echo "ecmp_htsim.sh: no mrc-sim at $sim (cmake --preset release && cmake --build build/release --target mrc-sim, or set MRC_SIM)" >&2; exit 2; }

shape128=(--topology fattree2 --hosts 128 --t0-down 16 --t0-up 16 --t1 16 --rate-gbps 400 --bytes 16777216)
shape1024=(--topology fattree3 --hosts 1024 --t0-down 8 --t0-up 8 --t1 8 --rate-gbps 400 --bytes 2097152)
configs=(
  "srv6|"
  "ecmp, 32 EVs/plane|--routing ecmp --evs-per-plane 32"
  "ecmp (the defaults: 256 EVs/plane, recycling)|--routing ecmp"
  "ecmp, 32 EVs/plane, ECN at dequeue|--routing ecmp --evs-per-plane 32 --ecn-at-dequeue"
  "ecmp (the defaults), ECN at dequeue|--routing ecmp --ecn-at-dequeue"
)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
run_shape() {  # name, shape flags...
  local name="$1"; shift
  local c label flags seed
  for c in "${configs[@]}"; do
    label="${c%%|*}"; flags="${c#*|}"
    for seed in 1 2 3; do
      # shellcheck disable=SC2086
      "$sim" --quiet --workload permutation --transports mrc --no-default-failures --seed "$seed" \
        "$@" $flags --json "$tmp/r.json" >/dev/null
      python3 - "$tmp/r.json" "$name" "$label" "$seed" >>"$tmp/rows" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))["runs"][0]
fct = sorted(f["fct_us"] for f in d["flows"])
c = d["counters"]
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], "%.1f" % statistics.median(fct), "%.1f" % fct[-1],
                 str(c["trims"]), str(c["ev_congestion_swaps"])]))
EOF
    done
  done
}
: >"$tmp/rows"
run_shape "128 hosts, 2-tier, 16 MiB" "${shape128[@]}"
[[ $quick == 1 ]] || run_shape "1024 hosts, 3-tier, 2 MiB" "${shape1024[@]}"

python3 - "$tmp/rows" <<'EOF' | tee "${out:-/dev/null}"
import sys
from collections import OrderedDict
rows = OrderedDict()
for line in open(sys.argv[1]):
    shape, label, seed, p50, mx, trims, swaps = line.rstrip("\n").split("\t")
    rows.setdefault((shape, label), []).append((p50, mx, trims, swaps))
print("| shape | mrc-sim configuration | FCT p50, seeds 1/2/3 (us) | FCT max (us) | trims | ECN path swaps |")
print("|---|---|---|---|---|---|")
for (shape, label), rs in rows.items():
    col = lambda i: " / ".join(r[i] for r in rs)
    print(f"| {shape} | {label} | {col(0)} | {col(1)} | {col(2)} | {col(3)} |")
EOF
