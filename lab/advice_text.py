"""A search (lab.advise) in words: the recommendation line first, then each candidate with why and when it was dropped,
then what the search spent beside what the full sweep of the same candidates would have cost. `runner advise` prints
these; the Submit and Results pages show them as text (never markup)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from lab.advise import (
    FULL_PROCESSES,
    Measured,
    Outcome,
    Round,
    Search,
    full_sweep_cost,
    interval_words,
    payoff,
    settings_words,
    varying,
)
from lab.wording import count


@dataclass(frozen=True)
class Line:
    """One candidate: its settings, where it stands, its number for the caller, why."""

    settings: str
    status: str  # recommended, leader, in contention, dropped after round N
    speedup: str  # "1.42x [1.36, 1.48]" for the caller, or a dash
    processes: int
    seconds: float  # device-seconds its processes took
    why: str
    answered: int | None = None  # the processes its answer draws on, where fewer (disturbed ones left out)

    def runs(self) -> str:
        """"3 processes", or "3 processes, 2 in its answer, 1 disturbed and left out" (the answer leaves those out)."""
        said = count(self.processes, "process", "processes")
        if self.answered is not None and self.answered < self.processes:
            said += f", {self.answered:,} in its answer, {self.processes - self.answered:,} disturbed and left out"
        return said

    def text(self) -> str:
        return f"{self.settings}: {self.status}; {self.speedup} ({self.runs()}){': ' + self.why if self.why else ''}"


def unit(device: str) -> str:
    return "GPU-seconds" if device == "cuda" else "CPU-seconds"


def facts(m: Measured, calls: int | None) -> str:
    """'1.42x [1.36, 1.48] for the caller; compiling costs 14 s cold (2.1 s with the portable cache) and pays off
    after 9,800 calls; peak memory +6%'."""
    p = payoff(m)
    who = f"for the caller's {calls:,} calls" if calls and m.base_s is not None else "for the caller"
    parts = [f"{interval_words(p)} {who}" + (f" ({m.speedup:.2f}x a call)" if calls and m.base_s is not None else "")]
    if m.cold_first_s is not None:
        cost = f"compiling costs {m.cold_first_s:.1f} s cold"
        if m.portable_first_s is not None:
            cost += f" ({m.portable_first_s:.1f} s with the portable cache)"
        if m.break_even is not None:
            cost += f" and pays off after {m.break_even:,} calls{m.break_even_range}"
            if m.low is not None and m.low <= 1:  # its interval reaches 1x (the answer calls it not separable)
                cost += ", but may never: its interval reaches 1x"
        parts.append(cost)
    if m.peak_eager_mb and m.peak_compiled_mb is not None:
        parts.append(f"peak memory {m.peak_compiled_mb / m.peak_eager_mb - 1:+.0%}")
    return "; ".join(parts)


def headline(search: Search, measured: Mapping[str, Measured], rounds: Sequence[Round], pending: int) -> str:
    """The recommendation line (or where the search stands while it runs)."""
    vary = varying(m.settings for m in measured.values())
    last = rounds[-1].step if rounds else None
    lead = measured.get(last.leader) if last and last.leader else None

    def name(m: Measured) -> str:
        return settings_words(m.settings, vary)

    if last is None or last.outcome is Outcome.CONTINUE:
        where = f"searching: round {len(rounds) + 1}, {pending} job{'s' * (pending != 1)} to run"
        return where + (f"; leading so far: {name(lead)}: {interval_words(payoff(lead))}" if lead else "")
    if last.outcome is Outcome.RECOMMEND:
        text = f"use {name(lead)}: {facts(lead, search.calls)}"
        zone = last.why.removesuffix("; separable from eager at 95%")
        return text + (f" ({zone})" if zone != last.why else "")
    if last.outcome is Outcome.BUDGET:
        return f"use {name(lead)} (best measured, {last.why}): {facts(lead, search.calls)}"
    text = f"don't compile: {last.why}"
    return text + (f"; the best, {name(lead)}: {facts(lead, search.calls)}" if lead else "")


def lines(measured: Mapping[str, Measured], rounds: Sequence[Round]) -> list[Line]:
    """Each candidate, the recommended or leading one first, then those in contention, then the dropped in the order
    they went."""
    vary = varying(m.settings for m in measured.values())
    last = rounds[-1].step if rounds else None
    gone = {d.key: (r.round, d.why) for r in rounds for d in r.step.dropped}
    out = []
    for key, m in measured.items():
        if key in gone and not m.started:
            status, why = f"not run, left out after round {gone[key][0]}", gone[key][1]
        elif key in gone:
            status, why = f"dropped after round {gone[key][0]}", gone[key][1]
        elif not m.started:
            status, why = "to run", ""
        elif last is not None and key == last.leader:
            status = "recommended" if last.outcome is Outcome.RECOMMEND else "leader"
            why = last.why
        else:
            status, why = "in contention", ""
        out.append(Line(settings_words(m.settings, vary), status, interval_words(payoff(m)), m.processes, m.spent_s, why,
                        m.answered))
    order = {"recommended": 0, "leader": 0, "in contention": 1, "to run": 2}
    return sorted(out, key=lambda c: (order.get(c.status, 3), c.status.startswith("not run"), c.status, c.settings))


def cost(measured: Mapping[str, Measured], spent_s: float, device: str) -> str:
    """'the search spent 412 GPU-seconds; the full sweep of these 6 settings (2 processes each) about 1,380
    GPU-seconds (30%)'."""
    full = full_sweep_cost(measured)
    said = f"the search spent {spent_s:,.0f} {unit(device)}; the full sweep of these {len(measured)} settings " \
           f"({FULL_PROCESSES} processes each)"
    if full <= 0:  # priced from the search's own processes: none has ended yet
        return f"{said} is priced once a first process ends"
    return f"{said} about {full:,.0f} {unit(device)} ({spent_s / full:.0%})"


def report(search: Search, measured: Mapping[str, Measured], rounds: Sequence[Round], spent_s: float, device: str,
           pending: int) -> str:
    """The whole search as plain text: the recommendation, each candidate, the cost."""
    out = [headline(search, measured, rounds, pending), ""]
    out += [f"  {c.text()}" for c in lines(measured, rounds)]
    out += ["", cost(measured, spent_s, device)]
    return "\n".join(out) + "\n"
