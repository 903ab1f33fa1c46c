"""What a database showed of the spread between processes, beyond the rows in hand: per device and per configuration
(lab.interval's priors), computed on columns. lab.answer widens its intervals by them; db.reports reads them."""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

import numpy as np

from lab.host_pace import FASTEST
from lab.interval import Spread, config_spreads, pooled_prior


def codes(*columns) -> np.ndarray:
    """A code per row, equal for rows equal in every one of these columns: 0, 1, ... in order of appearance."""
    combined = np.zeros(len(columns[0]), dtype=np.int64)
    for values in columns:
        # every distinct value, in order of appearance, then a lookup per row: both loops in C (a generator with
        # setdefault per row cost 0.55 s over the report's 700k values at 100k jobs)
        index = {v: i for i, v in enumerate(dict.fromkeys(values))}
        code = np.fromiter(map(index.__getitem__, values), np.int64, len(values))
        combined = np.unique(combined * max(len(index), 1) + code, return_inverse=True)[1].reshape(-1)
    return combined


@dataclass(frozen=True)
class Spreads:
    """What a database showed of the spread between processes, beyond the rows in hand: per device, the spread its
    repeated configurations showed (lab.interval.Prior); per (device, torch version, configuration key), that
    configuration's processes over every sweep of it (lab.interval.Spread), and `colds`: the seconds of those that
    compiled it cold, their first calls' Spread (lab.first_call.bounds); `paces`: per device, the host pace its
    processes run at when the host runs fast (device_paces), where enough of them were paced; `fast`: per
    configuration as `configs`, the Spread of those of its processes that ran at that pace (at_fast_pace)."""

    devices: dict = field(default_factory=dict)
    configs: dict = field(default_factory=dict)
    colds: dict = field(default_factory=dict)
    paces: dict = field(default_factory=dict)
    fast: dict = field(default_factory=dict)

    @functools.cached_property
    def digest(self) -> str:
        """Names what these spreads hold: a kept answer computed under other spreads is not this one's."""
        h = hashlib.sha256()
        for part in (self.devices, self.configs, self.colds, self.paces, self.fast):
            h.update(repr(sorted(part.items(), key=repr)).encode())
        return h.hexdigest()[:16]


def spreads(device: list, torch: list, sweep: list, config: list, center: np.ndarray, se: np.ndarray,
            colds: dict | None = None, pace: np.ndarray | None = None) -> Spreads:
    """Spreads of these processes (undisturbed, succeeded): each one's device, torch version, sweep, configuration
    key (jobs.config), paired speedup and its standard error (0 for none); `colds`: by_config over
    the processes that compiled it cold (their first calls' seconds), where read; `pace`: each one's host pace (NaN
    for none: lab.host_pace), for device_paces and at_fast_pace."""
    if not len(device):
        return Spreads(colds=colds or {})
    per_config = codes(device, torch, config)  # once: every configuration's processes, and those at the fast pace
    paces = device_paces(device, pace) if pace is not None else {}
    return Spreads(devices=pooled_priors(device, codes(device, sweep, config), center, se),
                   configs=by_config(device, torch, config, center, per_config), colds=colds or {}, paces=paces,
                   fast=at_fast_pace(device, torch, config, center, pace, paces, per_config) if paces else {})


PACED = 5  # a device's fast pace is said once this many of its processes were paced
FAST_SHARE = 10  # the percentile of its processes' paces taken as the pace it runs at when its host runs fast


def device_paces(device: list, pace: np.ndarray) -> dict:
    """Per device with PACED or more paced processes, the FAST_SHARE-th percentile of their host paces (us, lower is
    faster): the pace this device's processes run at when its host runs fast, against which an answer whose processes
    all ran slower says so (lab.host_pace.slower_than)."""
    if not len(device):
        return {}
    pace, device_code = np.asarray(pace, dtype=float), codes(device)
    first = {code: d for code, d in zip(device_code.tolist(), device)}
    out = {}
    for code, d in first.items():
        mine = pace[device_code == code]
        mine = mine[~np.isnan(mine) & (mine > 0)]
        if len(mine) >= PACED:
            out[d] = round(float(np.percentile(mine, FAST_SHARE)), 2)
    return out


def at_fast_pace(device: list, torch: list, config: list, center: np.ndarray, pace: np.ndarray, paces: dict,
                 per_config: np.ndarray | None = None) -> dict:
    """Per (device, torch version, configuration key), the Spread of the paired speedups (`center`) of its processes
    that ran at their device's fast pace (within lab.host_pace.FASTEST of `paces`, device_paces), where two or more
    did: what the configuration reads when its host runs fast, which an answer whose processes all ran slower gives
    beside its own (lab.process_notes.paces). `per_config`: codes(device, torch, config), where already made."""
    if not len(device) or not paces:
        return {}
    limits = {d: FASTEST * p for d, p in paces.items()}
    limit = np.fromiter((limits.get(d, np.nan) for d in device), float, len(device))
    with np.errstate(invalid="ignore"):  # NaN (no pace, or a device without its fast pace) is never at it
        pace = np.asarray(pace, dtype=float)
        at = (pace > 0) & (pace <= limit)  # a pace at or below zero is none (device_paces counts none either)
    return by_config(device, torch, config, np.asarray(center), per_config, at)


def by_config(device: list, torch: list, config: list, values: np.ndarray, per_config: np.ndarray | None = None,
              keep: np.ndarray | None = None) -> dict:
    """Per (device, torch version, configuration key) with two or more of these processes, the Spread of their values
    (positive numbers, on a log scale: paired speedups, or cold first calls' seconds). `per_config`: codes(device,
    torch, config), where already made; `keep`: a mask of the processes to count (all where None)."""
    if not len(device):
        return {}
    per_config = codes(device, torch, config) if per_config is None else per_config
    where = dict(zip(per_config.tolist(), zip(device, torch, config)))
    if keep is not None:
        per_config, values = per_config[keep], np.asarray(values)[keep]
    return {where[c]: spread for c, spread in config_spreads(per_config, values).items()}


def pooled_priors(device: list, keys: np.ndarray, center: np.ndarray, se: np.ndarray) -> dict:
    """Per device, lab.interval.pooled_prior over these processes: each one's device, configuration (a code: one
    sweep's runs of one spec, jobs.config), paired speedup and its standard error (0 for none)."""
    device_code = codes(device)
    first = {code: d for code, d in zip(device_code.tolist(), device)}
    return {d: pooled_prior(keys[mine], center[mine], se[mine]) for code, d in first.items()
            for mine in [device_code == code]}


def pooled(found: list[Spread]) -> Spread | None:
    """Several Spreads (each with its mean log) as one, of every process in them; None for none."""
    if len(found) < 2 or any(s.mean is None for s in found):
        return found[0] if found else None
    n = sum(s.processes for s in found)
    mean = sum(s.processes * s.mean for s in found) / n
    squares = sum((s.processes - 1) * s.var + s.processes * (s.mean - mean) ** 2 for s in found)
    return Spread(processes=n, var=squares / (n - 1), mean=mean)
