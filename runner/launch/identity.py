"""A worker's place under a cluster scheduler, seen from inside: which scheduler job it is (Slurm's job id, or a
Kubernetes Indexed Job's pod), its node and its allocation, read from the environment the scheduler gives it; and,
when the worker is told to stop, whether the scheduler is ending it and why (lab.scheduler's words).

Slurm ends a job (scancel, its time limit, a preemption) by sending SIGTERM to every process of it at once, then
SIGKILL after the cluster's KillWait: the job's child dies with the worker's own signal, and its job goes back to the
queue in the scheduler's words (runner.worker.attempt). Light: the worker imports it; it starts `scontrol` and `squeue` only
when asked, with a short timeout."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from typing import Mapping

from lab import scheduler
from lab.scheduler import Ending

POOL_ENV = "COMPILE_LAB_LAUNCH_POOL"  # set by the launcher's job script: the pool a worker was started for
# Kubernetes: the launcher's manifest gives each pod these (the downward API), beside JOB_COMPLETION_INDEX
POD_ENV, NODE_ENV, JOB_ENV = "COMPILE_LAB_POD_NAME", "COMPILE_LAB_NODE_NAME", "COMPILE_LAB_K8S_JOB"
SIGNAL_WAIT_S = 2.0  # a scheduler signals every process of a job at once: the worker's own SIGTERM is moments behind
ASK_TIMEOUT_S = 5.0


def current(environ: Mapping[str, str] = os.environ) -> dict | None:
    """This process's scheduler job, or None outside one. Slurm: inside `sbatch`, `salloc` or `srun`."""
    if environ.get("SLURM_JOB_ID"):
        return _slurm(environ)
    if environ.get(POD_ENV):
        return _kubernetes(environ)
    return None


def _slurm(environ: Mapping[str, str]) -> dict:
    job_id = _job_id(environ)
    found = {
        "kind": scheduler.SLURM, "job_id": job_id, "slurm_job_id": environ["SLURM_JOB_ID"],
        "node": environ.get("SLURMD_NODENAME"), "partition": environ.get("SLURM_JOB_PARTITION"),
        "account": environ.get("SLURM_JOB_ACCOUNT"), "cpus": _int(environ.get("SLURM_CPUS_ON_NODE")),
        # the GPUs Slurm gave the job (their indices on the node), as its gres plugin names them
        "gpus": environ.get("SLURM_JOB_GPUS") or environ.get("SLURM_STEP_GPUS") or environ.get("SLURM_GPUS_ON_NODE"),
        "mem_mb": _int(environ.get("SLURM_MEM_PER_NODE")), "pool": environ.get(POOL_ENV),
        "time_limit": _ask(["squeue", "-h", "-j", job_id, "-o", "%l"]),
    }
    return {k: v for k, v in found.items() if v not in (None, "")}


def _kubernetes(environ: Mapping[str, str]) -> dict:
    found = {"kind": scheduler.KUBERNETES, "pod": environ.get(POD_ENV), "job": environ.get(JOB_ENV),
             "job_id": environ.get(POD_ENV), "index": _int(environ.get("JOB_COMPLETION_INDEX")),
             "node": environ.get(NODE_ENV), "gpus": environ.get("CUDA_VISIBLE_DEVICES") or environ.get(
                 "NVIDIA_VISIBLE_DEVICES"), "pool": environ.get(POOL_ENV)}
    return {k: v for k, v in found.items() if v not in (None, "")}


def stopped_with_worker(stop: threading.Event, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether a job's child that died of a signal went with its worker's own stop, under a scheduler: the scheduler
    signalled both (the worker's SIGTERM sets `stop` moments after the child's). Outside a scheduler a child's death is
    its own, and is recorded as it ended."""
    if current_kind(environ) is None:
        return False
    return stop.wait(SIGNAL_WAIT_S)


def current_kind(environ: Mapping[str, str] = os.environ) -> str | None:
    if environ.get("SLURM_JOB_ID"):
        return scheduler.SLURM
    return scheduler.KUBERNETES if environ.get(POD_ENV) else None


def ending(environ: Mapping[str, str] = os.environ) -> Ending | None:
    """Why the scheduler is stopping this worker, in the lab's words, or None outside a scheduler. Slurm says it while
    the job ends (`scontrol show job`: COMPLETING with the reason, TimeLimit for a time limit)."""
    kind = current_kind(environ)
    if kind is None:
        return None
    identity = {"kind": kind, "job_id": _job_id(environ), "pod": environ.get(POD_ENV)}
    if kind != scheduler.SLURM:
        return scheduler.stopped(identity)
    shown = _ask(["scontrol", "show", "job", "-o", identity["job_id"]]) or ""  # "812_3": an array's first task
    # has the array's own id, which names every task
    fields = dict(part.split("=", 1) for part in shown.split() if "=" in part)
    if "JobState" not in fields:
        return scheduler.stopped(identity)
    if fields["JobState"] == "RUNNING":  # a SIGTERM not from the scheduler (kill, scancel --signal): say so
        return scheduler.Ending(f"{scheduler.named(identity)} was sent SIGTERM (its job still runs)", False)
    return scheduler.ending(identity, scheduler.slurm_ending(fields["JobState"], fields.get("Reason"),
                                                             stepd_line(fields.get("StdErr"))))


STEPD = re.compile(r"\*\*\* JOB \S+ ON \S+ CANCELLED AT \S+.*?\*\*\*")


def stepd_line(path: str | None) -> str | None:
    """slurmstepd's last word in the job's output file, written as it ends the job and before its signals: the one
    place Slurm says a requeue or a preemption apart from a cancel while the job is still ending."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 16384))
            found = STEPD.findall(f.read().decode(errors="replace"))
    except OSError:
        return None
    return found[-1] if found else None


def _job_id(environ: Mapping[str, str]) -> str | None:
    """Slurm's id for this worker's job as squeue shows it: "812_3" for an array task, else the job's own."""
    array, task = environ.get("SLURM_ARRAY_JOB_ID"), environ.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else environ.get("SLURM_JOB_ID")


def _ask(argv: list[str]) -> str | None:
    """A scheduler command's one-line answer, or None where it is missing, fails or is slow."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=ASK_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines() if done.returncode == 0 else []
    return lines[0] if lines else None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None
