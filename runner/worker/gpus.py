"""`work --gpus all|0,1,...`: one worker process per GPU, each pinned with CUDA_VISIBLE_DEVICES.

The parent never imports torch (it would hold a CUDA context on every GPU). It lists the GPUs
(CUDA_VISIBLE_DEVICES when set, else nvidia-smi), starts `python -m runner work --gpu I ...` per GPU,
forwards SIGTERM/SIGINT to every worker (each then stops the way a lone worker does: grace period,
release), and restarts a worker that dies abnormally (killed, crashed) unless it is stopping. A
worker that exits normally (--drain, --once, --max-jobs) is not restarted; the parent exits when all
have. If the parent itself is killed, its workers get SIGTERM (parent-death signal) and stop cleanly.
"""
from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time

from runner.child.process import set_pdeathsig

log = logging.getLogger("compile_lab.gpus")
SUPERVISOR_ENV = "COMPILE_LAB_SUPERVISOR_PID"
RESTART_DELAY_S = 5.0
FAST_FAILURE_S = 60.0  # a worker that dies sooner than this after starting counts as failing fast...
MAX_FAST_FAILURES = 3  # ...and after this many in a row its GPU is given up
CONFIG_ERROR = 2  # the worker's own exit code for bad input: restarting would fail the same way
_GPU_ID = re.compile(r"^([0-9]{1,4}|GPU-[0-9a-fA-F-]{1,64}|MIG-[0-9a-zA-Z/-]{1,96})$")  # bounded: an id, not a payload


class GpuError(ValueError):
    """--gpus names no usable GPU (bad list, none visible, nvidia-smi missing)."""


def parse_gpus(text: str) -> list[str]:
    """'all' -> every visible GPU; '0,1' -> those. Each entry becomes one worker's CUDA_VISIBLE_DEVICES."""
    if text.strip().lower() == "all":
        return visible_gpus()
    gpus = [p.strip() for p in text.split(",")]
    bad = [g for g in gpus if not _GPU_ID.fullmatch(g)]
    if bad:
        raise GpuError(f"--gpus: {_shown(bad[0])} is not a GPU index or UUID; use all or a list like 0,1")
    if len(set(gpus)) != len(gpus):
        raise GpuError("--gpus: a GPU is listed twice; one worker per GPU")
    return gpus


def parse_gpu(text: str) -> str:
    """--gpu: one index or UUID, checked like each entry of --gpus (it becomes CUDA_VISIBLE_DEVICES)."""
    if not _GPU_ID.fullmatch(text):
        raise GpuError(f"--gpu: {_shown(text)} is not a GPU index or UUID; use e.g. 0 or GPU-<uuid>")
    return text


def _shown(text: str) -> str:
    return repr(text[:40]) + ("..." if len(text) > 40 else "")


def visible_gpus() -> list[str]:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES if it is set, else every GPU nvidia-smi lists."""
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
    if pinned is not None:
        gpus = [g.strip() for g in pinned.split(",") if g.strip()]
        if not gpus or gpus[0] == "-1":
            raise GpuError(f"--gpus all: no GPU visible (CUDA_VISIBLE_DEVICES={pinned!r})")
        return gpus
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=60)
    except FileNotFoundError:
        raise GpuError("--gpus all: nvidia-smi is not installed, so no GPU can be listed; "
                       "name them (--gpus 0,1) or run on a GPU host") from None
    except subprocess.TimeoutExpired:
        raise GpuError("--gpus all: nvidia-smi did not answer within 60 s") from None
    gpus = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not gpus or not all(_GPU_ID.match(g) for g in gpus):
        why = (out.stderr or out.stdout).strip().splitlines()
        raise GpuError(f"--gpus all: no GPU visible (nvidia-smi: {why[0] if why else 'no GPU listed'})")
    return gpus


def arm_supervised_worker() -> None:
    """In a worker that `--gpus` started: stop cleanly (SIGTERM) if the supervising parent dies."""
    parent = int(os.environ.get(SUPERVISOR_ENV) or 0)
    if parent:
        set_pdeathsig(signal.SIGTERM)
        if os.getppid() != parent:  # it died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)


def supervise(gpus: list[str], worker_argv: list[str]) -> int:
    """Run `python -m runner work --gpu G <worker_argv>` per GPU until all exit; forwards SIGTERM/SIGINT."""
    stopping = threading.Event()
    procs: dict[str, subprocess.Popen] = {}
    started: dict[str, float] = {}
    fast_failures = {g: 0 for g in gpus}
    exit_codes: dict[str, int] = {}

    def start(gpu: str) -> None:
        env = {**os.environ, SUPERVISOR_ENV: str(os.getpid())}
        # own session: a terminal's Ctrl-C reaches the parent only, which forwards it once to each worker
        procs[gpu] = subprocess.Popen([sys.executable, "-m", "runner", "work", "--gpu", gpu, *worker_argv],
                                      env=env, start_new_session=True)
        started[gpu] = time.monotonic()
        log.info("gpus: worker for GPU %s started (pid %d)", gpu, procs[gpu].pid)

    def forward(signum, _frame):
        stopping.set()
        for p in list(procs.values()):
            if p.returncode is None:
                try:
                    p.send_signal(signum)
                except ProcessLookupError:
                    pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for gpu in gpus:
        start(gpu)
    while procs:
        pid, status = os.wait()  # any worker ending; signal handlers run while we wait
        gpu = next((g for g, p in procs.items() if p.pid == pid), None)
        if gpu is None:
            continue
        rc = os.waitstatus_to_exitcode(status)
        proc = procs.pop(gpu)
        proc.returncode = rc  # we reaped it; keep Popen's view consistent
        if rc == 0 or stopping.is_set() or rc == CONFIG_ERROR:
            exit_codes[gpu] = rc
            log.info("gpus: worker for GPU %s exited (%s)", gpu, _describe(rc))
            continue
        fast_failures[gpu] = fast_failures[gpu] + 1 if time.monotonic() - started[gpu] < FAST_FAILURE_S else 1
        if fast_failures[gpu] >= MAX_FAST_FAILURES:
            log.error("gpus: worker for GPU %s failed %d times in a row (%s); giving this GPU up",
                      gpu, fast_failures[gpu], _describe(rc))
            exit_codes[gpu] = rc
            continue
        log.warning("gpus: worker for GPU %s ended abnormally (%s); restarting in %g s", gpu, _describe(rc),
                    RESTART_DELAY_S)
        if not stopping.wait(RESTART_DELAY_S):
            start(gpu)
        else:
            exit_codes[gpu] = rc
    bad = [rc for rc in exit_codes.values() if rc != 0]
    return 0 if not bad else (bad[0] if bad[0] > 0 else 1)


def _describe(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"
