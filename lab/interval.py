"""How far a configuration's speedup can be trusted: one number from all of its processes, and a 95% interval that
holds across fresh processes. Pure arithmetic (numpy only): the child summarises its own rounds with `run_center`,
the answer (lab.answer) combines the runs with `combine`.

The model, on a log scale. Each process p of a configuration pairs its eager and compiled calls round by round; the
median of its per-round ratios, m_p, sits around the configuration's true value mu with
  - a process effect of spread tau: fresh processes differ (memory layout, thread placement, allocator and library
    state, the host's speed), and no single process can see its own effect: on a dedicated H100 the compiler
    harness's timed() loop moved 5-13% between three fresh processes of one configuration;
  - its own sampling error s_p, from its rounds' scatter (20 rounds scattering 7% pin their median to about 2%).
The answer is mean(m_p) over the k processes. Its variance is (tau^2 + mean s_p^2) / k. The k processes estimate
the bracket with k-1 degrees of freedom, or, where the database holds more of this configuration's processes on this
device (other sweeps of it: `Spread`), all K of them with K-1, never below its own processes' spread (the bracket is
the configuration's and the device's, not the sweep's: two processes that happen to agree must not narrow the
interval of a configuration whose processes have moved 10% before, nor may quiet earlier sweeps narrow a sweep whose
own processes disagree); the device's other configurations add the process spread they showed, worth `prior_df`
degrees of freedom (a configuration measured in one process still gets an honest width from it, and says so), and
Student's t takes both. Scatter widens the interval; it never removes a run. Beside it, the interval a re-run
should read in: a new sweep's number, the mean of k fresh processes of its own, differs from this one by
sqrt(2 var / k), on the same degrees of freedom (a prediction interval). The calibration
test (tests/unit/test_interval_calibration.py) draws sweeps from known distributions and checks the coverage.

Why not the two-level bootstrap used before: with 3 processes it can draw only 10 distinct sets of them, and its
interval is about their range, which holds the centre 75% of the time; with 1 process it sees no process effect.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median
from typing import Iterable, Sequence

import numpy as np

# Student's t, 97.5th percentile, for 1..30 degrees of freedom (a two-sided 95% interval); past 30, a series in 1/df
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
Z975 = 1.959964
# the median of n draws has about sqrt(pi/2) times the standard error of their mean (normal rounds); the MAD times
# 1.4826 estimates a standard deviation robustly (one stalled round does not widen every interval)
MEDIAN_SE, MAD_SD = math.sqrt(math.pi / 2), 1.4826
# Until a device has shown its own process spread, a prior: 5% (log) between fresh processes, worth 2 degrees of
# freedom. From the H100 (torch 2.11): three fresh harness processes per configuration ranged 5-13% (sincos bs 10000
# 1.76-2.00x, resnet18 bs 16 training 0.87-0.97x), a standard deviation of about 3-8%
DEFAULT_PROCESS_SD, DEFAULT_PRIOR_DF = 0.05, 2
# The device's pooled spread counts as at most this many degrees of freedom for any one configuration: configurations
# differ in how much they move between processes (host-bound ones more), so a host's average is a prior, never a fact
MAX_PRIOR_DF = 4
WIDE = 0.10  # an interval reaching past 10% either side of its number is called wide, in words


def t975(df: float) -> float:
    """Student's t quantile for a two-sided 95% interval (df >= 1; fractional df interpolate)."""
    if df < 1:
        df = 1
    if df <= 30:
        lo = int(df)
        hi = min(lo + 1, 30)
        a, b = _T975[lo - 1], _T975[hi - 1]
        return a + (b - a) * (df - lo)
    z = Z975  # Cornish-Fisher: good to 1e-3 past 30
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def round_ratios(samples: dict | None) -> list[float]:
    """eager / compiled latency per round, each side's median within the round: the paired ratio, so drift
    between rounds (load, clocks) cancels."""
    if not samples:
        return []
    pairs = [(median(e), median(c)) for e, c in zip(samples.get("eager", []), samples.get("compiled", [])) if e and c]
    return [e / c for e, c in pairs if c > 0]


def run_center(ratios: Sequence[float]) -> tuple[float | None, float | None]:
    """One process's paired speedup and its standard error on a log scale: the median of its per-round eager/compiled
    ratios, and sqrt(pi/2) * 1.4826 * MAD(log ratios) / sqrt(n). (None, None) without ratios; no error from one."""
    r = np.asarray([x for x in ratios if x and x > 0 and math.isfinite(x)], dtype=float)
    if not len(r):
        return None, None
    center = float(np.median(r))
    if len(r) < 2:
        return center, None
    logs = np.log(r)
    mad = float(np.median(np.abs(logs - np.median(logs))))
    return center, MEDIAN_SE * MAD_SD * mad / math.sqrt(len(r))


@dataclass(frozen=True)
class Prior:
    """The process spread a device has shown (tau^2 on a log scale) and what it is worth (degrees of freedom)."""

    tau2: float
    df: float
    measured_df: int  # how many degrees of freedom of it this device's own repeated configurations gave

    @property
    def sd(self) -> float:
        return math.sqrt(self.tau2)


def device_prior(groups: Iterable[tuple[Sequence[float], Sequence[float | None]]]) -> Prior:
    """The process spread shown by a device's configurations that ran in 2 or more processes: each gives
    var(m_p) - mean(s_p^2) with k-1 degrees of freedom, pooled, then blended with the default prior."""
    codes, centers, errors = [], [], []
    for i, (cs, es) in enumerate(groups):
        codes += [i] * len(cs)
        centers += cs
        errors += es
    return pooled_prior(np.asarray(codes, dtype=np.intp), np.asarray(centers, dtype=float),
                        np.asarray([e or 0.0 for e in errors], dtype=float))


def pooled_prior(codes: np.ndarray, centers: np.ndarray, errors: np.ndarray) -> Prior:
    """device_prior over processes given as arrays: each process's configuration (a code), paired speedup and
    standard error (0 for none). A database holds tens of thousands of configurations: summed per code by numpy."""
    num, dof = 0.0, 0
    if len(codes):
        m = np.log(centers)
        k = np.bincount(codes)
        mean = np.bincount(codes, weights=m) / np.maximum(k, 1)
        squares = np.bincount(codes, weights=(m - mean[codes]) ** 2)  # (k-1) var(m, ddof=1)
        w = np.bincount(codes, weights=errors ** 2) / np.maximum(k, 1)  # mean s_p^2
        many = k >= 2
        num = float(np.sum(squares[many] - (k[many] - 1) * w[many]))
        dof = int(np.sum(k[many] - 1))
    measured = max(0.0, num / dof) if dof else 0.0
    tau2 = (dof * measured + DEFAULT_PRIOR_DF * DEFAULT_PROCESS_SD ** 2) / (dof + DEFAULT_PRIOR_DF)
    return Prior(tau2=tau2, df=min(MAX_PRIOR_DF, dof + DEFAULT_PRIOR_DF), measured_df=dof)


@dataclass(frozen=True)
class Spread:
    """One configuration's processes on one device over the whole database (every sweep of it): how many, and the
    variance of their paired speedups on a log scale (ddof=1); `mean`, where the caller reads it, their mean log."""

    processes: int
    var: float
    mean: float | None = None


def config_spreads(codes: np.ndarray, centers: np.ndarray) -> dict[int, Spread]:
    """Per code (a configuration on a device) with two or more processes, their Spread (with their mean log): summed
    per code by numpy."""
    if not len(codes):
        return {}
    m = np.log(centers)
    k = np.bincount(codes)
    mean = np.bincount(codes, weights=m) / np.maximum(k, 1)
    squares = np.bincount(codes, weights=(m - mean[codes]) ** 2)
    return {int(c): Spread(int(k[c]), float(squares[c] / (k[c] - 1)), float(mean[c])) for c in np.flatnonzero(k >= 2)}


@dataclass(frozen=True)
class Interval:
    """A configuration's speedup over its processes, its 95% interval, and what sets the interval's width."""

    speedup: float
    low: float
    high: float
    processes: int
    df: float
    rounds_part: float  # the rounds' scatter, as a relative standard error of the answer
    process_part: float  # the spread between processes (seen, or the device's prior), likewise
    prior_sd: float
    prior_measured: bool  # the prior came (partly) from this device's own repeated configurations
    spread_processes: int = 0  # the processes its spread was judged from, where more than its own (other sweeps')
    own_range: float | None = None  # how far apart its own processes' highest and lowest read (ratio less 1), 2+
    # where a re-run of the configuration (a new sweep of as many processes) should read, 95 times in 100
    rerun_low: float | None = None
    rerun_high: float | None = None

    @property
    def half_width(self) -> float:
        """How far the interval reaches either side of the number, relative to it (the larger side)."""
        return max(self.high / self.speedup - 1, 1 - self.low / self.speedup)

    @property
    def wide(self) -> bool:
        return self.half_width > WIDE

    def why_wide(self, round_spread: float | None, moved: str | None = None) -> str:
        """What widens it, in words: the rounds' scatter, the processes' disagreement (with `moved`, which side's calls
        moved between them, where the caller knows), or one process only."""
        if self.processes == 1 and not self.spread_processes:
            if self.prior_measured:
                return f"one process only: widened by this device's spread between fresh processes ({self.prior_sd:.0%})"
            return (f"one process only: widened by the usual spread between fresh processes ({self.prior_sd:.0%}, "
                    "none measured on this device yet)")
        if self.rounds_part >= self.process_part and round_spread is not None:
            return f"the rounds scatter {round_spread:.0%}"
        apart = self.process_part * math.sqrt(self.processes)
        if self.spread_processes:  # no range of those is kept: their standard deviation, said as one
            return (f"its {self.spread_processes} processes on this device, over every sweep of it, spread "
                    f"{apart:.0%} (one standard deviation)")
        if self.own_range is not None and self.own_range < apart / 2:  # they agree: the device's spread widens it
            whose = "this device's" if self.prior_measured else "the usual"
            return (f"its {self.processes} processes read within {max(self.own_range, 0.01):.0%} of each other, "
                    f"widened by {whose} spread between fresh processes ({apart:.0%})")
        # the range a reader can check against the processes' own numbers (highest over lowest), as lab.noise says
        # it when it asks for one more process; the interval's width comes from their pooled spread
        said = apart if self.own_range is None else max(self.own_range, 0.01)  # (no range of one process)
        return (f"its {self.processes} processes disagree by {said:.0%}"
                + (f": {moved}" if moved else ""))


def combine(centers: Sequence[float], errors: Sequence[float | None], prior: Prior,
            spread: Spread | None = None) -> Interval:
    """The answer of one configuration from its processes' paired speedups (`run_center`) and the device's prior;
    `spread`: its processes on this device over the whole database, which judge the bracket where they are more."""
    m = np.log(np.asarray(centers, dtype=float))
    k = len(m)
    w = float(np.mean([(e or 0.0) ** 2 for e in errors]))
    prior_var = prior.tau2 + w
    seen, judged = (float(np.var(m, ddof=1)) if k >= 2 else 0.0), k
    if spread is not None and spread.processes > k:
        # never narrower than its own processes say: a sweep whose processes disagree more than the configuration's
        # others did (another host of the same GPU, another day) keeps its own spread
        seen, judged = max(seen, spread.var), spread.processes
    if judged >= 2:
        var = ((judged - 1) * seen + prior.df * prior_var) / (judged - 1 + prior.df)
        df = judged - 1 + prior.df
        if judged > k:
            # the device's spread widens a configuration it knows little of; it never narrows what the
            # configuration's own processes over every sweep showed (a bimodal one spreads far past its device)
            var = max(var, seen)
    else:
        var, df = prior_var, prior.df
    se = math.sqrt(var / k)
    half = t975(df) * se
    # a re-run's number is the mean of k fresh processes of its own: it differs from this one by var/k + var/k
    rerun = t975(df) * math.sqrt(2 * var / k)
    center = float(np.mean(m))
    rounds_part = math.sqrt(w / k)
    return Interval(speedup=math.exp(center), low=math.exp(center - half), high=math.exp(center + half),
                    rerun_low=math.exp(center - rerun), rerun_high=math.exp(center + rerun),
                    processes=k, df=df, rounds_part=rounds_part,
                    process_part=math.sqrt(max(0.0, var - w) / k), prior_sd=prior.sd,
                    prior_measured=prior.measured_df > 0, spread_processes=judged if judged > k else 0,
                    own_range=math.exp(float(m.max() - m.min())) - 1 if k >= 2 else None)
