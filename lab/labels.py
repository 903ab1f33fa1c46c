"""Configuration labels: what tells one configuration from the others in view, and what they all share.

One labeller for the answer table (lab.answer), `runner report` and the Results plots (dashboard.data.series): a
label names only the fields whose values differ between the configurations in view, so that twelve
configurations read "max-autotune · dynamic=true" rather than a dozen identical settings each; what is
the same for all of them goes to one caption (`common`). No pandas, no torch, no streamlit.
"""
from __future__ import annotations

import json
from typing import Iterable, Mapping, Sequence

from lab.axes import BY_FIELD
from lab.checks import to_text

LEAD = ("backend", "mode")  # first in a label: the mode always, the backend when it differs


def part(field: str, value) -> str:
    """How one field's value reads in a label: "dynamic=true", "max-autotune", "warm cache", "torch 2.13.0"."""
    if field in BY_FIELD:
        return BY_FIELD[field].part(to_text(value))
    if field == "model_args":  # a JSON object (the answer's key) or its text form (the Results frame's `variant`)
        args = json.loads(value) if isinstance(value, str) and value.startswith("{") else value
        if isinstance(args, Mapping):
            return " ".join(f"{k}={v}" for k, v in sorted(args.items())) or "default size"
        return str(args) if args else "default size"
    if field == "variant":
        return str(value) if value else "default size"
    if field == "cache":
        return f"{value} cache"
    if field == "torch_version":
        return f"torch {value}"
    if field == "timing_protocol":
        return "old timing (protocol 1)" if str(value) == "1" else f"timing protocol {value}"
    return to_text(value)


def varying(configs: Sequence[Mapping], fields: Iterable[str], missing_differs: bool = True) -> list[str]:
    """The fields (in `fields`' order) whose values differ between these configurations. Without
    `missing_differs`, a missing value (None: a failed job that recorded no environment) differs from nothing."""
    def values(f):
        return {_hashable(c.get(f)) for c in configs if missing_differs or c.get(f) is not None}
    return [f for f in fields if len(values(f)) > 1]


def label(values: Mapping, differ: Sequence[str]) -> str:
    """One configuration's label: its mode ("max-autotune"; "aot_eager/default" when the backend differs too),
    then the parts of the other fields that differ ("max-autotune · dynamic=true")."""
    parts = [f"{values['backend']}/{values['mode']}" if "backend" in differ else str(values["mode"])]
    parts += [part(f, values[f]) for f in differ if f not in LEAD and values.get(f) is not None]
    return " · ".join(p for p in parts if p)


def labels(configs: Sequence[Mapping], fields: Sequence[str]) -> list[str]:
    """Each configuration's label, naming what differs between `configs`."""
    differ = varying(configs, fields)
    return [label(c, differ) for c in configs]


def common(configs: Sequence[Mapping], fields: Sequence[str], skip: Iterable[str] = ()) -> str:
    """What every configuration shares, as one line ("inductor · fullgraph=false · cpu · float32"): the caption
    that goes with labels that name only what differs. Empty when there is nothing in view."""
    if not configs:
        return ""
    differ, skip = set(varying(configs, fields)), set(skip)
    first = configs[0]
    parts = [part(f, first.get(f)) for f in fields
             if f not in differ and f not in skip and str(first.get(f)) not in ("None", "nan", "")]
    return " · ".join(parts)


def _hashable(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
