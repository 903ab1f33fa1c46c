"""Inductor's compile workers, stopped before a job's rounds. On a GPU, inductor starts a pool of compile
subprocesses at the first compile (torch._inductor.async_compile: a sidecar and a worker per compile thread), and
keeps it up to a minute after. A job whose rounds begin seconds after its compile (a small model, or a repeat that
finds its compile cache) ran them beside that pool still starting: on the H100 runs its own helpers burned a full
core through the rounds in 19 of 23 such processes (runner.disturbance's own_helpers), while a program in its steady
state has an idle pool. So the pool is ended before the rounds: its processes killed (a graceful shutdown waits for
workers still importing torch, ~2 s), then torch's own shutdown forgets it. A recompile during the rounds starts a
new pool, as it would in the user's program."""
from __future__ import annotations

import os
import signal
import sys
import time

from runner.disturbance import process_tree


def stop() -> dict:
    """End the compile-worker pools this process started; what the record keeps: how many processes, how long."""
    began = time.monotonic()
    module = sys.modules.get("torch._inductor.async_compile")  # never imported: no pool was started
    shutdown = getattr(module, "shutdown_compile_workers", None)
    if shutdown is None:
        return {"processes": 0, "stop_s": 0.0}
    pids: set[int] = set()
    for pool in list(getattr(module, "_pool_set", ())):  # torch's private set: a version without it shuts down slowly
        process = getattr(pool, "process", None)
        if process is not None and process.poll() is None:
            pids |= {process.pid} | process_tree(process.pid)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    error = None
    try:
        shutdown()  # its message to a killed sidecar fails, and torch ignores that; it reaps the sidecar
    except Exception as exc:  # noqa: BLE001 - a pool that would not stop is recorded, not a failed job
        error = f"{type(exc).__name__}: {exc}"[:200]
    return {"processes": len(pids), "stop_s": round(time.monotonic() - began, 3), "error": error}
