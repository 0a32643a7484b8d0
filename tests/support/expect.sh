# Shared by the shell test suites (source it after setting $tmp and fails=0).
# expect CODE PATTERN... -- CMD...: run CMD, check its exit code and that stderr matches every
# pattern (extended regular expressions); a mismatch prints the command and stderr and counts a failure.
expect() {
  local code="$1"; shift
  local pats=()
  while [ "$1" != "--" ]; do pats+=("$1"); shift; done
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" != "$code" ]; then
    echo "FAIL (exit $rc, wanted $code): $*"; sed 's/^/  | /' "$tmp/err" | head -5; fails=$((fails+1)); return
  fi
  for p in "${pats[@]}"; do
    if ! grep -qE -- "$p" "$tmp/err"; then
      echo "FAIL (stderr lacks /$p/): $*"; sed 's/^/  | /' "$tmp/err" | head -5; fails=$((fails+1)); return
    fi
  done
  echo "ok: $*" | cut -c1-160
}
