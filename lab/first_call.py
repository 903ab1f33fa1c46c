"""A configuration's compiled first calls, separated by what each one compiled from: cold (an empty cache), warm (a
cache that already held the configuration: the worker's, or for a process repeat the one its first run, or an
earlier follow-up on that worker, left) and portable (a
fresh cache loaded with a colleague's bundle). The answer table, the Warmup chart, the First call tab and the job page
all separate them here, so they print the same cold and warm figures. How far a cold first call can be trusted
(bounds): the spread between the configuration's processes that compiled it cold on this device, over every sweep of it.
No torch, pandas or SQLAlchemy."""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median
from typing import Iterable, Sequence

import numpy as np

from lab.interval import Spread, t975

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
    var: float = 0.0  # the variance of their seconds on a log scale (ddof=1), where two or more
    mean_log: float | None = None  # the mean of their seconds' logs


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
    out = {}
    for k in (k for k in KINDS if k in by_kind):
        logs = np.log([max(s, 1e-9) for _, s in by_kind[k]])
        out[k] = Calls(median(s for _, s in by_kind[k]), tuple(sorted(j for j, _ in by_kind[k])),
                       float(np.var(logs, ddof=1)) if len(logs) > 1 else 0.0, float(np.mean(logs)))
    return out


def kept(kinds: Sequence[str], seconds: Sequence[float | None], shaken: Sequence[bool]) -> list[bool]:
    """Which of a configuration's runs (each one's kind(), compiled first call in seconds, and whether a measured cause
    met that call: lab.record.first_call_disturbed) its first-call figures count: all but the cold
    ones so disturbed, while a cold one that was not is among them; where every cold one was, all (the figure is
    theirs, and the answer says so). A measured cause leaves a first call out, as it leaves a run's rounds out."""
    cold = [k == "cold" and s is not None and s == s for k, s in zip(kinds, seconds, strict=True)]
    if not any(c and not d for c, d in zip(cold, shaken, strict=True)):
        return [True] * len(cold)
    return [not (c and d) for c, d in zip(cold, shaken)]


# degrees of freedom a cold first call's spread needs before it gets a 95% interval: one (Student's t 12.7) gives an
# interval of no use
COLD_DF = 2


def bounds(cold: Calls, spread: Spread | None) -> tuple[float, float, int] | None:
    """A 95% interval for the cold first call a fresh process of this configuration pays (its median over fresh
    processes), around the cold runs in hand (`cold`: their mean log, which is the median shown where they are one or
    two, and which the interval holds where it is not), and how many processes it was judged from. A cold compile's
    time moves between fresh processes (on an H200 a small model's fresh scripts took 2.6-4.3 s), so the bracket is
    the spread of every process that compiled the configuration cold on this device (`spread`: their Spread over the
    whole database, the runs in hand among them: the caller asks only where they are), never narrower than the runs
    in hand show. The spread is taken about each group's own mean (the runs in hand, the others), so it is
    independent of the runs in hand and Student's t on its degrees of freedom (all of them less 2) holds exactly for
    log-normal processes; measured against all of them, the runs in hand would widen their own interval as they
    stray, and it held the truth 98 times in 100. None below COLD_DF degrees of freedom (4 processes, or 3 in hand):
    the page then says from how many processes it comes."""
    n = cold.runs
    squares, df, judged = (n - 1) * cold.var, n - 1, n
    if spread is not None and spread.processes > n and spread.mean is not None and cold.mean_log is not None:
        k = spread.processes
        between = n * k / (k - n) * (cold.mean_log - spread.mean) ** 2  # the runs in hand against the others
        squares, df, judged = max(squares, (k - 1) * spread.var - between), k - 2, k
    if df < COLD_DF:
        return None
    var = max(squares / df, cold.var)
    half = t975(df) * math.sqrt(var / n)
    center = cold.mean_log if cold.mean_log is not None else math.log(cold.seconds)
    # the median shown, of 3 or more runs that read apart, can lie off their mean: the interval holds it too
    return min(math.exp(center - half), cold.seconds), max(math.exp(center + half), cold.seconds), judged
