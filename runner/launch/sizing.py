"""How many workers to ask the scheduler for, per pool: pure arithmetic over what is queued, what the scheduler
already holds for the pool (jobs pending or running) and which of those workers are busy. The scheduler decides
where and when they run; this only decides how many to ask for, never more than the pool's maximum."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from db.cluster import Demand
from lab.spec import torch_matches
from lab.wording import count
from runner.launch.config import LaunchConfig, Pool


@dataclass(frozen=True)
class PoolNeed:
    """One pool's numbers at one look, and how many workers to submit."""

    pool: str
    queued: int  # queued lab jobs this pool serves
    held: int  # scheduler jobs of the pool pending or running (a worker each)
    busy: int  # of those, workers running a lab job now
    start: int  # workers to submit now
    waiting: int  # queued jobs no pool serves as configured, or that its workers showed they cannot take

    def said(self) -> str:
        return (f"pool {self.pool}: {self.queued} queued, {count(self.held, 'worker')} in the scheduler ({self.busy} busy)"
                + (f", starting {self.start}" if self.start else ""))


def serving_pool(pools: Iterable[Pool], demand: Demand, offers: Mapping[str, dict]) -> Pool | None:
    """The first pool that can take these jobs: their device, a torch their pin matches (the one its workers
    published, else the one the config declares; a pool that declares none takes unpinned jobs), and, once its
    workers have published their models, their model."""
    for pool in pools:
        if pool.device != demand.device:
            continue
        offer = offers.get(pool.name) or {}
        torch = offer.get("torch_version") or pool.torch
        if not torch_matches(demand.torch, torch):
            continue
        if offer.get("models") is not None and demand.model not in offer["models"]:
            continue
        return pool
    return None


def plan(cfg: LaunchConfig, demand: list[Demand], held: Mapping[str, list[str]], busy_ids: set[str],
         offers: Mapping[str, dict]) -> list[PoolNeed]:
    """`held`: pool -> its scheduler job ids pending or running; `busy_ids`: scheduler job ids whose worker runs a
    lab job. A pool asks for one worker per queued job it serves beyond its free workers (pending, starting or
    idle), up to its maximum."""
    queued = {p.name: 0 for p in cfg.pools}
    unserved = 0
    for d in demand:
        pool = serving_pool(cfg.pools, d, offers)
        if pool is None:
            unserved += d.jobs
        else:
            queued[pool.name] += d.jobs
    out = []
    for pool in cfg.pools:
        ids = held.get(pool.name, [])
        busy = sum(1 for i in ids if i in busy_ids)
        free = len(ids) - busy
        start = max(0, min(queued[pool.name] - free, cfg.pool_max(pool) - len(ids)))
        out.append(PoolNeed(pool.name, queued[pool.name], len(ids), busy, start, unserved))
    return out
