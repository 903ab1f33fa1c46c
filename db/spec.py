"""The experiment record: one frozen ExperimentSpec flows form -> DB -> worker -> child unchanged.

No torch, no streamlit here. Every way in (CLI flags, the dashboard form, JSON from the database)
goes through `ExperimentSpec.from_dict` / `SweepRequest.from_dict`, which reject unknown keys and
bad values with a SpecError that names the field. Defaults live once: on the dataclasses below.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import unicodedata
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable, Mapping

from db.axes import (
    AXES,
    BACKENDS,
    BOOL,
    BY_FIELD,
    MODES,
    TRI,
    Axis,
    SpecError,
    fold_note,
    folded_mode,
    to_text,
    to_value,
)

TASKS = ("inference", "training")
DEVICES = ("cuda", "cpu")
DTYPES = ("float32", "bfloat16", "float16", "amp-bfloat16", "amp-float16")  # amp-: fp32 weights under autocast
DYNAMICS = TRI
CACHES = ("cold", "warm", "portable")  # portable: a fresh cache plus the artifacts a cold job stored (db.caches)

MAX_BATCH = 1 << 24
MAX_SCHEDULE = 64
MAX_ITERS = 10_000
MAX_TIMEOUT_S = 24 * 3600
MAX_REPEAT = 20
LATER_FIELDS = {"scope": "model", "torch": "any"}  # spec fields added since the first release, with the default older rows mean
ANY_TORCH = "any"  # a job any worker may run, whatever its torch
ALL_LIVE = "all-live"  # a sweep's torch choice: one job per version a live worker offers (db.queue resolves it)
_TORCH_PIN = re.compile(r"[0-9]+(\.[0-9A-Za-z]+)*(\+[0-9A-Za-z.]+)?")


def torch_matches(pin: str | None, version: str | None) -> bool:
    """Whether a worker with torch `version` may run a job pinned to `pin`: "any", or a prefix of the version that
    ends at a component ("2.14" matches "2.14.1+cu128" and "2.14.0", not "2.140"; "2.14.1+cu128" matches itself)."""
    return (pin or ANY_TORCH) in torch_prefixes(version)


def torch_prefixes(version: str | None) -> list[str]:
    """"any" and every pin that matches `version`: "2.14.1+cu128" -> any, 2, 2.14, 2.14.1, 2.14.1+cu128."""
    out = [ANY_TORCH]
    if not version:
        return out
    local = version.split("+", 1)
    parts = local[0].split(".")
    out += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    if len(local) > 1:
        out.append(version)
    return out


def check_torch(value: Any, where: str = "torch") -> str:
    """A torch pin: "any" or a version prefix such as 2.14, 2.14.1 or 2.14.1+cu128."""
    if not isinstance(value, str):
        raise SpecError(where, f"expected a torch version such as 2.14, got {value!r}")
    text = value.strip()
    if text.lower() == ANY_TORCH:
        return ANY_TORCH
    if len(text) > 64 or not _TORCH_PIN.fullmatch(text):
        raise SpecError(where, f"{value!r} is not a torch version; give a prefix such as 2.14 (it matches "
                               f"2.14.1+cu128), {ANY_TORCH}, or {ALL_LIVE} for every version a live worker offers")
    return text
MAX_JOBS = 5000  # per submission: a typo in a sweep must not queue a million jobs


def follow_up_settings(request) -> tuple[int, int]:
    """(reruns, process_repeats) of a stored sweep request; a request stored before these settings existed, or
    one that no longer validates, gets the defaults (the worker must not fail a finished job over its sweep)."""
    d = request if isinstance(request, Mapping) else {}
    out = []
    for key in ("reruns", "process_repeats"):
        try:
            value = _int(d.get(key, getattr(SweepRequest, key)), key)
        except SpecError:
            value = getattr(SweepRequest, key)
        out.append(max(0, min(MAX_REPEAT, value)))
    return out[0], out[1]


def spec_key(spec: Mapping) -> str:
    """One configuration's name for the index of a sweep's jobs (jobs.config) and the kept compile caches: a hash
    of the stored spec (ExperimentSpec.to_dict()), the same for a first run and every follow-up of it."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def sweep_label(sweep_id: int, name: str | None, model: str | None) -> str:
    """A sweep as the pickers, the Results sweep filter and links name it: "#12 modes on complexnet", or
    "#3 simplenet" for an unnamed sweep of simplenet. The one place it is built."""
    return f"#{sweep_id} {name or model or '?'}"


def sweep_name(sweep_id: int, name: str | None) -> str:
    """A sweep's name as records show it: its name, or "sweep 3" when it has none."""
    return name or f"sweep {sweep_id}"


def stored_spec(value) -> dict:
    """A jobs row's spec as a dict, or {} when the row holds something else (a corrupt or hand-made
    row: the worker fails it with a reason; pages must still list it). A field added to the spec after the
    row was stored (scope) reads as its default, as the worker reads it."""
    if not isinstance(value, dict):
        return {}
    return {**{k: v for k, v in LATER_FIELDS.items() if "model" in value}, **value}


def split_sizes(text: str, field_name: str) -> list[str]:
    """'8, 16, 32' or '8 16 32' -> ['8', '16', '32'] (each checked as an integer by the spec later).
    An empty entry between two sizes ('8,,16') is refused: a size was probably left out."""
    entries = [e.strip() for e in (text or "").strip(", \t\n").split(",")]
    if any(not e for e in entries) and any(entries):
        raise SpecError(field_name, f"an empty entry in {text.strip()!r}: was a size left out? e.g. 8, 16, 32")
    return [p for e in entries for p in e.split()]


@dataclass(frozen=True)
class ParamInfo:
    """One model-specific size parameter (say `image_size`) that a zoo model accepts."""

    name: str
    default: int | str
    choices: tuple[str, ...] = ()
    minimum: int = 1
    maximum: int = MAX_BATCH
    help: str = ""

    def check(self, value: Any, where: str) -> int | str:
        if self.choices:
            if value not in self.choices:
                raise SpecError(where, f"{value!r} is not one of {', '.join(self.choices)}")
            return value
        value = _int(value, where)
        if not self.minimum <= value <= self.maximum:
            raise SpecError(where, f"{value} is outside {self.minimum}..{self.maximum}")
        return value


@dataclass(frozen=True)
class ModelInfo:
    """What a worker publishes about one model it can run (the dashboard never imports the zoo)."""

    name: str
    description: str
    params: tuple[ParamInfo, ...] = ()
    tasks: tuple[str, ...] = TASKS
    # which input size the batch sizes and the schedule vary: "batch" or a param name (seq_len)
    size_dim: str = "batch"
    source: str = "builtin"
    # the repeated blocks `--scope blocks` compiles one by one (the model file's BLOCKS); () = none named
    blocks: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> "ModelInfo":
        """Published by a worker that may be newer than this reader: fields it does not know are dropped
        (and logged once), so one newer worker cannot break Submit for everyone."""
        d = _known(cls, d)
        d["params"] = tuple(ParamInfo(**{**_known(ParamInfo, p), "choices": tuple(p.get("choices", ()))})
                            for p in d.get("params", ()))
        d["tasks"] = tuple(d.get("tasks", TASKS))
        d["blocks"] = tuple(d.get("blocks", ()))
        return cls(**d)

    def param_defaults(self) -> dict:
        return {p.name: p.default for p in self.params}


_unknown_logged: set = set()


def _known(cls, d: Mapping) -> dict:
    """The keys of `d` that are fields of `cls`; the rest are logged, once per class and key set."""
    known = {f.name for f in fields(cls)}
    extra = tuple(sorted(str(k) for k in d if k not in known))
    if extra and (cls.__name__, extra) not in _unknown_logged:
        _unknown_logged.add((cls.__name__, extra))
        logging.getLogger("compile_lab.spec").warning(
            "ignoring unknown %s field(s) %s (published by a newer worker?)", cls.__name__, ", ".join(extra))
    return {k: v for k, v in d.items() if k in known}


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise SpecError(where, f"expected an integer, got {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and _ASCII_INT.fullmatch(value.strip()):  # int() alone also takes '１２' and '1_0'
        digits = len(value.strip().lstrip("+-").lstrip("0"))
        if digits > MAX_DIGITS:  # before int(): Python refuses past 4300 digits, with its own ValueError
            raise SpecError(where, f"a {digits}-digit number is too large")
        value = int(value.strip())
    if isinstance(value, int):
        if abs(value) >= 10 ** MAX_DIGITS:  # not printed: past 4300 digits even str() refuses it
            raise SpecError(where, f"a number of more than {MAX_DIGITS} digits is too large")
        return value
    raise SpecError(where, f"expected an integer, got {value!r}")


_ASCII_INT = re.compile(r"[+-]?[0-9]+")
MAX_DIGITS = 18  # every count and size here fits in 18 digits, and so in a 64-bit database column
MAX_NAME = 200


def check_text(value: Any, where: str, max_len: int = MAX_NAME, blank_ok: bool = False) -> str:
    """A name a person typed, stripped: text, printable (no control characters: a NUL is refused by
    PostgreSQL and a newline or escape sequence forges lines in logs and terminals), not blank unless
    allowed, and not longer than max_len (cutting it would store a name nobody typed)."""
    if not isinstance(value, str):
        raise SpecError(where, f"expected text, got {type(value).__name__}")
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cs") or c in "\u2028\u2029"), None)
    if bad is not None:
        raise SpecError(where, "contains a byte that is not UTF-8" if unicodedata.category(bad) == "Cs" else
                        f"contains the control character U+{ord(bad):04X}; use printable text only")
    text = value.strip()
    if not text and not (blank_ok and not value):
        raise SpecError(where, "is blank; type a name" + (" or leave it empty" if blank_ok else ""))
    if len(text) > max_len:
        raise SpecError(where, f"is {len(text)} characters long; at most {max_len}")
    return text


def _choice(value: Any, allowed: Iterable[str], where: str) -> str:
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise SpecError(where, f"unknown value {value!r}; choose one of {', '.join(allowed)}")
    return value


def parse_dynamic(value: Any, where: str = "dynamic") -> bool | None:
    """torch.compile's dynamic=None/True/False from the names none/true/false (or the values)."""
    return to_value(value, TRI, where)


def parse_bool(value: Any, where: str) -> bool:
    return to_value(value, BOOL, where)


def dynamic_name(value: bool | None) -> str:
    return to_text(value)


def dynamic_text(value: Any) -> str:
    """A stored dynamic as the worker reads it: none / true / false; a value it refuses (the job failed on
    it) as written."""
    try:
        return dynamic_name(parse_dynamic(value))
    except SpecError:
        return str(value)


def _axis_parser(axis: Axis):
    """One value of a swept axis, checked as the sweep's field (batch_sizes, modes, ...)."""
    if not axis.values:
        return lambda v: _int(v, axis.plural)
    if axis.field == "dynamic":
        return lambda v: parse_dynamic(v, axis.plural)
    if axis.field == "fullgraph":
        return lambda v: parse_bool(v, axis.plural)
    return lambda v: _choice(v, axis.values, axis.plural)


def _reject_unknown(cls, d: Mapping, what: str) -> None:
    if not isinstance(d, Mapping):
        raise SpecError(what, f"expected an object, got {type(d).__name__}")
    known = {f.name for f in fields(cls)}
    for key in d:
        if key not in known:
            raise SpecError(str(key), f"unknown field in {what}; known fields: {', '.join(sorted(known))}")


@dataclass(frozen=True)
class ExperimentSpec:
    """One job: a model at one batch size, compiled one way, measured against its own eager baseline."""

    model: str
    batch_size: int
    model_args: Mapping[str, int | str] = field(default_factory=dict)
    task: str = "inference"
    device: str = "cuda"
    dtype: str = "float32"
    backend: str = "inductor"
    mode: str = "default"
    dynamic: bool | None = None
    fullgraph: bool = False
    scope: str = "model"
    # the torch this job runs under: "any", or a version prefix a worker's torch.__version__ must start with (at a
    # component: "2.14" matches "2.14.1+cu128"); only such a worker claims it
    torch: str = ANY_TORCH
    cache: str = "cold"
    # keep the compile trace (TORCH_TRACE's lines, up to db.artifacts' cap) and tlparse's report of it as artifacts;
    # the output code and FX graphs are kept either way
    trace: bool = True
    schedule: tuple[int, ...] = ()
    iters: int = 30
    timeout_s: int = 1800

    def __post_init__(self):
        # Normalise and check every field, so no invalid spec can exist at all.
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        if not isinstance(self.model, str) or not self.model.strip():
            raise SpecError("model", "a model name is required")
        put("model", check_text(self.model, "model", max_len=100))
        put("batch_size", _int(self.batch_size, "batch_size"))
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise SpecError("batch_size", f"must be a positive integer up to {MAX_BATCH}, got {self.batch_size}")
        if not isinstance(self.model_args, Mapping):
            raise SpecError("model_args", "expected an object of size parameters")
        put("model_args", dict(sorted(self.model_args.items())))
        put("task", _choice(self.task, TASKS, "task"))
        put("device", _choice(self.device, DEVICES, "device"))
        put("dtype", _choice(self.dtype, DTYPES, "dtype"))
        put("backend", _choice(self.backend, BACKENDS, "backend"))
        put("mode", _choice(self.mode, MODES, "mode"))
        put("dynamic", parse_dynamic(self.dynamic))
        put("fullgraph", parse_bool(self.fullgraph, "fullgraph"))
        put("scope", _choice(self.scope, BY_FIELD["scope"].values, "scope"))
        put("torch", check_torch(self.torch))
        put("cache", _choice(self.cache, CACHES, "cache"))
        put("trace", parse_bool(self.trace, "trace"))
        if isinstance(self.schedule, (str, bytes)) or not isinstance(self.schedule, Iterable):
            raise SpecError("schedule", "expected a list of sizes")
        put("schedule", tuple(_int(v, "schedule") for v in self.schedule))
        if len(self.schedule) > MAX_SCHEDULE:
            raise SpecError("schedule", f"at most {MAX_SCHEDULE} calls")
        if any(not 1 <= v <= MAX_BATCH for v in self.schedule):
            raise SpecError("schedule", "every size must be a positive integer")
        put("iters", _int(self.iters, "iters"))
        if not 1 <= self.iters <= MAX_ITERS:
            raise SpecError("iters", f"must be between 1 and {MAX_ITERS}, got {self.iters}")
        put("timeout_s", _int(self.timeout_s, "timeout_s"))
        if not 1 <= self.timeout_s <= MAX_TIMEOUT_S:
            raise SpecError("timeout_s", f"must be between 1 and {MAX_TIMEOUT_S} seconds, got {self.timeout_s}")
        if self.backend != "inductor" and self.mode != "default":
            raise SpecError("mode", f"mode {self.mode!r} applies to backend inductor only, not {self.backend!r}")
        if self.backend == "cudagraphs" and self.device != "cuda":
            raise SpecError("backend", "cudagraphs needs device cuda")

    def __hash__(self):  # model_args is a dict; the JSON form is canonical (sorted keys)
        return hash(self.to_json())

    # -- ways in and out -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: Mapping) -> "ExperimentSpec":
        _reject_unknown(cls, d, "experiment spec")
        if "model" not in d or "batch_size" not in d:
            raise SpecError("model" if "model" not in d else "batch_size", "is required")
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "ExperimentSpec":
        try:
            d = json.loads(text)
        except (TypeError, ValueError) as e:
            raise SpecError("spec", f"not valid JSON ({e})") from None
        return cls.from_dict(d)

    @classmethod
    def from_row(cls, row) -> "ExperimentSpec":
        """Rebuild the spec a jobs row stores (its JSON column), validating it again."""
        stored = row.spec
        return cls.from_json(stored) if isinstance(stored, str) else cls.from_dict(stored)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["schedule"] = list(self.schedule)
        d["model_args"] = dict(self.model_args)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def check_model(self, catalog: Mapping[str, ModelInfo]) -> "ExperimentSpec":
        """Check the model name, its size parameters and the task against the models workers offer.

        Returns the spec with every size parameter filled in from the model's defaults, so that the
        stored record says exactly what ran."""
        info = catalog.get(self.model)
        if info is None:
            known = ", ".join(sorted(catalog)) or "none published yet"
            raise SpecError("model", f"unknown model {self.model!r}; known models: {known}")
        if self.task not in info.tasks:
            raise SpecError("task", f"model {self.model!r} supports {', '.join(info.tasks)} only")
        if self.scope == "blocks" and not info.blocks:
            raise SpecError("scope", f"model {self.model!r} names no repeated blocks (BLOCKS in its file): "
                                     "only scope model")
        params = {p.name: p for p in info.params}
        args = {}
        for key, value in self.model_args.items():
            if key not in params:
                allowed = ", ".join(params) or "none"
                raise SpecError(f"model_args.{key}", f"unknown parameter of {self.model!r}; it takes: {allowed}")
            args[key] = params[key].check(value, f"model_args.{key}")
        for p in info.params:
            args.setdefault(p.name, p.default)
        return _replace(self, model_args=args)

    @property
    def label(self) -> str:
        dyn = dynamic_name(self.dynamic)
        fg = (" fullgraph" if self.fullgraph else "") + (" blocks" if self.scope == "blocks" else "")
        fg += f" torch {self.torch}" if self.torch != ANY_TORCH else ""
        return f"{self.model} bs={self.batch_size} {self.backend}/{self.mode} dynamic={dyn}{fg} {self.device} {self.dtype} {self.task}"


def _replace(spec: ExperimentSpec, **changes) -> ExperimentSpec:
    return ExperimentSpec(**{**spec.to_dict(), **changes})


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
    iters: int = ExperimentSpec.iters
    timeout_s: int = ExperimentSpec.timeout_s
    repeat: int = 1
    # db.noise: a job whose rounds a measured cause disturbed is re-run, up to this many times per configuration;
    # every configuration runs in this many fresh processes (1: one), the later ones from the first's compile cache
    reruns: int = 2
    # 2, from an H100 sweep of the seed configurations: a repeat's warm first call and rounds cost 0.32x of a first
    # run (whose cold compile dominates), so a second repeat would take follow-ups past half of the first runs' GPU
    # time; the device's spread between processes (db.interval) keeps 2 processes' interval calibrated
    process_repeats: int = 2
    name: str = ""

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
        put("repeat", _int(self.repeat, "repeat"))
        if not 1 <= self.repeat <= MAX_REPEAT:
            raise SpecError("repeat", f"must be between 1 and {MAX_REPEAT}, got {self.repeat}")
        for key, low in (("reruns", 0), ("process_repeats", 1)):
            put(key, _int(getattr(self, key), key))
            if not low <= getattr(self, key) <= MAX_REPEAT:
                raise SpecError(key, f"must be between {low} and {MAX_REPEAT}, got {getattr(self, key)}")
        put("name", check_text(self.name, "name", blank_ok=True))

    @classmethod
    def from_dict(cls, d: Mapping) -> "SweepRequest":
        _reject_unknown(cls, d, "sweep")
        for key in ("model", "batch_sizes"):
            if key not in d:
                raise SpecError(key, "is required")
        return cls(**d)

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in (*(a.plural for a in AXES), "schedule", "torch_versions"):
            d[key] = list(d[key])
        d["model_args"] = dict(self.model_args)
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
            mode = folded_mode(swept["mode"], self.device)  # off CUDA, reduce-overhead is default (db.axes)
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
                cache=self.cache, trace=self.trace, schedule=self.schedule, iters=self.iters,
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
