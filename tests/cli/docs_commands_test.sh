#!/usr/bin/env bash
# Every command the docs show runs (issue 34, "Examples that exist"). Usage:
# docs_commands_test.sh HECATE_SIM SOURCE_ROOT
#
# Read: README.md, docs/*.md and examples/README.md. Extracted:
#   - each line of a fenced ```sh or ```bash block that starts (after indentation and an optional
#     "$ " prompt) with `hecate-sim ` or with a path ending in `/hecate-sim ` (e.g.
#     build-release/src/cli/hecate-sim); a line ending in `\` continues on the next;
#   - each `$ hecate-sim ...` line of a ```console block, with the lines under it (up to the next
#     prompt or the block's end) as the output the doc shows: the command must print each of them
#     (a line of its stdout or stderr), and exit 2 when they hold "error:" (bad input shown as the
#     tool reports it), else 0;
#   - each inline `hecate-sim ...` span of the prose (it may wrap onto the next line).
# The leading `hecate-sim` (or path) is replaced by HECATE_SIM and the rest is run by bash as if from
# SOURCE_ROOT: from a scratch directory holding a symbolic link to each top-level entry of
# SOURCE_ROOT, so that the docs' relative paths (traces/..., examples/...) resolve and the files a
# command writes to the working directory (a sweep's results) land outside the source tree; the
# files are kept for the doc's later commands. A trailing `# ...` comment is dropped first.
#
# Skipped, and only these (each skip is printed with its reason):
#   1. synopsis lines: an upper-case word of the synopsis kind (FILE, TOPOLOGY, TRACE, N, ...: a word
#      of capitals, digits and _ that is not an option value in quotes), or `<...>`, or the
#      synopsis brackets `[` / `|` of optional and alternative arguments;
#   2. commands that need MPI, Slurm or a GPU: mpirun, srun, sbatch, nvidia-smi, --gpu, nccl-tests
#      runs (hecate-validate), CUDA;
#   3. commands the doc marks as long-running: the line, or the line before it in the block, says
#      "long-running" or "takes minutes".
# A `hecate-sim` line in a fenced block of another kind (plain ```, ```text, ```yaml) must be a
# synopsis line (rule 1): a runnable command belongs in a ```sh block, where it is run.
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

# FILE, LINE, KIND, PREVIOUS LINE, COMMAND, SHOWN OUTPUT (lines joined by \x1e) separated by \x1f
# (not a tab: read would merge empty fields). KIND: sh, console, inline or other (another block).
extract() {
  local f
  for f in README.md docs/*.md examples/README.md; do
    awk -v F="$f" '
      function emit() {
        if (pend != "") printf "%s\x1f%d\x1f%s\x1f%s\x1f%s\x1f%s\n", F, pstart, pkind, pbefore, pend, pshown
        pend = ""; pshown = ""
      }
      /^[ \t]*```/ {
        if (inb) { emit(); inb = 0; next }
        lang = $0; sub(/^[ \t]*```/, "", lang); sub(/[ \t].*$/, "", lang)
        kind = (lang == "sh" || lang == "bash") ? "sh" : (lang == "console") ? "console" : "other"
        inb = 1; prev = ""; next
      }
      inb && kind == "console" && pend != "" && $0 !~ /^[ \t]*\$ / {
        pshown = pshown (pshown == "" ? "" : "\x1e") $0; next
      }
      inb {
        s = $0; sub(/^[ \t]*(\$ )?/, "", s)
        if (cont != "") {
          cmd = cmd " " s
        } else if (s ~ /^([^ \t]*\/)?hecate-sim( |$)/) {
          emit(); cmd = s; start = NR; before = prev
        } else { prev = s; next }
        if (cmd ~ /\\$/) { sub(/\\$/, "", cmd); cont = 1; next }
        cont = ""
        pend = cmd; pstart = start; pkind = kind; pbefore = before
        if (kind != "console") emit()
        prev = s; next
      }
      # Prose: inline `hecate-sim ...` spans, possibly wrapped onto the next line.
      {
        line = (carry != "") ? carry " " $0 : $0
        if (carry != "") { cstart = cstart } else { cstart = NR }
        carry = ""
        while ((i = index(line, "`hecate-sim ")) > 0) {
          rest = substr(line, i + 1); j = index(rest, "`")
          if (j == 0) { carry = "`" rest; break }
          printf "%s\x1f%d\x1f%s\x1f%s\x1f%s\x1f%s\n", F, cstart, "inline", "", substr(rest, 1, j - 1), ""
          line = substr(rest, j + 1)
        }
      }' "$f"
  done
}

while IFS=$'\x1f' read -r file line kind before cmd shown; do
  cmd="${cmd%%[[:space:]]#*}"                       # a trailing comment
  rest="${cmd#*hecate-sim}"                         # the arguments
  reason=""
  if [[ "$rest" =~ (^|[^A-Za-z0-9_.-])[A-Z][A-Z0-9_]*([^A-Za-z0-9_-]|$) ]] \
     || [[ "$rest" == *"<"*">"* ]] || [[ "$rest" == *"["* ]] || [[ "$rest" == *"|"* ]]; then
    reason="synopsis"
  elif [ "$kind" = other ]; then
    echo "FAIL: $file:$line: a runnable command in a fenced block that is not \`\`\`sh: $cmd"
    fails=$((fails+1)); continue
  elif [[ "$cmd" =~ (mpirun|srun|sbatch|nvidia-smi|hecate-validate|--gpu|CUDA) ]]; then
    reason="needs MPI, Slurm or a GPU"
  elif [[ "$cmd $before" =~ (long-running|takes minutes) ]]; then
    reason="marked long-running"
  fi
  if [ -n "$reason" ]; then
    echo "skip ($reason, $kind): $file:$line: $cmd" | cut -c1-200; skipped=$((skipped+1)); continue
  fi
  start=$(date +%s.%N)
  (cd "$tmp/cwd" && bash -c "\"\$0\"$rest" "$sim") >"$tmp/out" 2>"$tmp/err"
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  ran=$((ran+1))
  want=0; [[ "$shown" == *"error:"* ]] && want=2
  missing=""
  if [ -n "$shown" ]; then
    while IFS= read -r l; do
      [ -z "$l" ] || grep -qxF -- "$l" "$tmp/out" "$tmp/err" || missing+="  | not printed: $l"$'\n'
    done < <(printf '%s\n' "$shown" | tr '\036' '\n')
  fi
  if [ "$rc" != "$want" ] || [ -n "$missing" ]; then
    echo "FAIL (exit $rc, expected $want, ${secs} s): $file:$line: $cmd"
    printf '%s' "$missing"; sed 's/^/  | /' "$tmp/err" | head -8
    fails=$((fails+1))
  else
    echo "ok ($kind, ${secs} s): $file:$line: $cmd" | cut -c1-200
  fi
done < <(extract)

echo "$ran command(s) run, $skipped skipped, $fails failed"
[ "$ran" -gt 0 ] || { echo "FAIL: no command extracted"; exit 1; }
[ "$fails" = 0 ]
