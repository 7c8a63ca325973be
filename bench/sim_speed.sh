#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mrc-sim's CPU time on the shapes of the UEC htsim comparison (issue 38),
# for one or more mrc-sim binaries run in interleaved rounds: every round runs
# each shape once with each binary (the order rotating from round to round),
# so a drift of the machine's speed hits all of them alike. Prints a
# markdown table of the median CPU time (user + system) per shape and
# binary and the median of the per-round ratios of each binary to the first.
#
#   bench/sim_speed.sh [--rounds N] [--shapes LIST] BINARY [BINARY...]
#
# --rounds N     rounds (default 7)
# --shapes LIST  comma-separated subset of: perm128, perm128-single,
#                perm1024, perm1024-single, incast (default: all)
# BINARY         an mrc-sim; a label may be given as LABEL=PATH
#
# CPU time is user + system time from the kernel's rusage of each child
# (what /usr/bin/time -f %U and %S print, to the microsecond): a system
# call the simulator makes per window counts as much as its own code. Each
# run is under
# `nice -n 19`. Needs bash and python3 (standard library only). Not part of
# the test suite: the 1024-host shapes take 2-3 s of CPU each per run.
set -euo pipefail

rounds=7
shapes="perm128,perm128-single,perm1024,perm1024-single,incast"
usage() { sed -n '3,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
bins=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) [[ $# -ge 2 ]] || { echo "sim_speed.sh: --rounds needs a value" >&2; exit 2; }; rounds="$2"; shift ;;
    --shapes) [[ $# -ge 2 ]] || { echo "sim_speed.sh: --shapes needs a value" >&2; exit 2; }; shapes="$2"; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "sim_speed.sh: unknown option '$1' (--rounds, --shapes)" >&2; exit 2 ;;
    *) bins+=("$1") ;;
  esac
  shift
done
[[ ${#bins[@]} -ge 1 ]] || { echo "sim_speed.sh: name at least one mrc-sim binary (see --help)" >&2; exit 2; }

exec python3 - "$rounds" "$shapes" "${bins[@]}" <<'PYEOF'
import os, statistics, subprocess, sys

rounds = int(sys.argv[1])
want = sys.argv[2].split(",")
bins = []
for b in sys.argv[3:]:
    label, _, path = b.rpartition("=")
    bins.append((label or path, path))
for _, path in bins:
    if not os.access(path, os.X_OK):
        sys.exit(f"sim_speed.sh: {path} is not an executable mrc-sim")

s128 = "--topology fattree2 --hosts 128 --t0-down 16 --t0-up 16 --t1 16 --rate-gbps 400".split()
s1024 = "--topology fattree3 --hosts 1024 --t0-down 8 --t0-up 8 --t1 8 --rate-gbps 400".split()
perm = "--workload permutation --no-default-failures".split()
all_shapes = {
    "perm128": s128 + perm + "--bytes 16777216 --transports mrc".split(),
    "perm128-single": s128 + perm + "--bytes 16777216 --transports mrc-single-path".split(),
    "perm1024": s1024 + perm + "--bytes 2097152 --transports mrc".split(),
    "perm1024-single": s1024 + perm + "--bytes 2097152 --transports mrc-single-path".split(),
    "incast": s128 + "--workload incast --fan-in 127 --bytes 4194304 --transports mrc".split(),
}
for s in want:
    if s not in all_shapes:
        sys.exit(f"sim_speed.sh: unknown shape '{s}' (one of {', '.join(all_shapes)})")

def cpu(path, args):
    p = subprocess.Popen(["nice", "-n", "19", path, "--quiet", *args], stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"sim_speed.sh: {path} {' '.join(args)} failed ({status})")
    return ru.ru_utime + ru.ru_stime

t = {(s, i): [] for s in want for i in range(len(bins))}
for r in range(rounds):
    for s in want:
        order = list(range(len(bins)))
        k = r % len(bins)
        for i in order[k:] + order[:k]:
            t[(s, i)].append(cpu(bins[i][1], all_shapes[s]))
    print(f"round {r + 1}/{rounds} done", file=sys.stderr)

head = "| shape | " + " | ".join(f"{l} CPU s" for l, _ in bins)
head += "".join(f" | {l} / {bins[0][0]} (range)" for l, _ in bins[1:]) + " |"
print(head)
print("|" + "---|" * (1 + len(bins) + len(bins) - 1))
for s in want:
    row = f"| {s} | " + " | ".join("%.3f" % statistics.median(t[(s, i)]) for i in range(len(bins)))
    for i in range(1, len(bins)):
        q = [a / b for a, b in zip(t[(s, i)], t[(s, 0)])]
        row += " | %.3f (%.2f-%.2f)" % (statistics.median(q), min(q), max(q))
    print(row + " |")
PYEOF
