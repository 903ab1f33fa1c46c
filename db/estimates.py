"""The lab's history of finished jobs, as lab.eta estimates from it: for each configuration (jobs.config) and each
model on a device kind, what its newest succeeded jobs took, claim to stored, with their timelines where asked.
Read-only."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from sqlalchemy import Engine, and_, func, or_, select

from db.engine import reading
from db.follow_ups import counted_processes
from db.models import Job, JobStatus, Result, Sweep, utcnow
from lab import eta
from lab import history as spreads
from lab.sweep import follow_up_settings

PER_KEY = 12  # the newest this many similar jobs: what the lab does now, not a year ago


def _newest(session, key, keys: list, where, with_timeline: bool) -> dict:
    """key value -> its newest PER_KEY succeeded jobs, in one query (a window over the key)."""
    if not keys:
        return {}
    rank = func.row_number().over(partition_by=key, order_by=Job.id.desc()).label("rank")
    inner = (select(key.label("key"), Job.claimed_at, Job.finished_at, Job.id.label("job_id"), rank)
             .join(Result, Result.job_id == Job.id)
             .where(Job.status == JobStatus.SUCCEEDED.value, Job.claimed_at.is_not(None),
                    Job.finished_at.is_not(None), where).subquery())
    q = select(inner.c.key, inner.c.claimed_at, inner.c.finished_at, inner.c.job_id).where(inner.c.rank <= PER_KEY)
    rows = session.execute(q.order_by(inner.c.job_id.desc())).all()
    details = {}
    if with_timeline and rows:
        details = dict(session.execute(select(Result.job_id, Result.detail)
                                       .where(Result.job_id.in_([r.job_id for r in rows]))).all())
    out: dict = {k: [] for k in keys}
    for r in rows:
        detail = details.get(r.job_id)
        out.setdefault(r.key, []).append({"seconds": (r.finished_at - r.claimed_at).total_seconds(),
                                          "timeline": detail.get("timeline") if isinstance(detail, dict) else None})
    return out


def _short(by_config: dict, configs: Iterable) -> bool:
    """Whether one of these configurations has no history of its own (or none is named)."""
    configs = list(configs)
    return not configs or not all(by_config.get(c) for c in configs)


def history(engine: Engine, configs: Iterable[str], models: Mapping[tuple[str, str], Iterable[str]],
            timelines_for: Iterable[str] = ()) -> dict:
    """{"config": {config: [jobs]}, "model": {(model, device): [jobs]}}, each job {"seconds", "timeline"}, newest
    first, PER_KEY at most; `models`: each (model, device) with its configurations asked for, its history read only
    where one of those has none (lab.eta takes the same model's only then: a scan of every finished job's spec,
    0.18 s at 100k jobs). Timelines (in the stored detail) read only for the configurations in `timelines_for` (the
    running jobs'), and for the models where one of those has no history of its own."""
    configs = sorted({c for c in configs if isinstance(c, str) and c})
    wanted = set(timelines_for)
    with reading(engine) as s:
        rest = [c for c in configs if c not in wanted]
        by_config = _newest(s, Job.config, rest, Job.config.in_(rest), False)
        by_config.update(_newest(s, Job.config, sorted(wanted), Job.config.in_(sorted(wanted)), True))
        needed = sorted(m for m, of in models.items() if all(isinstance(x, str) for x in m) and _short(by_config, of))
        key = Job.spec["model"].as_string() + "|" + Job.spec["device"].as_string()
        names = [f"{m}|{d}" for m, d in needed]
        by_model = _newest(s, key, names, key.in_(names), bool(wanted))
    return {"config": by_config, "model": {tuple(k.split("|", 1)): v for k, v in by_model.items() if "|" in k}}


def unfinished(engine: Engine) -> list[dict]:
    """Every queued and running job, in claim order (id): what an estimate of the queue needs of each."""
    q = (select(Job.id, Job.sweep_id, Job.status, Job.spec, Job.config, Job.worker_id, Job.phase, Job.phase_at,
                Job.progress, Job.claimed_at, Job.follow_up)
         .where(Job.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value])).order_by(Job.id))
    with reading(engine) as s:
        return [{"job_id": r.id, "sweep_id": r.sweep_id, "status": r.status, "config": r.config,
                 "model": (r.spec or {}).get("model") if isinstance(r.spec, dict) else None,
                 "device": (r.spec or {}).get("device") if isinstance(r.spec, dict) else None,
                 "worker": r.worker_id, "phase": r.phase, "phase_at": r.phase_at, "progress": r.progress,
                 "claimed_at": r.claimed_at, "first_run": r.follow_up is None} for r in s.execute(q).all()]


def planned_repeats(engine: Engine, rows: list[dict], workers=()) -> list[dict]:
    """The process repeats planned for each configuration whose first run has not ended: they are queued when it ends
    (lab.noise.plan_follow_ups), so no row holds them yet. One entry (the first run's row) per repeat still to come:
    the count the planner will plan (lab.history.planned: the sweep's `process_repeats`, more or fewer by the
    configuration's earlier processes on the device kind that will run it) less the configuration's runs that count
    as the planner counts them (queued, running, or succeeded undisturbed). The device kind is the one every live
    worker offering the job's device shares (`workers`); where they differ, or none is alive, the sweep's own count.
    A disturbed run's re-run, and a disagreement's extra process, are queued only once measured."""
    firsts = [r for r in rows if r.get("first_run")]
    if not firsts:
        return []
    sweep_ids = sorted({r["sweep_id"] for r in firsts})
    counted = or_(Job.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value]),
                  and_(Job.status == JobStatus.SUCCEEDED.value, func.coalesce(Result.disturbed, False).is_(False)))
    kinds = _device_kinds(workers)
    with reading(engine) as s:
        # each sweep's processes per configuration (a sweep row gone: the defaults, as the planner reads it)
        requests = dict(s.execute(select(Sweep.id, Sweep.request).where(Sweep.id.in_(sweep_ids))).all())
        repeats = {sid: follow_up_settings(requests.get(sid))[1] for sid in sweep_ids}
        have = {(sid, cfg): n for sid, cfg, n in s.execute(
            select(Job.sweep_id, Job.config, func.count()).outerjoin(Result, Result.job_id == Job.id)
            .where(Job.sweep_id.in_(sweep_ids), Job.config.is_not(None), counted).group_by(Job.sweep_id, Job.config))}
        on_kind: dict[tuple[str, str], set] = {}
        for r in firsts:
            if r["config"] and r["device"] in kinds and repeats[r["sweep_id"]] >= 2:
                on_kind.setdefault(kinds[r["device"]], set()).add(r["config"])
        most = max(have.values(), default=0)  # a sweep's own runs of a configuration, at most: left out below
        past = {kind: _past(s, sorted(configs), *kind, most) for kind, configs in on_kind.items()}
    out, seen = [], set()
    for first in firsts:  # a job stored before jobs had keys (no config): the planner knows it alone, as here
        key = (first["sweep_id"], first["config"] or f"job {first['job_id']}")
        if key in seen:  # the configuration's other first runs (a sweep's `repeat`): its repeats are counted once
            continue
        seen.add(key)
        runs = have.get(key, 0) if first["config"] else 1
        process_repeats = repeats[first["sweep_id"]]
        earlier = [center for sweep_id, center in past.get(kinds.get(first["device"]), {}).get(first["config"], [])
                   if sweep_id != first["sweep_id"]][:spreads.HISTORY_LIMIT]  # as db.follow_ups.past_processes reads
        want = spreads.planned(process_repeats, spreads.past_spread(earlier)) if earlier else process_repeats
        out += [first] * max(0, want - runs)
    return out


def _device_kinds(workers) -> dict[str, tuple[str, str]]:
    """device (cuda, cpu) -> the (device name, torch version) that every live worker offering it shares: where the
    results a configuration's plan reads will come from (a CPU's name is its processor's, as results name it)."""
    kinds: dict[str, set] = {}
    for w in workers:
        caps = w.capabilities if isinstance(w.capabilities, dict) else {}
        for d in caps.get("devices") or []:
            kinds.setdefault(d, set()).add((caps.get("device_name" if d == "cuda" else "cpu_name"),
                                            caps.get("torch_version")))
    shared = {d: next(iter(k)) for d, k in kinds.items() if len(k) == 1}
    return {d: kind for d, kind in shared.items() if all(isinstance(x, str) and x for x in kind)}


def _past(session, configs: list[str], device_name: str, torch_version: str, own: int) -> dict:
    """config -> (sweep id, paired speedup) of its newest earlier processes on this device kind, newest first, in
    one query (a window over the configuration): HISTORY_LIMIT of them and `own` more, so that HISTORY_LIMIT remain
    for each sweep once that sweep's own (`own` at most) are left out, as the planner leaves them out."""
    rank = func.row_number().over(partition_by=Job.config, order_by=Job.id.desc()).label("rank")
    inner = (select(Job.config, Job.sweep_id, Job.id, Result.round_speedup, rank).select_from(Job)
             .join(Result, Result.job_id == Job.id)
             .where(Job.config.in_(configs), *counted_processes(device_name, torch_version)).subquery())
    out: dict[str, list[tuple[int, float]]] = {}
    for config, sweep_id, center in session.execute(
            select(inner.c.config, inner.c.sweep_id, inner.c.round_speedup)
            .where(inner.c.rank <= spreads.HISTORY_LIMIT + own).order_by(inner.c.id.desc())).all():
        out.setdefault(config, []).append((sweep_id, center))
    return out


@dataclass
class Estimates:
    left: dict[int, eta.Left] = field(default_factory=dict)  # running job -> its time left
    starts: dict[int, eta.Start] = field(default_factory=dict)  # queued job -> its start and end
    sweeps: dict[int, tuple[float, bool]] = field(default_factory=dict)  # unfinished sweep -> its done_in
    queue: tuple[float, bool] | None = None  # when every queued and running job is done
    basis: dict[int, str | None] = field(default_factory=dict)  # job -> how similar its history is
    planned: dict[int, int] = field(default_factory=dict)  # sweep -> process repeats counted before they are queued

    def row_words(self, job_id: int) -> str:
        """The Queue table's ETA cell."""
        if job_id in self.left:
            left = self.left[job_id]
            return ("no history" if left.left_s is None else "due about now" if eta.under_a_second(left.left_s)
                    else f"~{eta.duration(left.left_s)} left")
        if job_id in self.starts:
            s = self.starts[job_id]
            start = (("starts after the jobs ahead" if s.starts_at_least else "starts now")
                     if eta.under_a_second(s.start_s) else
                     f"starts in {eta.duration(s.start_s)}" + (" or more" if s.starts_at_least else ""))
            return start + ("" if self.basis.get(job_id) else ", no history")
        return ""


def queue_estimates(engine: Engine, workers, read: Callable | None = None) -> Estimates:
    """Estimates for every queued and running job; `workers`: the live workers (db.models.WorkerRow); `read`: how
    the history is read (history, or a caller's cached copy of it)."""
    rows = unfinished(engine)
    if not rows:
        return Estimates()
    running = [r for r in rows if r["status"] == "running"]
    models: dict[tuple[str, str], set] = {}
    for r in rows:
        if isinstance(r["model"], str) and isinstance(r["device"], str):  # a corrupt row's spec may hold anything
            models.setdefault((r["model"], r["device"]), set()).add(r["config"])
    hist = (read or history)(engine, {r["config"] for r in rows if r["config"]}, models,
                             {r["config"] for r in running if r["config"]})
    out, now = Estimates(), utcnow()

    def typical(r) -> eta.Typical:
        return eta.typical(hist["config"].get(r["config"], []), hist["model"].get((r["model"], r["device"]), []))

    for r in running:
        typ = typical(r)
        elapsed = (now - r["claimed_at"]).total_seconds() if r["claimed_at"] else None
        phase_s = (now - r["phase_at"]).total_seconds() if r["phase_at"] else None
        out.left[r["job_id"]] = eta.running(typ, r["phase"], elapsed, phase_s, r["progress"])
        out.basis[r["job_id"]] = typ.basis
    busy = {r["worker"]: out.left[r["job_id"]].left_s for r in running}
    queued = []
    for r in rows:
        if r["status"] == "queued":
            typ = typical(r)
            out.basis[r["job_id"]] = typ.basis
            queued.append((r["job_id"], r["device"], typ.total))
    # the process repeats still to be queued, each as a job after the whole queue (the claim order: ids to come)
    last = max(r["job_id"] for r in rows)
    coming = {last + i + 1: r for i, r in enumerate(planned_repeats(engine, rows, workers))}
    queued += [(i, r["device"], typical(r).total) for i, r in coming.items()]
    starts = eta.schedule(queued, [(w.capabilities.get("devices", []), busy.get(w.id, 0.0)) for w in workers])
    out.starts = {i: at for i, at in starts.items() if i <= last}
    by_sweep: dict[int, list] = {}
    for r in rows:
        by_sweep.setdefault(r["sweep_id"], []).append(r["job_id"])
    for i, r in coming.items():
        by_sweep[r["sweep_id"]].append(i)
        out.planned[r["sweep_id"]] = out.planned.get(r["sweep_id"], 0) + 1
    for sweep_id, ids in by_sweep.items():
        if all(i in starts or i in out.left for i in ids):
            out.sweeps[sweep_id] = eta.done_in([starts[i] for i in ids if i in starts],
                                               [out.left[i].left_s for i in ids if i in out.left])
    if len(starts) + len(out.left) == len(rows) + len(coming):  # a job no live worker can take: no end to promise
        out.queue = eta.done_in(starts.values(), [x.left_s for x in out.left.values()])
    return out
