"""Inductor's compile workers, stopped before a job's rounds: on a GPU inductor starts a pool of compile subprocesses
at the first compile and keeps it up to a minute, and rounds that begin seconds after the compile would run beside a
pool still starting (docs/measurement.md, the timeline's *compile workers*, has the figures).

The pool is ended fast, not by torch's graceful shutdown (it waits for a sidecar still importing torch): each pool is
marked not running under its own lock, its tree killed as the child kills a job's (runner.child.reaper.kill_tree, the
sidecar first so it forks and reaps no more), then torch's shutdown forgets it; a pool without those attributes gets
torch's graceful shutdown. The child stops them before the warm-up and after it (a graph first compiled in the warm-up
starts a new pool), and no pool starts during the rounds (`none_started`); the setting is restored after, so a shape
schedule and a traffic replay time their recompiles as the user's program pays them."""
from __future__ import annotations

import contextlib
import sys
import time

from runner.child.reaper import kill_tree


def stop(before: dict | None = None) -> dict:
    """End the compile-worker pools this process started; what the record keeps: how many processes, how long,
    added to what an earlier stop of this job (`before`) kept."""
    began = time.monotonic()
    module = sys.modules.get("torch._inductor.async_compile")  # never imported: no pool was started
    shutdown = getattr(module, "shutdown_compile_workers", None)
    out: dict = {"processes": 0, "stop_s": 0.0, "error": None} | (before or {})
    if shutdown is None:
        return out
    for step in [lambda pool=pool: _kill(pool) for pool in list(getattr(module, "_pool_set", ()))] + [shutdown]:
        try:  # torch's shutdown whatever a kill met: a pool left in its caches would serve the next compile, dead
            out["processes"] += step() or 0  # shutdown: pools marked not running return at once; caches cleared
        except Exception as exc:  # noqa: BLE001 - a pool that would not stop is recorded, not a failed job
            out["error"] = out["error"] or f"{type(exc).__name__}: {exc}"[:200]
    out["stop_s"] = round(out["stop_s"] + time.monotonic() - began, 3)
    return out


def _kill(pool) -> int:
    """Kill one SubprocPool's sidecar and its tree (runner.child.reaper.kill_tree: the sidecar stopped first, its
    descendants killed until none is left alive); the number of processes killed (0: left to torch)."""
    process, lock = getattr(pool, "process", None), getattr(pool, "write_lock", None)
    if process is None or lock is None or not hasattr(pool, "running") or process.poll() is not None:
        return 0
    with lock:
        if not pool.running:
            return 0
        pool.running = False
        quit_timer = getattr(getattr(pool, "timer", None), "quit", None)  # its quiesce timer would write to the pipe
        if quit_timer is not None:
            quit_timer()
        killed = kill_tree(process.pid)
        process.kill()
        process.wait(10)
        with contextlib.suppress(OSError, AttributeError):
            pool.write_pipe.close()
    return 1 + killed


@contextlib.contextmanager
def none_started():
    """While open, inductor compiles in this process and starts no pool (its compile_threads 1: every way torch
    starts a pool asks it first); restored on the way out. Yields what the record keeps of it (the caller adds how
    many graphs were compiled meanwhile)."""
    config = sys.modules.get("torch._inductor.config")  # never imported: nothing has compiled, nothing will start one
    held = {"pool_blocked_during_rounds": config is not None}
    if config is None:
        yield held
        return
    before = config.compile_threads
    config.compile_threads = 1
    try:
        yield held
    finally:
        config.compile_threads = before
