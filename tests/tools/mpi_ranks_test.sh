#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mrc-sim across processes: scenarios with failures (a dead link, random
# loss, a T1 reboot, a flapping host link, a disabled port, a T0 down), PFC
# and records made in several partitions, under mpirun with 1, 2 and 4
# ranks (a partition each) and 2 ranks of 2 threads, write the JSON of the
# run in one process (less wall_s and events); the ranks did send each
# other messages; bad combinations are refused naming --partitions.
# Skips (77) with a message where mpirun or mrc-sim's MPI build is missing.
#   mpi_ranks_test.sh MRC_SIM WITH_MPI(ON|OFF)
set -euo pipefail
sim="$1" with_mpi="$2"
if [[ "$with_mpi" != ON ]]; then
  echo "SKIP: mrc-sim was built without MPI (install libopenmpi-dev openmpi-bin: scripts/deps.sh, then configure)"
  exit 77
fi
if ! command -v mpirun >/dev/null; then
  echo "SKIP: no mpirun (install openmpi-bin: scripts/deps.sh)"
  exit 77
fi
command -v python3 >/dev/null || { echo "SKIP: no python3 (scripts/deps.sh installs it)"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Root (CI) needs Open MPI's consent; 4 ranks on 2 cores oversubscribe. In
# containers, Open MPI's shared-memory transport cannot always use
# cross-memory attach: plain copies. Open MPI's own allocations at exit are
# not this program's leaks (the ASan build). Waiting ranks yield their core.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi() { timeout 120 mpirun --oversubscribe -np "$@"; }

# The JSON less the two fields that measure the engine, not the model.
strip() {
  python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
for r in j["runs"]:
    r.pop("wall_s", None)
    r.pop("events", None)
print(json.dumps(j, indent=1))' "$1"
}

# 32 hosts, 4 planes, 4 T0s of 8 hosts with 4 uplinks over 2 T1s.
small=(--hosts 32 --planes 4 --t0-down 8 --t0-up 4 --t1 2 --no-default-failures --quiet)
# Each: its flags, then the (ranks, partitions) runs compared with one process.
scenarios=(
  "--workload permutation --bytes 262144 --transports mrc,roce --fail link-down:tier=t0t1,plane=1,a=0,b=1,at=20us --fail loss:tier=host,plane=*,a=3,p=0.01,at=0us|1:1 2:2 4:4"
  "--workload train --steps 1 --bytes 1048576 --transports mrc,roce-pfc --fail switch-down:tier=t1,plane=0,index=1,at=100us,for=150us --fail link-flap:tier=host,plane=3,a=5,at=120us,until=300us,period=40us,duty=0.5|2:2 4:4 2:4"
  "--workload incast --fan-in 12 --bytes 131072 --transports roce-pfc|2:2 4:4"
  "--workload alltoall --bytes 16384 --transports mrc --fail port-disable:host=5,port=1,at=10us,for=30us --fail switch-down:tier=t0,plane=2,index=1,at=15us,for=20us|2:2 4:4"
)
# check I DESC RUNS ARGS...: mrc-sim ARGS in one process, then on each
# RANKS:PARTITIONS of RUNS, gives the same JSON; ranks send each other bytes.
check() {
  local i="$1" sc="$2" run ranks parts out
  local -a runs
  read -r -a runs <<<"$3"
  shift 3
  "$sim" "$@" --json "$tmp/one$i.json" </dev/null >"$tmp/one$i.out" 2>&1 ||
    { cat "$tmp/one$i.out" >&2; fail "scenario $i ($sc) in one process"; }
  strip "$tmp/one$i.json" >"$tmp/one$i.txt"
  for run in "${runs[@]}"; do
    ranks="${run%%:*}" parts="${run##*:}"
    out="$tmp/r$i-$ranks-$parts"
    mpi "$ranks" "$sim" "$@" --partitions "$parts" --json "$out.json" </dev/null \
      >"$out.out" 2>&1 || { cat "$out.out" >&2; fail "scenario $i ($sc) on $ranks ranks, --partitions $parts"; }
    strip "$out.json" >"$out.txt"
    diff -u "$tmp/one$i.txt" "$out.txt" | head -20 >&2 || true
    cmp -s "$tmp/one$i.txt" "$out.txt" || fail "scenario $i ($sc): $ranks ranks, --partitions $parts: JSON differs"
    if ((ranks > 1)); then
      grep -Eq '^MPI exchange +[0-9.]*[1-9][0-9.]* KB/w' "$out.out" || fail "scenario $i: $ranks ranks sent no bytes"
    fi
  done
  echo "scenario $i ($sc): the same JSON as one process on ${runs[*]} (ranks:partitions)"
}
i=0
for entry in "${scenarios[@]}"; do
  i=$((i + 1))
  sc="${entry%%|*}"
  read -r -a args <<<"$sc"
  check "$i" "$sc" "${entry##*|}" "${small[@]}" "${args[@]}"
done
# 2 planes on 4 ranks: each plane's T0s are split over two ranks, so T0-T1
# links cross ranks and a switch's PAUSE reaches an egress port another rank
# built (through the fabric's node there, Fabric pfc_port_tag).
two=(--hosts 32 --planes 2 --t0-down 8 --t0-up 4 --t1 2 --no-default-failures --quiet)
check 5 "2 planes, --workload incast --fan-in 12 under PFC" "4:4" "${two[@]}" --workload incast --fan-in 12 \
  --bytes 131072 --transports roce-pfc

# Refused, naming the flag and the fix.
refused() {
  local want="$1"
  shift
  local rc=0
  mpi 2 "$sim" "${small[@]}" --workload permutation "$@" </dev/null >"$tmp/refused" 2>&1 || rc=$?
  ((rc != 0)) || fail "mpirun -np 2 with $* was not refused"
  grep -q -- "$want" "$tmp/refused" || { cat "$tmp/refused" >&2; fail "refusal of $* does not say '$want'"; }
}
refused "--partitions 1 under 2 MPI ranks" --partitions 1
refused "--partitions 3 does not divide over 2 MPI ranks" --partitions 3
echo "PASS"
