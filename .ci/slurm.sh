#!/usr/bin/env bash
# A one-node Slurm cluster for the cluster test tier (tests/cluster), from Debian's packages: installs munge, slurmctld
# and slurmd if missing, writes a configuration (by absolute path; state, spool and logs under one temporary folder),
# starts munged, the controller and the node daemon as root, and waits for the node to take jobs. CPU only: the node
# declares more task slots than the box has cores (the tests' workers mostly wait), proctrack/linuxproc and task/none
# (no cgroups needed), select/cons_tres. Run as root. Prints the configuration's path (for SLURM_CONF) on stdout,
# nothing else; an already running cluster of this script is reused.
set -euo pipefail
exec 3>&1 1>&2  # progress to stderr; stdout carries only the path

dir=${COMPILE_LAB_SLURM_DIR:-/tmp/compile-lab-slurm}
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge
fi

node=$(hostname -s)
munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
node_up() { timeout 10 sinfo -h -n "$node" -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; }
if [ -f "$conf" ] && munge_ok && node_up; then
  echo "$conf" >&3  # started earlier by this script, and taking jobs
  exit 0
fi

mkdir -p "$dir/state" "$dir/spool" "$dir/log"
slots=${COMPILE_LAB_SLURM_SLOTS:-8}
cat >"$conf" <<EOF
ClusterName=compile-lab-ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=30
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 CPUs=$slots RealMemory=4096 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF

# munged runs as its own user; its socket folder may be missing on a box without systemd. Asked whether it answers
# (a munged that died can linger as a zombie of that name); --force: past a socket an unclean exit left behind
if ! munge_ok; then
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged --force 3>&- </dev/null || true
  for _ in $(seq 50); do munge_ok && break; sleep 0.1; done
  munge_ok || { echo "slurm: munged does not answer (see /var/log/munge/munged.log)"; exit 1; }
fi
# earlier daemons of this script's folder (a stale configuration) stop first
for pidfile in "$dir/slurmctld.pid" "$dir/slurmd.pid"; do
  if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")"
    for _ in $(seq 50); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.1; done
  fi
done
# daemons must not inherit fd 3 (the caller's $(...) pipe), or the command substitution waits for them
slurmctld -f "$conf" -i 3>&- </dev/null
slurmd -f "$conf" 3>&- </dev/null

deadline=$((SECONDS + 60))
until node_up; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "slurm: the node did not come up within 60 s:"; sinfo -N -l; tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log"
    exit 1
  fi
  sleep 0.2
done
echo "$conf" >&3
