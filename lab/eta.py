"""How long a job, a sweep and the queue will take, from the lab's own history of similar finished jobs (no torch,
no database: db.estimates reads the history, the pages and `runner status` say it).

Similar: the same configuration first (jobs.config: the same model, settings and device kind), then the same model on
the same device kind, else no history, said as such. A running job is in one of STAGES (its published phase); each
finished job's timeline (lab.timeline) says how long each stage took it, so a running job's time left is what is left
of its current stage, by the usual length of that stage and how long it has run (or its progress fraction, where the
phase reports one), plus the usual lengths of the stages after it. A queued job starts when a live worker offering its
device is free: the queue ahead, in claim order (job id), taken by the earliest-free worker.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Iterable, Mapping

STAGES = ("starting", "building", "eager first call", "compiling", "warming up", "measuring", "finishing")
# the timeline phases (runner.child, runner.worker) whose first start begins each stage after "starting"
BEGINS = {"building": ("model build",), "eager first call": ("library warm-up", "eager first call"),
          "compiling": ("compiled first call",), "warming up": ("compile workers", "warm-up"),
          "measuring": ("rounds",), "finishing": ("profiler", "record")}
# published phases that are not a stage's own name
PHASE_STAGE = {"diagnosis clocks": "measuring", "counting kernels": "finishing", "schedule": "finishing",
               "tlparse": "finishing", "traffic": "finishing"}
SAME_SETTINGS, SAME_MODEL = "same settings", "same model"


def stage_of(phase: str | None) -> str:
    """The stage a published phase belongs to; "starting" for none yet."""
    phase = phase or "starting"
    return phase if phase in STAGES else PHASE_STAGE.get(phase, "finishing")


def stage_seconds(timeline: list[dict] | None) -> dict[str, float]:
    """Seconds per stage of one finished job's timeline ([{phase, start, seconds}]): each stage from the first start of
    its BEGINS phases (after the stage before it began) to the next stage's; {} without a timeline."""
    if not timeline:
        return {}
    end = max(e["start"] + e["seconds"] for e in timeline)
    starts, at = {"starting": 0.0}, 0.0
    for stage in STAGES[1:]:
        found = [e["start"] for e in timeline if e["phase"] in BEGINS[stage] and e["start"] >= at]
        if found:
            starts[stage] = at = min(found)
    ordered = [(s, starts[s]) for s in STAGES if s in starts]
    return {s: max(0.0, (ordered[i + 1][1] if i + 1 < len(ordered) else end) - t) for i, (s, t) in enumerate(ordered)}


def _middle(values: list[float]) -> tuple[float, float]:
    """The usual range: the middle half of `values` (quartiles) from four values on, else lowest to highest."""
    v = sorted(values)
    if len(v) < 4:
        return v[0], v[-1]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


@dataclass
class Typical:
    """What similar finished jobs took: whole jobs (claim to stored) and each stage, and how similar they were."""

    basis: str | None = None  # SAME_SETTINGS, SAME_MODEL, or None: no history
    totals: list[float] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)

    @property
    def total(self) -> float | None:
        return statistics.median(self.totals) if self.totals else None

    def stage(self, name: str) -> float | None:
        got = self.stages.get(name)
        return statistics.median(got) if got else None

    def usual(self, name: str) -> tuple[float, float] | None:
        got = self.stages.get(name)
        return _middle(got) if got else None


def typical(same_settings: Iterable[Mapping], same_model: Iterable[Mapping]) -> Typical:
    """From finished jobs ({"seconds": claim to stored, "timeline": lab.timeline's or None}): the same settings' where
    there are any, else the same model's, else no history."""
    for basis, jobs in ((SAME_SETTINGS, list(same_settings)), (SAME_MODEL, list(same_model))):
        totals = [float(j["seconds"]) for j in jobs if j.get("seconds") is not None and j["seconds"] >= 0]
        if totals:
            stages: dict[str, list[float]] = {}
            for j in jobs:
                for name, seconds in stage_seconds(j.get("timeline")).items():
                    stages.setdefault(name, []).append(seconds)
            return Typical(basis, totals, stages)
    return Typical()


@dataclass(frozen=True)
class Left:
    """A running job's estimate: its stage, that stage's usual range and time so far, and the time left in all."""

    stage: str
    usual: tuple[float, float] | None
    so_far: float | None
    left_s: float | None
    basis: str | None
    late: bool = False  # the stage has run past its usual range

    def words(self, stage: bool = True) -> str:
        """"compiling, usually 40-60 s, 25 s so far; about 1 min left"; without the stage's name where it is said
        beside."""
        parts = [self.stage] if stage else []
        if self.usual is not None:
            lo, hi = self.usual
            parts.append(f"usually {span(lo, hi)}")
        if self.so_far is not None:
            parts.append(f"{duration(self.so_far)} so far" + (" (longer than usual)" if self.late else ""))
        text = ", ".join(parts)
        if self.basis is None:
            return (text + "; " if text else "") + "no history of similar jobs to estimate from"
        left = ("" if self.left_s is None else "due to end about now" if under_a_second(self.left_s)
                else f"about {duration(self.left_s)} left")
        return "; ".join(p for p in (text, left) if p)


def running(typ: Typical, phase: str | None, elapsed_s: float | None, phase_s: float | None = None,
            progress: float | None = None) -> Left:
    """A running job's time left (Left) from what similar jobs took (typ), its phase, its time since the claim
    (elapsed_s), since its phase began (phase_s) and the phase's progress fraction where it reports one."""
    stage = stage_of(phase)
    later = sum(typ.stage(s) or 0.0 for s in STAGES[STAGES.index(stage) + 1:])
    usual, med = typ.usual(stage), typ.stage(stage)
    current = None
    if med is not None and progress is not None and 0 < progress <= 1 and phase_s:
        current = phase_s * (1 - progress) / progress  # its own pace in this phase
    elif med is not None and phase_s is not None:
        current = max(med - phase_s, 0.0)
    if current is not None:
        left = current + later
    elif typ.total is not None and elapsed_s is not None:
        left = max(typ.total - elapsed_s, later)
    else:
        left = None
    late = usual is not None and phase_s is not None and phase_s > usual[1] and progress is None
    return Left(stage, usual, phase_s, left, typ.basis, late)


@dataclass(frozen=True)
class Start:
    """When a queued job should start and finish, in seconds from now; `at_least`: a job ahead of it (or itself) has no
    history, counted as taking no time, so the times are lower bounds."""

    start_s: float
    end_s: float
    at_least: bool
    starts_at_least: bool = False  # the start alone is a lower bound: a job ahead on its worker has no history


def schedule(queued: Iterable[tuple[int, str, float | None]], workers: Iterable[tuple[Iterable[str], float | None]]
             ) -> dict[int, Start]:
    """Queued jobs as (id, device, usual seconds or None) in claim order; live workers as (devices offered, seconds
    until free: their running job's time left, 0 when idle, None when unknown). Each job goes to the earliest-free
    worker offering its device; a job no live worker offers is left out (it waits for a worker, not for time)."""
    free = [[0.0 if left is None else left, left is None, set(devices)] for devices, left in workers]
    out: dict[int, Start] = {}
    for job_id, device, seconds in sorted(queued):
        able = [w for w in free if device in w[2]]
        if not able:
            continue
        w = min(able, key=lambda x: x[0])
        bound = w[1] or seconds is None
        out[job_id] = Start(w[0], w[0] + (seconds or 0.0), bound, w[1])
        w[0], w[1] = w[0] + (seconds or 0.0), bound
    return out


def done_in(starts: Iterable[Start], lefts: Iterable[float | None] = ()) -> tuple[float, bool] | None:
    """When a set of jobs (a sweep, the queue) is done: the last end among its queued jobs' Starts and its running
    jobs' times left, and whether that is a lower bound; None for nothing to wait for."""
    ends = [(s.end_s, s.at_least) for s in starts] + [(0.0 if x is None else x, x is None) for x in lefts]
    if not ends:
        return None
    return max(e for e, _ in ends), any(b for _, b in ends)


def duration(seconds: float | None) -> str:
    """45 s, 3 min 20 s, 1 h 5 min; "under 1 s" for what rounds to none."""
    if seconds is None:
        return "?"
    s = max(0, round(seconds))
    if s == 0:
        return "under 1 s"
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s < 600 and s % 60 else "")
    return f"{s // 3600} h" + (f" {s % 3600 // 60} min" if s % 3600 // 60 else "")


def span(lo: float, hi: float) -> str:
    """40-60 s (seconds up to 100 s); one number where the two read alike."""
    a, b = duration(lo), duration(hi)
    if a == b:
        return a
    if hi < 100:
        return f"{max(0, round(lo))}-{round(hi)} s"
    return f"{a} to {b}"


def in_words(at: tuple[float, bool] | None) -> str:
    """"in about 3 min" / "in 3 min or more" for a done_in or a Start's time; "now", or UNKNOWN where all there is
    to wait for has no history."""
    if at is None:
        return "nothing left to run"
    seconds, bound = at
    if under_a_second(seconds):  # nothing ahead of it, or only what has no history (counted as taking no time)
        return UNKNOWN if bound else "now"
    return f"in {duration(seconds)} or more" if bound else f"in about {duration(seconds)}"


UNKNOWN = "at a time not known yet (no history of similar jobs for what runs before)"


def under_a_second(seconds: float) -> bool:
    return max(0, round(seconds)) == 0
