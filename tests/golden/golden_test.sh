#!/usr/bin/env bash
# Golden end-to-end cases: each line of cases.txt is NAME|ARGS; the JSON output of
# `hecate-sim run ARGS --format json` must equal golden/NAME.json byte for byte.
# Re-bless after an intended model change with scripts/bless-golden.sh (it prints the diff).
# Usage: golden_test.sh HECATE_SIM SOURCE_ROOT [--bless]
set -u
sim="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; root="$2"; bless="${3:-}"
cd "$root"
fails=0
while IFS='|' read -r name args; do
  [ -z "$name" ] && continue
  case "$name" in \#*) continue;; esac
  # shellcheck disable=SC2086
  out=$("$sim" run $args --format json 2>/dev/null) || { echo "FAIL: $name: hecate-sim exited $?"; fails=$((fails+1)); continue; }
  want="tests/golden/$name.json"
  if [ "$bless" = "--bless" ]; then
    if [ -f "$want" ]; then diff <(cat "$want") <(printf '%s\n' "$out") | head -40; fi
    printf '%s\n' "$out" > "$want"; echo "blessed $name"
  elif diff <(cat "$want") <(printf '%s\n' "$out") > /tmp/golden.$$.diff 2>&1; then
    echo "ok: $name"
  else
    echo "FAIL: $name differs from $want:"; head -30 /tmp/golden.$$.diff; fails=$((fails+1))
  fi
  rm -f /tmp/golden.$$.diff
done < tests/golden/cases.txt
[ "$fails" -eq 0 ]
