#!/usr/bin/env bash
# Golden end-to-end cases: each line of cases.txt is one of
#   NAME|ARGS                  `hecate-sim run ARGS --format json`'s output must equal golden/NAME.json
#   NAME|=COMMAND ARGS         `hecate-sim COMMAND ARGS`'s standard output must equal golden/NAME.out
#   NAME|>FILE|COMMAND ARGS    after `hecate-sim COMMAND ARGS`, FILE must equal golden/NAME.EXT (EXT:
#                              FILE's extension); {OUT} in FILE and ARGS is a fresh temporary folder
# byte for byte. Re-bless after an intended model change with scripts/bless-golden.sh (it prints the diff).
# Usage: golden_test.sh HECATE_SIM SOURCE_ROOT [--bless]
set -u
sim="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; root="$2"; bless="${3:-}"
cd "$root"
fails=0; passed=0
out_dir=$(mktemp -d); trap 'rm -rf "$out_dir"' EXIT
while IFS='|' read -r name spec file_args; do
  [ -z "$name" ] && continue
  case "$name" in \#*) continue;; esac
  rm -rf "${out_dir:?}"/*
  case "$spec" in
    =*)
      want="tests/golden/$name.out"
      # shellcheck disable=SC2086
      got=$("$sim" ${spec#=} 2>/dev/null) || { echo "FAIL: $name: hecate-sim exited $?"; fails=$((fails+1)); continue; } ;;
    \>*)
      file=${spec#>}; file=${file//\{OUT\}/$out_dir}; args=${file_args//\{OUT\}/$out_dir}
      want="tests/golden/$name.${file##*.}"
      # shellcheck disable=SC2086
      "$sim" $args >/dev/null 2>&1 || { echo "FAIL: $name: hecate-sim exited $?"; fails=$((fails+1)); continue; }
      got=$(cat "$file") ;;
    *)
      want="tests/golden/$name.json"
      # shellcheck disable=SC2086
      got=$("$sim" run $spec --format json 2>/dev/null) || { echo "FAIL: $name: hecate-sim exited $?"; fails=$((fails+1)); continue; } ;;
  esac
  if [ "$bless" = "--bless" ]; then
    if [ -f "$want" ]; then diff <(cat "$want") <(printf '%s\n' "$got") | head -40; fi
    printf '%s\n' "$got" > "$want"; echo "blessed $name"
  elif diff <(cat "$want") <(printf '%s\n' "$got") > "$out_dir/.diff" 2>&1; then
    echo "ok: $name"; passed=$((passed+1))
  else
    echo "FAIL: $name differs from $want:"; head -30 "$out_dir/.diff"; fails=$((fails+1))
  fi
done < tests/golden/cases.txt
echo "$passed passed, $fails failed"
[ "$fails" -eq 0 ]
