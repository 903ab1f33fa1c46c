"""Slurm through its own commands: `sbatch` submits a job array of workers (one task, one worker, one GPU each; the
job script on stdin), `squeue` says what each task is doing and why a pending one waits, `scontrol` gives the
cluster's KillWait. sbatch directly rather than submitit: a worker is a shell command, not a pickled Python function,
so nothing but the project itself has to be installed on the nodes, and no folder of pickles has to be shared."""
from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runner.launch.config import LaunchConfig, Pool
from runner.launch.identity import POOL_ENV

TIMEOUT_S = 30.0
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "RESIZING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
          "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"}  # a worker still to come, or still there
ENDED = {"COMPLETED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "FAILED", "BOOT_FAIL",
         "DEADLINE", "REVOKED", "SPECIAL_EXIT"}
KILL_WAIT_MARGIN_S = 5.0  # the worker's grace ends this long before Slurm's SIGKILL


class SlurmError(RuntimeError):
    """A Slurm command is missing, failed or did not answer; its own message is kept."""


@dataclass(frozen=True)
class Task:
    """One worker's scheduler job as squeue shows it: an array task "812_3"."""

    job_id: str
    name: str
    state: str
    reason: str
    node: str
    submitted: str

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"


def run(argv: list[str], stdin: str | None = None, env: dict | None = None) -> str:
    if shutil.which(argv[0]) is None:
        raise SlurmError(f"{argv[0]} not found: run the launcher on a host where Slurm's commands are installed "
                         "(a login or submit node)")
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{argv[0]} did not answer within {TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise SlurmError(f"{' '.join(argv[:2])} failed: {said[-1] if said else f'exit code {done.returncode}'}")
    return done.stdout


def tasks(names: list[str]) -> list[Task]:
    """This user's jobs with these names, one line per array task, including those that ended within the
    controller's MinJobAge (their end state: how a worker ended)."""
    if not names:
        return []
    out = run(["squeue", "-h", "-r", "--states=all", f"--user={_user()}", f"--name={','.join(names)}",
               "-o", "%i|%j|%T|%r|%N|%V"])
    found = []
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 6:
            found.append(Task(*parts))
    return found


def kill_wait() -> float | None:
    """The cluster's KillWait: how long Slurm waits between a job's SIGTERM and its SIGKILL."""
    try:
        shown = run(["scontrol", "show", "config"])
    except SlurmError:
        return None
    m = re.search(r"^KillWait\s*=\s*([0-9]+)", shown, re.M)
    return float(m.group(1)) if m else None


def worker_grace(cfg: LaunchConfig) -> float:
    """The workers' --grace: the config's, kept under KillWait so a stopping worker hands its job back before SIGKILL."""
    wait = kill_wait()
    return cfg.worker.grace_s if wait is None else max(0.0, min(cfg.worker.grace_s, wait - KILL_WAIT_MARGIN_S))


def script(cfg: LaunchConfig, pool: Pool, grace_s: float) -> str:
    """The array's job script: every task runs one worker that drains the queue and exits after idle_exit_s with
    nothing to claim. `exec`: the worker is the job's own process, so Slurm's signals reach it as they would a user's
    program."""
    w = cfg.worker
    home = w.home.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")  # $VARS expand on the node
    lines = ["#!/bin/bash", f"# Compile Lab worker, pool {pool.name} (python -m runner launch slurm, {cfg.source})",
             "set -eu", f"cd {shlex.quote(w.workdir)}"]
    if w.env_file:
        lines += ["set -a", f". {shlex.quote(w.env_file)}", "set +a"]
    argv = [pool.python or w.python, "-m", "runner", "work", "--drain", "--idle-exit", f"{cfg.idle_exit_s:g}",
            "--grace", f"{grace_s:g}", *w.args]
    lines.append(f"exec {shlex.join(argv)} --home \"{home}\"")
    return "\n".join(lines) + "\n"


def sbatch_argv(cfg: LaunchConfig, pool: Pool, workers: int) -> list[str]:
    s = cfg.pool_slurm(pool)
    logs = Path(cfg.worker.workdir) / s.log_dir
    argv = ["sbatch", "--parsable", f"--array=0-{workers - 1}", f"--job-name={cfg.job_name(pool)}",
            f"--output={logs / '%x-%A_%a.out'}", "--ntasks=1", "--export=ALL"]
    for flag, value in (("--partition", s.partition), ("--account", s.account), ("--qos", s.qos),
                        ("--gres", s.gres), ("--time", s.time_limit), ("--cpus-per-task", s.cpus_per_task),
                        ("--mem", s.mem)):
        if value not in (None, ""):
            argv.append(f"{flag}={value}")
    return argv + list(s.extra)


def submit(cfg: LaunchConfig, pool: Pool, workers: int, db_url: str, grace_s: float) -> list[str]:
    """Submit `workers` workers as one job array; returns the tasks' ids ("812_0", ...). The workers get the
    launcher's environment (sbatch --export=ALL), the config's [worker] env, and the database URL the launcher sized
    from (unless the config gives its own, in env or env_file: a secret kept in a file on the nodes)."""
    argv = sbatch_argv(cfg, pool, workers)
    (Path(cfg.worker.workdir) / cfg.pool_slurm(pool).log_dir).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **cfg.worker.env, POOL_ENV: pool.name}
    if "DATABASE_URL" not in cfg.worker.env and not cfg.worker.env_file:
        env["DATABASE_URL"] = db_url
    out = run(argv, stdin=script(cfg, pool, grace_s), env=env).strip()
    array = out.split(";")[0]
    if not re.fullmatch(r"[0-9]+", array):
        raise SlurmError(f"sbatch answered {out!r}, not a job id")
    return [f"{array}_{i}" for i in range(workers)]


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return str(os.getuid())
