"""The roofline's inputs: the work one call does (FLOPs, fewest bytes) and the rates the compiled call reached."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

from runner.child.accuracy import tensors

CACHE_ENV = "COMPILE_LAB_WORK_CACHE"  # a folder the worker keeps: one file per counted (model, sizes, ...)


def cached_work(key: dict, count: Callable[[], dict]) -> tuple[dict, bool]:
    """count_work's answer, kept per `key` (model file and its modification time, sizes, batch, dtype, task,
    device, torch version): the work of one eager call is the same for every mode, dynamic setting and repeat,
    so a sweep counts it once. (answer, whether it came from the cache)."""
    folder = os.environ.get(CACHE_ENV)
    if not folder:
        return count(), False
    name = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:32]
    path = Path(folder) / f"{name}.json"
    try:
        kept = json.loads(path.read_text())
        if kept.get("key") == json.loads(json.dumps(key, sort_keys=True, default=str)):
            return kept["work"], True
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    work = count()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "work": work}, sort_keys=True, default=str))
        os.replace(tmp, path)
    except OSError:  # a cache that cannot be written only costs the next job a count
        pass
    return work, False


def count_work(model, step, inputs, training: bool) -> dict:
    """FLOPs of one call (torch.utils.flop_counter, backward included for training) and the fewest
    bytes it must move: inputs and outputs once, parameters and buffers read once; a training step
    also writes every gradient and every updated parameter (3 passes over the parameters)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        out = step(inputs)
    state = list(model.parameters()) + list(model.buffers())
    state_bytes = sum(t.numel() * t.element_size() for t in state)
    io_bytes = sum(t.numel() * t.element_size() for t in list(inputs) + tensors(out))
    return {"flops": float(counter.get_total_flops()),
            "min_bytes": float(io_bytes + state_bytes * (3 if training else 1)),
            "state_bytes": float(state_bytes), "io_bytes": float(io_bytes)}


def achieved_rates(work: dict, compiled_ms: float) -> dict:
    """Achieved rates of the compiled call. The % of roofline needs the device's measured ceilings,
    which the worker supplies (runner.roofline); without them those fields stay null."""
    seconds = compiled_ms / 1e3
    ok = seconds > 0 and work.get("flops") is not None
    return {"achieved_tflops": work["flops"] / seconds / 1e12 if ok else None,
            "achieved_gbps": work["min_bytes"] / seconds / 1e9 if ok and work.get("min_bytes") is not None else None}
