#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Random loss: one ring all-reduce on mrc-sim's default fabric (64 hosts,
# 8 planes x 100 Gb/s) with uniform random loss on every host link, for
# MRC with one QP per peer and RoCEv2 RC with 8 and 16 QPs per peer; prints
# one markdown table: the all-reduce time, its ratio to the lossless run of
# the same transport, MRC's lossless speed kept, retransmissions (spurious
# among them), EVs retired and ACK timeouts. With --seeds N each case runs
# with seeds 1 to N (each seed draws other losses): the times are then the
# medians over the seeds, MRC's counters their sums, and a column counts the
# seeds on which MRC beat both RoCE runs.
#
#   bench/random_loss.sh [--quick] [--seeds N] [--sizes "MIB ..."] [--losses "P ..."] [--out FILE]
#
# --quick        4 and 16 MiB only (about a minute on 2 cores)
# --seeds N      seeds 1 to N (default 1)
# --sizes LIST   all-reduce sizes in MiB (default: 4 16 64 128 256)
# --losses LIST  loss probabilities per host link (default: 0.001 0.01)
# --out FILE     also write the table to FILE
# MRC_SIM        the mrc-sim binary (default: build/release/tools/mrc-sim/mrc-sim)
#
# Needs bash and python3 (standard library only). Not part of the test
# suite: the full run takes tens of minutes on a 2-core machine.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sim="${MRC_SIM:-$root/build/release/tools/mrc-sim/mrc-sim}"
sizes="4 16 64 128 256"
losses="0.001 0.01"
seeds=1
out=""
usage() { sed -n '3,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
need() { [[ $# -ge 2 ]] || { echo "random_loss.sh: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) sizes="4 16" ;;
    --sizes) need "$@"; sizes="$2"; shift ;;
    --losses) need "$@"; losses="$2"; shift ;;
    --seeds) need "$@"; seeds="$2"; shift ;;
    --out) need "$@"; out="$2"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "random_loss.sh: unknown argument '$1' (--quick, --seeds, --sizes, --losses, --out)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "random_loss.sh: --seeds: '$seeds' is not a count from 1" >&2; exit 2; }
for s in $sizes; do
  [[ "$s" =~ ^[1-9][0-9]*$ ]] || { echo "random_loss.sh: --sizes: '$s' is not a size in MiB" >&2; exit 2; }
done
for p in $losses; do
  [[ "$p" =~ ^0?\.[0-9]+$ ]] || { echo "random_loss.sh: --losses: '$p' is not a probability below 1" >&2; exit 2; }
done
if [[ ! -x "$sim" ]]; then
  echo "random_loss.sh: $sim not found or not executable." >&2
  echo "Build it first: cmake --preset release && cmake --build --preset release (or set MRC_SIM)" >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "random_loss.sh: python3 is needed to read mrc-sim's JSON" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# One run: both transports' QP counts are set apart, so RoCE's 8 and 16 QPs
# per peer run beside MRC's one.
run() {  # size_mib loss roce_qps seed json
  local fail=()
  [[ "$2" != 0 ]] && fail=(--fail "loss:tier=host,plane=*,a=*,p=$2,at=0us")
  "$sim" --workload allreduce --bytes $(($1 << 20)) --no-default-failures --seed "$4" --quiet \
    --transports mrc,roce --mrc-qps-per-peer 1 --roce-qps-per-peer "$3" "${fail[@]}" --json "$5" >/dev/null
}

for s in $sizes; do
  for p in 0 $losses; do
    for q in 8 16; do
      for seed in $(seq 1 "$seeds"); do
        echo "random_loss.sh: ${s} MiB, loss $p, RoCE $q QPs/peer, seed $seed" >&2
        run "$s" "$p" "$q" "$seed" "$tmp/ar-$s-$p-$q-$seed.json"
      done
    done
  done
done

python3 - "$tmp" "$sizes" "0 $losses" "$out" "$seeds" <<'EOF'
import json, os, statistics, sys
tmp, sizes, losses, out = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
seeds = range(1, int(sys.argv[5]) + 1)

def load1(s, p, q, seed):
    with open(os.path.join(tmp, f"ar-{s}-{p}-{q}-{seed}.json")) as f:
        doc = json.load(f)
    return {r["transport"]: r for r in doc["runs"]}

def load(s, p, q):
    return [load1(s, p, q, seed) for seed in seeds]

def ar_us(r):
    if not r.get("completed") or not r.get("steps"):
        return float("nan")
    return max(st["allreduce_us"] for st in r["steps"])

def median(xs):
    return statistics.median(xs)

def beats(t, a, b):
    return t < a and t < b

what = "MRC beats both" if len(seeds) == 1 else f"seeds MRC beats both (of {len(seeds)})"
rows = ["| size | loss | MRC 1 QP us | x lossless | speed kept | RoCE 8 QPs us | RoCE 16 QPs us "
        f"| {what} | MRC rtx (spurious) | EVs retired | ACK timeouts |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
for s in sizes:
    base = median([ar_us(r["mrc"]) for r in load(s, "0", 8)])
    for p in losses:
        r8, r16 = load(s, p, 8), load(s, p, 16)
        ts = [ar_us(r["mrc"]) for r in r8]
        t8 = [ar_us(r["roce"]) for r in r8]
        t16 = [ar_us(r["roce"]) for r in r16]
        t, roce8, roce16 = median(ts), median(t8), median(t16)
        wins = sum(beats(*x) for x in zip(ts, t8, t16))
        won = ("yes" if wins else "no") if len(seeds) == 1 else str(wins)
        c = {k: sum(r["mrc"]["counters"][k] for r in r8)
             for k in ("retransmissions", "spurious_retransmissions", "evs_retired", "ack_timeouts")}
        rows.append(f"| {s} MiB | {float(p) * 100:g} % | {t:.1f} | {t / base:.3f} | {base / t:.3f} | {roce8:.1f} "
                    f"| {roce16:.1f} | {won} "
                    f"| {c['retransmissions']} ({c['spurious_retransmissions']}) | {c['evs_retired']} "
                    f"| {c['ack_timeouts']} |")
text = "\n".join(rows)
print(text)
if out:
    with open(out, "w") as f:
        f.write(text + "\n")
EOF
