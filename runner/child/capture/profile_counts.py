"""Fusion made visible: how many kernels one call launches, eager against compiled, and how many operators the
host dispatches for it, from torch.profiler over one steady-state call of each side (after the timed rounds,
so the profiler's own cost touches no timing).

On CUDA a kernel is a device activity the profiler saw (kernels, memcpy, memset: each a launch). On the CPU
nothing is launched; the unit is an operator that computes: an aten op the dispatcher called from outside any
other aten op (aten::linear, not the aten::addmm inside it), plus, on the compiled side, each call the inductor
wrapper makes to a kernel it generated (cpp_fused_...), which the profiler does not see: those are counted in
the output code's `call` function, once per compiled graph the profiled call ran. Host ops are every aten op
dispatched, nested ones included: the Python and dispatcher work a compiled graph saves.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch

GRAPH_CALL = "## Call CompiledFxGraph"


def count_call(step: Callable, inputs, device: torch.device, kernel_calls: list[int] = ()) -> dict:
    """{"kernels", "host_ops", "graph_calls", "estimated"} for one call of `step` (synchronised on CUDA);
    `kernel_calls`: the generated kernel calls of each compiled graph's output code (runner.child.capture.trace)."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        step(inputs)
        if cuda:
            torch.cuda.synchronize()
    events = _events(prof)
    aten, outermost = _host_ops(events)
    graph_calls = sum(1 for e in events if e.name.startswith(GRAPH_CALL))
    estimated = False
    if cuda:
        kernels = sum(1 for e in events if e.device)
    else:
        kernels = outermost
        per_graph = list(kernel_calls)
        if graph_calls and per_graph:
            # each graph's code, once per graph call; a frame compiled twice (a recompile) runs one of its codes,
            # so then the count is the mean per code times the calls seen
            estimated = graph_calls != len(per_graph)
            kernels += sum(per_graph) if not estimated else round(graph_calls * sum(per_graph) / len(per_graph))
    return {"kernels": kernels, "host_ops": len(aten), "graph_calls": graph_calls, "estimated": estimated}


class Event(NamedTuple):
    name: str
    device: bool  # a device activity (kernel, memcpy, memset)
    thread: int
    start_ns: int
    end_ns: int


def _events(prof) -> list[Event]:
    """Every event the profiler kept, read from kineto's own results: counting needs no more, and torch's
    FunctionEvent tree (prof.events()) cost 0.1-0.15 s per profiled training step of complexnet on the CPU, and
    more per step on a GPU, where it also links kernels to their launches. The FunctionEvents where kineto's
    results are not to be had."""
    from torch.autograd import DeviceType
    from torch.autograd.profiler import _filter_name

    try:
        raw = prof.profiler.kineto_results.events()
    except AttributeError:
        return [Event(e.name, e.device_type == DeviceType.CUDA, e.thread, int(e.time_range.start * 1e3),
                      int(e.time_range.end * 1e3)) for e in prof.events()]
    return [Event(e.name(), e.device_type() == DeviceType.CUDA, e.start_thread_id(), e.start_ns(),
                  e.start_ns() + e.duration_ns()) for e in raw if not _filter_name(e.name())]


def _host_ops(events: list[Event]) -> tuple[list[Event], int]:
    """The aten ops dispatched, each once (an op whose only child is the same op, as a redispatch records it, is
    one op: what torch's own event tree counts), and how many of them were called from outside any other aten op.
    Nesting by time, per thread: an event inside another's span is its child."""
    ops, outermost = [], 0
    for thread in {e.thread for e in events if not e.device}:
        stack: list[list] = []  # [event, its children, inside an aten op]
        done: list[list] = []
        for e in sorted((e for e in events if not e.device and e.thread == thread),
                        key=lambda e: (e.start_ns, -e.end_ns)):
            while stack and e.start_ns >= stack[-1][0].end_ns:
                done.append(stack.pop())
            parent = stack[-1] if stack else None
            node = [e, [], bool(parent and (parent[2] or parent[0].name.startswith("aten::")))]
            if parent:
                parent[1].append(e)
            stack.append(node)
        done += stack
        for e, children, inside in done:
            if not e.name.startswith("aten::"):
                continue
            ops.append(e)
            outermost += not inside
            if len(children) == 1 and children[0].name == e.name:
                ops.pop()  # the child is this op again: the parent is counted through it (never outermost itself)
    return ops, outermost


def count_both(eager_step: Callable, compiled_step: Callable, inputs, device: torch.device,
               kernel_calls: list[int]) -> dict:
    """The record's fields and the detail's `kernel_counts` (how they were counted)."""
    eager = count_call(eager_step, inputs, device)
    compiled = count_call(compiled_step, inputs, device, kernel_calls)
    unit = ("device kernels (CUDA activities) per call" if device.type == "cuda" else
            "outermost aten ops + inductor-generated kernel calls (from the output code) per call")
    return {"eager_kernels": eager["kernels"], "compiled_kernels": compiled["kernels"],
            "eager_host_ops": eager["host_ops"], "compiled_host_ops": compiled["host_ops"],
            "detail": {"unit": unit, "compiled_graph_calls": compiled["graph_calls"],
                       "estimated": compiled["estimated"]}}
