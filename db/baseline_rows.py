"""Answer rows against their model's pinned baseline (db.team.pin_baseline): what Results, Compare and `runner report
--baseline` show beside each row. A row is compared with the baseline's row of the same shape (model, batch size,
task, dtype, device): where a configuration is pinned, that configuration's row; where a sweep is, its fastest
compiled configuration at that shape (the answer rows come best speedup first). The numbers are lab.team.delta's."""
from __future__ import annotations

from typing import Iterable, Mapping

from sqlalchemy import Engine, select

from db import team
from db.engine import reading
from db.models import Job
from lab.team import DELTA_COLUMNS, SHAPE, delta

COLUMNS = ("baseline",) + DELTA_COLUMNS


def _first_job(row: Mapping) -> int | None:
    ids = str(row.get("job_ids") or "").split()
    return int(ids[0]) if ids else None


def _jobs(engine: Engine, job_ids: Iterable[int]) -> dict[int, tuple]:
    """Per job: its sweep, configuration key and the shape fields of its spec."""
    ids = [i for i in set(job_ids) if i is not None]
    if not ids:
        return {}
    with reading(engine) as s:
        rows = s.execute(select(Job.id, Job.sweep_id, Job.config, Job.spec).where(Job.id.in_(ids))).all()
    return {i: (sweep, config, tuple((spec or {}).get(k) for k in SHAPE[2:])) for i, sweep, config, spec in rows}


def with_baseline(engine: Engine, rows: list[Mapping], baseline_rows=None, pins: Mapping | None = None) -> list[dict]:
    """Each row as a dict with `baseline` (the pinned sweep and configuration it is compared with, e.g. "sweep 4";
    "pinned" on the baseline's own row; None for a model without one) and the delta columns. `baseline_rows(sweep
    ids)`: the answer rows of those sweeps (db.reports.report by default); `pins`: db.team.baselines, if read."""
    pins = team.baselines(engine) if pins is None else pins
    out = [dict(r) | dict.fromkeys(COLUMNS) for r in rows]
    if not pins or not any(r.get("model") in pins for r in rows):
        return out
    if baseline_rows is None:
        from db.reports import report

        def baseline_rows(ids):
            return report(engine, sweep_ids=ids)
    wanted = {p.sweep_id for m, p in pins.items() if any(r.get("model") == m for r in rows)}
    base = [dict(r) for r in baseline_rows(sorted(wanted))]
    jobs = _jobs(engine, [_first_job(r) for r in out + base])
    shape = lambda r: (r.get("model"), r.get("batch_size"), *jobs.get(_first_job(r), (None, None, ()))[2])  # noqa: E731
    best: dict[tuple, dict] = {}
    for b in base:
        sweep, config, _ = jobs.get(_first_job(b), (None, None, ()))
        pin = pins.get(b.get("model"))
        if pin is None or sweep != pin.sweep_id or (pin.config is not None and config != pin.config):
            continue
        if b.get("compiled_ms") is not None:
            best.setdefault(shape(b), b)  # the first is the fastest
    for r in out:
        pin = pins.get(r.get("model"))
        if pin is None:
            continue
        b = best.get(shape(r))
        pinned = b is not None and b.get("job_ids") == r.get("job_ids")  # the baseline's row itself, not one pooling
        # its runs with others' (a configuration that other sweeps ran too), which is compared like any other
        r["baseline"] = ("pinned" if pinned
                         else f"sweep {pin.sweep_id}" + (f" {b['config']}" if b is not None and pin.config else ""))
        if b is None:
            r["baseline"] += ": no row of this shape"
        r.update(delta(r, b))
    return out
