"""What the compiler did and why: torch's compilation metrics, compile phases, cache hits, graph breaks with
the user's source line, and a compile failure in one line a person can act on."""
from __future__ import annotations

import linecache
import logging
import os
import re

import torch

from lab.spec import ExperimentSpec


def metrics() -> list:
    from torch._dynamo.utils import get_compilation_metrics

    return list(get_compilation_metrics())


_PHASES = {"dynamo": "dynamo_cumulative_compile_time_us", "aot_autograd": "aot_autograd_cumulative_compile_time_us",
           "inductor": "inductor_cumulative_compile_time_us",
           "inductor_codegen": "inductor_code_gen_cumulative_compile_time_us",
           "triton_compile": "triton_compile_time_us", "autotune": "compile_time_autotune_time_us"}


def compile_phases(metrics: list) -> dict:
    """Per-phase compile seconds of the first compiled call, summed over its frames (phases nest:
    dynamo includes aot_autograd, which includes inductor)."""
    out = {}
    for name, attr in _PHASES.items():
        values = [getattr(m, attr, None) for m in metrics]
        values = [v for v in values if v is not None]
        if values:
            out[name] = sum(values) / 1e6
    return out


def compile_breakdown(metrics: list, first_call_s: float, left_out: dict | None = None) -> dict:
    """The compiled first call cut into disjoint parts that add up to it: dynamo tracing (without what
    it calls), AOT autograd, inductor lowering and scheduling, code generation and kernel compile,
    autotuning, and the rest (guards, wrappers, the first run itself). Each compile's row is cut on its own: a
    training step's backward is compiled by inductor lazily, in a row of its own with no dynamo or AOT time, so
    summed columns would take its inductor time off the forward's AOT autograd. `left_out`: {part: seconds} the
    lab spent inside a part (capturing the trace: runner.child.capture.trace.TraceShares), taken out of that part
    as `first_call_s` already leaves it out, so the rest is not squeezed by it."""
    rows = [compile_phases([m]) for m in metrics]
    rows = [r for r in rows if r]
    if not rows:
        return {"other (run, guards)": first_call_s}
    parts = dict.fromkeys(("dynamo tracing", "aot autograd", "inductor lowering", "codegen + kernel compile",
                           "autotuning"), 0.0)
    for row in rows:
        dynamo, aot, inductor, codegen, autotune = (row.get(k, 0.0) for k in
                                                    ("dynamo", "aot_autograd", "inductor", "inductor_codegen",
                                                     "autotune"))
        lowering = max(0.0, inductor - codegen)
        # max-autotune benchmarks its choices while lowering; carve that out of lowering, then codegen
        from_lowering = min(autotune, lowering)
        from_codegen = min(autotune - from_lowering, codegen)
        for part, seconds in (("dynamo tracing", dynamo - aot), ("aot autograd", aot - inductor),
                              ("inductor lowering", lowering - from_lowering),
                              ("codegen + kernel compile", codegen - from_codegen),
                              ("autotuning", from_lowering + from_codegen)):
            parts[part] += max(0.0, seconds)
    parts = {k: max(0.0, v - (left_out or {}).get(k, 0.0)) for k, v in parts.items()}
    over = sum(parts.values()) - first_call_s
    if over > 0:  # the lab's share torch counts in all (left out of first_call_s) but no part was given: it lies in
        # the parts, and is taken from the largest, so that they still add up to the call (a CI run: 1.6 ms of 1.7 s)
        largest = max(parts, key=parts.get)
        parts[largest] = max(0.0, parts[largest] - over)
    parts["other (run, guards)"] = max(0.0, first_call_s - sum(parts.values()))
    return parts


def cache_hits(metrics: list) -> dict:
    keys = ("inductor_fx_local_cache_hit_count", "inductor_fx_local_cache_miss_count",
            "aotautograd_local_cache_hit_count", "aotautograd_local_cache_miss_count")
    return {k: sum(getattr(m, k, None) or 0 for m in metrics) for k in keys}


class GraphBreakLog:
    """Graph-break reasons with the user source line, from torch's `graph_breaks` logging artifact
    (records captured in-process; torch also prints them to the job's log)."""

    _LOCATION = re.compile(r"in user code at (.+?):(\d+)")

    def __init__(self):
        from torch._dynamo.utils import counters

        self._counters = counters
        self._records: list[dict] = []
        _enable_graph_break_logs()
        handler = logging.Handler(logging.DEBUG)
        handler.emit = self._emit
        logging.getLogger("torch._dynamo.symbolic_convert.__graph_breaks").addHandler(handler)

    def _emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        where = self._LOCATION.search(text)
        body = text.split("Graph Break Reason:", 1)[-1].split("User code traceback:", 1)[0]
        reason = " ".join(line.strip() for line in body.splitlines() if line.strip())
        entry = {"reason": reason[:800]}
        if where:
            path, line = where.group(1), int(where.group(2))
            entry.update(file=path, line=line, source=linecache.getline(path, line).strip())
        self._records.append(entry)

    def count(self) -> int:
        return int(sum(self._counters["graph_break"].values()))

    def reasons(self) -> list[dict]:
        if self._records:
            return self._records
        return [{"reason": r.splitlines()[0], "count": n} for r, n in self._counters["graph_break"].items()]


def _enable_graph_break_logs() -> None:
    """Turn on torch's `graph_breaks` and `cudagraphs` artifacts (the latter carries why CUDA graphs were
    skipped: runner.child.capture.cudagraphs). set_logs replaces every log setting, so a user's own TORCH_LOGS (say
    `recompiles,+dynamo` while debugging a model) is kept by adding ours to it and re-reading it instead."""
    user = os.environ.get("TORCH_LOGS", "").strip()
    if not user:
        torch._logging.set_logs(graph_breaks=True, cudagraphs=True)
        return
    have = user.replace("+", "").split(",")
    os.environ["TORCH_LOGS"] = ",".join([user] + [a for a in ("graph_breaks", "cudagraphs") if a not in have])
    torch._logging._init_logs()  # what torch runs at import: parses TORCH_LOGS


_USER_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def describe_compile_failure(exc: BaseException, spec: ExperimentSpec, metrics: list) -> str:
    """One line a person can act on: what failed, the cause torch gives, and the user source line."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    where = None
    for m in reversed(metrics):
        if getattr(m, "fail_user_frame_filename", None):
            where = (m.fail_user_frame_filename, int(m.fail_user_frame_lineno))
            break
    if where is None and "from user code" in text:
        found = _USER_FRAME.findall(text.split("from user code", 1)[1])
        if found:
            where = (found[-1][0], int(found[-1][1]))
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        head = "CUDA out of memory in the compiled call"
    elif spec.fullgraph and _is_dynamo_error(exc):
        head = "fullgraph=True: graph break, the model cannot be captured as one graph"
    else:
        head = "compiled call failed"
    msg = f"{head}: {type(exc).__name__}: {first}"
    if where:
        source = linecache.getline(where[0], where[1]).strip()
        msg += f" | at {where[0]}:{where[1]}" + (f": {source}" if source else "")
    return msg


def _is_dynamo_error(exc: BaseException) -> bool:
    from torch._dynamo import exc as dynamo_exc

    return isinstance(exc, (dynamo_exc.Unsupported, dynamo_exc.UserError, dynamo_exc.TorchRuntimeError))
