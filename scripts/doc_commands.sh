#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs the commands the documentation shows, so that a documented command
# cannot drift from the software: every fenced block of README.md and
# docs/*.md whose info string is `sh runnable` is run, and the first command
# that fails is reported with its file and line.
#
#   scripts/doc_commands.sh [--build DIR] [--list] [--timeout S] [FILE...]
#
# --build DIR   the build tree the commands run from (default build/release).
#               A block is written as a user would type it, from the source
#               root with `build/release/...` (or `build/dev/...`) paths;
#               those prefixes are replaced by DIR, so the same text runs on
#               the dev build in the test suite.
# --list        print FILE:LINE of each runnable block and run nothing
# --timeout S   seconds a block may take (default 60)
# FILE...       Markdown files (default: README.md and docs/*.md)
#
# What is marked runnable: commands that take seconds and need nothing but
# the build tree (mrc-sim on a small fabric, the tools' --help, the perf
# tools and raw UDP program on loopback with small sizes). Not marked, and so
# not run here: the quick-start scripts and builds (minutes), anything that
# needs root, network namespaces or a fabric (`tools/fabric/fabric`,
# `--raw-send`, `--ev-mode srv6`, the carrier tests), Wireshark, and the
# benchmark studies (`bench/*.sh`, minutes; each has its own quick test).
#
# How a block runs: as one bash script (`set -e -o pipefail`) with the block's
# background commands (`server &`) waited for at its end and their exit
# status checked. Its working directory is a scratch one that links every
# top-level entry of the source root, so `examples/...` or `tools/...` paths
# resolve as in the source root while the files a block writes (`--csv
# out`) stay out of the tree. Where unshare(1) can make one, the
# blocks run in a private network namespace with only loopback, so the
# perf tools' fixed ports never meet another test's, and every process a
# block started ends with it. Exit status: 0 all passed, 1 a block failed,
# 2 usage error.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build/release" list=0 timeout_s=60 files=()
die() { echo "doc_commands: $*" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --build) build="${2:?--build needs a directory}"; shift 2 ;;
    --list) list=1; shift ;;
    --timeout) timeout_s="${2:?--timeout needs seconds}"; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$1' (--help lists them)" ;;
    *) files+=("$1"); shift ;;
  esac
done
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || die "--timeout '$timeout_s': need a positive number of seconds"
# Paths given are the caller's; the blocks run in the source root.
for f in "${files[@]}"; do
  [[ -f "$f" ]] || die "$f: no such file"
done
for i in "${!files[@]}"; do
  [[ "${files[$i]}" == /* ]] || files[$i]="$PWD/${files[$i]}"
done
[[ "$build" == /* ]] || build="$PWD/$build"
cd "$root"
if ((${#files[@]} == 0)); then
  files=(README.md docs/*.md)
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Cut the runnable blocks out: block N's text in $tmp/N.sh, its origin
# (file and the line of its first command) in $tmp/N.at.
awk -v dir="$tmp" '
  FNR == 1 { inblock = 0 }
  !inblock && /^```(sh|bash)[ \t]+runnable[ \t]*$/ { inblock = 1; n++; print FILENAME ":" FNR + 1 > (dir "/" n ".at"); next }
  inblock && /^```[ \t]*$/ { inblock = 0; close(dir "/" n ".sh"); next }
  inblock { print > (dir "/" n ".sh") }
  END { print n + 0 > (dir "/count") }
' "${files[@]}"
count="$(cat "$tmp/count")"
if ((count == 0)); then
  echo "doc_commands: no runnable block in ${files[*]}" >&2
  exit 1
fi

if ((list)); then
  for ((i = 1; i <= count; i++)); do cat "$tmp/$i.at"; done
  exit 0
fi
[[ -d "$build" ]] || die "--build: no build tree at '$build' (cmake --preset release && cmake --build --preset release)"
build="$(cd "$build" && pwd)"

# A private network namespace where we can have one (root, or an
# unprivileged user namespace), else the host's loopback.
netns=()
if unshare --net --pid --fork --kill-child --map-root-user true 2>/dev/null; then
  netns=(unshare --net --pid --fork --kill-child --map-root-user)
elif unshare --net --pid --fork --kill-child true 2>/dev/null; then
  netns=(unshare --net --pid --fork --kill-child)
else
  echo "doc_commands: unshare cannot make a network namespace here; running on the host's loopback" >&2
fi

failed=0
for ((i = 1; i <= count; i++)); do
  at="$(cat "$tmp/$i.at")" file="${at%:*}" line="${at##*:}"
  # Line 1 of the script is the prologue, so a block's line k is line k + 1.
  {
    printf '%s\n' 'set -eE -o pipefail; trap '"'"'echo "doc_commands: block line $((LINENO - 1)): exit status $?" >&2'"'"' ERR; trap '"'"'kill $(jobs -p) 2>/dev/null || true'"'"' EXIT'
    sed -E "s#(^|[^[:alnum:]_./-])build/(release|dev)/#\\1${build}/#g" "$tmp/$i.sh"
    printf '%s\n' 'for j in $(jobs -p); do wait "$j" || { echo "doc_commands: block line 0: a background command (&) failed with exit status $?" >&2; exit 1; }; done'
  } >"$tmp/$i.run"
  if ((${#netns[@]})); then
    runner=("${netns[@]}" bash -c 'ip link set lo up && exec bash "$0"' "$tmp/$i.run")
  else
    runner=(bash "$tmp/$i.run")
  fi
  mkdir "$tmp/work$i"
  for e in "$root"/*; do ln -s "$e" "$tmp/work$i/"; done
  start=$SECONDS
  if (cd "$tmp/work$i" && exec timeout --kill-after=5 "$timeout_s" "${runner[@]}") >"$tmp/$i.out" 2>&1 </dev/null; then
    echo "ok   $at ($((SECONDS - start)) s)"
    continue
  else
    rc=$?
  fi
  failed=1
  k="$(sed -n 's/^doc_commands: block line \([0-9]*\): .*/\1/p' "$tmp/$i.out" | tail -1)"
  if [[ -n "$k" && "$k" != 0 ]]; then
    fline=$((line + k - 1))
    echo "FAIL $file:$fline: $(sed -n "${k}p" "$tmp/$i.sh")"
  elif ((rc == 124 || rc == 137)); then
    echo "FAIL $at: the block did not finish within $timeout_s s"
  else
    echo "FAIL $at: exit status $rc (the block starting here)"
  fi
  echo "---- output (last 30 lines) ----"
  tail -n 30 "$tmp/$i.out"
  echo "--------------------------------"
done
exit "$failed"
