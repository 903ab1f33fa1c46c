"""The Slurm launcher's look: the queue (db.cluster) and the scheduler's jobs (runner.launch.slurm), then as many
workers submitted as the queue needs (runner.launch.sizing), the pending ones published with the scheduler's reasons
for the sidebar and Queue, and workers the scheduler ended unseen (a failed node) named on the lab jobs they lost.
`watch` repeats it; the workers themselves exit once idle, so the cluster's GPUs go back when the queue is empty."""
from __future__ import annotations

import logging
import os
import socket
import threading
from pathlib import Path

from sqlalchemy.exc import OperationalError

from db import cluster
from db.database import get_engine
from db.engine import absolute_sqlite, resolve_url
from lab import scheduler
from lab.wording import count, ids
from runner.launch import sizing, slurm
from runner.launch.config import LaunchConfig

log = logging.getLogger("compile_lab.launch")
FAILING_AFTER = 3  # a pool whose workers ended FAILED this many times in a row, none of them healthy, is held back


class SlurmLauncher:
    def __init__(self, cfg: LaunchConfig, db_url: str | None = None):
        self.cfg = cfg
        self.url = absolute_sqlite(resolve_url(db_url))  # the workers start elsewhere: they need the same file
        self.engine = get_engine(self.url)
        self.pools = {cfg.job_name(p): p for p in cfg.pools}
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.grace: float | None = None
        self.seen_ends: dict[str, str] = {}  # ended scheduler jobs already looked at: id -> state
        self.failing = {p.name: 0 for p in cfg.pools}
        self.last_said: list[str] = []

    def once(self) -> list[sizing.PoolNeed]:
        """One look and what it calls for; returns each pool's numbers."""
        found = slurm.tasks(list(self.pools))
        self._ends([t for t in found if t.state in slurm.ENDED])
        held = {p.name: [t.job_id for t in found if t.active and self.pools[t.name] is p] for p in self.cfg.pools}
        workers = cluster.scheduler_workers(self.engine)
        busy = {job_id for job_id, state in workers.items() if state == "busy"}
        for p in self.cfg.pools:  # a worker of the pool registered: its start works
            if any(i in workers for i in held[p.name]):
                self.failing[p.name] = 0
        needs = sizing.plan(self.cfg, cluster.queued_demand(self.engine), held, busy, cluster.pool_offers(self.engine))
        started = False
        for need in needs:
            pool = next(p for p in self.cfg.pools if p.name == need.pool)
            if need.start and self.failing[pool.name] >= FAILING_AFTER:
                log.error("pool %s: its last %d workers failed at start (see their logs under %s); starting none "
                          "until one runs", pool.name, self.failing[pool.name],
                          Path(self.cfg.worker.workdir) / self.cfg.pool_slurm(pool).log_dir)
                continue
            if need.start:
                if self.grace is None:
                    self.grace = slurm.worker_grace(self.cfg)
                ids = slurm.submit(self.cfg, pool, need.start, self.url, self.grace)
                log.info("pool %s: submitted Slurm job array %s (%d worker%s)", pool.name, ids[0].split("_")[0],
                         len(ids), "s" if len(ids) > 1 else "")
                started = True
        if started:  # the new tasks with the reasons the scheduler gives them
            found = slurm.tasks(list(self.pools))
        self._publish([t for t in found if t.pending])
        said = [n.said() for n in needs]
        if said != self.last_said:
            for line in said:
                log.info("%s", line)
            if needs and needs[0].waiting:
                log.warning("%s that no pool serves (their device, torch or model): see [[pool]] in %s",
                            count(needs[0].waiting, "queued job"), self.cfg.source)
            self.last_said = said
        return needs

    def watch(self, stop: threading.Event) -> None:
        """Look every interval_s until `stop`; a scheduler or database that does not answer is said and tried again."""
        while not stop.is_set():
            try:
                self.once()
            except (slurm.SlurmError, OperationalError) as e:
                log.warning("launcher: %s; trying again in %g s", str(e).splitlines()[0], self.cfg.interval_s)
            stop.wait(self.cfg.interval_s)

    def _ends(self, ended: list[slurm.Task]) -> None:
        """Tasks that ended since the last look: a worker the scheduler ended without it saying so is named on the lab
        jobs it lost; a pool whose workers keep failing at start is counted."""
        fresh = [t for t in ended if self.seen_ends.get(t.job_id) != t.state]
        self.seen_ends = {t.job_id: t.state for t in ended}  # squeue forgets them after MinJobAge: so does this
        for t in fresh:
            pool = self.pools[t.name].name
            if t.state == "FAILED":
                self.failing[pool] += 1
            elif t.state == "COMPLETED":
                self.failing[pool] = 0
        endings = {t.job_id: scheduler.ending({"kind": scheduler.SLURM, "job_id": t.job_id}, t.state).words
                   for t in fresh if t.state != "COMPLETED"}
        noted = cluster.note_ended(self.engine, endings)
        if noted:
            log.info("lab job %s: lost with a worker the scheduler ended; said on them", ids(noted))

    def _publish(self, pending: list[slurm.Task]) -> None:
        jobs = [{"kind": scheduler.SLURM, "name": t.name, "job_id": t.job_id, "pool": self.pools[t.name].name,
                 "state": t.state, "reason": t.reason, "submitted": scheduler.local_to_utc(t.submitted)}
                for t in pending]
        cluster.publish_pending(self.engine, list(self.pools), jobs, self.host, self.pid)
