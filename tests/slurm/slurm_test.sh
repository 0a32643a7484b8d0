#!/usr/bin/env bash
# `hecate-sim sweep` as a Slurm job array on a real, private, single-node Slurm: starts munged,
# slurmctld and slurmd on a throw-away configuration in a temp dir, runs
# scripts/slurm/sweep-array.sh as a 3-task array, merges the shards and checks that the merged
# files are byte-identical to a local run. Usage: slurm_test.sh HECATE_SIM SOURCE_ROOT
#
# Exits 77 (skipped, reason on stdout) where it cannot run: not root, Slurm or munge not installed,
# or the daemons do not come up. Every daemon it started is stopped and the temp dir removed on exit.
# Nothing outside the temp dir is written (no /etc, no system daemons).
set -u

skip() { echo "skip: $*"; exit 77; }
fails=0
ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

[ $# -eq 2 ] || { echo "usage: $0 HECATE_SIM SOURCE_ROOT" >&2; exit 2; }
# Absolute paths: the jobs run in the temp dir.
sim="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$2" && pwd)"
[ -x "$sim" ] || { echo "FAIL: $sim is not executable"; exit 1; }
fx="$root/tests/fixtures"
array_script="$root/scripts/slurm/sweep-array.sh"

# If this test itself runs inside a Slurm job, its SLURM_* variables (e.g. SLURM_ARRAY_TASK_ID)
# would leak into the local reference run and into the daemons: drop them all.
for v in $(compgen -e | grep '^SLURM_'); do unset "$v"; done

[ "$(id -u)" = 0 ] || skip "needs root (runs its own slurmctld/slurmd as SlurmUser=root)"
for c in slurmctld slurmd munged sbatch sinfo squeue scancel; do
  command -v "$c" > /dev/null || skip "$c not found (apt-get install slurm-wlm munge)"
done

tmp=$(mktemp -d)
pids=()            # daemons we started, in start order

# Stop whatever we started, newest first: cancel leftover jobs while the controller still runs,
# then SIGTERM each daemon, SIGKILL it after 10 s, and remove the temp dir.
cleanup() {
  if [ -n "${SLURM_CONF:-}" ] && [ "${#pids[@]}" -ge 2 ]; then
    timeout 10 scancel --quiet --user=root > /dev/null 2>&1
    for _ in $(seq 10); do
      [ -z "$(timeout 5 squeue -h -o %i 2> /dev/null)" ] && break
      sleep 1
    done
  fi
  local i pid
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[i]}
    kill -TERM "$pid" 2> /dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2> /dev/null && kill -KILL "$pid"
    wait "$pid" 2> /dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Show the tail of a daemon log on stderr (for a skip's or failure's diagnosis).
show_log() { [ -f "$1" ] && { echo "--- tail of $(basename "$1"):"; tail -n 15 "$1"; } >&2; }

# start NAME LOG CMD...: start a daemon in the foreground mode of its own, as a background job of
# this shell (so $! is the daemon and cleanup can stop it by pid), stdio away from our stdout.
start() {
  local name="$1" log="$2"; shift 2
  "$@" < /dev/null >> "$log" 2>&1 &
  pids+=($!)
  sleep 0.5
  kill -0 "$!" 2> /dev/null || { show_log "$log"; skip "$name exited at start (see $(basename "$log"))"; }
}

# --- munge: a private key, socket, pid, seed and log, all in the temp dir -----------------------
# munged refuses a key others can read and warns unless every user can reach its socket: key 600,
# its directories 711 (mktemp's 700 for the temp dir would hide the socket).
chmod 711 "$tmp"; mkdir -m 711 "$tmp/munge"
if command -v mungekey > /dev/null; then
  mungekey --create --keyfile="$tmp/munge/munge.key" > /dev/null 2>&1 || skip "mungekey failed"
else
  dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none || skip "cannot write a munge key"
fi
chmod 600 "$tmp/munge/munge.key"
sock="$tmp/munge/munge.socket"
start munged "$tmp/munged.log" munged --foreground --force --socket="$sock" --key-file="$tmp/munge/munge.key" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" --log-file="$tmp/munged.log"
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { show_log "$tmp/munged.log"; skip "munged did not create its socket"; }

# --- slurm.conf for one node, this host, on ports unlikely to be in use -------------------------
node=$(hostname -s)
cpus=$(nproc)
ctld_port=$((20000 + RANDOM % 20000)); slurmd_port=$((ctld_port + 1))
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/jobdir"
export SLURM_CONF="$tmp/slurm.conf"   # read by sinfo/sbatch/squeue/scancel (and the daemons via -f)
cat > "$SLURM_CONF" <<EOF
ClusterName=hecate-test
# The address pinned to loopback: no reliance on the host name resolving.
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
# The default, /bin/mail, is usually absent, which slurmctld logs as an error.
MailProg=/bin/true
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Trust this file's node description over what slurmd detects (CPU layout, memory).
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=256 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF

# -D: stay in the foreground (we own the pid); -c: start clean, without looking for saved state.
start slurmctld "$tmp/slurmctld.log" slurmctld -D -c -f "$SLURM_CONF"
start slurmd "$tmp/slurmd.log" slurmd -D -f "$SLURM_CONF" -N "$node"

# Wait for the node to register and turn idle (60 s in all, however slow sinfo is to answer).
state=""
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
  state=$(timeout 5 sinfo -h -N -n "$node" -o %T 2> /dev/null | head -n 1)
  [ "$state" = idle ] && break
  for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null || break 2; done
  sleep 1
done
if [ "$state" != idle ]; then
  show_log "$tmp/slurmctld.log"; show_log "$tmp/slurmd.log"
  skip "node $node not idle within 60 s (state '${state:-none}')"
fi
ok "slurmctld + slurmd up, node $node idle ($cpus CPUs)"

# --- the sweep: the CLI test's small sweep, with absolute paths ---------------------------------
cat > "$tmp/jobdir/sw.yaml" <<EOF
schema: hecate-sim/sweep@1
topologies: [dgx-h100-1node]
traces: [$fx/tiny-trace.json]
models: [$fx/tiny-model.yaml]
strategies:
  ep: {}
  fssdp: {overlap_degree: [auto, 0, 2], rematerialize: [false, true]}
  smartmoe: {period: [1, 2]}
iterations: 6
EOF
cd "$tmp/jobdir" || exit 1
"$sim" sweep sw.yaml --jobs 1 --out local > local.out 2> local.err || { fail "local sweep run"; sed 's/^/  | /' local.err | head -5; }

# The array: 3 tasks, one CPU each (overriding the script's #SBATCH --cpus-per-task=4, more than a
# small node has); HECATE_SIM reaches the tasks through sbatch's default --export=ALL. The tasks
# take well under a second; the rest is scheduling and sbatch --wait's polling (a few seconds).
export HECATE_SIM="$sim"
if timeout 60 sbatch --wait --quiet --array=0-2 --cpus-per-task=1 --chdir="$tmp/jobdir" \
     "$array_script" sw.yaml arr > sbatch.out 2> sbatch.err; then
  ok "sbatch --wait --array=0-2 sweep-array.sh: all tasks exited 0"
else
  fail "sbatch --array=0-2 (exit $?)"; sed 's/^/  | /' sbatch.err | head -5
  for f in hecate-sweep-*.log; do [ -f "$f" ] && { echo "  --- $f"; tail -n 5 "$f" | sed 's/^/  | /'; }; done
  show_log "$tmp/slurmctld.log"; show_log "$tmp/slurmd.log"
fi

# Each task wrote its own shard (so SLURM_ARRAY_TASK_ID/_COUNT were honoured): 3 of the 9 points each.
shard_ok=1
for k in 0 1 2; do
  n=$(grep -c '"role": "point"' "arr.shard$k-of-3.jsonl" 2> /dev/null); n=${n:-0}
  [ "$n" = 3 ] || { shard_ok=0; echo "  | arr.shard$k-of-3.jsonl has $n points, wanted 3"; }
done
if [ "$shard_ok" = 1 ]; then ok "3 shard files, 3 points each"; else fail "shard files"; fi

# The merge, as the script documents it; every point comes from the shards, none is rerun.
if "$array_script" --merge sw.yaml arr 3 > merge.out 2> merge.err && grep -q "resuming, 9 of 9 points" merge.err; then
  ok "sweep-array.sh --merge: all 9 points taken from the shards"
else
  fail "sweep-array.sh --merge"; sed 's/^/  | /' merge.err | head -5
fi

if cmp -s local.jsonl arr.jsonl && cmp -s local.csv arr.csv; then
  ok "merged arr.jsonl and arr.csv are byte-identical to the local run"
else
  fail "merged files differ from the local run"; cmp local.jsonl arr.jsonl; cmp local.csv arr.csv
fi

if [ "$fails" -gt 0 ]; then echo "$fails Slurm case(s) failed"; exit 1; fi
echo "all Slurm cases passed"
