#!/usr/bin/env bash
# slurm_test.sh - tools/slurm/hfpack-sharded.sh on a real, single-node Slurm (issue 18).
#
# usage: tests/slurm_test.sh HFPACK SCRIPT DEM
# Starts munged (a temporary key and socket), slurmctld and slurmd on 127.0.0.1 with a temporary
# slurm.conf (free ports, state, spool, logs and pid files all in one temporary folder), submits
# SCRIPT with 4 array tasks on DEM and --wait, and compares the merged archive with a single
# `hfpack DEM -o ...` (cmp); then parts that fail (a bad option) must cancel the merge and leave
# no archive. Everything is bounded in time and killed on exit (trap).
# Exit status: 0 passed, 1 failed, 77 skipped (ctest SKIP_RETURN_CODE): Slurm or munge is not
# installed, the test does not run as root (slurmd must), or the daemons cannot start here; the
# reason is printed. HF_SLURM_REQUIRED=1 turns a skip into a failure.
set -uo pipefail

HFPACK="${1:?usage: slurm_test.sh HFPACK SCRIPT DEM}"
SCRIPT="${2:?usage: slurm_test.sh HFPACK SCRIPT DEM}"
DEM="${3:?usage: slurm_test.sh HFPACK SCRIPT DEM}"
PARTS=4

skip() {
  echo "SKIP: $*"
  [[ "${HF_SLURM_REQUIRED:-0}" == 1 ]] && { echo "FAIL: HF_SLURM_REQUIRED=1"; exit 1; }
  exit 77
}
fail() { echo "FAIL: $*"; exit 1; }

for c in munged slurmctld slurmd sbatch scontrol squeue python3 timeout; do
  command -v "$c" > /dev/null || skip "$c not found (Debian: slurm-wlm (slurmctld slurmd slurm-client), munge)"
done
[[ "$(id -u)" == 0 ]] || skip "not root: slurmd must run as root to start jobs"
[[ -x "$HFPACK" ]] || fail "no hfpack at $HFPACK"
[[ -r "$DEM" ]] || skip "no DEM at $DEM"

T="$(mktemp -d "${TMPDIR:-/tmp}/hf_slurm.XXXXXX")"
pids=()
cleanup() {
  # Jobs first (their steps are children of slurmd), then the daemons we started, by PID.
  [[ -f "$T/slurm.conf" ]] && SLURM_CONF="$T/slurm.conf" timeout 5 scancel --quiet --user=root > /dev/null 2>&1
  for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2> /dev/null; done
  for _ in $(seq 1 50); do
    alive=0
    for p in "${pids[@]+"${pids[@]}"}"; do kill -0 "$p" 2> /dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for p in "${pids[@]+"${pids[@]}"}"; do kill -9 "$p" 2> /dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
logs() {
  for f in "$T"/munged.log "$T"/slurmctld.log "$T"/slurmd.log "$T"/work/*.log; do
    [[ -f "$f" ]] && { echo "---- $f (last lines)"; tail -n 15 "$f"; }
  done
}

# ---- munge: a temporary key and socket ----
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge.key"
mkdir -p "$T/munge" && chmod 700 "$T/munge"
SOCK="$T/munge/munge.socket"
munged --foreground --force --key-file="$T/munge.key" --socket="$SOCK" --pid-file="$T/munge/munged.pid" \
  --log-file="$T/munged.log" --seed-file="$T/munge/munged.seed" > /dev/null 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [[ -S "$SOCK" ]] && break; sleep 0.1; done
[[ -S "$SOCK" ]] || { logs; skip "munged did not start"; }

# ---- slurm.conf: one node, free ports, everything in $T ----
read -r PCTL PD <<< "$(python3 -c 'import socket
ss=[socket.socket() for _ in range(2)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(*[s.getsockname()[1] for s in ss])')"
HOST="$(hostname -s 2> /dev/null || hostname)"
CPUS="$(nproc)"
mkdir -p "$T/state" "$T/spool" "$T/work"
cat > "$T/slurm.conf" <<EOF
ClusterName=hftest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PCTL
SlurmdPort=$PD
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
LaunchParameters=use_interactive_step
NodeName=hfnode NodeAddr=127.0.0.1 NodeHostname=$HOST CPUs=$CPUS State=UNKNOWN
PartitionName=hftest Nodes=hfnode Default=YES MaxTime=10 State=UP
EOF
export SLURM_CONF="$T/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" > "$T/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N hfnode -f "$SLURM_CONF" > "$T/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 1 150); do
  state="$(timeout 5 scontrol show node hfnode 2> /dev/null | sed -n 's/.*State=\([A-Z+_]*\).*/\1/p' | head -1)"
  [[ "$state" == IDLE* ]] && break
  for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null || { logs; cat "$T"/*.out; skip "a Slurm daemon exited at start (see the logs above)"; }; done
  sleep 0.2
done
[[ "$state" == IDLE* ]] || { logs; skip "the Slurm node did not become idle in 30 s (state '${state}')"; }
echo "slurm: node hfnode idle (slurmctld port $PCTL, slurmd port $PD, $CPUS CPUs)"

# ---- the reference: a single pack; then the Slurm script with $PARTS array tasks ----
"$HFPACK" -q "$DEM" -o "$T/single.hfa" > /dev/null || fail "the single pack failed"
start=$(date +%s)
timeout 180 "$SCRIPT" --hfpack "$HFPACK" -n "$PARTS" -o "$T/merged.hfa" -w "$T/work" --wait "$DEM" -- -q
rc=$?
echo "slurm: the script ended with status $rc after $(( $(date +%s) - start )) s"
[[ $rc == 0 ]] || { logs; timeout 5 squeue; fail "the sharded pack on Slurm failed (status $rc)"; }
for i in $(seq 1 "$PARTS"); do
  [[ -f "$T/work/part-$i.log" ]] || fail "no log of array task $i"
done
ls "$T"/work/*.part > /dev/null 2>&1 && fail "the parts were not removed after the merge"
cmp "$T/single.hfa" "$T/merged.hfa" || fail "the merged archive differs from the single pack"
echo "slurm: $PARTS array tasks + dependent merge == single pack ($(stat -c %s "$T/merged.hfa") bytes)"

# ---- a part that fails: the merge must not run, no archive ----
start=$(date +%s)
timeout 120 "$SCRIPT" --hfpack "$HFPACK" -n 2 -o "$T/bad.hfa" -w "$T/badwork" --wait "$DEM" -- -q --segment 7
rc=$?
echo "slurm: with failing parts the script ended with status $rc after $(( $(date +%s) - start )) s"
[[ $rc != 0 ]] || fail "the script succeeded although its parts failed"
[[ ! -e "$T/bad.hfa" ]] || fail "an archive was written although the parts failed"
grep -q "^Error: " "$T"/badwork/part-1.log || fail "no Error: line in the failed part's log"
echo "PASS: Slurm sharded pack == single pack; failed parts leave no archive"
exit 0
