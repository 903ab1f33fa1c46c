"""The experiment record: one frozen ExperimentSpec flows form -> DB -> worker -> child unchanged.

No torch, no streamlit here. Every way in (CLI flags, the dashboard form, JSON from the database)
goes through `ExperimentSpec.from_dict` (a sweep: lab.sweep.SweepRequest.from_dict), which rejects unknown
keys and bad values with a SpecError that names the field (lab.checks). Defaults live once: on the dataclasses.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from lab import traffic as traffic_stream
from lab.axes import BACKENDS, BY_FIELD, MODES
from lab.checks import (
    TRI,
    SpecError,
    check_text,
    choice,
    integer,
    known_fields,
    parse_bool,
    parse_dynamic,
    reject_unknown,
    to_text,
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
# spec fields added since the first release, with the default older rows mean
LATER_FIELDS = {"scope": "model", "torch": "any", "traffic": {}}
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
def spec_key(spec: Mapping) -> str:
    """One configuration's name for the index of a sweep's jobs (jobs.config) and the kept compile caches: a hash
    of the stored spec (ExperimentSpec.to_dict()), the same for a first run and every follow-up of it."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def stored_spec(value) -> dict:
    """A jobs row's spec as a dict, or {} when the row holds something else (a corrupt or hand-made
    row: the worker fails it with a reason; pages must still list it). A field added to the spec after the
    row was stored (scope) reads as its default, as the worker reads it."""
    if not isinstance(value, dict):
        return {}
    return {**{k: v for k, v in LATER_FIELDS.items() if "model" in value}, **value}


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
        value = integer(value, where)
        if not self.minimum <= value <= self.maximum:
            raise SpecError(where, f"{value:,} is outside {self.minimum:,}..{self.maximum:,}")
        return value


KNOWN_SHOWN = 40  # an unknown model's error lists this many known names (a worker with timm offers ~1,300)


def open_arg(key: str, value: Any) -> int | str:
    """A field of an open model (say a Hugging Face config's `num_hidden_layers`): a name, and a number or a word."""
    where = f"model_args.{key}"
    if not (isinstance(key, str) and key.isidentifier()):
        raise SpecError(where, "expected a field name (letters, digits, _)")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SpecError(where, f"expected a number or a word, got {type(value).__name__}")
    if isinstance(value, int):
        return integer(value, where)
    if not value or len(value) > 200 or not all(c.isalnum() or c in "._-+" for c in value):
        raise SpecError(where, f"{value[:40]!r}: expected a number, true/false or a word (letters, digits, . _ - +)")
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
    # takes any FIELD=VALUE besides its size parameters (a Hugging Face config's fields: runner.zoo.family_hf)
    open_args: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> "ModelInfo":
        """Published by a worker that may be newer than this reader: fields it does not know are dropped
        (and logged once), so one newer worker cannot break Submit for everyone."""
        d = known_fields(cls, d)
        d["params"] = tuple(ParamInfo(**{**known_fields(ParamInfo, p), "choices": tuple(p.get("choices", ()))})
                            for p in d.get("params", ()))
        d["tasks"] = tuple(d.get("tasks", TASKS))
        d["blocks"] = tuple(d.get("blocks", ()))
        return cls(**d)

    def param_defaults(self) -> dict:
        return {p.name: p.default for p in self.params}


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
    # a stream of calls of varying size replayed eagerly and compiled (lab.traffic): {} or {source, sizes, bucket}
    traffic: Mapping = field(default_factory=dict)
    iters: int = 30
    timeout_s: int = 1800

    def __post_init__(self):
        # Normalise and check every field, so no invalid spec can exist at all.
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        if not isinstance(self.model, str) or not self.model.strip():
            raise SpecError("model", "a model name is required")
        put("model", check_text(self.model, "model", max_len=100))
        put("batch_size", integer(self.batch_size, "batch_size"))
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise SpecError("batch_size", f"must be a positive integer up to {MAX_BATCH:,}, got {self.batch_size:,}")
        if not isinstance(self.model_args, Mapping):
            raise SpecError("model_args", "expected an object of size parameters")
        put("model_args", dict(sorted(self.model_args.items())))
        put("task", choice(self.task, TASKS, "task"))
        put("device", choice(self.device, DEVICES, "device"))
        put("dtype", choice(self.dtype, DTYPES, "dtype"))
        put("backend", choice(self.backend, BACKENDS, "backend"))
        put("mode", choice(self.mode, MODES, "mode"))
        put("dynamic", parse_dynamic(self.dynamic))
        put("fullgraph", parse_bool(self.fullgraph, "fullgraph"))
        put("scope", choice(self.scope, BY_FIELD["scope"].values, "scope"))
        put("torch", check_torch(self.torch))
        put("cache", choice(self.cache, CACHES, "cache"))
        put("trace", parse_bool(self.trace, "trace"))
        if isinstance(self.schedule, (str, bytes)) or not isinstance(self.schedule, Iterable):
            raise SpecError("schedule", "expected a list of sizes")
        put("schedule", tuple(integer(v, "schedule") for v in self.schedule))
        if len(self.schedule) > MAX_SCHEDULE:
            raise SpecError("schedule", f"at most {MAX_SCHEDULE:,} calls")
        if any(not 1 <= v <= MAX_BATCH for v in self.schedule):
            raise SpecError("schedule", "every size must be a positive integer")
        put("traffic", traffic_stream.check(self.traffic, MAX_BATCH))
        if self.traffic and self.schedule:
            raise SpecError("traffic", "a job replays traffic or runs a schedule, not both")
        put("iters", integer(self.iters, "iters"))
        if not 1 <= self.iters <= MAX_ITERS:
            raise SpecError("iters", f"must be between 1 and {MAX_ITERS:,}, got {self.iters:,}")
        put("timeout_s", integer(self.timeout_s, "timeout_s"))
        if not 1 <= self.timeout_s <= MAX_TIMEOUT_S:
            raise SpecError("timeout_s", f"must be between 1 and {MAX_TIMEOUT_S:,} seconds, got {self.timeout_s:,}")
        if self.backend != "inductor" and self.mode != "default":
            raise SpecError("mode", f"mode {self.mode!r} applies to backend inductor only, not {self.backend!r}")
        if self.backend == "cudagraphs" and self.device != "cuda":
            raise SpecError("backend", "cudagraphs needs device cuda")

    def __hash__(self):  # model_args is a dict; the JSON form is canonical (sorted keys)
        return hash(self.to_json())

    # -- ways in and out -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: Mapping) -> "ExperimentSpec":
        reject_unknown(cls, d, "experiment spec")
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
        if self.traffic:
            d["traffic"] = dict(self.traffic)
        else:  # a job without a stream is stored as before streams existed: its configuration key stays the same
            del d["traffic"]
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def check_model(self, catalog: Mapping[str, ModelInfo]) -> "ExperimentSpec":
        """Check the model name, its size parameters and the task against the models workers offer.

        Returns the spec with every size parameter filled in from the model's defaults, so that the
        stored record says exactly what ran."""
        info = catalog.get(self.model)
        if info is None:
            names = sorted(catalog)
            known = ", ".join(names[:KNOWN_SHOWN]) or "none published yet"
            more = f" and {len(names) - KNOWN_SHOWN} more (runner models)" if len(names) > KNOWN_SHOWN else ""
            raise SpecError("model", f"unknown model {self.model!r}; known models: {known}{more}")
        if self.task not in info.tasks:
            raise SpecError("task", f"model {self.model!r} supports {', '.join(info.tasks)} only")
        if self.scope == "blocks" and not info.blocks:
            raise SpecError("scope", f"model {self.model!r} names no repeated blocks (BLOCKS in its file): "
                                     "only scope model")
        params = {p.name: p for p in info.params}
        args = {}
        for key, value in self.model_args.items():
            if key not in params and info.open_args:
                args[key] = open_arg(key, value)
                continue
            if key not in params:
                allowed = ", ".join(params) or "none"
                raise SpecError(f"model_args.{key}", f"unknown parameter of {self.model!r}; it takes: {allowed}")
            args[key] = params[key].check(value, f"model_args.{key}")
        for p in info.params:
            args.setdefault(p.name, p.default)
        dim = params.get(info.size_dim)
        if self.traffic and dim is not None and not dim.choices:  # the stream varies a size parameter: its range
            bad = [i for i, v in enumerate(self.traffic["sizes"], 1) if not dim.minimum <= traffic_stream.padded(
                v, self.traffic["bucket"]) <= dim.maximum]
            if bad:  # where, not which size: the stream may have been read from a file
                raise SpecError("traffic", f"{len(bad)} of the stream's calls (the first: call {bad[0]}) have a size, "
                                           f"padded, outside {self.model}'s {dim.name} range {dim.minimum}..{dim.maximum}")
        return _replace(self, model_args=args)

    @property
    def label(self) -> str:
        return job_label(self.to_dict())


def job_label(values: Mapping) -> str:
    """One job's settings in a line, the one way every list of jobs names a job: "simplenet bs=8 inductor/default
    dynamic=none fullgraph blocks cpu float32 inference torch 2.14" (fullgraph, blocks and a torch pin only where set;
    the pin last, where `runner status` follows it with why a pinned job waits). From a spec's dict, a jobs row's
    stored spec or a Results row (dynamic and fullgraph as values or their names); a field it lacks (a spec stored by
    hand) is left out, or reads None where the line needs it."""
    v = values.get
    text = f"{v('model')} bs={v('batch_size')} {v('backend')}/{v('mode')} dynamic={to_text(v('dynamic'))}"
    text += " fullgraph" if v("fullgraph") in (True, "true") else ""
    text += " blocks" if v("scope") == "blocks" else ""
    text += "".join(f" {v(k)}" for k in ("device", "dtype", "task") if v(k) is not None)
    return text + (f" torch {v('torch')}" if v("torch") not in (None, ANY_TORCH) else "")


def _replace(spec: ExperimentSpec, **changes) -> ExperimentSpec:
    return ExperimentSpec(**{**spec.to_dict(), **changes})


