"""Which runs count toward the answer, and which follow-up runs a finished run calls for.

A run answers unless something from outside disturbed its rounds, measured and named (runner.child.disturbance); a
disturbed run is re-run within the sweep's budget and left out while an undisturbed run of its configuration exists.
Scatter alone is not a cause: it widens the interval (lab.interval). Every configuration runs in `process_repeats`
fresh processes, more where its earlier processes on this device disagreed or today's read off them, fewer where many
agreed (lab.history); one more where they disagree past DISAGREE, or past what its earlier processes' spread
explains. docs/measurement.md says why, with the figures. No torch, no SQLAlchemy."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

from lab import history, host_pace
from lab.interval import Spread

# set by the dashboard for the embedded worker it starts (dashboard.state.embedded): its server's pid, which a job's
# disturbance then names in words (runner.child.disturbance: on a small machine the pages a person opens while a job
# is timed share its cores)
DASHBOARD_PID_ENV = "COMPILE_LAB_DASHBOARD_PID"
# and a file naming, one per line, the pids of the dashboard servers that adopted that worker since (one restarted
# while its worker lived on): read when a busy process is named
DASHBOARD_PIDS_ENV = "COMPILE_LAB_DASHBOARD_PIDS"


def dashboard_pids(environ=None) -> set[int]:
    """The pids of this lab's dashboard servers as the embedded worker's environment names them (above)."""
    environ = os.environ if environ is None else environ
    pids = {environ.get(DASHBOARD_PID_ENV, "")}
    try:
        with open(environ.get(DASHBOARD_PIDS_ENV) or os.devnull) as f:
            pids |= set(f.read().split())
    except OSError:
        pass
    return {int(p) for p in pids if p.isdigit()}

NOISY_RERUN, PROCESS_REPEAT = "noisy", "process"  # the two kinds of follow-up job
PENDING = ("queued", "running")  # a job that will measure: it counts as one of the processes
# one more process when a configuration's processes disagree past this (their paired speedups' range, log
# scale), once: fresh processes of most configurations agree within 1-3% (docs/measurement.md has the figures)
DISAGREE, EXTRA_PROCESSES = 0.05, 1


def is_disturbed(record: dict) -> bool:
    """Whether a run's rounds were disturbed by a measured cause (runs stored before causes were measured: no)."""
    return record.get("disturbed") is True


def answering(disturbed: Iterable[bool]) -> list[bool]:
    """Which of one configuration's succeeded runs answer: the undisturbed ones, or all of them when every one
    was disturbed (an answer flagged with its causes beats none)."""
    flags = list(disturbed)
    if all(flags):
        return [True] * len(flags)
    return [not d for d in flags]


def counting(disturbed: Iterable[bool], groups: Iterable[Hashable]) -> list[bool]:
    """Which runs count, many configurations at once: each run's disturbed flag beside its configuration's key (one
    hashable per run, NaN-free), the rule of answering() applied within each configuration."""
    disturbed, groups = [bool(d) for d in disturbed], list(groups)
    every: dict = {}
    for d, g in zip(disturbed, groups):
        every[g] = every.get(g, True) and d
    return [not d or every[g] for d, g in zip(disturbed, groups)]


@dataclass(frozen=True)
class Run:
    """One run of a configuration, as planning its follow-ups reads it."""

    status: str
    follow_up: str | None = None  # the kind of follow-up it is (NOISY_RERUN, PROCESS_REPEAT); None: a first run
    disturbed: bool = False
    center: float | None = None  # its paired speedup (the results' round_speedup)
    pace: float | None = None  # the host's pace through its rounds (the results' host_pace_us: lab.host_pace)

    @property
    def pending(self) -> bool:
        return self.status in PENDING

    @property
    def answers(self) -> bool:
        return self.status == "succeeded" and not self.disturbed


@dataclass(frozen=True)
class FollowUp:
    """One job to queue after a finished run: the same spec, linked to the run that called for it."""

    kind: str  # NOISY_RERUN or PROCESS_REPEAT
    n: int  # this is follow-up n of `total` of its kind for the configuration
    total: int
    because: str  # why, in words (the measured cause, or the processes the answer draws)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "n": self.n, "total": self.total, "because": self.because}


def repeats_because(process_repeats: int) -> str:
    return (f"each configuration runs in {process_repeats} fresh processes: they differ, and the answer's interval "
            "holds across them")


def disagreement(runs: list[Run]) -> float | None:
    """How far apart the undisturbed succeeded runs' paired speedups are: max/min - 1; None below two."""
    centers = [r.center for r in runs if r.answers and isinstance(r.center, (int, float)) and math.isfinite(r.center)
               and r.center > 0]
    if len(centers) < 2:
        return None
    return max(centers) / min(centers) - 1


def disagree_because(processes: int, apart: float, past: Spread | None = None, runs: Sequence[Run] = ()) -> str:
    """Why one more process: how far `runs` (the configuration's) disagree, and against what; where their host paces
    lie apart (lab.host_pace.APART), that too: the likely reason on a host whose pace moves."""
    usual = (f"the {history.expected_apart(processes, past):.0%} its {past.processes} earlier processes on this "
             "device explain" if past is not None and history.expected_apart(processes, past) > DISAGREE
             else f"the {DISAGREE:.0%} fresh processes usually differ by")
    paces = sorted(r.pace for r in runs if r.answers and isinstance(r.pace, (int, float)) and r.pace > 0)
    paced = (f" (they ran at host paces of {paces[0]:.0f}-{paces[-1]:.0f} us, lower is faster)"
             if paces and paces[-1] >= host_pace.APART * paces[0] else "")
    return (f"its {processes} processes disagree by {apart:.0%}, more than {usual}{paced}: one more process tells which "
            "of them is the odd one")


def plan_follow_ups(disturbed: bool, cause: str | None, reruns: int, process_repeats: int, runs: list[Run],
                    room: int, past: Spread | None = None) -> list[FollowUp]:
    """The follow-ups a succeeded run calls for. `runs`: every job of its configuration in its sweep, this one
    included; `room`: how many more jobs the sweep may hold.
    Until `process_repeats` runs of the configuration are pending or succeeded undisturbed, a disturbed run gets one
    re-run (while the configuration has had fewer than `reruns`: cancelled ones count, the budget is spent) and the
    rest are process repeats. A disturbed run whose budget is spent calls for nothing: repeats never stand in for
    re-runs. When the last of them ends and the processes disagree past DISAGREE, one more process (EXTRA_PROCESSES:
    a sweep of one process per configuration asked for no spread, and gets none); that one, disturbed, is re-run
    too (within the budget) while the undisturbed ones still disagree: the disagreement it was there to settle stands.
    `past`: the configuration's earlier processes on this device and torch (lab.history.past_spread), None where
    fewer than two: from 3, where they disagreed, more processes are planned (lab.history.planned), and today's
    processes call for one more only where they lie further apart than that spread explains
    (lab.history.expected_apart); from 6 that agreed closely, fewer are planned, and today's that disagree run the
    sweep's own count after all (then one more, as above). Where today's answered ones read off the earlier ones'
    mean (lab.history.departs), the spread of all of them, today's included, plans the count, never below the
    sweep's own."""
    want = history.planned(process_repeats, past)
    today = [r.center for r in runs if r.answers]
    off = history.departs(today, past) if process_repeats >= 2 else None  # by those answered so far
    if off is not None and past is not None:  # today's read off the earlier ones: every process's spread plans
        want = max(process_repeats, history.planned(process_repeats, history.with_today(past, today)))
    have = sum(r.pending or r.answers for r in runs)
    apart = disagreement(runs)
    disagree = (not any(r.pending for r in runs) and apart is not None
                and apart > max(DISAGREE, history.expected_apart(have, past)))
    broken = disagree and want < process_repeats  # fewer were planned by agreeing history: the sweep's count runs
    want = process_repeats if broken else want
    missing = max(0, want - have)
    out = []
    extra_wanted = not missing and process_repeats >= 2 and have < want + EXTRA_PROCESSES and disagree
    if extra_wanted and not disturbed:
        made = sum(r.follow_up == PROCESS_REPEAT for r in runs)
        return [FollowUp(PROCESS_REPEAT, made + 1, made + 1, disagree_because(have, apart, past, runs))][:max(0, room)]
    if disturbed:
        done = sum(r.follow_up == NOISY_RERUN for r in runs)
        if done >= reruns or not (missing or extra_wanted):
            return []
        if not missing:  # beyond the configuration's processes, so the extra one, disturbed: a re-run stands in
            return [FollowUp(NOISY_RERUN, done + 1, reruns, cause or "disturbed")][:max(0, room)]
        out.append(FollowUp(NOISY_RERUN, done + 1, reruns, cause or "disturbed"))
        missing -= 1
    made = sum(r.follow_up == PROCESS_REPEAT for r in runs)
    because = (history.departs_because(have, off, past, want) if off is not None and past is not None
               else disagree_because(have, apart or 0.0, past, runs) if broken
               else repeats_because(process_repeats) if want == process_repeats or past is None
               else history.planned_because(process_repeats, want, past))
    out += [FollowUp(PROCESS_REPEAT, made + i + 1, made + missing, because) for i in range(missing)]
    return out[:max(0, room)]


def cpus_text(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5": a set of CPUs as taskset and cgroups spell it (host_state, the worker's log)."""
    runs: list[list[int]] = []
    for c in sorted(cpus):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def short(follow_up: dict | None, of_job: int | None) -> str:
    """A follow-up job in a few characters, for a table column: "re-run 1/2 of #12", "repeat 2 of #12", "" for a
    first run. A re-run counts against its budget; a process repeat has no fixed total (one more process can follow
    where they disagree), so none is shown."""
    if not follow_up:
        return ""
    of = f" of #{of_job}" if of_job is not None else ""
    if follow_up.get("kind") == NOISY_RERUN:
        return f"re-run {follow_up.get('n')}/{follow_up.get('total')}{of}"
    return f"repeat {follow_up.get('n')}{of}"


def describe(follow_up: dict | None, of_job: int | None) -> str | None:
    """A follow-up job in words, as the Queue and Job pages show it: "re-run 1 of 2 of job 12, because: ...",
    "process repeat 2 of job 12, because: ..." (a repeat's number without a total: see short)."""
    if not follow_up:
        return None
    where = f" of job {of_job}" if of_job is not None else ""
    if follow_up.get("kind") == NOISY_RERUN:
        what = f"re-run {follow_up.get('n')} of {follow_up.get('total')}"
    else:
        what = f"process repeat {follow_up.get('n')}"
    return f"{what}{where}, because: {follow_up.get('because')}"


def rerun_outcome(reruns: int, rerun_ids: list[int]) -> str:
    """What became of a disturbed run, in words: the re-runs it called for, or why there were none."""
    if rerun_ids:
        return f"it was re-run as job {', '.join(f'#{i}' for i in rerun_ids)}"
    if reruns == 0:
        return "it was not re-run: its sweep allows no re-runs (--reruns 0)"
    return (f"it was not re-run: its configuration had used its sweep's {reruns} re-run{'s' if reruns != 1 else ''}, "
            "or enough undisturbed processes of it answer already")
