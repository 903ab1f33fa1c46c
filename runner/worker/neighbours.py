"""The other workers on this host, as far as they disturb a timing: which share this worker's cores, and which
were busy while a job ran. A job's `detail.host_state` keeps both, and a noisy result's `noise_note` names the
busy ones: two workers timing on the same cores slow each other's rounds, and neither sees why on its own.

The CPUs a worker may run on (its affinity) are published with its capabilities; torch's intra-op threads are
pinned to that many (or to `work --threads N`) in every child, so a CPU job never runs more threads than the
cores it was given. No torch here: the worker stays small.
"""
from __future__ import annotations

import logging
import time

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from db import queue
from lab.noise import cpus_text
from lab.record import ResultRecord
from lab.wording import count

log = logging.getLogger("compile_lab.worker")


def sharing(me: str, cpus: list[int], workers) -> list[str]:
    """The ids of live workers (db.models.WorkerRow rows of this host) whose published CPUs overlap `cpus`; a worker
    that published none (an older one) is taken to use them all."""
    mine = set(cpus)
    return sorted(w.id for w in workers if w.id != me
                  and mine & set(w.capabilities.get("cpus") or mine))


class Watch:
    """Samples the host's other workers while one job runs (at most every `every_s`): who was busy, and whether
    they share this worker's cores. Database trouble is not the job's: a failed look is skipped."""

    def __init__(self, engine: Engine, worker_id: str, hostname: str, cpus: list[int], every_s: float = 2.0):
        self.engine, self.id, self.hostname, self.cpus, self.every_s = engine, worker_id, hostname, cpus, every_s
        self.busy: dict[str, dict] = {}  # worker id -> {"job": its job, "shares_cores": bool}
        self.shares: set[str] = set()
        self.looked = 0
        self._last = float("-inf")

    def sample(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.every_s:
            return
        self._last = now
        try:
            others = [w for w in queue.live_workers(self.engine) if w.hostname == self.hostname and w.id != self.id]
        except (SQLAlchemyError, OSError) as e:  # down, locked, refused: this look is skipped
            log.debug("worker %s: could not look at the host's other workers (%s)", self.id, e)
            return
        self.looked += 1
        shared = set(sharing(self.id, self.cpus, others))
        self.shares |= shared
        for w in others:
            if w.state == "busy":
                self.busy[w.id] = {"job": w.current_job_id, "shares_cores": w.id in shared}

    def state(self) -> dict:
        """What the job's detail.host_state keeps of it."""
        return {"worker_cpus": cpus_text(self.cpus), "shares_cores_with": sorted(self.shares),
                "busy_workers": [{"worker": k, **v} for k, v in sorted(self.busy.items())]}

    def note(self) -> str | None:
        """The busy neighbours in words, for a noisy result's noise_note; None when none was busy."""
        if not self.busy:
            return None
        same = [k for k, v in self.busy.items() if v["shares_cores"]]
        were = "was" if len(self.busy) == 1 else "were"
        text = f"{count(len(self.busy), 'other worker')} on this host {were} busy while it ran"
        return text + (f", {len(same)} of them on the same cores ({', '.join(sorted(same))})" if same else "")


def with_neighbours(record: ResultRecord, watch: Watch, threads: int) -> ResultRecord:
    """The host's other workers into the record: who shared this worker's cores and who was busy while the job ran
    (detail.host_state), and, on a noisy result, in its noise_note: the likely reason."""
    host_state = record.detail.get("host_state") or {}
    record.detail["host_state"] = {**host_state, **watch.state(), "threads_pinned": threads}
    note = watch.note()
    if note and record.noisy:
        record.noise_note = f"{record.noise_note or 'noisy'}; {note}"
    return record
