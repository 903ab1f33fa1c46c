"""The answer: one row per model, batch size and configuration, saying whether compiling pays and how sure that
is. The Results page's first table and `python -m runner report` are both `answer_rows` over the same export
records (db.results.export_records) and per-round ratios (`read_round_ratios`), so they print the same rows.

No pandas (db/ stays light for the CLI), no torch, no streamlit: numpy for the bootstrap.
"""
from __future__ import annotations

import json
import math
from statistics import median
from typing import Iterable

import numpy as np
from sqlalchemy import Engine, func, select

from db import labels, noise, tabular, views
from db.axes import COMPILE_FIELDS, TRI, fold_note, folded_mode
from db.engine import reading
from db.models import Result
from db.results import ID_CHUNK

# what makes two jobs the same workload, and the same compiled configuration of it (the cache is left out:
# it changes the first call, not the code that runs; the first call is reported cold and warm apart)
# (not the timing protocol: a failed job has none; a result with no latency, timed before it was, is left out of
# the steady-state numbers instead)
BASE_KEYS = ("task", "device", "dtype", "model_args", "torch_version", "device_name")
CONFIG_KEYS = BASE_KEYS + COMPILE_FIELDS
RESAMPLES = 2000
SEED = 13  # a fixed seed: the page and the CLI draw the same resamples, so they print the same interval
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


def round_ratios(samples: dict | None) -> list[float]:
    """eager / compiled latency per round, each side's median within the round: the paired ratio, so drift
    between rounds (load, clocks) cancels."""
    if not samples:
        return []
    pairs = [(median(e), median(c)) for e, c in zip(samples.get("eager", []), samples.get("compiled", [])) if e and c]
    return [e / c for e, c in pairs if c > 0]


def read_round_ratios(engine: Engine, job_ids: Iterable[int]) -> dict[int, list[float]]:
    """Each job's per-round ratios, from its stored samples (only the ratios are kept, not the samples). Only the
    two latency sides are read, and only for jobs that stored any: the other clocks' samples are most of a
    result's JSON, and a lab's older results have none (25k jobs without samples: 0.08 s, not 0.3 s)."""
    ids, out = sorted(set(job_ids)), {}
    eager, compiled = Result.samples["eager"], Result.samples["compiled"]
    with reading(engine) as s:
        for i in range(0, len(ids), ID_CHUNK):
            q = (select(Result.job_id, eager, compiled).where(Result.job_id.in_(ids[i:i + ID_CHUNK]))
                 .where(func.coalesce(func.json_array_length(eager), 0) > 0))
            out |= {job_id: round_ratios({"eager": e or [], "compiled": c or []})
                    for job_id, e, c in s.execute(q).all()}
    return out


def speedup_interval(runs: list[list[float]], resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float, float]:
    """The median of the pooled per-round ratios and its 95% interval, by a two-level bootstrap: runs (separate
    processes) drawn with replacement, then each drawn run's rounds with replacement; the 2.5th and 97.5th
    percentiles of the resampled medians. Resampling the runs is what lets the interval cover process-to-process
    variation (a distribution-free interval for the median of pooled rounds would treat every round as
    independent, and one quiet process would vouch for all). With one run it covers that process's rounds only."""
    runs = [np.asarray(r, dtype=float) for r in runs if len(r)]
    point = float(np.median(np.concatenate(runs)))
    rng = np.random.default_rng(seed)
    lens = np.array([len(r) for r in runs])
    width = int(lens.max())
    table = np.full((len(runs), width), np.nan)
    for i, r in enumerate(runs):
        table[i, :len(r)] = r
    medians = []
    step = max(1, 1_000_000 // (len(runs) * width))  # resamples per batch: a few MB however many runs are pooled
    for start in range(0, resamples, step):
        n = min(step, resamples - start)
        picks = rng.integers(0, len(runs), size=(n, len(runs)))  # which runs
        drawn_lens = lens[picks][..., None]
        rounds = np.floor(rng.random((n, len(runs), width)) * drawn_lens).astype(int)
        drawn = table[picks[..., None], rounds]  # (n, runs, width): each drawn run's rounds, resampled
        drawn[np.arange(width)[None, None, :] >= drawn_lens] = np.nan  # a shorter run draws fewer rounds
        medians.append(np.nanmedian(drawn.reshape(n, -1), axis=1))
    low, high = np.percentile(np.concatenate(medians), [2.5, 97.5])
    return point, float(low), float(high)


READ = ("status", "error", "model", "batch_size", "cache", "cache_hits", "noisy", "noise_note", "accuracy_ok",
        "eager_spread", "compiled_spread", "speedup_spread", "eager_host_overhead", "compiled_host_overhead",
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
    for name in ("noisy", "accuracy_ok"):
        cols[name] = [None if v is None else bool(v) for v in cols[name]]
    cols["_key"] = list(zip(*(cols["_args" if k == "model_args" else k] for k in CONFIG_KEYS)))
    names = list(cols)
    return [dict(zip(names, values)) for values in zip(*cols.values())]


def _per_text(texts: list, decode) -> list:
    """decode(text) for each text, computed once per distinct text (the values are shared: never modified)."""
    done: dict = {}
    return [done[t] if t in done else done.setdefault(t, decode(t)) for t in texts]


def report(engine: Engine, sweep_ids: Iterable[int] | None = None, job_ids: Iterable[int] | None = None) -> list[dict]:
    """The answer rows of these jobs (all, when neither is given): what `runner report` prints and Results shows."""
    return _report(engine, sweep_ids, job_ids)[1]


def report_and_unanswered(engine: Engine, sweep_ids: Iterable[int] | None = None,
                          job_ids: Iterable[int] | None = None) -> tuple[list[dict], dict[str, dict]]:
    """`report`'s rows, and `unanswered` for those of them with noisy runs only (one read of the records)."""
    records, rows = _report(engine, sweep_ids, job_ids)
    return rows, unanswered(records, rows)


def _report(engine: Engine, sweep_ids, job_ids) -> tuple[list[dict], list[dict]]:
    records = answer_records(engine, job_ids=job_ids, sweep_ids=sweep_ids)
    ok = [r["job_id"] for r in records if r["status"] == "succeeded" and noise.record_kind(r) != noise.SPREAD]
    return records, answer_rows(records, read_round_ratios(engine, ok))


def unanswered(records: list[dict], rows: list[dict]) -> dict[str, dict]:
    """What each configuration with no answer (every run noisy: its row's `noisy`) measured anyway: its row computed
    as if its runs were quiet, keyed by the row's `job_ids`. For a chart that draws such a configuration greyed and
    marked beside the answers, so that nothing disappears; never a number of the answer (its row keeps none)."""
    wanted = {int(j) for r in rows if r["noisy"] for j in r["job_ids"].split()}
    if not wanted:
        return {}
    mine = [{**r, "noisy": False, "_key": None} for r in records if r["job_id"] in wanted]
    return {r["job_ids"]: r for r in answer_rows(mine, {})}


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


def answer_rows(records: list[dict], ratios: dict[int, list[float]]) -> list[dict]:
    """One row (COLUMNS) per model, batch size and configuration of these export records, best speedup first
    within a model and batch size. Noisy runs are left out of every number and of the verdict (db.noise: a
    host-sensitive run answers beside others from separate processes); a configuration whose runs were all noisy,
    or all failed, says so in its verdict instead of a number."""
    records = [_folded(r) for r in records if r.get("model") and r.get("status") != "cancelled"]
    labels = _labels(records)  # (model, configuration key) -> label
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["model"], r["batch_size"], _key(r)), []).append(r)
    eager_first = {}  # the eager first call belongs to the workload, not the configuration: pooled over all runs
    for (model, bs, key), rs in groups.items():
        answers = _answering(rs)
        eager_first.setdefault((model, bs, key[:len(BASE_KEYS)]), []).extend(
            r["eager_first_call_s"] for r in rs if r["job_id"] in answers and r["eager_first_call_s"] is not None)
    rows = [_row(model, bs, labels[model, key], rs, ratios, _median(eager_first[(model, bs, key[:len(BASE_KEYS)])]))
            for (model, bs, key), rs in groups.items()]
    # a row the worker refused (its stored spec had no usable batch size) sorts last, never breaks the sort
    return sorted(rows, key=lambda r: (r["model"], r["batch_size"] is None, r["batch_size"] or 0,
                                       r["speedup"] is None, -(r["speedup"] or 0), r["config"]))


def _row(model, bs, config: str, runs: list[dict], ratios: dict, eager_first_s: float | None) -> dict:
    ok = [r for r in runs if r["status"] == "succeeded"]
    answers = _answering(runs)
    quiet = [r for r in ok if r["job_id"] in answers]  # the runs that answer
    noisy = [r for r in ok if r["job_id"] not in answers]
    # a portable run's first call is neither: it loaded a colleague's artifacts into a fresh cache (db.caches)
    cold = [r["compiled_first_call_s"] for r in ok if not _warm_hit(r) and r.get("cache") != "portable"]
    portable = [r["compiled_first_call_s"] for r in ok if r.get("cache") == "portable"]
    warm = [r["compiled_first_call_s"] for r in ok if _warm_hit(r)]
    row = {"model": model, "batch_size": bs, "config": config, "speedup": None, "speedup_ci_low": None,
           "speedup_ci_high": None, "eager_ms": _median(r["eager_ms"] for r in quiet),
           "compiled_ms": _median(r["compiled_ms"] for r in quiet), "eager_first_call_s": eager_first_s,
           "first_call_cold_s": _median(cold), "first_call_warm_s": _median(warm),
           "first_call_portable_s": _median(portable), "break_even_calls": None,
           "recompiles": _most(r["recompiles"] for r in ok), "graph_breaks": _most(r["graph_breaks"] for r in ok),
           "peak_mem_eager_mb": _median(r["peak_mem_eager_mb"] for r in ok),
           "peak_mem_compiled_mb": _median(r["peak_mem_compiled_mb"] for r in ok),
           "accuracy_ok": None if all(r["accuracy_ok"] is None for r in ok) else all(r["accuracy_ok"] is not False
                                                                                     for r in ok),
           "max_abs_error": _most(r["max_abs_error"] for r in ok), "noisy": bool(ok) and not quiet,
           "runs": len(quiet), "noisy_runs": len(noisy), "failed_runs": len(runs) - len(ok),
           "noise_note": next((r["noise_note"] for r in noisy if r["noise_note"]), None),
           "job_ids": " ".join(str(r["job_id"]) for r in sorted(runs, key=lambda r: r["job_id"]))}
    # a result timed before caller latency was (timing protocol 1 on CUDA) has no latency: its samples are GPU time
    pooled = [ratios.get(r["job_id"]) or [] for r in quiet if r["speedup"] is not None]
    if any(pooled):
        row["speedup"], row["speedup_ci_low"], row["speedup_ci_high"] = speedup_interval(pooled)
    else:  # stored without per-round samples: the runs' own speedups, and no interval
        row["speedup"] = _median(r["speedup"] for r in quiet)
    first = row["first_call_cold_s"] if row["first_call_cold_s"] is not None else row["first_call_warm_s"]
    if None not in (first, eager_first_s, row["eager_ms"], row["compiled_ms"]):
        row["break_even_calls"] = break_even_calls(eager_first_s, first, row["eager_ms"], row["compiled_ms"])
    row["verdict"] = verdict(row, runs)
    return {c: row[c] for c in COLUMNS}


def verdict(row: dict, runs: list[dict]) -> str:
    """The row in words: "1.42x [1.38, 1.46], pays off after 1,900 calls", "not separable from eager", "slower"."""
    if row["failed_runs"] and not (row["runs"] or row["noisy_runs"]):
        error = next((r["error"] for r in runs if r.get("error")), None) or runs[0]["status"]
        return f"did not succeed ({row['failed_runs']} run{'s' * (row['failed_runs'] > 1)}): {error}"
    if row["noisy"]:
        return (f"no answer: all {row['noisy_runs']} run(s) were noisy ({row['noise_note'] or 'spread past 5%'}); "
                "re-run it on a quiet machine" + (" (or in more processes: --process-repeats)" if any(
                    noise.record_kind(r) == noise.HOST for r in runs) else ""))
    s, lo, hi = row["speedup"], row["speedup_ci_low"], row["speedup_ci_high"]
    if s is None:
        return "no latency measured (timed before caller latency was: timing protocol 1)"
    shown = f"{s:.2f}x" + (f" [{lo:.2f}, {hi:.2f}]" if lo is not None else " (no interval: no per-round samples stored)")
    if lo is not None and lo <= 1 <= hi:
        text = f"not separable from eager: {shown}"
    elif (lo if lo is not None else s) > 1:
        be = row["break_even_calls"]
        text = shown + (f", pays off after {be:,} calls" if be is not None else ", faster per call")
    else:
        text = f"slower: {shown}"
    extra = [f"{row['runs']} processes"] if row["runs"] > 1 else []
    extra += [f"{row['noisy_runs']} noisy run(s) left out"] if row["noisy_runs"] else []
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
    """The job ids of one configuration's runs that answer (db.noise.answering over its succeeded runs)."""
    ok = [r for r in runs if r["status"] == "succeeded"]
    return {r["job_id"] for r, yes in zip(ok, noise.answering(noise.record_kind(r) for r in ok)) if yes}


def _warm_hit(r: dict) -> bool:
    """A warm-cache run whose compiled graph came from the cache; a warm run that missed compiled from cold."""
    hits = r.get("cache_hits") or {}
    return r.get("cache") == "warm" and not (hits.get("inductor_fx_local_cache_miss_count")
                                             and not hits.get("inductor_fx_local_cache_hit_count"))


def _median(values: Iterable) -> float | None:
    vs = np.array([v for v in values if v is not None], dtype=float)  # numpy converts, not float() per value
    return float(np.median(vs)) if len(vs) else None


def _most(values: Iterable):
    vs = [v for v in values if v is not None]
    return max(vs) if vs else None
