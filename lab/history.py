"""What a configuration's earlier processes on this device say about how many processes to run now. A configuration
(the same spec: model, compile settings, batch and shapes, dtype, task) that ran before on this device kind under this
torch has shown its spread between fresh processes: where those processes disagreed, a sweep plans more of them; where
they agreed, no more than the sweep's own count. The spread also widens the answer's interval (lab.interval.combine,
through its Spread); this module plans. Pure arithmetic: db.follow_ups reads the processes, lab.noise plans with them.
docs/measurement.md ("The answer", "Processes and disturbances") says the rule and the figures."""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from lab.interval import Z975, Spread
from lab.spreads import pooled

# the newest earlier processes of a configuration read (db.follow_ups.past_processes): enough to judge a spread,
# bounded however often it ran
HISTORY_LIMIT = 64
# earlier processes needed before their spread plans a count: two say little of it (one degree of freedom)
HISTORY_MIN = 3
# the planned count: enough that the spread between processes alone puts the interval within this much either side
# of the answer (Z975 * sd / sqrt(k) <= TARGET), at most MORE beyond the sweep's own count
TARGET, MORE = 0.05, 4
# earlier processes needed before they plan fewer than the sweep's own count (where they agree closely enough that
# fewer pin the answer within TARGET): each of today's answers then rests on them
FEWER_FROM = 6
# the 97.5th percentile of the range of k standard normal draws (k = 2..8): how far apart k processes of a known
# spread lie in 95 of 100 sweeps (k = 2: Z975 * sqrt(2))
RANGE95 = {2: 2.772, 3: 3.314, 4: 3.633, 5: 3.858, 6: 4.030, 7: 4.170, 8: 4.286}


def past_spread(centers: Iterable[float | None]) -> Spread | None:
    """The spread of a configuration's earlier processes (their paired speedups, lab.interval.run_center): the variance
    of their logs (ddof=1), their mean log and how many; None below two usable ones. Below HISTORY_MIN it plans no
    count (planned) and explains no disagreement (expected_apart); today's processes are still checked against it
    (departs)."""
    m = _logs(centers)
    if len(m) < 2:
        return None
    return Spread(processes=len(m), var=float(np.var(m, ddof=1)), mean=float(np.mean(m)))


def with_today(past: Spread, centers: Iterable[float | None]) -> Spread:
    """`past` and today's processes (`centers`) as one Spread: every process of the configuration on this device."""
    m = _logs(centers)
    if not len(m):
        return past
    today = Spread(processes=len(m), var=float(np.var(m, ddof=1)) if len(m) > 1 else 0.0, mean=float(np.mean(m)))
    return pooled([past, today])


def planned(process_repeats: int, past: Spread | None) -> int:
    """How many processes a configuration runs: the sweep's own count (`process_repeats`), or, where HISTORY_MIN or
    more earlier processes disagreed, enough that their spread puts the interval within TARGET, at most MORE beyond;
    where FEWER_FROM or more of them agreed that closely with fewer, that many (one at least): today's processes are
    then checked against them (departs). A sweep of one process asked for no spread and gets one process."""
    if past is None or past.processes < HISTORY_MIN or process_repeats < 2:
        return process_repeats
    need = math.ceil((Z975 * math.sqrt(past.var) / TARGET) ** 2 - 1e-9)
    if past.processes >= FEWER_FROM and past.mean is not None:
        return min(process_repeats + MORE, max(1, need))
    return max(process_repeats, min(process_repeats + MORE, need))


def departs(centers: Iterable[float | None], past: Spread | None) -> float | None:
    """How far today's processes (their paired speedups) lie from the earlier ones' mean (ratio less 1, either way),
    where further than the earlier spread explains (95 in 100: Z975 * sd * sqrt(1/k + 1/K)) and past TARGET; None
    where they do not, or nothing to judge by."""
    m = _logs(centers)
    if not len(m) or past is None or past.mean is None:
        return None
    off = abs(float(np.mean(m)) - past.mean)
    limit = max(math.log1p(TARGET), Z975 * math.sqrt(past.var * (1 / len(m) + 1 / past.processes)))
    return math.expm1(off) if off > limit else None


def _logs(centers: Iterable[float | None]) -> np.ndarray:
    return np.log(np.asarray([c for c in centers if isinstance(c, (int, float)) and math.isfinite(c) and c > 0],
                             dtype=float))


def expected_apart(processes: int, past: Spread | None) -> float:
    """How far apart (max/min - 1) this many processes may lie before it is news, given the earlier processes'
    spread: 95 in 100 sweeps of that spread lie within it. 0 without history."""
    if past is None or past.processes < HISTORY_MIN or processes < 2:
        return 0.0
    factor = RANGE95.get(processes, RANGE95[max(RANGE95)])
    return math.exp(factor * math.sqrt(past.var)) - 1


def departs_because(processes: int, off: float, past: Spread, want: int) -> str:
    return (f"its {processes} process{'es' * (processes != 1)} read {off:.0%} off what its {past.processes} earlier "
            f"processes on this device did, more than their spread explains: {want} run, as the spread of all of "
            "them asks")


def planned_because(process_repeats: int, want: int, past: Spread) -> str:
    return (f"each configuration runs in {process_repeats} fresh processes, this one in {want}: its {past.processes} "
            f"earlier processes on this device spread {math.sqrt(past.var):.0%} (one standard deviation), and "
            f"{want} pin its answer {'closer' if want > process_repeats else 'within 5%'}")
