"""The answer: one row per model, batch size and configuration, saying whether compiling pays and how sure that
is. The Results page's first table and `python -m runner report` are both `answer_rows` over the same records
(`answer_records`: the finished jobs' fields, read column by column), so they print the same rows.

A configuration's number comes from all of its processes (db.interval): each process's paired speedup with its
standard error, combined with the spread between processes its device has shown. Only a run that a measured cause
disturbed is left out (db.noise), and only while an undisturbed run of its configuration exists.

No pandas (db/ stays light for the CLI), no torch, no streamlit.
"""
from __future__ import annotations

import json
import math
from typing import Iterable

import numpy as np
from sqlalchemy import Engine, func, select

from db import labels, noise, tabular, views
from db.axes import COMPILE_FIELDS, TRI, fold_note, folded_mode
from db.engine import reading
from db.interval import Interval, Prior, combine, device_prior
from db.models import Job, Result

# what makes two jobs the same workload, and the same compiled configuration of it (the cache is left out:
# it changes the first call, not the code that runs; the first call is reported cold and warm apart)
# (not the timing protocol: a failed job has none; a result with no latency, timed before it was, is left out of
# the steady-state numbers instead)
BASE_KEYS = ("task", "device", "dtype", "model_args", "torch_version", "device_name")
CONFIG_KEYS = BASE_KEYS + COMPILE_FIELDS
DEVICE_AT = CONFIG_KEYS.index("device_name")
COLUMNS = ("model", "batch_size", "config", "verdict", "speedup", "speedup_ci_low", "speedup_ci_high", "eager_ms",
           "compiled_ms", "eager_first_call_s", "first_call_cold_s", "first_call_warm_s", "first_call_portable_s",
           "break_even_calls",
           "recompiles", "graph_breaks", "peak_mem_eager_mb", "peak_mem_compiled_mb", "accuracy_ok", "max_abs_error",
           "noisy", "runs", "noisy_runs", "failed_runs", "noise_note", "job_ids")


def break_even_calls(eager_first_s: float, compiled_first_s: float, eager_ms: float, compiled_ms: float) -> int | None:
    """Calls after which compiling has paid for itself, counting both first calls; None if never."""
    saved_per_call_s = (eager_ms - compiled_ms) / 1e3
    if saved_per_call_s <= 0:
        return None
    extra_s = compiled_first_s - eager_first_s
    if extra_s <= 0:
        return 1
    return 1 + math.ceil(round(extra_s / saved_per_call_s, 9))  # round: 9.9 / 0.001 is 9900.000000000002


READ = ("status", "error", "model", "batch_size", "cache", "cache_hits", "noisy", "noise_note", "accuracy_ok",
        "disturbed", "round_speedup", "round_speedup_se", "first_call_cache", "speedup_spread",
        "eager_first_call_s", "compiled_first_call_s", "eager_ms", "compiled_ms", "speedup", "graph_breaks",
        "recompiles", "max_abs_error", "peak_mem_eager_mb", "peak_mem_compiled_mb") + CONFIG_KEYS


def answer_records(engine: Engine, job_ids: Iterable[int] | None = None,
                   sweep_ids: Iterable[int] | None = None) -> list[dict]:
    """The finished jobs' fields the answer reads (READ), as export records hold them (db.results: model_args
    and cache_hits parsed, dynamic None/True/False, booleans as bools), through db.views' columnar reader: a
    model's 25k jobs of a 100k-job database in a fraction of a second, where building full export records
    took about 5 s and kept Results' first render far past its 2 s target."""
    rows = views.result_rows(engine, job_ids=job_ids, sweep_ids=sweep_ids, fields=READ)
    # column by column (a value per distinct JSON text, not per job: a model's jobs share a handful), then one dict
    # per job at the end; each job's configuration key (_key) is built here by zipping columns, not field by field
    cols = dict(rows.columns)
    cols["_args"] = _per_text(cols["model_args"], lambda text: json.dumps(json.loads(text) if text else {},
                                                                          sort_keys=True))
    cols["model_args"] = _per_text(cols["model_args"], lambda text: json.loads(text) if text else {})
    cols["cache_hits"] = _per_text(cols["cache_hits"], lambda text: json.loads(text) if text else None)
    cols["dynamic"] = [TRI.get(v, v) for v in cols["dynamic"]]
    for name in ("noisy", "accuracy_ok", "disturbed"):
        cols[name] = [None if v is None else bool(v) for v in cols[name]]
    cols["_key"] = list(zip(*(cols["_args" if k == "model_args" else k] for k in CONFIG_KEYS)))
    names = list(cols)
    return [dict(zip(names, values)) for values in zip(*cols.values())]


def _per_text(texts: list, decode) -> list:
    """decode(text) for each text, computed once per distinct text (the values are shared: never modified)."""
    done: dict = {}
    return [done[t] if t in done else done.setdefault(t, decode(t)) for t in texts]


def report(engine: Engine, sweep_ids: Iterable[int] | None = None, job_ids: Iterable[int] | None = None) -> list[dict]:
    """The answer rows of these jobs (all, when neither is given): what `runner report` prints and Results shows.
    The spread between processes that widens a configuration's interval is what its device showed across the whole
    database, not only among the jobs asked for (device_priors)."""
    records = answer_records(engine, job_ids=job_ids, sweep_ids=sweep_ids)
    return answer_rows(records, device_priors(engine, {r["device_name"] for r in records}))


def device_priors(engine: Engine, devices: Iterable[str | None]) -> dict:
    """Per device, the spread between processes shown by every configuration that ran in two or more undisturbed
    processes of one sweep (db.interval.device_prior), read from the stored per-process numbers alone."""
    devices = [d for d in set(devices) if d is not None]
    if not devices:
        return {}
    q = (select(Result.device_name, Job.sweep_id, Job.config, Result.round_speedup, Result.round_speedup_se)
         .join(Job, Job.id == Result.job_id)
         .where(Job.status == "succeeded", Result.device_name.in_(devices), Job.config.is_not(None),
                Result.round_speedup > 0, func.coalesce(Result.disturbed, False).is_(False)))
    groups: dict = {}
    with reading(engine) as s:
        for device, sweep, config, center, se in s.execute(q):
            centers, errors = groups.setdefault(device, {}).setdefault((sweep, config), ([], []))
            centers.append(center)
            errors.append(se)
    return {device: device_prior(per.values()) for device, per in groups.items()}


def rows_csv(rows: list[dict], columns: Iterable[str] = COLUMNS) -> str:
    return tabular.write_csv(rows, columns)  # no cell a spreadsheet would run as a formula


def rows_json(rows: list[dict]) -> str:
    return tabular.json_text(rows)  # strict: a number that is not finite as null


# the columns a person reads: the answer page's table and `report --format md` (the CSV and JSON have every column)
HEADLINE = {"model": "model", "batch_size": "bs", "config": "configuration", "verdict": "verdict",
            "eager_ms": "eager ms", "compiled_ms": "compiled ms", "first_call_cold_s": "first call cold s",
            "first_call_warm_s": "warm s", "first_call_portable_s": "portable s",
            "recompiles": "recompiles", "graph_breaks": "breaks",
            "peak_mem_compiled_mb": "peak MB compiled", "peak_mem_eager_mb": "peak MB eager", "accuracy_ok": "accurate",
            "runs": "runs"}


def headline_cell(v) -> str:
    """One headline cell as text: a dash where there is no number, four significant digits."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def rows_markdown(rows: list[dict]) -> str:
    """A Markdown table of the rows' headline columns (the CSV and JSON have every column)."""
    lines = ["| " + " | ".join(HEADLINE.values()) + " |", "|" + "---|" * len(HEADLINE)]
    lines += ["| " + " | ".join(headline_cell(r[c]).replace("|", "\\|") for c in HEADLINE) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def answer_rows(records: list[dict], priors: dict | None = None) -> list[dict]:
    """One row (COLUMNS) per model, batch size and configuration of these records, best speedup first within a
    model and batch size. A disturbed run is left out of every number while an undisturbed one of its configuration
    exists (db.noise); a configuration whose runs all failed says so in its verdict instead of a number. `priors`:
    per device, the spread between processes it showed beyond these records (device_priors), where it knows more."""
    records = [_folded(r) for r in records if r.get("model") and r.get("status") != "cancelled"]
    labels = _labels(records)  # (model, configuration key) -> label
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["model"], r["batch_size"], _key(r)), []).append(r)
    answering = {g: _answering(rs) for g, rs in groups.items()}
    priors = {device: prior if (priors or {}).get(device) is None or prior.measured_df >= priors[device].measured_df
              else priors[device] for device, prior in _priors(groups, answering).items()}
    eager_first = {}  # the eager first call belongs to the workload, not the configuration: pooled over all runs
    for (model, bs, key), rs in groups.items():
        eager_first.setdefault((model, bs, key[:len(BASE_KEYS)]), []).extend(
            r["eager_first_call_s"] for r in rs
            if r["job_id"] in answering[model, bs, key] and r["eager_first_call_s"] is not None)
    rows = [_row(model, bs, labels[model, key], rs, answering[model, bs, key], priors[key[DEVICE_AT]],
                 _median(eager_first[(model, bs, key[:len(BASE_KEYS)])]))
            for (model, bs, key), rs in groups.items()]
    # a row the worker refused (its stored spec had no usable batch size) sorts last, never breaks the sort
    return sorted(rows, key=lambda r: (r["model"], r["batch_size"] is None, r["batch_size"] or 0,
                                       r["speedup"] is None, -(r["speedup"] or 0), r["config"]))


def _centers(runs: list[dict]) -> tuple[list[float], list[float | None]]:
    """Each answering run's paired speedup (db.interval) and its standard error; a run stored without per-round
    samples counts with its own speedup and no error; one timed before caller latency was (protocol 1) not at all."""
    centers, errors = [], []
    for r in runs:
        if r["speedup"] is None:
            continue
        centers.append(r.get("round_speedup") or r["speedup"])
        errors.append(r.get("round_speedup_se") if r.get("round_speedup") else None)
    return centers, errors


def _priors(groups: dict, answering: dict) -> dict:
    """Per device, the spread between processes its configurations showed (db.interval.device_prior)."""
    by_device: dict = {}
    for g, rs in groups.items():
        by_device.setdefault(g[2][DEVICE_AT], []).append(
            _centers([r for r in rs if r["status"] == "succeeded" and r["job_id"] in answering[g]]))
    return {device: device_prior(cs) for device, cs in by_device.items()}


def _row(model, bs, config: str, runs: list[dict], answers: set, prior: Prior, eager_first_s: float | None) -> dict:
    ok = [r for r in runs if r["status"] == "succeeded"]
    quiet = [r for r in ok if r["job_id"] in answers]  # the runs that answer
    left_out = [r for r in ok if r["job_id"] not in answers]
    kinds = {kind: [r["compiled_first_call_s"] for r in ok if _first_call_kind(r) == kind]
             for kind in ("cold", "warm", "portable")}
    every_disturbed = bool(ok) and all(noise.is_disturbed(r) for r in ok)
    row = {"model": model, "batch_size": bs, "config": config, "speedup": None, "speedup_ci_low": None,
           "speedup_ci_high": None, "eager_ms": _median(r["eager_ms"] for r in quiet),
           "compiled_ms": _median(r["compiled_ms"] for r in quiet), "eager_first_call_s": eager_first_s,
           "first_call_cold_s": _median(kinds["cold"]), "first_call_warm_s": _median(kinds["warm"]),
           "first_call_portable_s": _median(kinds["portable"]), "break_even_calls": None,
           "recompiles": _most(r["recompiles"] for r in ok), "graph_breaks": _most(r["graph_breaks"] for r in ok),
           "peak_mem_eager_mb": _median(r["peak_mem_eager_mb"] for r in ok),
           "peak_mem_compiled_mb": _median(r["peak_mem_compiled_mb"] for r in ok),
           "accuracy_ok": None if all(r["accuracy_ok"] is None for r in ok) else all(r["accuracy_ok"] is not False
                                                                                     for r in ok),
           "max_abs_error": _most(r["max_abs_error"] for r in ok), "noisy": every_disturbed,
           "runs": len(quiet), "noisy_runs": len(left_out), "failed_runs": len(runs) - len(ok),
           "noise_note": next((r["noise_note"] for r in ok if noise.is_disturbed(r) and r["noise_note"]), None),
           "job_ids": " ".join(str(r["job_id"]) for r in sorted(runs, key=lambda r: r["job_id"]))}
    interval = None
    centers, errors = _centers(quiet)
    if centers:
        interval = combine(centers, errors, prior)
        row["speedup"], row["speedup_ci_low"], row["speedup_ci_high"] = interval.speedup, interval.low, interval.high
    first = row["first_call_cold_s"] if row["first_call_cold_s"] is not None else row["first_call_warm_s"]
    if None not in (first, eager_first_s, row["eager_ms"], row["compiled_ms"]):
        row["break_even_calls"] = break_even_calls(eager_first_s, first, row["eager_ms"], row["compiled_ms"])
    row["verdict"] = verdict(row, runs, interval, _median(r.get("speedup_spread") for r in quiet))
    return {c: row[c] for c in COLUMNS}


def verdict(row: dict, runs: list[dict], interval: Interval | None = None, round_spread: float | None = None) -> str:
    """The row in words: "1.42x [1.38, 1.46], pays off after 1,900 calls", "not separable from eager: ...",
    "slower: ..."; a wide interval says how wide and why ("1.30x, but anywhere from 1.10x to 1.50x: the rounds
    scatter 12%")."""
    if row["failed_runs"] and not (row["runs"] or row["noisy_runs"]):
        error = next((r["error"] for r in runs if r.get("error")), None) or runs[0]["status"]
        return f"did not succeed ({row['failed_runs']} run{'s' * (row['failed_runs'] > 1)}): {error}"
    s, lo, hi = row["speedup"], row["speedup_ci_low"], row["speedup_ci_high"]
    if s is None:
        return "no latency measured (timed before caller latency was: timing protocol 1)"
    if interval is not None and interval.wide:
        shown = f"{s:.2f}x, but anywhere from {lo:.2f}x to {hi:.2f}x: {interval.why_wide(round_spread)}"
    else:
        shown = f"{s:.2f}x [{lo:.2f}, {hi:.2f}]"
    if lo <= 1 <= hi:
        text = f"not separable from eager: {shown}"
    elif lo > 1:
        be = row["break_even_calls"]
        text = shown + (f"; pays off after {be:,} calls" if be is not None else "; faster per call")
    else:
        text = f"slower: {shown}"
    extra = [f"{row['runs']} processes"] if row["runs"] > 1 else []
    if interval is not None and interval.processes == 1 and not interval.wide:
        extra += ["one process: its interval holds this device's spread between processes"]
    if row["noisy"]:
        extra += [f"every run was disturbed, so these are their numbers: {row['noise_note']}"]
    elif row["noisy_runs"]:
        extra += [f"{row['noisy_runs']} disturbed run(s) left out"]
    extra += [f"{row['failed_runs']} failed"] if row["failed_runs"] else []
    folded = sorted({r["_folded"] for r in runs if r.get("_folded")})
    extra += [f"{fold_note(m, runs[0]['device'])}: its runs are counted here" for m in folded]
    return text + (f" ({'; '.join(extra)})" if extra else "")


def _key(r: dict) -> tuple:
    """The configuration a record belongs to (CONFIG_KEYS), computed once per record."""
    key = r.get("_key")
    if key is None:
        args = r.get("_args") or json.dumps(r.get("model_args"), sort_keys=True)
        key = r["_key"] = tuple(args if k == "model_args" else r.get(k) for k in CONFIG_KEYS)
    return key


def _labels(records: list[dict]) -> dict[tuple, str]:
    """Per configuration, a label naming only what differs between the configurations of its model (db.labels)."""
    by_model: dict[str, set] = {}
    for r in records:
        by_model.setdefault(r["model"], set()).add(_key(r))
    out = {}
    for model, keys in by_model.items():
        configs = [dict(zip(CONFIG_KEYS, key)) for key in keys]
        for key, text in zip(keys, labels.labels(configs, CONFIG_KEYS)):
            out[model, key] = text
    return out


def _folded(r: dict) -> dict:
    """Off CUDA, a run stored as reduce-overhead is counted under default (db.axes.folded_mode: the same compile)."""
    mode = folded_mode(r.get("mode"), r.get("device"))
    return r if mode == r.get("mode") else {**r, "mode": mode, "_folded": r["mode"], "_key": None}


def _answering(runs: list[dict]) -> set:
    """The job ids of one configuration's succeeded runs that answer (db.noise.answering)."""
    ok = [r for r in runs if r["status"] == "succeeded"]
    return {r["job_id"] for r, yes in zip(ok, noise.answering(noise.is_disturbed(r) for r in ok)) if yes}


def _first_call_kind(r: dict) -> str:
    """What a run's compiled first call compiled from: as recorded (db.record.first_call_cache), or, for a run
    stored before that was, from its cache setting; a warm run whose compiled graph missed the cache was cold."""
    kind = r.get("first_call_cache") or r.get("cache") or "cold"
    if kind != "warm":
        return "portable" if kind == "portable" else "cold"
    hits = r.get("cache_hits") or {}
    missed = hits.get("inductor_fx_local_cache_miss_count") and not hits.get("inductor_fx_local_cache_hit_count")
    return "cold" if missed else "warm"


def _median(values: Iterable) -> float | None:
    vs = np.array([v for v in values if v is not None], dtype=float)  # numpy converts, not float() per value
    return float(np.median(vs)) if len(vs) else None


def _most(values: Iterable):
    vs = [v for v in values if v is not None]
    return max(vs) if vs else None
