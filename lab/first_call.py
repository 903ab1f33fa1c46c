"""A configuration's compiled first calls, separated by what each one compiled from: cold (an empty cache), warm (a
cache that already held the configuration: the worker's, or for a process repeat the one its first run, or an
earlier follow-up on that worker, left) and portable (a
fresh cache loaded with a colleague's bundle). The answer table, the Warmup chart, the First call tab and the job page
all separate them here, so they print the same cold and warm figures. No torch, pandas or SQLAlchemy."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Iterable

KINDS = ("cold", "warm", "portable")  # in the order the pages show them
WORDS = {"cold": "compiled from an empty cache",
         "warm": "compiled from a cache that held it (the worker's, or for a process repeat its configuration's kept one)",
         "portable": "loaded a colleague's bundle into a fresh cache"}


def kind(recorded: str | None, cache: str | None, graph_hit: bool | None) -> str:
    """What one run's compiled first call compiled from: as the run recorded it (lab.record.first_call_cache), or,
    for a run stored before that was, its spec's cache setting. A warm run whose compiled graph missed the cache
    (`graph_hit` False) compiled from nothing: cold. Never the spec's setting alone where the run recorded what it
    did: a process repeat of a cold-cache configuration compiles from its first run's (or an earlier follow-up's) cache,
    so it is warm."""
    made = recorded or cache or "cold"
    if made == "warm":
        return "cold" if graph_hit is False else "warm"
    return "portable" if made == "portable" else "cold"


@dataclass(frozen=True)
class Calls:
    """One kind's first calls of a configuration: their median and the jobs they came from (ascending)."""

    seconds: float
    job_ids: tuple[int, ...]

    @property
    def runs(self) -> int:
        return len(self.job_ids)


def separate(job_ids: Iterable[int], seconds: Iterable[float | None], kinds: Iterable[str]) -> dict[str, Calls]:
    """A configuration's succeeded runs (each one's job id, compiled first call in seconds and kind()) separated
    into cold, warm and portable: per kind with a measured first call, in KINDS order, their median and jobs.
    A run without a first call (None or NaN) counts in none. A kind outside KINDS is a ValueError naming it."""
    by_kind: dict[str, list[tuple[int, float]]] = {}
    for job_id, s, k in zip(job_ids, seconds, kinds, strict=True):
        if k not in KINDS:
            raise ValueError(f"first call kind must be one of {', '.join(KINDS)}: {k!r}")
        if s is None or s != s:  # NaN from a numeric column
            continue
        by_kind.setdefault(k, []).append((int(job_id), float(s)))
    return {k: Calls(median(s for _, s in by_kind[k]), tuple(sorted(j for j, _ in by_kind[k])))
            for k in KINDS if k in by_kind}
