#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# mrc-sim's parallel engine: wall and CPU time of the same run on 1 and on N
# partitions, in interleaved rounds (the median of each, and of the
# per-round ratio, since a shared machine's speed drifts within minutes).
#
#   bench/partitions.sh [--bin PATH] [--rounds R] [--partitions N] [--threads T] [--mpi] HOSTS...
#
# --threads T: the N partitions run on T threads (mrc-sim --threads; by
# default mrc-sim's: one per partition, at most one per CPU, so N above the
# CPUs runs on fewer threads than partitions).
# --mpi: the N partitions run as N processes under mpirun (--oversubscribe;
# as root, with Open MPI's OMPI_ALLOW_RUN_AS_ROOT consent), one partition
# each, and the CPU time is over every rank (mpirun's children). Two more
# columns then say what the ranks sent each other per window (KB, and
# point-to-point messages over all ranks); the critical path takes the
# longest share of any rank per window (ParallelEngine::span_cpu_s).
#
# Each run: clos2 (8 planes at 400 Gb/s), a 4 MiB permutation, MRC only, no
# failures. Prints one line per host count: wall and CPU (user + sys) medians
# for 1 and N partitions, the speedup (wall ratio), the parallel efficiency
# (speedup over the threads or ranks the N partitions ran on), the CPU ratio
# (N partitions over 1), the engine's windows, messages and batches per
# window, the busiest partition's share of the events, the critical path's
# CPU time with N partitions (per window, the partition that took longest,
# plus the barrier's steps) and the speedup it bounds (CPU time on 1 over
# it: what N free cores would give). On a shared
# machine the CPU times say more than the wall times.
set -euo pipefail
bin=build/release/tools/mrc-sim/mrc-sim
rounds=3
parts=2
mpi=0
threads=
hosts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --partitions) parts=$2; shift 2 ;;
    --mpi) mpi=1; shift ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) hosts+=("$1"); shift ;;
  esac
done
[ ${#hosts[@]} -gt 0 ] || hosts=(1024 2048 4096)
[ -x "$bin" ] || { echo "partitions.sh: no mrc-sim at $bin (build the release preset, or give --bin)" >&2; exit 1; }
if [ "$mpi" = 1 ]; then
  command -v mpirun >/dev/null || { echo "partitions.sh: --mpi needs mpirun (openmpi-bin: scripts/deps.sh)" >&2; exit 1; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# What the N partitions run on: ranks (one partition each), or threads.
if [ "$mpi" = 1 ]; then used=$parts
elif [ -n "$threads" ]; then used=$(( threads < parts ? threads : parts ))
else cpus=$(nproc); used=$(( cpus < parts ? cpus : parts ))
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
extra=()
[ "$mpi" = 1 ] && extra=(KB/w mpimsg/w)
printf "%6s %8s %8s %8s %8s %8s %10s %9s %8s %9s %9s %8s %8s %8s %9s %9s\n" hosts wall_1 cpu_1 "wall_$parts" \
  "cpu_$parts" speedup efficiency cpu_ratio windows msg/w batch/w busiest span bound "${extra[@]}"
for h in "${hosts[@]}"; do
  : >"$tmp/w1"; : >"$tmp/c1"; : >"$tmp/wn"; : >"$tmp/cn"; : >"$tmp/ratio"; : >"$tmp/cratio"; : >"$tmp/span"; : >"$tmp/bound"
  : >"$tmp/kb"; : >"$tmp/mpimsg"
  for r in $(seq "$rounds"); do
    for p in 1 "$parts"; do
      launch=()
      [ "$mpi" = 1 ] && [ "$p" != 1 ] && launch=(mpirun --oversubscribe -np "$p")
      tflag=()
      [ -n "$threads" ] && [ "$p" != 1 ] && tflag=(--threads "$threads")
      /usr/bin/time -f "%e %U %S" -o "$tmp/t" "${launch[@]}" "$bin" --quiet --topology clos2 --hosts "$h" --rate-gbps 400 \
        --workload permutation --bytes 4194304 --transports mrc --no-default-failures --partitions "$p" \
        "${tflag[@]}" >"$tmp/out"
      read -r wall user sys <"$tmp/t"
      cpu=$(printf "%.2f" "$(echo "$user + $sys" | bc -l)")
      if [ "$p" = 1 ]; then echo "$wall" >>"$tmp/w1"; echo "$cpu" >>"$tmp/c1"; w1=$wall; c1=$cpu
      else echo "$wall" >>"$tmp/wn"; echo "$cpu" >>"$tmp/cn"; echo "$w1 / $wall" | bc -l >>"$tmp/ratio"
        echo "$cpu / $c1" | bc -l >>"$tmp/cratio"
        win=$(awk '/^windows/ {print $2, $3, $6}' "$tmp/out" | tr -d '(')
        busiest=$(awk '/^busiest partition/ {print $3 "%"}' "$tmp/out")
        span=$(awk '/^critical path/ {print $3}' "$tmp/out")
        echo "$span" >>"$tmp/span"; echo "$c1 / $span" | bc -l >>"$tmp/bound"
        if [ "$mpi" = 1 ]; then
          awk '/^MPI exchange/ {print $3}' "$tmp/out" >>"$tmp/kb"
          awk '/^MPI exchange/ {print $6}' "$tmp/out" >>"$tmp/mpimsg"
        fi
      fi
    done
  done
  s=$(median <"$tmp/ratio")
  extra=()
  [ "$mpi" = 1 ] && extra=("$(median <"$tmp/kb")" "$(median <"$tmp/mpimsg")")
  printf "%6s %8s %8s %8s %8s %8.2f %10.2f %9.2f %8s %9s %9s %8s %8s %8.2f %9s %9s\n" "$h" "$(median <"$tmp/w1")" \
    "$(median <"$tmp/c1")" "$(median <"$tmp/wn")" "$(median <"$tmp/cn")" "$s" "$(echo "$s / $used" | bc -l)" \
    "$(median <"$tmp/cratio")" $win "$busiest" "$(median <"$tmp/span")" "$(median <"$tmp/bound")" "${extra[@]}"
done
