"""A job's timeline: where its time went, from the claim to the stored result (no torch, no streamlit).

Two processes record intervals on the host's wall clock (time.time(), one clock for the worker and its
child): the worker its own steps (claim, job setup, starting the child, reading the result, storing it), the
child its phases (model build, first calls, rounds, each analysis pass). `assemble` orders them, clips them
to the span from claim to stored and names whatever no phase explains `unaccounted`, so the entries always
add up to the whole span. Stored in the result's detail as `timeline`: [{phase, start, seconds}], start in
seconds from the claim.

What counts as measurement (MEASURED): the first calls and the steady state a fresh plain script would also
time, and the calls a job was asked to replay (its shape schedule, its traffic stream). A repeat's re-timed launch
settings are measurement too: cut from its warm first call (a warm cache holds the picks), they are what a fresh
process's first call pays to pick its own, which makes the repeat's steady state an independent draw (docs/measurement.md).
Everything else is the lab's overhead per job, which bench/sweep_overhead.py holds to its target.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterable, Iterator

UNACCOUNTED = "unaccounted"
RETIMED = "launch settings re-timed"
MEASURED = ("eager first call", "compiled first call", RETIMED, "warm-up", "rounds", "schedule", "traffic")
# the phases a child publishes (its progress) while it times what the answer reports: the compile (its cold first
# call), the warm-up and rounds, whose outside disturbances it measures and names, and the replays (a shape schedule,
# a traffic stream). A page on the same host pauses its refresh through them (dashboard.state.quiet)
TIMED_PROGRESS = ("compiling", "warming up", "measuring", "diagnosis clocks", "schedule", "traffic")
MIN_GAP_S = 0.001  # a gap shorter than this is clock granularity and bookkeeping, not time lost


class Phases:
    """Records named intervals as {"phase", "start", "end"} (epoch seconds). Not nested: a phase opened
    inside another would count its time twice, so each step of the protocol is its own phase."""

    def __init__(self) -> None:
        self.intervals: list[dict] = []
        self.marks: dict[str, float] = {}  # points in time another process's phase starts or ends at

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.time()
        try:
            yield
        finally:
            self.add(name, start, time.time())

    def add(self, name: str, start: float, end: float) -> None:
        self.intervals.append({"phase": name, "start": start, "end": max(start, end)})

    def carve(self, within: str, name: str, seconds: float) -> None:
        """Split `seconds` off the end of the last `within` phase as its own phase `name`: for a cost paid
        inside another phase that torch measures for us (the trace capture during the compile)."""
        for iv in reversed(self.intervals):
            if iv["phase"] == within:
                seconds = min(max(seconds, 0.0), iv["end"] - iv["start"])
                if seconds > 0:
                    cut = iv["end"] - seconds
                    self.intervals.append({"phase": name, "start": cut, "end": iv["end"]})
                    iv["end"] = cut
                return


def assemble(intervals: Iterable[dict], t0: float, t_end: float) -> list[dict]:
    """[{phase, start, seconds}] covering t0..t_end in order: intervals sorted by start and clipped to the
    span (an interval overlapping its predecessor starts where that one ended), gaps of MIN_GAP_S or more as
    `unaccounted`, shorter ones given to the phase before. The seconds add up to t_end - t0."""
    t_end = max(t_end, t0)
    out: list[dict] = []
    cursor = t0
    for iv in sorted(intervals, key=lambda i: (i["start"], i["end"])):
        start, end = max(iv["start"], cursor, t0), min(iv["end"], t_end)
        if end <= start:
            continue
        if start - cursor >= MIN_GAP_S:
            out.append(_entry(UNACCOUNTED, cursor, start, t0))
        elif out:  # a sliver between two phases: the earlier one's
            out[-1]["seconds"] += start - cursor
        else:
            start = cursor
        out.append(_entry(iv["phase"], start, end, t0))
        cursor = end
    if t_end - cursor >= MIN_GAP_S or not out:
        out.append(_entry(UNACCOUNTED, cursor, t_end, t0))
    else:
        out[-1]["seconds"] += t_end - cursor
    return out


def for_job(steps: Phases, child: list[dict], written_at: float | None, t0: float, t_end: float) -> list[dict]:
    """One job's timeline from the worker's `steps` (with marks "spawned" and "child exited") and the child's
    phases: starting the child lasts until its first phase begins, the result write until the worker sees the
    child exit."""
    intervals = steps.intervals + list(child)
    if child and "spawned" in steps.marks:
        intervals.append({"phase": "child start", "start": steps.marks["spawned"],
                          "end": min(i["start"] for i in child)})
    if written_at is not None and "child exited" in steps.marks:
        intervals.append({"phase": "result write", "start": written_at, "end": steps.marks["child exited"]})
    return assemble(intervals, t0, t_end)


def _entry(phase: str, start: float, end: float, t0: float) -> dict:
    return {"phase": phase, "start": start - t0, "seconds": end - start}


def total_s(timeline: list[dict] | None) -> float | None:
    return sum(e["seconds"] for e in timeline) if timeline else None


def measured_s(timeline: list[dict] | None) -> float | None:
    """Seconds spent on what a plain script also times (MEASURED)."""
    return sum(e["seconds"] for e in timeline if e["phase"] in MEASURED) if timeline else None


def overhead_s(timeline: list[dict] | None) -> float | None:
    """Claim to stored minus the measurement: what the lab adds per job."""
    return total_s(timeline) - measured_s(timeline) if timeline else None


def by_phase(timeline: list[dict]) -> dict[str, float]:
    """Seconds per phase name, in first-seen order (unaccounted stretches added together)."""
    out: dict[str, float] = {}
    for e in timeline:
        out[e["phase"]] = out.get(e["phase"], 0.0) + e["seconds"]
    return out


def sweep_share(timelines: Iterable[list[dict] | None], wall_s: float | None) -> float | None:
    """The share of a sweep's wall time (first claim to last stored) that was measurement."""
    measured = [measured_s(t) for t in timelines if t]
    if not measured or not wall_s or wall_s <= 0:
        return None
    return min(sum(measured) / wall_s, 1.0)
