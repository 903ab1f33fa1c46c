"""From the Submit form's plain values to validated sweeps (lab.spec's checks, the CLI's): text boxes to lists,
fields named for people; a model parameter with several choices makes one sweep per choice."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Mapping

from sqlalchemy import Engine

from db import queue
from lab import traffic
from lab.axes import AXES, BY_FIELD, COMPILE_AXES
from lab.checks import SpecError, dynamic_name
from lab.spec import ALL_LIVE, ExperimentSpec, ModelInfo
from lab.sweep import SweepRequest, split_sizes

# SpecError.field -> the form label shown next to the widget (model_args.X is handled below)
LABELS = {
    "model": "Model", "task": "Task", "device": "Device", "dtype": "dtype",
    **{name: axis.label for name, axis in BY_FIELD.items()},  # the swept axes (lab.axes)
    "cache": "Compile cache", "trace": "Keep the compile trace", "schedule": "Schedule", "iters": "Rounds",
    "traffic": "Traffic", "calls": "Calls", "bucket": "Bucket", "traffic.sizes": "Traffic",
    "timeout_s": "Timeout (s)",
    "repeat": "Repeat", "reruns": "Re-runs", "process_repeats": "Processes", "name": "Sweep name",
    "model_args": "Model parameters", "torch_versions": "Torch versions", "tags": "Tags", "note": "Note",
}
# which widget a field's error is drawn under (the sweep-level field for a per-job one)
SLOT = {axis.field: axis.plural for axis in AXES}


@dataclass
class FormValues:
    """What the Submit form holds: plain values, no widgets."""

    model: str
    params: dict = field(default_factory=dict)  # name -> value, or a list of values for a choice parameter
    # defaults live once, on ExperimentSpec; the form only spells them as it shows them
    task: str = ExperimentSpec.task
    device: str = ExperimentSpec.device
    dtype: str = ExperimentSpec.dtype
    batch_sizes: str = "8"
    backends: list = field(default_factory=lambda: [ExperimentSpec.backend])
    modes: list = field(default_factory=lambda: [ExperimentSpec.mode])
    dynamics: list = field(default_factory=lambda: [dynamic_name(ExperimentSpec.dynamic)])
    fullgraphs: list = field(default_factory=lambda: [str(ExperimentSpec.fullgraph).lower()])
    scopes: list = field(default_factory=lambda: [ExperimentSpec.scope])
    torch_versions: list = field(default_factory=lambda: [ExperimentSpec.torch])
    cache: str = ExperimentSpec.cache
    trace: bool = ExperimentSpec.trace
    schedule: str = ""
    traffic: str = ""  # lab.traffic: uniform:1..512, chat:1..512, sizes, or size: count lines
    calls: str = ""  # the stream's calls ("": its default)
    bucket: str = ""  # pad the compiled side's sizes up to a multiple of this ("": no padding)
    iters: int = ExperimentSpec.iters
    timeout_s: int = ExperimentSpec.timeout_s
    repeat: int = 1
    reruns: int = SweepRequest.reruns
    process_repeats: int = SweepRequest.process_repeats
    name: str = ""
    tags: str = ""  # commas or spaces between them (lab.team.check_tags)
    note: str = ""


@dataclass
class Plan:
    """What a submit would store: the sweeps, how many jobs, notes; or what is wrong, by field."""

    requests: list[SweepRequest] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # one per job, in submit order
    jobs: int = 0
    notes: list[str] = field(default_factory=list)
    error: SpecError | None = None
    errors: list[SpecError] = field(default_factory=list)  # every field found wrong (error: the first)

    @property
    def ok(self) -> bool:
        return self.error is None and self.jobs > 0


def slot_for(field_name: str) -> str:
    return SLOT.get(field_name, field_name)


def label_for(field_name: str) -> str:
    if field_name.startswith("model_args."):
        return f"Parameter {field_name.split('.', 1)[1]}"
    return LABELS.get(field_name, field_name)


def message(error: SpecError, labels: Mapping[str, str] | None = None) -> str:
    """The error as a person reads it next to the widget: the label (`labels`' where a form names a field its own
    way), then what is wrong."""
    text = str(error).split(": ", 1)[1] if ": " in str(error) else str(error)
    return f"{(labels or {}).get(error.field) or label_for(error.field)}: {text}"


def _arg_combinations(params: Mapping) -> list[dict]:
    """One dict of model arguments per combination of multi-valued (choice) parameters."""
    names = list(params)
    choices = [v if isinstance(v, (list, tuple)) else [v] for v in params.values()]
    for name, values in zip(names, choices):
        if not values:
            raise SpecError(f"model_args.{name}", "choose at least one value")
    return [dict(zip(names, combo)) for combo in itertools.product(*choices)]


def plan(values: FormValues, catalog: Mapping[str, ModelInfo], live_torch: list[str] | None = None) -> Plan:
    """Validate the form exactly as submit will, and count the jobs it would create. "Every version a live worker
    offers" (all-live) becomes `live_torch`, the versions live workers run now. A wrong form gets every wrong field's
    error at once, not only the first (field_errors)."""
    out = Plan()
    try:
        _expand(values, catalog, live_torch, out)
    except SpecError as e:
        out.error = e
    if out.error is not None:
        slots = {slot_for(out.error.field)}
        out.errors = [out.error]
        for e in field_errors(values, catalog, live_torch):
            if slot_for(e.field) not in slots:  # one message per widget
                slots.add(slot_for(e.field))
                out.errors.append(e)
    if out.error is None and out.jobs and (values.process_repeats > 1 or values.reruns > 0):  # what follows them
        # a configuration's `repeat` copies are its processes already (lab.noise counts them); re-runs are per
        # configuration; earlier disagreement on the device can plan more processes (lab.history): at least
        configs = out.jobs // max(values.repeat, 1)
        processes = max(values.process_repeats, values.repeat)
        more = configs * (processes - values.repeat)
        said = [f"at least {more:,} more follow as these end: each configuration runs in {processes} fresh processes"
                ] if more else []
        if values.reruns:
            said.append(f"up to {configs * values.reruns:,} re-runs replace runs a measured cause disturbed")
        if values.process_repeats >= 2:
            said.append("one more process where a configuration's processes disagree")
        text = "; ".join(said)
        out.notes.append(f"{text[0].upper()}{text[1:]} (Queue shows each as it is queued).")
    if out.error is None and values.device == "cpu":  # what a seed-note preset means on a CPU-only lab
        if any(m.startswith("max-autotune") for m in values.modes):
            out.notes.append(f"max-autotune on the CPU benchmarks kernel choices while it compiles: on conv models "
                             f"that can take many minutes per job (timeout: {values.timeout_s:,} s).")
    elif out.error is None and any(m.startswith("max-autotune") for m in values.modes):
        out.notes.append(f"max-autotune benchmarks kernel choices while it compiles, which on conv models can take "
                         f"many minutes: with a cold cache on an H100, complexnet at 96 px took 1,058 s of first call, "
                         f"localopt 67 s (bench/results/). Timeout: {values.timeout_s:,} s.")
    return out


def _expand(values: FormValues, catalog: Mapping[str, ModelInfo], live_torch: list[str] | None, out: Plan) -> None:
    """The form's sweeps, their jobs and notes into `out`; the first problem raised as a SpecError."""
    versions = [x for v in values.torch_versions for x in ((live_torch or []) if v == ALL_LIVE else [v])]
    if ALL_LIVE in values.torch_versions and not live_torch:
        raise SpecError("torch_versions", "no live worker has published its torch version yet")
    combos = _arg_combinations(values.params)
    for args in combos:
        varying = {k: v for k, v in args.items() if isinstance(values.params[k], (list, tuple))
                   and len(values.params[k]) > 1}
        name = values.name.strip()
        if varying:
            name = f"{name or values.model} ({', '.join(f'{k}={v}' for k, v in varying.items())})"
        request = SweepRequest.from_dict({
            "model": values.model, "model_args": args,
            "batch_sizes": split_sizes(values.batch_sizes, "batch_sizes"),
            "task": values.task, "device": values.device, "dtype": values.dtype,
            **{a.plural: list(getattr(values, a.plural)) for a in COMPILE_AXES}, "cache": values.cache,
            "torch_versions": versions,
            "trace": values.trace,
            "schedule": split_sizes(values.schedule, "schedule"),
            "traffic": traffic.make(values.traffic, values.calls.strip() or None, values.bucket.strip() or None)
            if values.traffic.strip() else _no_traffic(values),
            "iters": values.iters, "timeout_s": values.timeout_s, "repeat": values.repeat,
            "reruns": values.reruns, "process_repeats": values.process_repeats, "name": name,
            "tags": values.tags, "note": values.note})
        specs, notes = request.expand(catalog)
        out.requests.append(request)
        out.jobs += len(specs)
        out.labels += [spec.label for spec in specs]
        out.notes += [n for n in notes if n not in out.notes]


def _no_traffic(values: FormValues) -> dict:
    if values.calls.strip() or values.bucket.strip():
        raise SpecError("traffic", "Calls and Bucket shape a traffic stream: give the stream too")
    return {}


# the form's fields judged one at a time (a group: fields read together); the model and device stay the form's
ALONE = (("batch_sizes",), ("task",), ("dtype",), *((a.plural,) for a in COMPILE_AXES), ("torch_versions",), ("cache",),
         ("schedule",), ("traffic", "calls", "bucket"), ("iters",), ("timeout_s",), ("repeat",), ("reruns",),
         ("process_repeats",), ("name",), ("tags",), ("note",), ("params",))


def field_errors(values: FormValues, catalog: Mapping[str, ModelInfo],
                 live_torch: list[str] | None = None) -> list[SpecError]:
    """Each field (or group) checked alone, by the same rules as the whole form: the form's model and device with
    every other field at its default. A problem of two fields together shows as the whole form's first error."""
    base = FormValues(model=values.model, device=values.device)
    try:
        _expand(base, catalog, live_torch, Plan())
    except SpecError:  # the defaults themselves do not fit this model: the whole form's error says why
        return []
    errors = []
    for group in ALONE:
        try:
            _expand(replace(base, **{name: getattr(values, name) for name in group}), catalog, live_torch, Plan())
        except SpecError as e:
            errors.append(e)
    return errors


def submit_all(engine: Engine, planned: Plan, catalog: Mapping[str, ModelInfo],
               created_by: str | None = None) -> list[tuple[int, list[int]]]:
    """Store the planned sweeps in one transaction (db.queue.submit_many: all or nothing), validated
    again right before storing: the catalog may have changed since `plan`. `created_by`: the signed-in person
    (None: the server's OS user, as the CLI records its own)."""
    if not planned.ok:
        raise planned.error or SpecError("batch_sizes", "nothing to submit")
    return [(sweep_id, job_ids) for sweep_id, job_ids, _ in queue.submit_many(engine, planned.requests, catalog,
                                                                              created_by)]
