"""Noise kept out of the answer: which runs may answer, and which follow-up runs a finished run calls for.

A run (one job, one process) is *quiet*, *spread-noisy* (a side's round medians spread past NOISY_SPREAD: the
rounds themselves disagree, so the process was disturbed) or *host-sensitive* only (the rounds agree, but a side's
GPU idles HOST_SENSITIVE of its latency or more: that latency moves with the host's speed, which differs from
process to process, so one process cannot vouch for it). A spread-noisy run is re-run (up to the sweep's
`reruns` per configuration) and never answers; host-sensitive runs are repeated in separate processes (until the
sweep's `process_repeats` runs of the configuration exist) and answer together once there are MIN_PROCESSES of
them, since the answer's interval draws whole runs and so covers the variation between processes.

The follow-ups are planned here, from plain values, and queued by db.queue.finish in the transaction that stores
the result: a worker that dies between the two cannot lose them. No torch, no SQLAlchemy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

NOISY_SPREAD = 0.05  # a side whose round medians spread (IQR / median) past this is flagged noisy
# a side whose GPU idles this share of its latency moves with the host's speed, which differs from process to
# process: one process cannot vouch for it (noisy). On an H100, mlp bs 64 compiled (GPU idle 39-47% of its
# latency) read 0.170 and 0.195 ms in fresh processes, eager 0.135 and 0.201 ms in another run
HOST_SENSITIVE = 0.25
MIN_PROCESSES = 2  # host-sensitive runs answer together from this many separate processes on

QUIET, SPREAD, HOST = "quiet", "spread", "host"
NOISY_RERUN, PROCESS_REPEAT = "noisy", "process"  # the two kinds of follow-up job
LIVE = ("queued", "running", "succeeded")  # a job that has measured or will: it counts as one of the processes


def spread_noisy(speedup_spread=None, eager_spread=None, compiled_spread=None) -> bool:
    """Whether a run's rounds disagree: its speedup's spread (the per-round eager/compiled ratios) past NOISY_SPREAD.
    The sides alternate call by call, so a drift of the host that slows both (clocks, another process) moves each
    side's round medians but not their ratio: on an H100, simplenet's sides spread 10-35% while three fresh
    processes read 0.63, 0.61 and 0.60x. A run stored before the speedup's spread was kept goes by its sides'."""
    if speedup_spread is not None:
        return speedup_spread > NOISY_SPREAD
    return any((s or 0) > NOISY_SPREAD for s in (eager_spread, compiled_spread))


def run_kind(noisy, eager_spread=None, compiled_spread=None, eager_host_overhead=None,
             compiled_host_overhead=None, speedup_spread=None) -> str:
    """QUIET, SPREAD or HOST for one run's stored fields (a run flagged noisy with no spread on record, say one
    stored by an older worker, counts as SPREAD: its flag is all there is to go by)."""
    if noisy is not True:
        return QUIET
    if spread_noisy(speedup_spread, eager_spread, compiled_spread):
        return SPREAD
    if any((h or 0) >= HOST_SENSITIVE for h in (eager_host_overhead, compiled_host_overhead)):
        return HOST
    return SPREAD


def record_kind(r: dict) -> str:
    """run_kind of an export-style record (missing fields read as None)."""
    return run_kind(r.get("noisy"), r.get("eager_spread"), r.get("compiled_spread"), r.get("eager_host_overhead"),
                    r.get("compiled_host_overhead"), r.get("speedup_spread"))


def answering(kinds: Iterable[str]) -> list[bool]:
    """Which of one configuration's succeeded runs answer, given their kinds: the quiet ones, and the
    host-sensitive ones once quiet and host-sensitive runs together come from MIN_PROCESSES processes or more."""
    kinds = list(kinds)
    usable = sum(k in (QUIET, HOST) for k in kinds)
    return [k == QUIET or (k == HOST and usable >= MIN_PROCESSES) for k in kinds]


@dataclass(frozen=True)
class FollowUp:
    """One job to queue after a finished run: the same spec, linked to the run that called for it."""

    kind: str  # NOISY_RERUN or PROCESS_REPEAT
    n: int  # this is follow-up n of `total` of its kind for the configuration
    total: int
    because: str  # why, in words (the noise note, or the host-sensitivity)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "n": self.n, "total": self.total, "because": self.because}


def plan_follow_ups(kind: str, noise_note: str | None, reruns: int, process_repeats: int,
                    runs: list[dict]) -> list[FollowUp]:
    """The follow-ups a succeeded run of `kind` calls for. `runs`: every job of the same configuration in its sweep,
    this one included, each {"status": ..., "follow_up": its follow_up dict or None}. A spread-noisy run gets one
    re-run while the configuration has had fewer than `reruns` (cancelled ones count: the budget is spent); a
    host-sensitive one gets as many process repeats as it takes for `process_repeats` runs of the configuration
    (queued, running or succeeded) to exist. A run both spread-noisy and host-sensitive is SPREAD: a re-run first,
    and its re-run, if its rounds agree, brings the process repeats."""
    why = noise_note or "spread past 5%"
    if kind == SPREAD:
        done = sum((r.get("follow_up") or {}).get("kind") == NOISY_RERUN for r in runs)
        return [FollowUp(NOISY_RERUN, done + 1, reruns, why)] if done < reruns else []
    if kind == HOST and process_repeats > 1:
        have = sum(r.get("status") in LIVE for r in runs)
        made = sum((r.get("follow_up") or {}).get("kind") == PROCESS_REPEAT for r in runs)
        return [FollowUp(PROCESS_REPEAT, made + i + 1, made + process_repeats - have, why)
                for i in range(process_repeats - have)]
    return []


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
