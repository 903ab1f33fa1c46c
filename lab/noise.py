"""Which runs answer, and which follow-up runs a finished run calls for.

A run (one job, one process) answers unless something from outside disturbed its rounds, measured and named
(runner.child.disturbance: other processes on its cores or its GPU, throttled or moving clocks, memory pressure). A
disturbed run is re-run, up to the sweep's `reruns` per configuration, and left out of the answer while an
undisturbed run of its configuration exists; a configuration whose every run was disturbed still answers from them,
flagged, with the cause. Scatter alone is not a cause: it widens the answer's interval (lab.interval).

Every configuration runs in `process_repeats` separate processes (2 by default): fresh processes differ, and the
interval must hold across them. The first run's compile cache is kept for its repeats (runner.worker.cache_repeat), so a
repeat pays a warm first call, not a cold compile. The follow-ups are planned here, from plain values, and queued by
db.queue.finish in the transaction that stores the result: a worker that dies between the two cannot lose them. A
sweep never grows past lab.sweep.MAX_JOBS with them. No torch, no SQLAlchemy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

NOISY_RERUN, PROCESS_REPEAT = "noisy", "process"  # the two kinds of follow-up job
PENDING = ("queued", "running")  # a job that will measure: it counts as one of the processes
# One more process when a configuration's processes disagree past this (their paired speedups' range, on a log
# scale), once. Chosen from the H100 runs of the seed configurations (bench/results/h100_honest_answers*): fresh
# processes of most configurations agree within 1-3%, but about one in six of a launch-bound or CUDA-graph
# configuration's processes lands 10-20% off (sincos bs 10000 1.71x against 2.1x). Two processes cannot tell which
# of them is the odd one, and their mean sits halfway. Replaying those runs' processes (4,000 simulated sweeps): a
# third process where two differ by more than 5% took the answers within 10% of the harness from 95.5% to 96.6% and
# a second sweep's answer inside the first's interval from 90.6% to 91.5%, for 0.29 extra processes per
# configuration (a warm repeat each: the follow-ups stay under half of the first runs' GPU time)
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


def disagreement(runs: list[dict]) -> float | None:
    """How far apart the undisturbed succeeded runs' paired speedups ("center") are: max/min - 1; None below two."""
    centers = [r["center"] for r in runs if r.get("status") == "succeeded" and not r.get("disturbed")
               and isinstance(r.get("center"), (int, float)) and math.isfinite(r["center"]) and r["center"] > 0]
    if len(centers) < 2:
        return None
    return max(centers) / min(centers) - 1


def disagree_because(processes: int, apart: float) -> str:
    return (f"its {processes} processes disagree by {apart:.0%}, more than the {DISAGREE:.0%} fresh processes "
            "usually differ by: one more process tells which of them is the odd one")


def plan_follow_ups(disturbed: bool, cause: str | None, reruns: int, process_repeats: int, runs: list[dict],
                    room: int) -> list[FollowUp]:
    """The follow-ups a succeeded run calls for. `runs`: every job of its configuration in its sweep, this one
    included, each {"status", "follow_up", "disturbed", "center"}; `room`: how many more jobs the sweep may hold.
    Until `process_repeats` runs of the configuration are pending or succeeded undisturbed, a disturbed run gets one
    re-run (while the configuration has had fewer than `reruns`: cancelled ones count, the budget is spent) and the
    rest are process repeats. A disturbed run whose budget is spent calls for nothing: repeats never stand in for
    re-runs. When the last of them ends and the processes disagree past DISAGREE, one more process (EXTRA_PROCESSES:
    a sweep of one process per configuration asked for no spread, and gets none); that one, disturbed, is re-run
    too (within the budget) while the undisturbed ones still disagree: the disagreement it was there to settle stands."""
    have = sum(r.get("status") in PENDING or (r.get("status") == "succeeded" and not r.get("disturbed"))
               for r in runs)
    missing = max(0, process_repeats - have)
    out = []
    apart = disagreement(runs)
    extra_wanted = (not missing and process_repeats >= 2 and have < process_repeats + EXTRA_PROCESSES
                    and not any(r.get("status") in PENDING for r in runs) and apart is not None and apart > DISAGREE)
    if extra_wanted and not disturbed:
        made = sum((r.get("follow_up") or {}).get("kind") == PROCESS_REPEAT for r in runs)
        return [FollowUp(PROCESS_REPEAT, made + 1, made + 1, disagree_because(have, apart))][:max(0, room)]
    if disturbed:
        done = sum((r.get("follow_up") or {}).get("kind") == NOISY_RERUN for r in runs)
        if done >= reruns or not (missing or extra_wanted):
            return []
        if not missing:  # beyond the configuration's processes, so the extra one, disturbed: a re-run stands in
            return [FollowUp(NOISY_RERUN, done + 1, reruns, cause or "disturbed")][:max(0, room)]
        out.append(FollowUp(NOISY_RERUN, done + 1, reruns, cause or "disturbed"))
        missing -= 1
    made = sum((r.get("follow_up") or {}).get("kind") == PROCESS_REPEAT for r in runs)
    out += [FollowUp(PROCESS_REPEAT, made + i + 1, made + missing, repeats_because(process_repeats))
            for i in range(missing)]
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
    """A follow-up job in a few characters, for a table column: "re-run 1/2 of #12", "" for a first run."""
    if not follow_up:
        return ""
    what = "re-run" if follow_up.get("kind") == NOISY_RERUN else "process"
    return f"{what} {follow_up.get('n')}/{follow_up.get('total')}" + (f" of #{of_job}" if of_job is not None else "")


def describe(follow_up: dict | None, of_job: int | None) -> str | None:
    """A follow-up job in words, as the Queue and Job pages show it: "re-run 1 of 2 of job 12, because: ..."."""
    if not follow_up:
        return None
    what = "re-run" if follow_up.get("kind") == NOISY_RERUN else "process repeat"
    where = f" of job {of_job}" if of_job is not None else ""
    return f"{what} {follow_up.get('n')} of {follow_up.get('total')}{where}, because: {follow_up.get('because')}"


def rerun_outcome(reruns: int, rerun_ids: list[int]) -> str:
    """What became of a disturbed run, in words: the re-runs it called for, or why there were none."""
    if rerun_ids:
        return f"it was re-run as job {', '.join(f'#{i}' for i in rerun_ids)}"
    if reruns == 0:
        return "it was not re-run: its sweep allows no re-runs (--reruns 0)"
    return (f"it was not re-run: its configuration had used its sweep's {reruns} re-run{'s' if reruns != 1 else ''}, "
            "or enough undisturbed processes of it answer already")
