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

from typing import Callable

import torch

GRAPH_CALL = "## Call CompiledFxGraph"


def count_call(step: Callable, inputs, device: torch.device, kernel_calls: list[int] = ()) -> dict:
    """{"kernels", "host_ops", "graph_calls", "estimated"} for one call of `step` (synchronised on CUDA);
    `kernel_calls`: the generated kernel calls of each compiled graph's output code (runner.trace)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        step(inputs)
        if cuda:
            torch.cuda.synchronize()
    events = prof.events()
    aten = [e for e in events if e.name.startswith("aten::")]
    graph_calls = sum(1 for e in events if e.name.startswith(GRAPH_CALL))
    estimated = False
    if cuda:
        kernels = sum(1 for e in events if e.device_type == DeviceType.CUDA)
    else:
        kernels = sum(1 for e in aten if not _inside_aten(e))
        per_graph = list(kernel_calls)
        if graph_calls and per_graph:
            # each graph's code, once per graph call; a frame compiled twice (a recompile) runs one of its codes,
            # so then the count is the mean per code times the calls seen
            estimated = graph_calls != len(per_graph)
            kernels += sum(per_graph) if not estimated else round(graph_calls * sum(per_graph) / len(per_graph))
    return {"kernels": kernels, "host_ops": len(aten), "graph_calls": graph_calls, "estimated": estimated}


def _inside_aten(event) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return True
        parent = parent.cpu_parent
    return False


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
