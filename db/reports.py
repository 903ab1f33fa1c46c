"""The answer and the version diff of stored jobs: what `python -m runner report` prints and Results shows, read from
the database column by column (db.views' columnar reader) and computed by lab.answer and lab.versions."""
from __future__ import annotations

import json
from typing import Iterable

import numpy as np
from sqlalchemy import Engine, func, select

from db import views
from db.engine import reading
from db.models import Job, Result
from lab import answer, first_call, versions
from lab import spreads as process_spreads
from lab.answer import READ, AnswerRow, Runs
from lab.checks import TRI
from lab.spreads import Spreads


def answer_columns(engine: Engine, job_ids: Iterable[int] | None = None,
                   sweep_ids: Iterable[int] | None = None) -> tuple[dict[str, list], list]:
    """The finished jobs' fields the answer reads (lab.answer.READ), column by column, as export records hold them
    (db.results: model_args parsed, dynamic None/True/False, booleans as bools), through db.views' columnar reader;
    and each job's model_args as sorted JSON text, the key the answer groups by. Each JSON text is decoded once, not
    once per job (a model's jobs share a handful)."""
    # as lists: the spec's columns come as numpy object arrays, which Python walks element by element ~10x slower
    cols = {n: v.tolist() if isinstance(v, np.ndarray) else v for n, v in
            views.result_rows(engine, job_ids=job_ids, sweep_ids=sweep_ids, fields=READ, versioned=False).columns.items()}
    args_keys = _per_text(cols["model_args"], lambda text: json.dumps(json.loads(text) if text else {},
                                                                      sort_keys=True))
    cols["model_args"] = _per_text(cols["model_args"], lambda text: json.loads(text) if text else {})
    cols["dynamic"] = [TRI.get(v, v) for v in cols["dynamic"]]
    for name in ("accuracy_ok", "disturbed", "graph_cache_hit"):
        cols[name] = [None if v is None else bool(v) for v in cols[name]]
    return cols, args_keys


def _per_text(texts: list, decode) -> list:
    """decode(text) for each text, computed once per distinct text (the values are shared: never modified)."""
    done: dict = {}
    return [done[t] if t in done else done.setdefault(t, decode(t)) for t in texts]


def report(engine: Engine, sweep_ids: Iterable[int] | None = None, job_ids: Iterable[int] | None = None,
           priors: Spreads | None = None) -> list[AnswerRow]:
    """The answer rows of these jobs (all, when neither is given): what `runner report` prints and Results shows.
    The spread between processes that widens a configuration's interval is what its device, and the configuration's
    own processes over every sweep of it, showed across the whole database, not only among the jobs asked for
    (spreads; `priors`: those, read already)."""
    with views.gc_paused():  # the columns' million objects would make every collection meanwhile walk them all
        cols, args_keys = answer_columns(engine, job_ids=job_ids, sweep_ids=sweep_ids)
        runs = Runs(cols, args_keys)
        if priors is None:
            # the whole database in hand holds its priors too
            whole = job_ids is None and sweep_ids is None
            priors = runs.spreads() if whole else spreads(engine, set(cols["device_name"]))
        return answer.rows(runs, priors)


def spreads(engine: Engine, devices: Iterable[str | None] | None = None) -> Spreads:
    """On these devices (or every one), the spread between processes (lab.spreads.Spreads): per device, what every
    configuration that ran in two or more undisturbed processes of one sweep showed (lab.interval.device_prior);
    per configuration, its processes over every sweep, and the first calls of those that compiled it cold. Read from
    the stored per-process numbers alone: on SQLite from the answer's index, the jobs in id order (db.views.answer_sql;
    through the status index and each result's row, 0.4-0.6 s at 100k jobs against 0.12 s)."""
    q = (select(Result.device_name, Result.torch_version, Job.sweep_id, Job.config, Result.round_speedup,
                Result.round_speedup_se, Result.compiled_first_call_s, Result.first_call_cache, Result.graph_cache_hit,
                Result.host_pace_us, Result.first_call_disturbed)
         .select_from(Job).join(Result, Result.job_id == Job.id)
         .where(func.coalesce(Job.status, "") == "succeeded", Result.device_name.is_not(None), Job.config.is_not(None),
                func.coalesce(Result.disturbed, False).is_(False),
                (Result.round_speedup > 0) | (Result.first_call_cache.is_not(None) & (Result.compiled_first_call_s > 0))))
    if devices is not None:
        devices = [d for d in set(devices) if d is not None]
        if not devices:
            return Spreads()
        q = q.where(Result.device_name.in_(devices))
    with views.gc_paused(), reading(engine) as s:  # the DB-API's plain tuples, as db.views.result_rows reads
        cursor = s.connection().connection.cursor()
        try:
            cursor.execute(views.answer_sql(engine, q))
            rows = cursor.fetchall()
        finally:
            cursor.close()
        if not rows:
            return Spreads()
        device, torch, sweep, config, center, se, first, made, hit, pace, shaken = (list(c) for c in zip(*rows))
        center = np.nan_to_num(np.array(center, dtype=float))
        timed = np.flatnonzero(center > 0).tolist()
        # the processes that recorded compiling their first call cold, no other process taking their cores meanwhile
        # (lab.first_call.kind, lab.answer.Runs.cold_counted: as the answer counts them)
        cold = [i for i in range(len(rows)) if made[i] is not None and first[i] is not None and first[i] > 0
                and not shaken[i] and first_call.kind(made[i], None, None if hit[i] is None else bool(hit[i])) == "cold"]
        return process_spreads.spreads(
            *([col[i] for i in timed] for col in (device, torch, sweep, config)), center[timed],
            np.nan_to_num(np.array([se[i] for i in timed], dtype=float)),
            colds=process_spreads.by_config(*([col[i] for i in cold] for col in (device, torch, config)),
                                            np.array([first[i] for i in cold], dtype=float)),
            pace=np.array([pace[i] for i in timed], dtype=float))


def version_report(engine: Engine, sweep_ids: Iterable[int] | None = None,
                   job_ids: Iterable[int] | None = None) -> list[dict]:
    """The version diff of these jobs (all, when neither is given)."""
    return versions.diff_rows(report(engine, sweep_ids=sweep_ids, job_ids=job_ids))
