#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# scripts/doc_commands.sh must fail, naming the file and line, when a
# documented command fails: a page with a passing block, a block whose
# third command fails, and a block whose background command fails. Blocks
# not marked runnable are not run, and a `build/release/` path is the build
# tree given.
#   doc_commands_test.sh SCRIPT BUILD_DIR
set -euo pipefail
script="$1" build="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$tmp/build/bin"
printf '#!/bin/sh\nexit "${1:-0}"\n' >"$tmp/build/bin/status"
chmod +x "$tmp/build/bin/status"
# Line numbers matter below: the failing command is line 11, the block
# with the failing background command starts at line 16.
cat >"$tmp/page.md" <<'MD'
# A page

```sh runnable
build/release/bin/status 0
echo "ran from $PWD"
```

```sh runnable
true
build/release/bin/status 0
build/release/bin/status 3
echo "not reached"
```

```sh runnable
build/release/bin/status 4 &
build/release/bin/status 0
```

```sh
build/release/bin/status 9   # not marked: never run
```
MD

rc=0
bash "$script" --build "$tmp/build" "$tmp/page.md" >"$tmp/out" 2>&1 || rc=$?
cat "$tmp/out"
[[ $rc == 1 ]] || fail "exit status $rc, expected 1"
grep -q "^ok   $tmp/page.md:4 " "$tmp/out" || fail "the passing block at line 4 is not reported ok"
grep -q "^FAIL $tmp/page.md:11: build/release/bin/status 3$" "$tmp/out" \
  || fail "the failing command is not named with its file and line (page.md:11)"
grep -q "^FAIL $tmp/page.md:16: " "$tmp/out" || fail "the failing background command's block (page.md:16) is not named"
grep -q "not reached" "$tmp/out" && fail "the block went on after its failing command"
[[ $(grep -c '^ok \|^FAIL ' "$tmp/out") == 3 ]] || fail "expected three blocks run (the unmarked one is not)"

# --list names the runnable blocks only.
bash "$script" --list "$tmp/page.md" >"$tmp/list"
[[ "$(cat "$tmp/list")" == "$tmp/page.md:4"$'\n'"$tmp/page.md:9"$'\n'"$tmp/page.md:16" ]] \
  || fail "--list printed: $(cat "$tmp/list")"

# Usage errors exit 2.
rc=0; bash "$script" --bogus >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "--bogus: exit $rc, expected 2"
rc=0; bash "$script" --build "$tmp/nonexistent" "$tmp/page.md" >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "a missing build tree: exit $rc, expected 2"
echo "PASS"
