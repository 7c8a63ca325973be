#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The software device against this machine's own limit (issue 10's goals):
# each round runs the device's perftest-style tool between two processes on
# loopback and, right after it, the raw UDP program with the same method,
# and prints both figures and their ratio. On a machine whose speed drifts
# (a shared VM moves by tens of percent within minutes) only ratios taken
# round by round mean anything; the summary gives the median of each column
# and of the per-round ratios.
#
#   bench/device_vs_raw.sh [--rounds N] [--seconds S] [--modes LIST] [--bin DIR]
#                          [--port P] [--udp-port U]
#
# --rounds N    rounds per mode (default 5)
# --seconds S   length of each bandwidth run (default 2)
# --modes LIST  comma-separated, default burst,packet,busy,block:
#                 burst   1 MiB WRITEs, --burst 16    vs raw GSO x15 + GRO (Gbit/s)
#                 packet  1 MiB WRITEs, --burst 1     vs raw sendmmsg x32 (Gbit/s)
#               The bandwidth modes also run the raw program with the device's
#               packet layout and the per-byte work MRC requires of software
#               (the ICRC computed and checked, the payload placed in a
#               region; mrc_raw_udp --icrc --place), with no protocol: the
#               device's ceiling on this machine. Its columns say what that
#               work costs (work / raw) and what the protocol costs on top of
#               it (device / work).
#                 busy    2 B one way, busy polling   vs raw 64 B ping-pong, busy (us)
#                 block   2 B one way, -e (blocking)  vs raw 64 B ping-pong, blocking (us)
#               Bandwidth ratios are device / raw (goal >= 70 %); latency
#               ratios raw-relative, device typical / raw median (goal <= 2x).
# --bin DIR     the release build (default build/release); needs
#               tools/perf/mrc_write_bw, tools/perf/mrc_write_lat, bench/mrc_raw_udp
# --port P      TCP port of the tools' exchange on 127.0.0.1 (default 19500)
# --udp-port U  UDP port the device pair uses (default the tools' 4791)
#
# Needs bash, awk and sort only. Not part of the test suite: a run takes about
# rounds x (4 x seconds + 10) seconds per mode.
set -euo pipefail

rounds=5 secs=2 modes=burst,packet,busy,block bin=build/release port=19500 udp_port=4791
die() { echo "device_vs_raw: $*" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --seconds) secs="${2:?--seconds needs a value}"; shift 2 ;;
    --modes) modes="${2:?--modes needs a value}"; shift 2 ;;
    --bin) bin="${2:?--bin needs a value}"; shift 2 ;;
    --port) port="${2:?--port needs a value}"; shift 2 ;;
    --udp-port) udp_port="${2:?--udp-port needs a value}"; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (--help lists them)" ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds '$rounds': need a positive integer"
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || die "--seconds '$secs': need a positive integer"
for v in "$port" "$udp_port"; do
  if ! [[ "$v" =~ ^[1-9][0-9]*$ ]] || ((v > 65535)); then die "port '$v': need 1..65535"; fi
done
bw="$bin/tools/perf/mrc_write_bw" lat="$bin/tools/perf/mrc_write_lat" raw="$bin/bench/mrc_raw_udp"
for b in "$bw" "$lat" "$raw"; do
  [[ -x "$b" ]] || die "$b not found: cmake --preset release && cmake --build --preset release -j2"
done
tmp="$(mktemp -d)"
server=""
cleanup() {
  [[ -z "$server" ]] || kill "$server" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# A device pair: server in the background, client in the foreground; the
# client's output goes to $tmp/client.
pair() {
  local tool="$1"
  shift
  "$tool" -p "$port" --udp-port "$udp_port" "$@" >"$tmp/server" 2>&1 &
  server=$!
  sleep 0.3
  if ! "$tool" 127.0.0.1 -p "$port" --udp-port "$udp_port" "$@" >"$tmp/client" 2>&1; then
    cat "$tmp/client" >&2
    die "$(basename "$tool") $* failed"
  fi
  wait "$server" || true
  server=""
}

# One round of one mode. Latency modes print "device raw ratio"; bandwidth
# modes add the raw program doing MRC's per-byte work and nothing else
# (--header-bytes 40 --icrc --place, staged for GSO as the device stages a
# burst): "device raw ratio work work/raw device/work". The packets are the
# device's 1 MiB WRITE packets: 40 header bytes, 4,096 payload, the ICRC.
round() {
  local d r
  case "$1" in
    burst|packet)
      local k=16 method=(--method gso --burst 15 --batch 8) layout=(--header-bytes 40 --stage --icrc --place) w
      [[ "$1" == packet ]] && k=1 method=(--method mmsg --batch 32) layout=(--header-bytes 40 --icrc --place)
      pair "$bw" --burst "$k" -D "$secs" -s 1048576 --report_gbits
      d="$(awk '$1 == 1048576 { print $4 }' "$tmp/client")"
      r="$("$raw" bw "${method[@]}" --size 4140 --seconds "$secs" | awk '$1 == "receiver:" { print $2 }')"
      w="$("$raw" bw "${method[@]}" --size 4140 --seconds "$secs" "${layout[@]}" | awk '$1 == "receiver:" { print $2 }')"
      [[ -n "$d" && -n "$r" && -n "$w" ]] || die "mode $1: no figure in the output (device '$d', raw '$r', work '$w')"
      awk -v d="$d" -v r="$r" -v w="$w" 'BEGIN { printf "%s %s %.3f %s %.3f %.3f\n", d, r, d / r, w, w / r, d / w }'
      return
      ;;
    busy|block)
      local e=() poll=busy
      [[ "$1" == block ]] && e=(-e) poll=block
      pair "$lat" -n 10000 -s 2 "${e[@]}"
      d="$(awk '$1 == 2 { print $5 }' "$tmp/client")"  # t_typical
      r="$("$raw" lat --size 64 --iters 10000 --poll "$poll" | awk '/one-way/ { for (i = 1; i < NF; i++) if ($i == "median") print $(i + 1) }')"
      ;;
    *) die "unknown mode '$1' (burst, packet, busy, block)" ;;
  esac
  [[ -n "$d" && -n "$r" ]] || die "mode $1: no figure in the output (device '$d', raw '$r')"
  awk -v d="$d" -v r="$r" 'BEGIN { printf "%s %s %.3f\n", d, r, d / r }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

IFS=, read -r -a mode_list <<<"$modes"
echo "# device vs raw UDP, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r), $rounds rounds"
for m in "${mode_list[@]}"; do
  case "$m" in
    burst|packet) unit="Gbit/s" goal=">= 0.70" ;;
    busy|block) unit="us one way" goal="<= 2.00" ;;
    *) die "unknown mode '$m' (burst, packet, busy, block)" ;;
  esac
  echo
  echo "## $m ($unit; goal: ratio $goal)"
  echo
  if [[ "$m" == burst || "$m" == packet ]]; then
    echo "| round | device | raw UDP | ratio | raw UDP + MRC's per-byte work | work / raw | device / work |"
    echo "|---|---|---|---|---|---|---|"
  else
    echo "| round | device | raw UDP | ratio |"
    echo "|---|---|---|---|"
  fi
  : >"$tmp/rows"
  for ((i = 1; i <= rounds; i++)); do
    row="$(round "$m")"
    echo "$row" >>"$tmp/rows"
    echo "| $i | ${row// / | } |"
  done
  cols=$(awk '{ print NF; exit }' "$tmp/rows")
  med="| median"
  for ((c = 1; c <= cols; c++)); do med+=" | $(cut -d' ' -f"$c" "$tmp/rows" | median)"; done
  echo "$med |"
done
