"""The queue's estimates for the pages (db.estimates.queue_estimates, lab.eta): each running job's time left, each queued
job's start, each unfinished sweep's and the whole queue's end. The history is read again only when a job finished
since (the data version), not on every refresh."""
from __future__ import annotations

import threading

from db import estimates, views
from db.estimates import Estimates
from lab import eta

_cache: dict = {}  # (engine id, data version, keys) -> history: the newest one only
_lock = threading.Lock()


def _history(engine, configs, models, running) -> dict:
    key = (id(engine), views.data_version(engine), tuple(sorted(configs)),
           tuple(sorted((m, tuple(sorted(c or "" for c in of))) for m, of in models.items())), tuple(sorted(running)))
    with _lock:
        if key in _cache:
            return _cache[key]
    found = estimates.history(engine, configs, models, running)
    with _lock:
        _cache.clear()
        _cache[key] = found
    return found


def queue_estimates(engine, workers) -> Estimates:
    """db.estimates.queue_estimates, its history read again only when a job finished since."""
    return estimates.queue_estimates(engine, workers, _history)


def job_estimate(engine, job_id: int, workers) -> tuple[str, eta.Left | eta.Start | None, str | None]:
    """One job's status among the unfinished, its estimate (Left for running, Start for queued, None otherwise) and
    its history's basis."""
    est = queue_estimates(engine, workers)
    if job_id in est.left:
        return "running", est.left[job_id], est.basis.get(job_id)
    if job_id in est.starts:
        return "queued", est.starts[job_id], est.basis.get(job_id)
    return "", None, None
