"""A racing search (lab.advise) stored as a sweep that grows: its request holds the search's settings under "advise",
its first jobs are every candidate once, and each later round's processes are follow-ups of the candidate's first
run (kind "process", with the search's reason), so Queue and Results show it as any other sweep. Every job passes
db.admission. Each round's decision is a lab event on the sweep (action "advice"): what was dropped and why, who got
another process, and the outcome.

Who drives it: the worker. db.queue.finish calls advance() after every job of a search ends (whatever its outcome),
so a search goes on after the person who started it closes their terminal; `runner advise` waiting for it calls
advance() too, and so picks up a search whose last job ended with a worker that died before it could. advance() is
idempotent: it decides only when none of the sweep's jobs is queued or running, and writes only if no other
advance() wrote that round meanwhile (the sweep row locked, the rounds counted again).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np
from sqlalchemy import Engine, func, select

from db import admission, reports, team
from db.engine import atomic, reading
from db.models import Job, JobStatus, LabEvent, Result, Sweep, utcnow
from lab import advise, interval
from lab import advise_plan as plan
from lab.advise import Measured, Outcome, Round, Search, Step
from lab.noise import PROCESS_REPEAT
from lab.spec import ModelInfo, spec_key
from lab.sweep import SweepRequest
from lab.verdict import paid_range

KEY = "advise"  # where a sweep's request holds its search's settings
ACTION = "advice"  # the lab event of a round's decision
ACTOR = "lab"
PENDING = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)
log = logging.getLogger("compile_lab.advice")


def start(engine: Engine, request: SweepRequest, search: Search, catalog: Mapping[str, ModelInfo] | None,
          created_by: str, max_attempts: int = 3) -> tuple[int, list[int], list[str]]:
    """Store the search's sweep and its first round (the first stage's candidates, one process each: lab.advise_plan):
    (sweep id, job ids, notes). The request's settings lists are the candidates, kept in screening order under the
    search's settings so later rounds queue the others; its process_repeats must be 1 (the search adds processes)."""
    if request.process_repeats != 1:
        request = SweepRequest.from_dict({**request.to_dict(), "process_repeats": 1})
    specs, notes = request.expand(catalog)
    ordered = plan.ordered([spec.to_dict() for spec in specs])
    stage = plan.stages({spec_key(d): d for d in ordered}, search.calls is not None or search.traffic)
    with atomic(engine) as s:
        stored = request.to_dict() | {KEY: search.to_dict() | {"candidates": ordered, "max_attempts": max_attempts}}
        if specs:
            stored["model_args"] = dict(specs[0].model_args)
        sweep = team.new_sweep(request, stored, created_by)
        s.add(sweep)
        s.flush()
        ids = admission.add_jobs(s, [admission.NewJob(sweep.id, d, spec_key(d), max_attempts)
                                     for d in ordered if stage[spec_key(d)] == 0])
        return sweep.id, ids, notes


@dataclass(frozen=True)
class State:
    """A search as stored: its settings, its candidates' answers so far, its rounds' decisions, what it spent."""

    sweep_id: int
    search: Search
    request: dict
    measured: dict[str, Measured]
    rounds: list[Round]
    pending: int  # its jobs queued or running
    spent_s: float  # device-seconds its finished jobs held a worker
    first_jobs: dict[str, dict] = field(default_factory=dict)  # per candidate, its first job: id, spec, max_attempts

    @property
    def out(self) -> dict[str, str]:
        """Those dropped, each with its Drop's kind."""
        return {d.key: d.kind for r in self.rounds for d in r.step.dropped}

    @property
    def candidates(self) -> dict[str, dict]:
        """Every candidate's spec in screening order, run or not (a search stored without the list: those run)."""
        stored = (self.request.get(KEY) or {}).get("candidates")
        if isinstance(stored, list):
            return {spec_key(d): d for d in stored if isinstance(d, dict)}
        return {k: f["spec"] for k, f in self.first_jobs.items()}

    @property
    def last(self) -> Step | None:
        return self.rounds[-1].step if self.rounds else None

    @property
    def finished(self) -> bool:
        return self.last is not None and self.last.outcome is not Outcome.CONTINUE

    def dropped_at(self, key: str) -> tuple[int, str] | None:
        """(the round after which key was dropped, why), or None."""
        for r in self.rounds:
            for d in r.step.dropped:
                if d.key == key:
                    return r.round, d.why
        return None

    @property
    def device(self) -> str:
        return self.request.get("device") or "cuda"


def search_of(engine: Engine, sweep_id: int) -> Search | None:
    """The sweep's search settings, or None when it is no search."""
    with reading(engine) as s:
        request = s.scalar(select(Sweep.request).where(Sweep.id == sweep_id))
    return Search.from_dict(request.get(KEY)) if isinstance(request, dict) else None


def load(engine: Engine, sweep_id: int) -> State | None:
    """The search stored as sweep_id, or None when that sweep is none."""
    with reading(engine) as s:
        request = s.scalar(select(Sweep.request).where(Sweep.id == sweep_id))
        search = Search.from_dict(request.get(KEY)) if isinstance(request, dict) else None
        if search is None:
            return None
        jobs = s.execute(select(Job.id, Job.config, Job.spec, Job.status, Job.error, Job.claimed_at, Job.finished_at,
                                Job.follow_up, Job.max_attempts, Result.detail, Result.disturbed,
                                Result.device_name)
                         .outerjoin(Result, Result.job_id == Job.id)
                         .where(Job.sweep_id == sweep_id).order_by(Job.id)).all()
        events = s.execute(select(LabEvent.detail, LabEvent.at).where(LabEvent.sweep_id == sweep_id,
                                                                      LabEvent.action == ACTION)
                           .order_by(LabEvent.id)).all()
    rounds = [_round(d, at) for d, at in events if isinstance(d, dict)]
    rows = reports.report(engine, sweep_ids=[sweep_id])
    config_of = {j.id: j.config for j in jobs}
    seconds = {j.id: (j.finished_at - j.claimed_at).total_seconds()
               for j in jobs if j.finished_at and j.claimed_at and j.status not in PENDING}
    first_jobs = {}
    for j in jobs:
        if j.follow_up is None and j.config not in first_jobs:
            first_jobs[j.config] = {"id": j.id, "spec": dict(j.spec), "max_attempts": j.max_attempts}
    prior = None
    measured = {}
    for key, first in first_jobs.items():
        mine = [j for j in jobs if j.config == key]
        row = next((r for r in rows if config_of.get(int(r.job_ids.split()[0])) == key), None) if rows else None
        later = [seconds[j.id] for j in mine if (j.follow_up or {}).get("kind") == PROCESS_REPEAT and j.id in seconds]
        m = Measured(key=key, settings={k: first["spec"].get(k) for k in advise.SETTINGS}, processes=0,
                     failed=sum(j.status == JobStatus.FAILED.value for j in mine),
                     error=next((j.error for j in mine if j.error and j.status == JobStatus.FAILED.value), None),
                     first_s=seconds.get(first["id"]), later_s=tuple(later))
        if row is not None and row.speedup is not None:
            # every process that ran counts toward the search's limit, a disturbed one too (the answer leaves it
            # out while an undisturbed one exists): a box that disturbs every run must not make the race endless
            ran = sum(j.status == JobStatus.SUCCEEDED.value for j in mine)
            m = replace(m, processes=max(row.runs, ran), answered=row.runs, speedup=row.speedup,
                        low=row.speedup_ci_low, high=row.speedup_ci_high,
                        eager_first_s=row.eager_first_call_s, cold_first_s=row.first_call_cold_s,
                        portable_first_s=row.first_call_portable_s, eager_ms=row.eager_ms, compiled_ms=row.compiled_ms,
                        break_even=row.break_even_calls, break_even_range=paid_range(row),
                        peak_eager_mb=row.peak_mem_eager_mb,
                        peak_compiled_mb=row.peak_mem_compiled_mb, recompiles=row.recompiles, label=row.config)
            if search.traffic:  # judged on the stream: its interval is the replays', not the one the range took
                m = replace(m, break_even_range="")
                if prior is None:
                    prior = _prior(engine, {j.device_name for j in jobs if j.device_name})
                m = _on_traffic(m, [j for j in mine if j.status == JobStatus.SUCCEEDED.value and not j.disturbed],
                                prior)
            elif search.calls is not None and m.eager_ms is not None:
                m = replace(m, base_s=(search.calls - 1) * m.eager_ms / 1e3)
        measured[key] = m
    stored = request[KEY].get("candidates") if isinstance(request[KEY], dict) else None
    for d in stored if isinstance(stored, list) else ():
        if isinstance(d, dict) and (key := spec_key(d)) not in measured:
            measured[key] = Measured(key=key, settings={k: d.get(k) for k in advise.SETTINGS}, processes=0,
                                     started=False)
    return State(sweep_id=sweep_id, search=search, request=request, measured=measured, rounds=rounds,
                 pending=sum(j.status in PENDING for j in jobs), spent_s=sum(seconds.values()), first_jobs=first_jobs)


def _prior(engine: Engine, devices: set[str]) -> interval.Prior:
    """The spread between fresh processes the sweep's device has shown (as the answer reads it), for the stream's
    ratios; the default prior where it has shown none."""
    known = [p for p in reports.spreads(engine, devices).devices.values() if p is not None]
    if known:  # one device, unless its jobs ran on workers of two kinds: the better measured one
        return max(known, key=lambda p: p.measured_df)
    return interval.pooled_prior(np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0))


def _on_traffic(m: Measured, jobs: list, prior: interval.Prior) -> Measured:
    """m judged on its processes' replays of the stream: eager total / compiled total each, combined as the answer
    combines processes; the workload past the first call is the stream's eager total."""
    got = [(j.detail or {}).get("traffic") for j in jobs]
    got = [t for t in got if isinstance(t, dict) and t.get("complete") and (t.get("compiled_total_s") or 0) > 0]
    if not got:
        return replace(m, speedup=None, low=None, high=None, error="no complete replay of the stream")
    ratios = [t["eager_total_s"] / t["compiled_total_s"] for t in got]
    iv = interval.combine(ratios, [None] * len(ratios), prior)
    return replace(m, processes=len(got), speedup=iv.speedup, low=iv.low, high=iv.high,
                   base_s=sum(t["eager_total_s"] for t in got) / len(got))


def _round(detail: dict, at) -> Round:
    step = Step(Outcome(detail.get("outcome", "continue")), detail.get("leader"), tuple(detail.get("more", ())),
                tuple(advise.Drop(d["key"], d["why"], d.get("kind", "")) for d in detail.get("dropped", ())),
                detail.get("why", ""), tuple(detail.get("start", ())))
    return Round(int(detail.get("round", 0)), step, float(detail.get("spent_s", 0.0)),
                 at.isoformat() if at else None)


def advance(engine: Engine, sweep_id: int) -> list[int]:
    """Decide the search's next round once none of its jobs is queued or running, and queue its processes: the new
    job ids ([] when there is nothing to do: not a search, jobs still pending, already finished, or another advance
    decided this round first)."""
    st = load(engine, sweep_id)
    if st is None or st.pending or st.finished or not st.measured:
        return []
    step = advise.decide(st.measured, st.out, st.search, st.spent_s)
    with atomic(engine) as s:
        if s.scalar(select(Sweep.id).where(Sweep.id == sweep_id).with_for_update()) is None:
            return []
        rounds = s.scalar(select(func.count()).select_from(LabEvent)
                          .where(LabEvent.sweep_id == sweep_id, LabEvent.action == ACTION))
        pending = s.scalar(select(func.count()).select_from(Job)
                           .where(Job.sweep_id == sweep_id, Job.status.in_(PENDING)))
        if rounds != len(st.rounds) or pending:
            return []
        if step.outcome is Outcome.CONTINUE:
            free = admission.room(s, sweep_id)
            if free.jobs < len(step.more) + len(step.start):
                live = {k: st.measured[k] for k in step.more} or {
                    k: m for k, m in st.measured.items() if m.started and m.processes and k not in st.out}
                if not live or step.leader not in live:  # what ran does not pay off; the rest is said as not run
                    unrun = tuple(advise.Drop(k, f"not run: {free.why}", "unrun") for k in step.start)
                    step = Step(Outcome.DONT_COMPILE, None, dropped=step.dropped + unrun,
                                why=f"stopped before every setting ran: {free.why}"
                                    + (f" ({len(unrun)} not run)" if unrun else ""))
                else:
                    step = advise.undecided(step.leader, live, list(step.dropped), free.why)
        number = len(st.rounds) + 1
        s.add(LabEvent(actor=ACTOR, action=ACTION, sweep_id=sweep_id, at=utcnow(),
                       detail={"round": number, "spent_s": st.spent_s, **step.to_dict()}))
        if step.outcome is not Outcome.CONTINUE:
            return []
        new = [admission.NewJob(sweep_id, st.candidates[key], key,
                                int((st.request.get(KEY) or {}).get("max_attempts") or 3)) for key in step.start]
        for key in step.more:
            first, m = st.first_jobs[key], st.measured[key]
            because = (f"the search: still in contention after round {number} ({step.why}), "
                       f"{m.processes} process{'es' * (m.processes != 1)} so far")
            new.append(admission.NewJob(sweep_id, first["spec"], key, first["max_attempts"], follow_up_of=first["id"],
                                        follow_up={"kind": PROCESS_REPEAT, "n": m.processes + 1,
                                                   "total": st.search.max_processes, "because": because}))
        return admission.add_jobs(s, new)


def after_finish(engine: Engine, job_id: int) -> list[int]:
    """Advance the search the job belongs to, if it belongs to one (db.queue.finish calls this after each job ends).
    A failure here is logged, never raised: the job's end is stored already, and the search resumes at the next
    job's end or at `runner advise --sweep ID`."""
    try:
        with reading(engine) as s:
            sweep_id, request = s.execute(select(Job.sweep_id, Sweep.request).join(Sweep, Sweep.id == Job.sweep_id)
                                          .where(Job.id == job_id)).one()
        if not (isinstance(request, dict) and KEY in request):
            return []
        return advance(engine, sweep_id)
    except Exception:  # noqa: BLE001 (see the docstring: the finish stands whatever happens here)
        log.exception("the search of job %s did not advance; it resumes at the next job's end", job_id)
        return []
