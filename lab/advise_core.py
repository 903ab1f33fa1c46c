"""What a search (lab.advise) is made of: its settings (Search), a candidate's answer so far (Measured), a round's
decision (Step, Drop) and the caller's number (payoff). lab.advise decides; lab.advise_screen screens."""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

from lab.checks import SpecError, integer

MAX_PROCESSES = 6  # per candidate: past six processes an interval narrows by less than a tenth a process
DEFAULT_BUDGET_S = 1800
# what a later process costs against a candidate's first (compiled from the first's cache): used to price the full
# sweep and a round only where no candidate of the search has run a second process yet (H100, the seed configurations)
REPEAT_SHARE = 0.32
FULL_PROCESSES = 2  # the processes a plain sweep gives each configuration (lab.sweep.SweepRequest.process_repeats)
SETTINGS = ("backend", "mode", "dynamic", "scope")  # the compile settings a candidate differs in


class Outcome(str, enum.Enum):
    """Where a search stands after a round."""

    CONTINUE = "continue"  # candidates still in contention: one more process each
    RECOMMEND = "recommend"  # one candidate separable from the others and from eager at 95%
    DONT_COMPILE = "dont_compile"  # no candidate pays off for the caller (or none is separable from eager)
    BUDGET = "budget"  # the budget or the process limit ran out with candidates still in contention


@dataclass(frozen=True)
class Search:
    """What a search was asked: stored in its sweep's request under "advise" (db.advice)."""

    calls: int | None = None  # the caller's number of calls; None: steady state
    traffic: bool = False  # judged on the sweep's traffic stream (the jobs replay it)
    budget_s: int = DEFAULT_BUDGET_S  # device-seconds the search may spend, its first round included
    max_processes: int = MAX_PROCESSES

    def __post_init__(self):
        if self.calls is not None:
            object.__setattr__(self, "calls", integer(self.calls, "calls"))
            if self.calls < 1:
                raise SpecError("calls", f"must be 1 or more, got {self.calls}")
        object.__setattr__(self, "budget_s", integer(self.budget_s, "budget"))
        object.__setattr__(self, "max_processes", integer(self.max_processes, "max_processes"))
        if self.budget_s < 1:
            raise SpecError("budget", f"must be 1 s or more, got {self.budget_s}")
        if not 1 <= self.max_processes <= 20:
            raise SpecError("max_processes", f"must be between 1 and 20, got {self.max_processes}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d) -> "Search | None":
        """The stored settings, or None where the sweep is no search (or its stored settings no longer read)."""
        if not isinstance(d, Mapping):
            return None
        try:
            return cls(**{k: d[k] for k in ("calls", "traffic", "budget_s", "max_processes") if k in d})
        except (SpecError, TypeError):
            return None


def settings_words(settings: Mapping, vary: Iterable[str] = SETTINGS) -> str:
    """'mode=reduce-overhead, dynamic=False': the settings that vary among the candidates (all, when none does)."""
    shown = [k for k in SETTINGS if k in vary] or list(SETTINGS)
    return ", ".join(f"{k}={_value(settings.get(k))}" for k in shown)


def _value(v) -> str:
    return {None: "None", True: "True", False: "False"}.get(v, str(v)) if not isinstance(v, str) else v


def varying(settings: Iterable[Mapping]) -> list[str]:
    """The settings that differ between these candidates."""
    settings = list(settings)
    return [k for k in SETTINGS if len({repr(s.get(k)) for s in settings}) > 1]


@dataclass(frozen=True)
class Measured:
    """One candidate's answer so far (lab.answer's row for its configuration, plus what the search reads besides)."""

    key: str  # its configuration (jobs.config)
    settings: Mapping  # backend, mode, dynamic, scope
    processes: int  # succeeded processes the search counts toward its limit (a disturbed one too)
    answered: int | None = None  # of them, those its answer draws on (the answer leaves disturbed ones out); None: all
    failed: int = 0
    error: str | None = None
    speedup: float | None = None  # what the caller is judged on (steady state, or the stream's ratio)
    low: float | None = None
    high: float | None = None
    eager_first_s: float | None = None
    cold_first_s: float | None = None
    portable_first_s: float | None = None
    eager_ms: float | None = None
    compiled_ms: float | None = None
    base_s: float | None = None  # eager seconds of the caller's workload past its first call (None: steady state)
    break_even: int | None = None
    break_even_range: str = ""  # the answer's words for the counts at its intervals' ends (lab.verdict.paid_range)
    peak_eager_mb: float | None = None
    peak_compiled_mb: float | None = None
    recompiles: int | None = None  # the most any of its processes recompiled (shapes that change inside the model)
    first_s: float | None = None  # device-seconds of its first process
    later_s: tuple[float, ...] = ()  # device-seconds of each later process
    label: str = ""
    started: bool = True  # its first process was queued (False: a later stage's candidate, not run yet)

    @property
    def spent_s(self) -> float:
        return (self.first_s or 0.0) + sum(self.later_s)


def interval_words(p: tuple[float, float, float] | None, missing: str = "–") -> str:
    """'1.42x [1.36, 1.48]', or `missing` where nothing was measured."""
    return f"{p[0]:.2f}x [{p[1]:.2f}, {p[2]:.2f}]" if p else missing


def for_caller(m: Measured, s: float) -> float:
    """Speedup s as the caller's time over their workload, first calls included (the module's formula)."""
    if m.base_s is None or m.cold_first_s is None:
        return s
    return ((m.eager_first_s or 0.0) + m.base_s) / (m.cold_first_s + m.base_s / s)


def payoff(m: Measured) -> tuple[float, float, float] | None:
    """(number, low, high) for the caller; None without a measured speedup."""
    if m.speedup is None or m.low is None or m.high is None:
        return None
    return for_caller(m, m.speedup), for_caller(m, m.low), for_caller(m, m.high)


@dataclass(frozen=True)
class Drop:
    key: str
    why: str
    kind: str = ""  # failed, slower, cannot_pay, below, unrun, equal, futile ("" where a stored round says none)


@dataclass(frozen=True)
class Step:
    """A round's decision: the outcome, the leader, who gets one more process, who was dropped now and why."""

    outcome: Outcome
    leader: str | None
    more: tuple[str, ...] = ()
    dropped: tuple[Drop, ...] = ()
    why: str = ""
    start: tuple[str, ...] = ()  # candidates whose first process this round queues (the next stage)

    def to_dict(self) -> dict:
        return {"outcome": self.outcome.value, "leader": self.leader, "more": list(self.more),
                "dropped": [asdict(d) for d in self.dropped], "why": self.why, "start": list(self.start)}
