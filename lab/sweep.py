"""A submission: one SweepRequest (a model, a task, a device, a dtype and lists of settings) expands into one
lab.spec.ExperimentSpec per combination, each validated; the notes say which combinations were left out and why.
Also how a sweep is named (its label and its name) and the follow-up settings a stored request carries."""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping

from lab import traffic as traffic_stream
from lab.axes import AXES, Axis, fold_note, folded_mode
from lab.checks import SpecError, check_text, choice, integer, parse_bool, parse_dynamic, reject_unknown
from lab.spec import ALL_LIVE, ExperimentSpec, ModelInfo, check_torch
from lab.team import check_note, check_tags

MAX_REPEAT = 20
MAX_JOBS = 5000  # per submission: a typo in a sweep must not queue a million jobs


def follow_up_settings(request) -> tuple[int, int]:
    """(reruns, process_repeats) of a stored sweep request; a request stored before these settings existed, or
    one that no longer validates, gets the defaults (the worker must not fail a finished job over its sweep)."""
    d = request if isinstance(request, Mapping) else {}
    out = []
    for key in ("reruns", "process_repeats"):
        try:
            value = integer(d.get(key, getattr(SweepRequest, key)), key)
        except SpecError:
            value = getattr(SweepRequest, key)
        out.append(max(0, min(MAX_REPEAT, value)))
    return out[0], out[1]


def sweep_label(sweep_id: int, name: str | None, model: str | None) -> str:
    """A sweep as the pickers, the Results sweep filter and links name it: "#12 modes on complexnet", or
    "#3 simplenet" for an unnamed sweep of simplenet. The one place it is built."""
    return f"#{sweep_id} {name or model or '?'}"


def sweep_name(sweep_id: int, name: str | None) -> str:
    """A sweep's name as records show it: its name, or "sweep 3" when it has none."""
    return name or f"sweep {sweep_id}"


def split_sizes(text: str, field_name: str) -> list[str]:
    """'8, 16, 32' or '8 16 32' -> ['8', '16', '32'] (each checked as an integer by the spec later).
    An empty entry between two sizes ('8,,16') is refused: a size was probably left out."""
    entries = [e.strip() for e in (text or "").strip(", \t\n").split(",")]
    if any(not e for e in entries) and any(entries):
        raise SpecError(field_name, f"an empty entry in {text.strip()!r}: was a size left out? e.g. 8, 16, 32")
    return [p for e in entries for p in e.split()]


def _axis_parser(axis: Axis):
    """One value of a swept axis, checked as the sweep's field (batch_sizes, modes, ...)."""
    if not axis.values:
        return lambda v: integer(v, axis.plural)
    if axis.field == "dynamic":
        return lambda v: parse_dynamic(v, axis.plural)
    if axis.field == "fullgraph":
        return lambda v: parse_bool(v, axis.plural)
    return lambda v: choice(v, axis.values, axis.plural)


@dataclass(frozen=True)
class SweepRequest:
    """A submission: one model/task/device/dtype and lists of settings; each combination is a job."""

    model: str
    batch_sizes: tuple[int, ...]
    model_args: Mapping[str, int | str] = field(default_factory=dict)
    task: str = ExperimentSpec.task
    device: str = ExperimentSpec.device
    dtype: str = ExperimentSpec.dtype
    backends: tuple[str, ...] = (ExperimentSpec.backend,)
    modes: tuple[str, ...] = (ExperimentSpec.mode,)
    dynamics: tuple[bool | None, ...] = (ExperimentSpec.dynamic,)
    fullgraphs: tuple[bool, ...] = (ExperimentSpec.fullgraph,)
    scopes: tuple[str, ...] = (ExperimentSpec.scope,)
    # one job per combination and torch version; ALL_LIVE: each version a live worker offers (at submit time)
    torch_versions: tuple[str, ...] = (ExperimentSpec.torch,)
    cache: str = ExperimentSpec.cache
    trace: bool = ExperimentSpec.trace
    schedule: tuple[int, ...] = ()
    traffic: Mapping = field(default_factory=dict)  # lab.traffic: a stream each job replays (its first run)
    iters: int = ExperimentSpec.iters
    timeout_s: int = ExperimentSpec.timeout_s
    repeat: int = 1
    # lab.noise: a job whose rounds a measured cause disturbed is re-run, up to this many times per configuration;
    # every configuration runs in this many fresh processes (1: one), the later ones from the first's compile cache
    reruns: int = 2
    # 2, from an H100 sweep of the seed configurations: a repeat's warm first call and rounds cost 0.32x of a first
    # run (whose cold compile dominates), so a second repeat would take follow-ups past half of the first runs' GPU
    # time; the device's spread between processes (lab.interval) keeps 2 processes' interval calibrated
    process_repeats: int = 2
    name: str = ""
    tags: tuple[str, ...] = ()  # lab.team: words to find the sweep by; editable later (db.team)
    note: str = ""  # why it ran

    def __post_init__(self):
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        for key, parse in ((a.plural, _axis_parser(a)) for a in AXES):
            values = getattr(self, key)
            if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
                values = (values,)
            values = tuple(dict.fromkeys(parse(v) for v in values))  # keep order, drop repeats
            if not values:
                raise SpecError(key, "choose at least one value")
            put(key, values)
        versions = self.torch_versions
        if isinstance(versions, (str, bytes)) or not isinstance(versions, Iterable):
            versions = (versions,)
        versions = tuple(dict.fromkeys(v.strip().lower() if isinstance(v, str) and v.strip().lower() == ALL_LIVE
                                       else check_torch(v, "torch_versions") for v in versions))
        if not versions:
            raise SpecError("torch_versions", "choose at least one value")
        put("torch_versions", versions)
        put("trace", parse_bool(self.trace, "trace"))
        put("traffic", traffic_stream.check(self.traffic))
        put("repeat", integer(self.repeat, "repeat"))
        if not 1 <= self.repeat <= MAX_REPEAT:
            raise SpecError("repeat", f"must be between 1 and {MAX_REPEAT}, got {self.repeat}")
        for key, low in (("reruns", 0), ("process_repeats", 1)):
            put(key, integer(getattr(self, key), key))
            if not low <= getattr(self, key) <= MAX_REPEAT:
                raise SpecError(key, f"must be between {low} and {MAX_REPEAT}, got {getattr(self, key)}")
        put("name", check_text(self.name, "name", blank_ok=True))
        put("tags", check_tags(self.tags))
        put("note", check_note(self.note))

    @classmethod
    def from_dict(cls, d: Mapping) -> "SweepRequest":
        reject_unknown(cls, d, "sweep")
        for key in ("model", "batch_sizes"):
            if key not in d:
                raise SpecError(key, "is required")
        return cls(**d)

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in (*(a.plural for a in AXES), "schedule", "torch_versions", "tags"):
            d[key] = list(d[key])
        d["model_args"] = dict(self.model_args)
        d["traffic"] = dict(self.traffic)
        return d

    def expand(self, catalog: Mapping[str, ModelInfo] | None = None) -> tuple[list[ExperimentSpec], list[str]]:
        """Every combination as a spec, each one validated; plus notes on combinations left out."""
        specs, notes, seen = [], [], set()
        if ALL_LIVE in self.torch_versions:
            raise SpecError("torch_versions", f"{ALL_LIVE} names the versions of the live workers: submit through the "
                                              "queue (db.queue.submit), which resolves it")
        for *combo, torch in itertools.product(*(getattr(self, a.plural) for a in AXES), self.torch_versions):
            swept = {a.field: v for a, v in zip(AXES, combo)}
            if swept["backend"] != "inductor" and swept["mode"] != "default":
                notes.append(f"skipped {swept['backend']} with mode {swept['mode']}: modes apply to backend "
                             "inductor only")
                continue
            mode = folded_mode(swept["mode"], self.device)  # off CUDA, reduce-overhead is default (lab.axes)
            if mode != swept["mode"]:
                both = mode in self.modes
                notes.append(f"{fold_note(swept['mode'], self.device)}: " + (
                    f"one {mode} job runs for both" if both else f"its jobs run as {mode}"))
                swept["mode"] = mode
            if (*swept.values(), torch) in seen:
                continue
            seen.add((*swept.values(), torch))
            spec = ExperimentSpec(
                model=self.model, model_args=self.model_args, task=self.task, device=self.device, dtype=self.dtype,
                cache=self.cache, trace=self.trace, schedule=self.schedule, traffic=self.traffic, iters=self.iters,
                timeout_s=self.timeout_s, torch=torch, **swept)
            if catalog is not None:
                spec = spec.check_model(catalog)
            specs.extend([spec] * self.repeat)
        if not specs:
            raise SpecError("modes", "no combination left to run; " + "; ".join(dict.fromkeys(notes)))
        if len(specs) * self.process_repeats > MAX_JOBS:
            runs = f" ({len(specs):,} configurations x {self.process_repeats} processes)" if self.process_repeats > 1 else ""
            raise SpecError("batch_sizes", f"this sweep makes {len(specs) * self.process_repeats:,} jobs{runs}; at most "
                                           f"{MAX_JOBS:,} per submission (fewer sizes, settings or repeats)")
        return specs, list(dict.fromkeys(notes))
