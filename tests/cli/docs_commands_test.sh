#!/usr/bin/env bash
# Every command the docs show runs (issue 34, "Examples that exist"). Usage:
# docs_commands_test.sh HECATE_SIM SOURCE_ROOT
#
# Extracted: each line of a fenced ```sh, ```bash or ```console block of README.md and docs/*.md
# that starts (after indentation and an optional "$ " prompt) with `hecate-sim ` or with a path
# ending in `/hecate-sim ` (e.g. build-release/src/cli/hecate-sim); a line ending in `\` continues
# on the next. The leading `hecate-sim` (or path) is replaced by HECATE_SIM and the rest is run
# by bash as if from SOURCE_ROOT: from a scratch directory holding a symbolic link to each top-level
# entry of SOURCE_ROOT, so that the docs' relative paths (traces/..., sweeps/...) resolve and the
# files a command writes to the working directory (a sweep's results) land outside the source tree.
# A trailing `# ...` comment is dropped first.
#
# Skipped, and only these (each skip is printed with its reason):
#   1. placeholders: an upper-case word of the synopsis kind (FILE, TOPOLOGY, TRACE, N, ...: a word
#      of capitals, digits and _ that is not an option value in quotes), or `<...>`, or the
#      synopsis brackets `[` / `|` of optional and alternative arguments;
#   2. commands that need MPI, Slurm or a GPU: mpirun, srun, sbatch, nvidia-smi, --gpu, nccl-tests
#      runs (hecate-validate), CUDA;
#   3. commands the doc marks as long-running: the line, or the line before it in the block, says
#      "long-running" or "takes minutes".
# Anything else must exit 0; exit 2 (bad input) is a failure too: the docs must show working
# commands. A failure names the doc file and line.
set -u
sim="$1"; root="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
root=$(cd "$root" && pwd) || exit 1
case "$sim" in /*) ;; *) sim="$PWD/$sim" ;; esac  # meson passes it relative to the build folder
mkdir "$tmp/cwd" && for e in "$root"/* "$root"/.[!.]*; do [ -e "$e" ] && ln -s "$e" "$tmp/cwd/"; done
cd "$root" || exit 1
fails=0; ran=0; skipped=0

# FILE, LINE, PREVIOUS LINE, COMMAND separated by \x1f (not a tab: read would merge empty fields).
extract() {
  local f
  for f in README.md docs/*.md; do
    awk -v F="$f" '
      /^[ \t]*```/ {
        if (inb) { inb = 0; next }
        lang = $0; sub(/^[ \t]*```/, "", lang); sub(/[ \t].*$/, "", lang)
        inb = (lang == "sh" || lang == "bash" || lang == "console") ? 1 : 2; prev = ""; next
      }
      inb == 1 {
        s = $0; sub(/^[ \t]*(\$ )?/, "", s)
        if (cont != "") {
          cmd = cmd " " s
        } else if (s ~ /^([^ \t]*\/)?hecate-sim( |$)/) {
          cmd = s; start = NR; before = prev
        } else { prev = s; next }
        if (cmd ~ /\\$/) { sub(/\\$/, "", cmd); cont = 1; next }
        cont = ""
        printf "%s\x1f%d\x1f%s\x1f%s\n", F, start, before, cmd
        prev = s
      }' "$f"
  done
}

while IFS=$'\x1f' read -r file line before cmd; do
  cmd="${cmd%%[[:space:]]#*}"                       # a trailing comment
  rest="${cmd#*hecate-sim}"                         # the arguments
  reason=""
  if [[ "$rest" =~ (^|[^A-Za-z0-9_.-])[A-Z][A-Z0-9_]*([^A-Za-z0-9_-]|$) ]] \
     || [[ "$rest" == *"<"*">"* ]] || [[ "$rest" == *"["* ]] || [[ "$rest" == *"|"* ]]; then
    reason="placeholder"
  elif [[ "$cmd" =~ (mpirun|srun|sbatch|nvidia-smi|hecate-validate|--gpu|CUDA) ]]; then
    reason="needs MPI, Slurm or a GPU"
  elif [[ "$cmd $before" =~ (long-running|takes minutes) ]]; then
    reason="marked long-running"
  fi
  if [ -n "$reason" ]; then
    echo "skip ($reason): $file:$line: $cmd" | cut -c1-200; skipped=$((skipped+1)); continue
  fi
  start=$(date +%s.%N)
  (cd "$tmp/cwd" && bash -c "\"\$0\"$rest" "$sim") >"$tmp/out" 2>"$tmp/err"
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  ran=$((ran+1))
  if [ "$rc" != 0 ]; then
    echo "FAIL (exit $rc, ${secs} s): $file:$line: $cmd"; sed 's/^/  | /' "$tmp/err" | head -8
    fails=$((fails+1))
  else
    echo "ok (${secs} s): $file:$line: $cmd" | cut -c1-200
  fi
done < <(extract)

echo "$ran command(s) run, $skipped skipped, $fails failed"
[ "$ran" -gt 0 ] || { echo "FAIL: no command extracted"; exit 1; }
[ "$fails" = 0 ]
