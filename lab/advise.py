"""The racing search behind `runner advise` and the Submit page's "Find the best settings": which compile settings
are still in contention, when one is separable from the rest at 95%, and when compiling cannot pay off for the
caller's number of calls. Pure: the candidates' answers (lab.answer's numbers and interval) come in, a Step goes
out; db.advice stores the search and queues what a Step asks for.

The race. Every candidate runs in one process first. After each round a candidate is dropped when it failed, when
even its interval's top cannot pay off for the caller (below eager for N calls, or slower), or when its interval's
top lies below the leader's bottom. The leader is recommended once it is the only one left and its interval's bottom
is above eager's (the caller gains, at 95%); until then every candidate still in contention gets one more process,
while the budget and the process limit allow. Compiling is not worth it ("don't compile") when every candidate is
dropped, or when the search ends with the leader not separable from eager.

What "for the caller" means: with no number of calls, the steady-state latency speedup (the answer's number). With
N calls, the time of the caller's N calls, eager against compiled, first calls included:
  (E1 + B) / (C1 + B / s)    E1, C1: eager's and the cold compiled first call; B: eager's seconds for the other
                             N - 1 calls; s: the steady-state speedup
which rises with s, so the interval of s maps onto it end to end. The compile cost is taken as measured (one cold
first call per candidate: later processes compile from its cache), not as a spread. With a traffic stream, s is the
stream's own ratio (eager total / compiled total, recompiles included, one per process, with the device's spread
between processes: lab.interval) and B its eager total.
"""
from __future__ import annotations

import enum
import re
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

from lab.axes import folded_mode
from lab.checks import SpecError, integer, parse_dynamic

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


def parse_budget(text: str) -> int:
    """'10m', '600', '600s', '1h', '1h30m' -> seconds."""
    t = (text or "").strip().lower()
    parts = re.fullmatch(r"(?:([0-9]{1,4})h)?\s*(?:([0-9]{1,5})m)?\s*(?:([0-9]{1,7})s?)?", t)
    if not t or not parts or not any(parts.groups()):
        raise SpecError("budget", f"expected a duration like 10m, 600s or 1h, got {text[:20]!r}")
    h, m, s = (int(g or 0) for g in parts.groups())
    return h * 3600 + m * 60 + s


def candidates(device: str, modes: Iterable[str], dynamics: Iterable, scopes: Iterable[str], blocks: bool,
               backends: Iterable[str] = ("inductor",)) -> list[dict]:
    """The settings to race, each once: modes apply to inductor (other backends run with mode default), the modes
    that are one compile on this device are one candidate (lab.axes.folded_mode), scope blocks only where the model
    names its blocks."""
    out: list[dict] = []
    for backend in backends:
        for mode in (modes if backend == "inductor" else ("default",)):
            for dynamic in dynamics:
                for scope in scopes:
                    if scope == "blocks" and not blocks:
                        continue
                    c = {"backend": backend, "mode": folded_mode(mode, device), "dynamic": parse_dynamic(dynamic),
                         "scope": scope}
                    if c not in out:
                        out.append(c)
    return out


DEFAULT_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
DEFAULT_DYNAMICS = ("false", "true")  # static shapes, and shapes marked dynamic from the first call
DEFAULT_SCOPES = ("model", "blocks")


def search_request(fields: Mapping, blocks: bool) -> tuple[dict, list[str]]:
    """A search's sweep request (lab.sweep.SweepRequest's fields) from what the person gave: the candidate lists they
    left out filled with every value that applies (every mode, dynamic false and true, scope model and blocks where
    the model names its blocks), one process per candidate (the search adds more); notes on what was left out."""
    out, notes = dict(fields), []
    out.setdefault("modes", list(DEFAULT_MODES))
    out.setdefault("dynamics", list(DEFAULT_DYNAMICS))
    scopes = list(out.get("scopes") or DEFAULT_SCOPES)
    if "blocks" in scopes and not blocks:
        scopes.remove("blocks")
        if "scopes" in fields:
            notes.append("scope blocks left out: the model names no repeated blocks (BLOCKS)")
    out["scopes"] = scopes or ["model"]
    out["process_repeats"] = 1
    return out, notes


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
    processes: int  # undisturbed succeeded processes its answer draws on
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
    peak_eager_mb: float | None = None
    peak_compiled_mb: float | None = None
    first_s: float | None = None  # device-seconds of its first process
    later_s: tuple[float, ...] = ()  # device-seconds of each later process
    label: str = ""

    @property
    def spent_s(self) -> float:
        return (self.first_s or 0.0) + sum(self.later_s)


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


@dataclass(frozen=True)
class Step:
    """A round's decision: the outcome, the leader, who gets one more process, who was dropped now and why."""

    outcome: Outcome
    leader: str | None
    more: tuple[str, ...] = ()
    dropped: tuple[Drop, ...] = ()
    why: str = ""

    def to_dict(self) -> dict:
        return {"outcome": self.outcome.value, "leader": self.leader, "more": list(self.more),
                "dropped": [asdict(d) for d in self.dropped], "why": self.why}


def shown(m: Measured) -> str:
    """'1.42x [1.36, 1.48]' for the caller, and what it comes from where first calls count."""
    p = payoff(m)
    if p is None:
        return "no speedup measured"
    text = f"{p[0]:.2f}x [{p[1]:.2f}, {p[2]:.2f}]"
    if m.base_s is not None and m.cold_first_s is not None:
        text += f" over the caller's workload ({m.speedup:.2f}x per call, {m.cold_first_s:.1f} s to compile)"
    return text


def cannot_pay(m: Measured, calls: int | None) -> str:
    """Why m's interval's top stays below eager's, in words."""
    p = payoff(m)
    if m.base_s is None or m.cold_first_s is None or (m.high or 0) <= 1:
        return "slower than eager: its whole interval lies below 1x"
    saved = m.eager_ms * (1 - 1 / m.high) if m.eager_ms else None
    per_call = f", saves at most {saved:.3g} ms a call" if saved is not None else ""
    over = f"{calls:,} calls" if calls else "this traffic"
    be = f" (pays off after {m.break_even:,} calls)" if m.break_even else ""
    return (f"cannot pay off in {over}: {m.cold_first_s:.1f} s to compile{per_call}{be}; at best "
            f"{p[2]:.2f}x for the caller")


def decide(measured: Mapping[str, Measured], out: set[str], search: Search, spent_s: float) -> Step:
    """The decision after a round: `measured`, every candidate's answer so far; `out`, those dropped before;
    `spent_s`, the device-seconds the search has spent."""
    live = {k: m for k, m in measured.items() if k not in out}
    dropped: list[Drop] = []
    for k, m in list(live.items()):
        if payoff(m) is None:
            why = f"did not succeed: {m.error}" if m.failed else "no speedup measured"
            dropped.append(Drop(k, why))
        elif payoff(m)[2] < 1:
            dropped.append(Drop(k, cannot_pay(m, search.calls)))
    for d in dropped:
        live.pop(d.key)
    if not live:
        return Step(Outcome.DONT_COMPILE, None, dropped=tuple(dropped),
                    why="no setting pays off for the caller" + (f" in {search.calls:,} calls" if search.calls else ""))
    leader = max(live, key=lambda k: (payoff(live[k])[0], k))
    lead = payoff(live[leader])
    for k, m in list(live.items()):
        if k != leader and payoff(m)[2] < lead[1]:
            dropped.append(Drop(k, f"below the leader: {shown(m)} against {lead[0]:.2f}x [{lead[1]:.2f}, {lead[2]:.2f}]"))
            live.pop(k)
    if len(live) == 1 and lead[1] > 1:
        return Step(Outcome.RECOMMEND, leader, dropped=tuple(dropped),
                    why="separable from every other setting and from eager at 95%")
    more = tuple(sorted(live, key=lambda k: (k != leader, k)))
    if any(live[k].processes >= search.max_processes for k in more):
        return undecided(leader, live, dropped, f"{search.max_processes} processes each, the search's limit")
    cost = round_cost(measured, more)
    if spent_s + cost > search.budget_s:
        return undecided(leader, live, dropped, f"the budget: {spent_s:,.0f} of {search.budget_s:,} s spent, another "
                                                 f"round would take about {cost:,.0f} s")
    why = ("not yet separable from eager" if len(live) == 1
           else f"{len(live)} settings still overlap the leader's interval")
    return Step(Outcome.CONTINUE, leader, more=more, dropped=tuple(dropped), why=why)


def undecided(leader: str, live: Mapping[str, Measured], dropped: list[Drop], stop: str) -> Step:
    lead = payoff(live[leader])
    if lead[1] <= 1:  # the best left is not separable from eager: nothing says compiling gains the caller anything
        return Step(Outcome.DONT_COMPILE, leader, dropped=tuple(dropped),
                    why=f"stopped at {stop}; the best setting is not separable from eager "
                        f"({lead[0]:.2f}x [{lead[1]:.2f}, {lead[2]:.2f}])")
    return Step(Outcome.BUDGET, leader, dropped=tuple(dropped),
                why=f"stopped at {stop}; {len(live)} settings still in contention: the leader is the best measured, "
                    "not separable from them at 95%")


def repeat_share(measured: Mapping[str, Measured]) -> float:
    """A later process's cost against its candidate's first, as this search measured it (else REPEAT_SHARE)."""
    shares = [sum(m.later_s) / len(m.later_s) / m.first_s for m in measured.values() if m.later_s and m.first_s]
    return sorted(shares)[len(shares) // 2] if shares else REPEAT_SHARE


def round_cost(measured: Mapping[str, Measured], keys: Iterable[str]) -> float:
    """About what one more process of each of these candidates costs, in device-seconds."""
    share = repeat_share(measured)
    total = 0.0
    for k in keys:
        m = measured[k]
        total += sum(m.later_s) / len(m.later_s) if m.later_s else (m.first_s or 0.0) * share
    return total


def full_sweep_cost(measured: Mapping[str, Measured], processes: int = FULL_PROCESSES) -> float:
    """What a plain sweep of the same candidates, `processes` each, would have cost: each candidate's first process
    as measured, its later ones as measured where it ran them, else at the search's repeat share."""
    share = repeat_share(measured)
    total = 0.0
    for m in measured.values():
        later = list(m.later_s[:processes - 1])
        mean = sum(later) / len(later) if later else (m.first_s or 0.0) * share
        total += (m.first_s or 0.0) + sum(later) + mean * (processes - 1 - len(later))
    return total


@dataclass(frozen=True)
class Round:
    """One stored decision: the round it followed and the Step."""

    round: int
    step: Step
    spent_s: float = 0.0
    at: str | None = None
