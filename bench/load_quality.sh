#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Load quality (issue 13): runs the release mrc-sim on fault-free scenarios
# under sustained multi-flow load and prints one markdown table of what the
# issue's goals are about: flow completion, fairness, retransmissions that
# were not needed, EVs retired, ACK timeouts, drops and trims; then, for the
# long-lived rack-to-rack and permutation runs, how much of their life they
# held 95 % of line rate. Seed 1, no failures.
#
#   bench/load_quality.sh [--quick] [--out FILE]
#
# --quick    smaller transfers (a smoke run of a minute or so, not a measurement)
# --out FILE also write the table (markdown) to FILE
# MRC_SIM    the mrc-sim binary (default: build/release/tools/mrc-sim/mrc-sim)
#
# Needs bash and python3 (standard library only, for the JSON). Not part of
# the test suite: the full run takes minutes on a 2-core machine.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sim="${MRC_SIM:-$root/build/release/tools/mrc-sim/mrc-sim}"
quick=0
out=""
usage() { sed -n '3,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --out)
      [[ $# -ge 2 ]] || { echo "load_quality.sh: --out needs a file name" >&2; exit 2; }
      out="$2"
      shift
      ;;
    -h | --help) usage; exit 0 ;;
    *) echo "load_quality.sh: unknown argument '$1' (--quick, --out FILE)" >&2; exit 2 ;;
  esac
  shift
done
if [[ ! -x "$sim" ]]; then
  echo "load_quality.sh: $sim not found or not executable." >&2
  echo "Build it first: cmake --preset release && cmake --build --preset release -j2 (or set MRC_SIM)" >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "load_quality.sh: python3 is needed to read mrc-sim's JSON" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Sizes: the issue's, or a tenth or less with --quick (the scenarios keep
# their shape; the numbers are not comparable with a full run).
if [[ $quick == 1 ]]; then
  r2r_bytes=20000000 perm_bytes=$((4 << 20)) a2a_bytes=$((512 << 10)) ft3_hosts=128 ft3_bytes=$((1 << 20))
  incast_bytes=$((256 << 10)) ar_bytes=$((4 << 20)) a2a_sizes="65536"
else
  r2r_bytes=200000000 perm_bytes=$((64 << 20)) a2a_bytes=$((4 << 20)) ft3_hosts=1024 ft3_bytes=$((2 << 20))
  incast_bytes=$((4 << 20)) ar_bytes=$((32 << 20)) a2a_sizes="16384 65536 262144 1048576"
fi

# Rack-to-rack: hosts 0-7 (T0 0 of the default clos2) each send to one of
# hosts 8-15 (T0 1), all at once: an htsim-style connection matrix.
{
  echo "Nodes 64"
  echo "Connections 8"
  for i in 0 1 2 3 4 5 6 7; do echo "$i->$((i + 8)) start 0 size $r2r_bytes"; done
} >"$tmp/r2r.cm"

# manifest: one line per mrc-sim invocation: label, kind (flows, incast,
# allreduce), offered line rate for the goodput-over-time check (Gb/s, 0 =
# none), JSON file, command line.
manifest="$tmp/manifest.tsv"
: >"$manifest"
n=0
run() {
  local label="$1" kind="$2" line_gbps="$3"
  shift 3
  n=$((n + 1))
  local json="$tmp/run$n.json"
  local cmd=("$sim" "$@" --seed 1 --no-default-failures --quiet --json "$json")
  echo "load_quality: $label: ${cmd[*]#"$root/"}" >&2
  local t0=$SECONDS
  if ! "${cmd[@]}" >"$tmp/run$n.log" 2>&1; then
    echo "load_quality.sh: mrc-sim failed on $label:" >&2
    cat "$tmp/run$n.log" >&2
    exit 1
  fi
  [[ -s "$json" ]] || { echo "load_quality.sh: mrc-sim wrote no JSON for $label ($sim)" >&2; exit 1; }
  echo "load_quality: $label: $((SECONDS - t0)) s" >&2
  printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$kind" "$line_gbps" "$json" "${*}" >>"$manifest"
}

# Offered line rate of the time-series check: hosts sending x 8 planes x
# 100 Gb/s (the default clos2 NIC).
run "rack-to-rack 8x$r2r_bytes B" flows $((8 * 800)) --workload cm --cm "$tmp/r2r.cm" --transports mrc,mrc-oblivious \
  --sample-us 10
run "permutation 64 hosts $((perm_bytes >> 20)) MiB" flows $((64 * 800)) --workload permutation --hosts 64 \
  --bytes "$perm_bytes" --transports mrc,mrc-oblivious --sample-us 10
run "all-to-all 16 hosts $((a2a_bytes >> 10)) KiB" flows 0 --workload alltoall --hosts 16 --bytes "$a2a_bytes" \
  --transports mrc,mrc-oblivious
run "fattree3 permutation $ft3_hosts hosts $((ft3_bytes >> 20)) MiB" flows 0 --topology fattree3 --hosts "$ft3_hosts" \
  --workload permutation --bytes "$ft3_bytes" --transports mrc
run "incast 127->1 $((incast_bytes >> 10)) KiB" incast 0 --workload incast --hosts 128 --fan-in 127 \
  --bytes "$incast_bytes" --transports mrc,mrc-oblivious
# The same without the application's QP hint: every sender starts at line
# rate and the first round trip overflows the target's last hop.
run "incast 127->1 $((incast_bytes >> 10)) KiB, no QP hints" incast 0 --workload incast --hosts 128 --fan-in 127 \
  --bytes "$incast_bytes" --transports mrc --no-qp-hints
for q in 1 8 16; do
  run "all-reduce 64 hosts $((ar_bytes >> 20)) MiB, $q QP/peer" allreduce 0 --workload allreduce \
    --bytes "$ar_bytes" --qps-per-peer "$q" --transports mrc,roce
done

# Lossless all-to-all against RoCE with PFC (no drops): 16 hosts, one
# message per ordered pair, at several sizes, with MRC's default one QP per
# peer and with RoCE's default one per plane (8) for both.
for b in $a2a_sizes; do
  for q in 1 8; do
    run "lossless all-to-all 16 hosts $((b >> 10)) KiB, $q QP/peer" a2a 0 --workload alltoall --hosts 16 \
      --bytes "$b" --qps-per-peer "$q" --transports mrc,roce-pfc
  done
done

python3 - "$manifest" "$quick" >"$tmp/table.md" <<'PY'
import json
import sys

manifest, quick = sys.argv[1], sys.argv[2] == "1"
rows = [line.rstrip("\n").split("\t") for line in open(manifest) if line.strip()]


def pct(a, b):
    return 100.0 * a / b if b else 0.0


def jain(values):
    if not values:
        return None
    s, sq = sum(values), sum(v * v for v in values)
    return s * s / (len(values) * sq) if sq else None


def percentile(values, p):
    # The rule of mrc-sim's own table (output_table.cc), so the numbers agree.
    if not values:
        return None
    v = sorted(values)
    return v[min(int(p / 100.0 * (len(v) - 1) + 0.5), len(v) - 1)]


def held(run, rate_gbps):
    """Fraction of the samples between the first and the last 10 % of the
    run whose total goodput is >= 95 % of rate_gbps, and the mean goodput
    there as a fraction of it."""
    end = run["simulated_us"]
    window = [s for s in run["series"] if 0.1 * end <= s["t_us"] <= 0.9 * end]
    if not window:
        return None, None
    good = sum(1 for s in window if s["goodput_gbps"] >= 0.95 * rate_gbps)
    mean = sum(s["goodput_gbps"] for s in window) / len(window)
    return good / len(window), mean / rate_gbps


def payload_ceiling(run):
    """The goodput the flows would have if each ran at its ideal rate (alone
    on an idle fabric, at its NIC's full rate): the series counts payload
    only, and headers and framing take about 4 % of the wire (a 4096 B
    payload in about 4260 B), so 95 % of the raw line rate leaves under 1 %
    of slack, which 10 us samples of whole packets already cross. Every
    flow of these scenarios has a sender of its own, so the ideal rates add
    up (each ideal FCT includes one path latency: a fraction of a percent
    low for 200 MB, a few percent for the --quick sizes)."""
    return sum(f["bytes"] * 8e-3 / f["ideal_fct_us"] for f in run["flows"] if f["ideal_fct_us"] > 0)


table = []
held_rows = []
allreduce = {}  # (label) -> {transport: us}
alltoall = {}  # (label) -> {transport: (last FCT us, p50 FCT us)}
for label, kind, line_gbps, path, _cmd in rows:
    doc = json.load(open(path))
    for run in doc["runs"]:
        c = run["counters"]
        t = run["transport"]
        drops = c["drops_queue"] + c["drops_link_down"] + c["drops_random"] + c["drops_no_route"]
        spurious_pct = pct(c["spurious_retransmissions"], c["data_packets"])
        done = run["completed"]
        if kind == "allreduce":
            times = [s["allreduce_us"] for s in run["steps"]]
            ar = times[0] if times else None
            allreduce.setdefault(label, {})[t] = (ar,) if done and ar is not None else None
            time_cell = f"all-reduce {ar:.1f} us" if ar is not None else "-"
            slow_cell = f"{ar / run['allreduce_ideal_us']:.3f} x ideal" if ar is not None else "-"
            jain_cell = "-"
        else:
            flows = [f for f in run["flows"] if f["fct_us"] >= 0]
            p50 = percentile([f["fct_us"] for f in flows], 50)
            smax = max((f["slowdown"] for f in flows), default=None)
            j = jain([f["bytes"] / f["fct_us"] for f in flows if f["fct_us"] > 0])
            time_cell = f"{p50:.1f} us" if p50 is not None else "-"
            slow_cell = f"{smax:.2f}" if smax is not None else "-"
            jain_cell = f"{j:.3f}" if j is not None else "-"
            if kind == "a2a":
                last = max((f["fct_us"] for f in flows), default=None)
                alltoall.setdefault(label, {})[t] = (last, p50) if done and last is not None else None
        if not done:
            time_cell += " (did not complete)"
        # The issue's goals, for the MRC transports (RoCE is the baseline).
        misses = []
        if t.startswith("mrc"):
            if not done:
                misses.append("did not complete")
            if c["evs_retired"]:
                misses.append(f"{c['evs_retired']} EVs retired")
            if spurious_pct > 0.1:
                misses.append(f"spurious {spurious_pct:.2f} % > 0.1 %")
            if kind == "incast":
                if c["drops_trimmed_header"]:
                    misses.append(f"{c['drops_trimmed_header']} header drops")
                if c["ack_timeouts"]:
                    misses.append(f"{c['ack_timeouts']} ACK timeouts")
                if j is not None and j < 0.95:
                    misses.append(f"Jain {j:.3f} < 0.95")
        if float(line_gbps) > 0:
            frac, mean = held(run, float(line_gbps))
            ceiling = payload_ceiling(run)
            pfrac, pmean = held(run, ceiling)
            held_rows.append((label, t, float(line_gbps), frac, mean, ceiling, pfrac, pmean))
            if t.startswith("mrc") and pfrac is not None and pfrac < 1.0:
                misses.append(f"below 95 % of the payload rate in {100 * (1 - pfrac):.0f} % of samples")
        goals = "baseline" if not t.startswith("mrc") else ("met" if not misses else "missed: " + "; ".join(misses))
        table.append([label, t, time_cell, slow_cell, jain_cell, str(c["data_packets"]), str(c["retransmissions"]),
                      f"{c['spurious_retransmissions']} ({spurious_pct:.3f} %)", str(c["evs_retired"]),
                      str(c["ack_timeouts"]), f"{drops} ({c['drops_trimmed_header']})",
                      str(c["trims"]), f"{run['wall_s']:.1f}", goals])

head = ["scenario", "transport", "FCT p50 / time", "slowdown max", "Jain", "data pkts", "rtx",
        "spurious rtx (% data)", "EVs retired", "ACK timeouts", "drops (trimmed hdr)", "trims", "wall s", "goals"]
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---" for _ in head) + "|")
for r in table:
    print("| " + " | ".join(r) + " |")
print()
print("Goodput over time: the samples between the first and the last 10 % of the run whose total goodput is "
      ">= 95 % of the offered line rate (senders x 800 Gb/s), and of the payload rate the flows would have alone "
      "(line rate less headers); the goal is all of them:")
print()
for label, t, line, frac, mean, ceiling, pfrac, pmean in held_rows:
    if frac is None:
        print(f"- {label}, {t}: run too short for a sample window")
    else:
        print(f"- {label}, {t}: {100 * frac:.0f} % of samples >= 95 % of {line:.0f} Gb/s line rate (mean "
              f"{100 * mean:.1f} %); {100 * pfrac:.0f} % >= 95 % of the {ceiling:.0f} Gb/s payload rate (mean "
              f"{100 * pmean:.1f} %)")


def compare(title, results, base, show):
    """One line per scenario: MRC's time against the baseline's (the first
    element of each result), met when MRC's is no longer."""
    print()
    print(title)
    print()
    for label, by in results.items():
        m, r = by.get("mrc"), by.get(base)
        if m is None or r is None:
            print(f"- {label}: a run did not complete")
        else:
            verdict = "met" if m[0] <= r[0] else "missed"
            print(f"- {label}: mrc {show(m)}, {base} {show(r)}, mrc/roce {m[0] / r[0]:.4f}: {verdict}")


compare("Lossless all-reduce (goal: MRC at least as fast as RoCE at every QP count):", allreduce, "roce",
        lambda v: f"{v[0]:.1f} us")
compare("Lossless all-to-all (goal: MRC at least as fast as RoCE at every size and QP count; the time is the last "
        "flow's completion, RoCE with PFC):", alltoall, "roce-pfc", lambda v: f"{v[0]:.2f} us (p50 {v[1]:.2f})")
if quick:
    print()
    print("(--quick: reduced sizes, a smoke run; not the issue's scenarios)")
PY

cat "$tmp/table.md"
if [[ -n "$out" ]]; then cp "$tmp/table.md" "$out"; fi
