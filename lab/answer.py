"""The answer: one row per model, batch size and configuration, saying whether compiling pays and how sure that
is (db.reports.report: the Results page's first table and `runner report`). Computed on columns, numpy per
configuration. A configuration's number comes from all its processes (lab.interval); only a run a measured cause
disturbed is left out (lab.noise), and only while an undisturbed run of its configuration exists. No pandas, torch,
streamlit or SQLAlchemy."""
from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Iterable, Mapping

import numpy as np

from lab import first_call, labels, noise, process_notes, tabular
from lab.answer_text import HEADLINE, headline_cell, headline_parts, headline_value, rows_markdown  # noqa: F401
from lab.axes import COMPILE_FIELDS, folded_mode
from lab.break_even import break_even_calls, break_even_range
from lab.interval import Prior, Spread, combine, device_prior
from lab.spreads import Spreads, by_config, codes, pooled, spreads
from lab.verdict import verdict

# the rows as text are lab.answer_text's, imported above for the pages and the CLI that read them from here

# what makes two jobs the same workload, and the same compiled configuration of it: not the cache (it changes the
# first call, reported cold and warm apart), nor the timing protocol (a failed job has none)
BASE_KEYS = ("task", "device", "dtype", "model_args", "torch_version", "device_name")
CONFIG_KEYS = BASE_KEYS + COMPILE_FIELDS
DEVICE_AT = CONFIG_KEYS.index("device_name")


@dataclass(frozen=True)
class AnswerRow(Mapping):
    """One configuration's answer: its number, interval and verdict, and what the table shows beside them. It reads
    as the dict it replaced (row["speedup"], dict(row), a CSV row), in COLUMNS order."""

    model: str | None
    batch_size: int | None
    config: str
    verdict: str
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    rerun_low: float | None  # where a re-run (a new sweep of as many processes) should read, 95 times in 100
    rerun_high: float | None
    eager_ms: float | None
    compiled_ms: float | None
    eager_first_call_s: float | None
    first_call_cold_s: float | None
    # a 95% interval for the cold first call a fresh process pays (lab.first_call.bounds), and how many processes it
    # rests on: with an interval, every process that compiled it cold on this device (over every sweep of it);
    # without one, its cold runs in view
    first_call_cold_low: float | None
    first_call_cold_high: float | None
    cold_processes: int
    first_call_warm_s: float | None
    first_call_portable_s: float | None
    break_even_calls: int | None
    # the calls it pays off after at the ends of its intervals (lab.break_even.break_even_range): the speedup's, and
    # the cold first call's where it has one; None where the speedup's low end is 1x or below
    break_even_low: int | None
    break_even_high: int | None
    recompiles: int | None
    graph_breaks: int | None
    peak_mem_eager_mb: float | None
    peak_mem_compiled_mb: float | None
    accuracy_ok: bool | None
    max_abs_error: float | None
    noisy: bool
    runs: int
    noisy_runs: int
    failed_runs: int
    noise_note: str | None
    job_ids: str
    # cold first calls in view whose compile another process disturbed (its cores taken: lab.record's
    # first_call_disturbed): left out of the cold figure where an undisturbed one is in view, else the figure's only
    # source, said beside it and given no interval
    cold_disturbed: int = 0
    cold_all_disturbed: bool = False  # the cold figure is theirs: every cold first call in view was disturbed

    def __getitem__(self, name: str):
        if name not in _COLUMN_SET:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self):
        return iter(COLUMNS)

    def __len__(self) -> int:
        return len(COLUMNS)

    def to_dict(self) -> dict:
        return asdict(self)


COLUMNS = tuple(f.name for f in fields(AnswerRow))
_COLUMN_SET = frozenset(COLUMNS)


READ = ("status", "error", "sweep_id", "config_key", "model", "batch_size", "cache", "graph_cache_hit", "noise_note",
        "accuracy_ok", "disturbed", "round_speedup", "round_speedup_se", "first_call_cache", "speedup_spread",
        "eager_first_call_s", "compiled_first_call_s", "eager_ms", "compiled_ms", "speedup", "graph_breaks",
        "recompiles", "max_abs_error", "peak_mem_eager_mb", "peak_mem_compiled_mb", "spec_code", "host_pace_us",
        "first_call_disturbed") + CONFIG_KEYS


def _each(fn, *columns) -> list:
    """fn(*values) for each row of these columns, computed once per distinct combination (a database holds few)."""
    done: dict = {}
    if len(columns) == 1:
        return [done[v] if v in done else done.setdefault(v, fn(v)) for v in columns[0]]
    return [done[k] if k in done else done.setdefault(k, fn(*k)) for k in zip(*columns)]


def rows_csv(rows: Iterable[Mapping], columns: Iterable[str] = COLUMNS) -> str:
    return tabular.write_csv((dict(r) for r in rows), columns)  # no cell a spreadsheet would run as a formula


def rows_json(rows: Iterable[Mapping]) -> str:
    return tabular.json_text([dict(r) for r in rows])  # strict: a number that is not finite as null


def answer_rows(records: list[dict], priors: Spreads | None = None) -> list[AnswerRow]:
    """One row (COLUMNS) per model, batch size and configuration of these records, best speedup first within a
    model and batch size. A disturbed run is left out of every number while an undisturbed one of its configuration
    exists (lab.noise); a configuration whose runs all failed says so in its verdict instead of a number. `priors`:
    the spread between processes the database showed beyond these records (db.reports.spreads), where it knows
    more."""
    names = set(READ) | {"job_id", "model_args"}
    return rows(Runs({n: [r.get(n) for r in records] for n in names}), priors)


NUMBERS = ("speedup", "round_speedup", "round_speedup_se", "eager_ms", "compiled_ms", "eager_first_call_s",
           "compiled_first_call_s", "peak_mem_eager_mb", "peak_mem_compiled_mb", "recompiles", "graph_breaks",
           "max_abs_error", "speedup_spread", "host_pace_us")
KINDS = first_call.KINDS  # what a compiled first call compiled from (lab.first_call.kind)


class Runs:
    """The records as columns: numbers as float arrays (NaN for none), flags as bool arrays; a configuration's runs
    are index arrays into them, so its medians and counts cost numpy calls, not a loop over its thousand runs."""

    def __init__(self, cols: dict, args_keys: list | None = None):
        self.cols = cols
        # model_args as sorted JSON text, where the reader made it already (one per distinct text, not per run)
        self.args_keys = args_keys
        n = len(cols["job_id"])
        self.num = {c: np.array(cols[c], dtype=float) for c in NUMBERS}
        self.ok = np.array(_each(lambda s: s == "succeeded", cols["status"]), dtype=bool)
        self.disturbed = np.array(_each(lambda d: noise.is_disturbed({"disturbed": d}), cols["disturbed"]), dtype=bool)
        self.kind = _each(first_call.kind, cols["first_call_cache"], cols["cache"], cols["graph_cache_hit"])
        # SQLite hands a boolean back as 0/1; None: not measured (stored before it was)
        self.compile_disturbed = np.array(_each(lambda d: d is True or d == 1,
                                                cols.get("first_call_disturbed", [None] * n)), dtype=bool)
        self.accuracy_none = np.array(_each(lambda a: a is None, cols["accuracy_ok"]), dtype=bool)
        self.accuracy_false = np.array(_each(lambda a: a is False, cols["accuracy_ok"]), dtype=bool)
        self.job_id = np.array(cols["job_id"], dtype=np.int64) if n else np.zeros(0, dtype=np.int64)

    def spreads(self) -> Spreads:
        """spreads over these runs (when they are the whole database), with the cold first calls' (cold_counted)."""
        cols = self.cols
        keyed = self.ok & ~self.disturbed & np.array(_each(lambda d, c: d is not None and c is not None,
                                                           cols["device_name"], cols["config_key"]), dtype=bool)
        idx = np.flatnonzero(keyed & (np.nan_to_num(self.num["round_speedup"]) > 0))
        cold = np.flatnonzero(keyed & self.cold_counted)
        keys = ("device_name", "torch_version", "sweep_id", "config_key")
        picked, colds = idx.tolist(), cold.tolist()
        return spreads(*([cols[c][i] for i in picked] for c in keys), self.num["round_speedup"][idx],
                       np.nan_to_num(self.num["round_speedup_se"][idx]),
                       colds=by_config(*([cols[c][i] for i in colds] for c in keys if c != "sweep_id"),
                                       self.num["compiled_first_call_s"][cold]),
                       pace=self.num["host_pace_us"][idx])

    @functools.cached_property
    def cold_counted(self) -> np.ndarray:
        """The runs a cold first call's spread counts (db.reports.spreads counts the same): succeeded, undisturbed in
        their rounds and in their compile, recorded compiling their first call cold (not those stored before a run
        recorded it), with its seconds."""
        recorded = np.array([r is not None and k == "cold" for r, k in zip(self.cols["first_call_cache"], self.kind)],
                            dtype=bool)
        return (recorded & self.ok & ~self.disturbed & ~self.compile_disturbed
                & (np.nan_to_num(self.num["compiled_first_call_s"]) > 0))

    def median(self, name: str, idx: np.ndarray) -> float | None:
        v = self.num[name][idx]
        v = v[~np.isnan(v)]
        return _median(v) if len(v) else None

    def most(self, name: str, idx: np.ndarray):
        """The largest value, as stored (an int stays an int); None without one."""
        v = self.num[name][idx]
        if not len(v) or np.isnan(v).all():
            return None
        return self.cols[name][idx[np.nanargmax(v)]]

    def paired(self, idx: np.ndarray) -> np.ndarray:
        """Each run's paired speedup (lab.interval), or its own speedup where it was stored without per-round
        samples; NaN for one timed before caller latency was (protocol 1)."""
        center = self.num["round_speedup"][idx]
        return np.where(~np.isnan(center) & (center != 0), center, self.num["speedup"][idx])

    def centers(self, idx: np.ndarray) -> tuple[list[float], list[float]]:
        """Each run's paired speedup (`paired`) and its standard error; a run stored without per-round samples
        counts with its own speedup and no error; one timed before caller latency was (protocol 1) not at all."""
        speedup, center, se = (self.num[c][idx] for c in ("speedup", "round_speedup", "round_speedup_se"))
        paired = ~np.isnan(center) & (center != 0)
        timed = ~np.isnan(speedup)
        errors = np.where(paired & ~np.isnan(se), se, 0.0)  # no error counts as none (lab.interval: `e or 0`)
        return self.paired(idx)[timed].tolist(), errors[timed].tolist()


def _median(v: np.ndarray) -> float:
    """float(np.median(v)) of a 1-D float array without NaN, as np.median computes it (np.mean of the middle one or
    two of a partition), without its checks: ~90 us a call (a report makes ~800) and an import of numpy.ma."""
    k = len(v) // 2
    middle = [k] if len(v) % 2 else [k - 1, k]
    return float(np.mean(np.partition(v, middle)[middle[0]:k + 1]))


def rows(runs: Runs, known: Spreads | None) -> list[AnswerRow]:
    """The answer rows of these runs, best speedup first within a model and batch size."""
    groups, folded = _configurations(runs)
    answering = {}  # per configuration, its succeeded runs that answer (lab.noise.answering)
    for g, idx in groups.items():
        ok = idx[runs.ok[idx]]
        answering[g] = ok[np.array(noise.answering(runs.disturbed[ok].tolist()), dtype=bool)] if len(ok) else ok
    by_device: dict = {}
    for g, quiet in answering.items():
        by_device.setdefault(g[2][DEVICE_AT], []).append(runs.centers(quiet))
    known = known or Spreads()
    given = known.devices
    priors = {device: prior if given.get(device) is None or prior.measured_df >= given[device].measured_df
              else given[device] for device, prior in ((d, device_prior(cs)) for d, cs in by_device.items())}
    eager_first: dict = {}  # the eager first call belongs to the workload, not the configuration: pooled over all runs
    for (model, bs, key), quiet in answering.items():
        eager_first.setdefault((model, bs, key[:len(BASE_KEYS)]), []).append(quiet)
    eager_first = {w: runs.median("eager_first_call_s", np.concatenate(parts)) for w, parts in eager_first.items()}
    names = _labels(groups)
    out = [_row(runs, model, bs, names[model, key], idx, answering[model, bs, key], priors[key[DEVICE_AT]],
                 _spread(runs, answering[model, bs, key], known.configs), _spread(runs, idx, known.colds, pool=True),
                 eager_first[model, bs, key[:len(BASE_KEYS)]], folded.get((model, bs, key), set()), known)
            for (model, bs, key), idx in groups.items()]
    # a row the worker refused (its stored spec had no usable batch size) sorts last, never breaks the sort
    return sorted(out, key=lambda r: (r.model, r.batch_size is None, r.batch_size or 0, r.speedup is None,
                                      -(r.speedup or 0), r.config))


def _configurations(runs: Runs) -> tuple[dict, dict]:
    """Each (model, batch size, configuration key)'s runs (index arrays, in record order; groups in order of their
    first run), and the modes its runs were stored as and are counted under this one's (lab.axes.folded_mode: off
    CUDA a run stored as reduce-overhead is counted under default, the same compile). A configuration is its spec's
    fields, torch version and device: rows of one spec, torch and device (spec_code, where the reader gives it) are
    keyed once, not one by one."""
    cols = runs.cols
    n = len(cols["job_id"])
    spec = cols.get("spec_code")
    known = spec is not None and n and spec[0] is not None
    combo = codes(spec, cols["torch_version"], cols["device_name"]) if known else np.arange(n)
    counted = np.array(_each(lambda m, s: bool(m) and s != "cancelled", cols["model"], cols["status"]), dtype=bool)
    order = np.argsort(combo, kind="stable")
    canonical = runs.args_keys or [None] * n
    members: dict[tuple, list] = {}
    folded: dict[tuple, set] = {}
    for part in np.split(order, np.flatnonzero(np.diff(combo[order])) + 1) if n else []:
        part = part[counted[part]]
        if not len(part):
            continue
        i = int(part[0])
        mode, device = cols["mode"][i], cols["device"][i]
        args = canonical[i]
        values = {"mode": folded_mode(mode, device),
                  "model_args": args if args is not None else json.dumps(cols["model_args"][i], sort_keys=True)}
        g = (cols["model"][i], cols["batch_size"][i], tuple(values[k] if k in values else cols[k][i] for k in CONFIG_KEYS))
        members.setdefault(g, []).append(part)
        if values["mode"] != mode:
            folded.setdefault(g, set()).add(mode)
    groups = {g: np.sort(np.concatenate(parts)) for g, parts in members.items()}
    return dict(sorted(groups.items(), key=lambda item: item[1][0])), folded


def _spread(runs: Runs, quiet: np.ndarray, configs: dict, pool: bool = False) -> Spread | None:
    """The configuration's processes over the whole database (Spreads.configs or .colds), found by its runs' keys:
    the key with the most (the first in order on a tie), or with `pool`, every key's as one (a row holds one
    configuration's runs under several keys where their specs differ in what it does not count, the cache)."""
    cols = runs.cols
    keys = {(cols["device_name"][i], cols["torch_version"][i], cols["config_key"][i]) for i in quiet.tolist()}
    found = [configs[k] for k in sorted(keys, key=repr) if k in configs]
    return pooled(found) if pool else max(found, key=lambda s: s.processes, default=None)


def _row(runs: Runs, model, bs, config: str, idx: np.ndarray, quiet: np.ndarray, prior: Prior, spread: Spread | None,
         cold_spread: Spread | None, eager_first_s: float | None, folded: set, known: Spreads) -> AnswerRow:
    cols = runs.cols
    ok = idx[runs.ok[idx]]
    seconds = runs.num["compiled_first_call_s"]
    shaken = sum(runs.kind[i] == "cold" and not np.isnan(seconds[i]) and runs.compile_disturbed[i] for i in ok.tolist())
    # a cold first call whose compile another process disturbed is left out while an undisturbed one is in view
    firsts = ok[np.array(first_call.kept([runs.kind[i] for i in ok.tolist()], seconds[ok].tolist(),
                                         runs.compile_disturbed[ok].tolist()), dtype=bool)] if len(ok) else ok
    ids = firsts.tolist()
    calls = first_call.separate(runs.job_id[firsts].tolist(), seconds[firsts].tolist(), [runs.kind[i] for i in ids])
    kinds = {k: calls[k].seconds if k in calls else None for k in KINDS}
    in_view = [i for i in ids if runs.kind[i] == "cold" and not np.isnan(seconds[i])]
    # an interval only where every cold run in view is one the spread counts (a disturbed one, or one stored before
    # runs recorded what they compiled from, is in none: its number has no place in that spread)
    counted = "cold" in calls and bool(runs.cold_counted[in_view].all())
    cold = first_call.bounds(calls["cold"], cold_spread) if counted else None
    disturbed = ok[runs.disturbed[ok]]
    accuracy_known = ok[~runs.accuracy_none[ok]]
    eager_ms, compiled_ms = runs.median("eager_ms", quiet), runs.median("compiled_ms", quiet)
    interval = None
    centers, errors = runs.centers(quiet)
    if centers:
        interval = combine(centers, errors, prior, spread)
    first = kinds["cold"] if kinds["cold"] is not None else kinds["warm"]
    # what each call saves at the headline speedup (eager's median call less it over that speedup), so the count and
    # its range (at the speedup's interval's ends) are one estimate; the sides' medians where there is no interval
    per_call = eager_ms / interval.speedup if interval is not None and eager_ms is not None else compiled_ms
    paid = (break_even_calls(eager_first_s, first, eager_ms, per_call)
            if None not in (first, eager_first_s, eager_ms, per_call) else None)
    first_ends = (cold[0], cold[1]) if cold and kinds["cold"] is not None else (first, first)
    paid_ends = (break_even_range(eager_first_s, *first_ends, eager_ms, interval.low, interval.high, paid)
                 if paid is not None and interval is not None else None)
    row = AnswerRow(
        model=model, batch_size=bs, config=config, verdict="",
        speedup=interval and interval.speedup, speedup_ci_low=interval and interval.low,
        speedup_ci_high=interval and interval.high, rerun_low=interval and interval.rerun_low,
        rerun_high=interval and interval.rerun_high, eager_ms=eager_ms, compiled_ms=compiled_ms,
        eager_first_call_s=eager_first_s, first_call_cold_s=kinds["cold"], first_call_warm_s=kinds["warm"],
        first_call_cold_low=cold and cold[0], first_call_cold_high=cold and cold[1],
        cold_processes=cold[2] if cold else calls["cold"].runs if "cold" in calls else 0,
        first_call_portable_s=kinds["portable"], break_even_calls=paid, break_even_low=paid_ends and paid_ends[0],
        break_even_high=paid_ends and paid_ends[1],
        recompiles=runs.most("recompiles", ok), graph_breaks=runs.most("graph_breaks", ok),
        peak_mem_eager_mb=runs.median("peak_mem_eager_mb", ok), peak_mem_compiled_mb=runs.median("peak_mem_compiled_mb", ok),
        accuracy_ok=None if not len(accuracy_known) else not runs.accuracy_false[ok].any(),
        max_abs_error=runs.most("max_abs_error", ok), noisy=bool(len(ok)) and len(disturbed) == len(ok),
        runs=len(quiet), noisy_runs=len(ok) - len(quiet), failed_runs=len(idx) - len(ok),
        noise_note=next((cols["noise_note"][i] for i in disturbed if cols["noise_note"][i]), None),
        job_ids=" ".join(map(str, np.sort(runs.job_id[idx]).tolist())), cold_disturbed=int(shaken),
        cold_all_disturbed=bool(shaken) and len(firsts) == len(ok))
    error = None
    if row.failed_runs and not (row.runs or row.noisy_runs):
        error = next((cols["error"][i] for i in idx if cols["error"][i]), None) or cols["status"][idx[0]]
    return replace(row, verdict=verdict(row, interval, runs.median("speedup_spread", quiet), error,
                                        cols["device"][idx[0]], folded,
                                        process_notes.sides_moved(runs.num["eager_ms"][quiet], runs.num["compiled_ms"][quiet]),
                                        _paces(runs, quiet, known)))


def _paces(runs: Runs, quiet: np.ndarray, known: Spreads) -> str | None:
    """These processes' host paces in words (lab.process_notes.paces), beside their device's fast pace and what the
    configuration read at it over every sweep of it (Spreads.paces, Spreads.fast)."""
    fast = known.paces.get(runs.cols["device_name"][quiet[0]]) if len(quiet) else None
    return process_notes.paces(runs.paired(quiet), runs.num["host_pace_us"][quiet], fast,
                               _spread(runs, quiet, known.fast))


def _labels(groups: Iterable[tuple]) -> dict[tuple, str]:
    """Per configuration, a label naming only what differs between the configurations of its model (lab.labels)."""
    by_model: dict[str, set] = {}
    for model, _bs, key in groups:
        by_model.setdefault(model, set()).add(key)
    out = {}
    for model, keys in by_model.items():
        configs = [dict(zip(CONFIG_KEYS, key)) for key in keys]
        for key, text in zip(keys, labels.labels(configs, CONFIG_KEYS)):
            out[model, key] = text
    return out
