"""The measurement protocol of one job. Runs inside the child process, never in the worker.

Order (DESIGN.md, "Measurement protocol"):
  build the model twice from one seed (eager copy, compiled copy), random inputs on the device/dtype;
  time the eager first call, then the compiled first call (compile + run: the warmup cost), then the
  compiled second call; compare outputs; warm both up; interleave eager and compiled rounds (ABBA order,
  every raw sample kept, calls that triggered a compile dropped and counted); read torch's compile
  counters and compilation metrics; run the shape schedule; fingerprint the environment.
"""
from __future__ import annotations

import copy
import functools
import linecache
import logging
import math
import os
import platform
import random
import re
import socket
import time
from typing import Callable

import torch

from db.spec import ExperimentSpec
from runner.timing import CompileWatch, make_timer, percentile, spread
from runner.zoo import ZooEntry, load_module

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# relative error ||compiled - eager|| / ||eager|| that still counts as the same result
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 5e-3}
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
COMPARE_CHUNK = 1 << 22
NOISY_SPREAD = 0.05  # a side whose round medians spread (IQR / median) past this is flagged noisy
# 1: one clock (CUDA: kernel time behind a head start; CPU: perf_counter per call). 2: latency as the caller
# sees it is the headline, throughput and GPU time beside it (runner.timing). Stored with every result.
TIMING_PROTOCOL = 2
WARMUP_MIN_CALLS, WARMUP_MIN_S = 3, 0.1

Report = Callable[[str, "float | None"], None]


class ExperimentFailed(Exception):
    """The experiment itself failed (compile error, unsupported setting, out of memory); says why and where."""


def run(spec: ExperimentSpec, entry: ZooEntry, report: Report) -> dict:
    """Measure one job; returns the result fields (db.models.Result column names)."""
    started = time.perf_counter()
    from torch._dynamo.utils import set_compilation_metrics_limit

    set_compilation_metrics_limit(1_000_000)  # we slice this list by position: it must never roll over (64)
    device = _device(spec.device)
    dtype = DTYPES[spec.dtype]
    training = spec.task == "training"
    breaks = GraphBreakLog()
    timer = make_timer(spec.device)
    watch = CompileWatch()
    metrics = _metrics

    report("building", None)
    module = load_module(entry)
    params = dict(spec.model_args)
    _seed(0)
    eager_model = module.build(**params)
    compiled_base = copy.deepcopy(eager_model)  # same weights on both sides
    for m in (eager_model, compiled_base):
        m.to(device=device, dtype=dtype)
        m.train(training)
    inputs = _inputs(module, entry, spec, spec.batch_size, device, dtype)

    compile_fn = functools.partial(torch.compile, backend=spec.backend,
                                   mode=spec.mode if spec.backend == "inductor" else None,
                                   dynamic=spec.dynamic, fullgraph=spec.fullgraph)
    compiled_model = (module.compile(compiled_base, compile_fn, **params) if hasattr(module, "compile")
                      else compile_fn(compiled_base))
    uses_cudagraphs = spec.device == "cuda" and (spec.mode in CUDAGRAPH_MODES or spec.backend == "cudagraphs")
    eager_step = make_step(eager_model, eager_model.parameters(), training, mark_cudagraph_step=False)
    compiled_step = make_step(compiled_model, compiled_base.parameters(), training,
                              mark_cudagraph_step=uses_cudagraphs)
    mem = Memory(spec.device)

    # 1. first calls: the warmup cost. Each side's memory window holds its second call alone: the same
    #    call on both sides, past one-time work (the eager side's lazy initialisation, the compiled side's
    #    compile temporaries). References for the accuracy check are copied to the host at once, so they
    #    take no device memory.
    report("eager first call", None)
    warm_libraries(device, dtype)  # handles and pools (cuBLAS, cuDNN, oneDNN, OpenMP): not the eager call's cost
    _seed(2)
    eager_first_s, out = _timed_once(timer, eager_step, inputs)
    eager_ref = _reference(out, eager_model if training else None)
    del out
    mem.start()
    eager_second_s, out = _timed_once(timer, eager_step, inputs)
    peak_eager = mem.peak_mb()
    del out  # nothing of the eager side may sit in the compiled side's memory window
    if training:
        eager_model.zero_grad(set_to_none=True)

    report("compiling", None)
    n_metrics = len(metrics())
    _seed(2)
    try:
        compiled_first_s, out = _timed_once(timer, compiled_step, inputs)
    except Exception as exc:
        raise ExperimentFailed(describe_compile_failure(exc, spec, metrics()[n_metrics:])) from exc
    compiled_ref = _reference(out, compiled_base if training else None)
    del out
    first_metrics = metrics()[n_metrics:]
    graph_count = watch.count()
    accuracy = compare(eager_ref, compiled_ref, spec.dtype, _accuracy_skip(entry, eager_model, training))
    del eager_ref, compiled_ref

    mem.start()  # after the compile: its temporaries (autotuning buffers) are not the model's memory
    compiled_second_s, _ = _timed_once(timer, compiled_step, inputs)
    peak_compiled = mem.peak_mb()
    report("warming up", None)
    est_compiled = _warmup(timer, lambda: compiled_step(inputs))
    est_eager = _warmup(timer, lambda: eager_step(inputs))

    # 2. interleaved rounds, both sides timed the same way, three clocks each (runner.timing)
    timer.plan(call_ms=max(est_eager[0], est_compiled[0]), issue_ms=max(est_eager[1], est_compiled[1]))
    gpu_before = gpu_state(spec.device)
    n_before_measure = len(metrics())
    sides = {"eager": lambda: eager_step(inputs), "compiled": lambda: compiled_step(inputs)}
    check = Crosscheck(timer, sides, spec.iters) if Crosscheck.wanted() else None
    samples = measure_rounds(timer, watch, sides, spec.iters, report,
                             between_rounds=check.harness_slice if check else None)
    measure_metrics = metrics()[n_before_measure:]
    gpu_after = gpu_state(spec.device)
    crosscheck = check.result(spec.device) if check else None
    work = count_work(eager_model, eager_step, inputs, training)

    # 3. the shape schedule: one call each, noting recompiles
    schedule = []
    if spec.schedule:
        report("schedule", None)
        schedule = run_schedule(timer, watch, module, entry, spec, device, dtype, eager_step, compiled_step)

    all_metrics = metrics()
    clocks = clock_fields(samples, timer.gpu, uses_cudagraphs)
    # the roofline places what the hardware did: kernel time where there is a GPU clock
    achieved = achieved_rates(work, clocks["compiled_gpu_ms"] or clocks["compiled_ms"])
    result = {
        "eager_first_call_s": eager_first_s,
        "compiled_first_call_s": compiled_first_s,
        "compiled_second_call_s": compiled_second_s,
        **clocks,
        # what compile costs against what it saves, in the caller's time: first calls and latency
        "break_even_calls": break_even_calls(eager_first_s, compiled_first_s, clocks["eager_ms"],
                                             clocks["compiled_ms"]),
        "timing_method": timer.method,
        "timing_protocol": TIMING_PROTOCOL,
        "samples_per_side": sum(len(b) for b in samples["compiled"]),
        "flops": work["flops"],
        "min_bytes": work["min_bytes"],
        **achieved,
        "graph_count": graph_count,
        "graph_breaks": breaks.count(),
        "recompiles": sum(1 for m in all_metrics if m.recompile_reason),
        "measure_recompiles": len(samples["dropped"]),  # timed calls during which dynamo compiled (dropped)
        "peak_mem_eager_mb": peak_eager,
        "peak_mem_compiled_mb": peak_compiled,
        "max_abs_error": accuracy["max_abs_error"],
        "rel_error": accuracy["rel_error"],
        "accuracy_ok": accuracy["ok"],
        **environment(spec.device),
        "samples": samples,
        "schedule": schedule,
        "detail": {
            "eager_second_call_s": eager_second_s,
            "calls_per_round": {"latency": timer.latency_calls, "throughput": timer.block_calls,
                                "gpu": getattr(timer, "gpu_calls", None)},
            **paired_spread(samples),
            "work": work,
            "graph_break_reasons": breaks.reasons(),
            "recompile_reasons": [{"compile_id": str(m.compile_id), "reason": m.recompile_reason}
                                  for m in all_metrics if m.recompile_reason],
            "recompiles_while_measuring": [str(m.compile_id) for m in measure_metrics],
            "compile_phases_s": compile_phases(first_metrics),
            "compile_breakdown_s": compile_breakdown(first_metrics, compiled_first_s),
            "cache_hits": _cache_hits(first_metrics),
            "accuracy_note": accuracy["note"],
            "memory_method": mem.method,
            "cudagraph_steps_marked": uses_cudagraphs,
            "crosscheck": crosscheck,
            "env": environment_detail(spec.device),
            "gpu_state": {"before_rounds": gpu_before, "after_rounds": gpu_after},
        },
    }
    result["detail"]["measure_s"] = time.perf_counter() - started
    return result


# -- building blocks ----------------------------------------------------------------------------------
def _device(name: str) -> torch.device:
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ExperimentFailed("device cuda was asked for, but this worker's child sees no CUDA device")
        return torch.device("cuda", 0)  # the worker pins its GPU with CUDA_VISIBLE_DEVICES
    return torch.device("cpu")


def _seed(n: int) -> None:
    random.seed(n)
    torch.manual_seed(n)
    try:
        import numpy as np

        np.random.seed(n)
    except ImportError:
        pass


def _inputs(module, entry: ZooEntry, spec: ExperimentSpec, size: int, device, dtype) -> tuple:
    """Seeded random inputs; `size` is the batch, or the model's SIZE_DIM (say seq_len)."""
    params = dict(spec.model_args)
    batch = size
    if entry.info.size_dim != "batch":
        params[entry.info.size_dim], batch = size, spec.batch_size
    _seed(1)
    raw = module.example_inputs(batch, **params)
    if isinstance(raw, torch.Tensor):
        raw = (raw,)
    return tuple(t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device) for t in raw)


def make_step(model, parameters, training: bool, mark_cudagraph_step: bool) -> Callable:
    """One call of the thing being measured: a forward under no_grad, or forward+backward+SGD step."""
    optimizer = torch.optim.SGD(list(parameters), lr=1e-3) if training else None

    def step(inputs):
        if mark_cudagraph_step:  # tells CUDA-graph trees a new iteration begins (outputs may be reused)
            torch.compiler.cudagraph_mark_step_begin()
        if optimizer is None:
            with torch.no_grad():
                return model(*inputs)
        optimizer.zero_grad(set_to_none=True)
        loss = _loss(model(*inputs))
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def _loss(out) -> torch.Tensor:
    return sum(t.float().pow(2).mean() for t in _tensors(out))


def _tensors(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    return []


def _timed_once(timer, step, inputs) -> tuple[float, object]:
    box = []
    seconds = timer.once(lambda: box.append(step(inputs)))
    return seconds, box[0]


def _reference(out, trained_model) -> list[torch.Tensor]:
    """Host copies of what a call produced: the outputs, plus every gradient for a training step."""
    tensors = [t.detach().to("cpu", copy=True) for t in _tensors(out)]
    if trained_model is not None:
        tensors += [p.grad.detach().to("cpu", copy=True) for p in trained_model.parameters() if p.grad is not None]
    return tensors


def _accuracy_skip(entry: ZooEntry, model, training: bool) -> str | None:
    if entry.stochastic:
        return f"{entry.info.name} is random by design (STOCHASTIC); outputs are not compared"
    if training and any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules()):
        return "training with dropout: eager and compiled draw different masks; outputs are not compared"
    return None


def compare(ref: list, out: list, dtype: str, skip: str | None) -> dict:
    """Compiled vs eager over all outputs (and gradients): max |diff|, and the largest per-tensor
    ||diff|| / ||ref|| (one pooled norm would let a large tensor hide a wrong small one, a bias's
    gradient say). Non-finite values (NaN, +inf, -inf) must sit at the same places on both sides."""
    if skip:
        return {"max_abs_error": None, "rel_error": None, "ok": None, "note": skip}
    if len(ref) != len(out) or any(a.shape != b.shape for a, b in zip(ref, out)):
        return {"max_abs_error": None, "rel_error": None, "ok": False,
                "note": "compiled outputs differ in number or shape from eager"}
    max_abs, worst_rel, nonfinite_mismatch = 0.0, 0.0, False
    for a, b in zip(ref, out):
        diff_sq, ref_sq = 0.0, 0.0
        # float64, in chunks: a 100M-element output must not need several GB at once
        for a64, b64 in zip(a.reshape(-1).split(COMPARE_CHUNK), b.reshape(-1).split(COMPARE_CHUNK)):
            a64, b64 = a64.double(), b64.double()
            finite_a, finite_b = a64.isfinite(), b64.isfinite()
            odd = ~finite_a | ~finite_b
            if bool(odd.any()):
                same = (a64[odd] == b64[odd]) | (a64[odd].isnan() & b64[odd].isnan())
                nonfinite_mismatch |= not bool(same.all())
            finite = finite_a & finite_b
            d = (a64 - b64)[finite]
            if d.numel():
                max_abs = max(max_abs, float(d.abs().max()))
                diff_sq += float((d * d).sum())
                ref_sq += float((a64[finite] ** 2).sum())
        rel = (diff_sq ** 0.5) / (ref_sq ** 0.5) if ref_sq > 0 else (0.0 if diff_sq == 0 else float("inf"))
        worst_rel = max(worst_rel, rel)
    ok = (not nonfinite_mismatch) and worst_rel <= TOLERANCE[dtype]
    note = f"largest per-tensor relative error vs tolerance {TOLERANCE[dtype]:g} for {dtype}"
    if nonfinite_mismatch:
        note += "; NaN/inf differ in place or sign"
    return {"max_abs_error": max_abs, "rel_error": worst_rel, "ok": ok, "note": note}


def warm_libraries(device, dtype) -> None:
    """Create the math libraries' handles, workspaces and thread pools before the eager first call,
    which would otherwise pay them alone (the compiled first call then finds them ready)."""
    a = torch.randn(64, 64, device=device).to(dtype)
    (a @ a).sum().item()
    try:
        x = torch.randn(2, 4, 16, 16, device=device).to(dtype)
        torch.nn.functional.conv2d(x, torch.randn(4, 4, 3, 3, device=device).to(dtype), padding=1).sum().item()
    except RuntimeError:  # no conv kernel for this dtype on this device: nothing to warm
        pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _warmup(timer, fn) -> tuple[float, float]:
    """Run until at least WARMUP_MIN_CALLS calls and WARMUP_MIN_S seconds. Returns the medians (of the
    later half) of a synchronous call's time and of the host's time to issue it (ms)."""
    calls, issues, spent = [], [], 0.0
    while len(calls) < WARMUP_MIN_CALLS or spent < WARMUP_MIN_S:
        seconds, issue_s = timer.once_and_issue(fn)
        calls.append(seconds * 1e3)
        issues.append(issue_s * 1e3)
        spent += seconds
        if len(calls) >= 1000:
            break
    half = len(calls) // 2
    return percentile(calls[half:], 50), percentile(issues[half:], 50)


BLOCK_CLOCKS = {"throughput": "throughput", "gpu": "gpu_time"}  # clock -> timer method, one side at a time


def sample_key(side: str, clock: str) -> str:
    """Where a clock's samples live in the record's `samples`: the headline (latency) under the side's own
    name, the others as eager_throughput, compiled_gpu, ..."""
    return side if clock == "latency" else f"{side}_{clock}"


def measure_rounds(timer, watch, sides: dict[str, Callable], rounds: int, report: Report,
                   between_rounds: Callable[[], None] | None = None) -> dict:
    """Interleaved rounds: in each, latency alternates the sides call by call, then each block clock times
    one side and then the other; which side leads alternates by round (ABBA). Every kept sample by round;
    calls during which dynamo compiled are dropped and counted."""
    names = list(sides)
    blocks = [c for c in BLOCK_CLOCKS if c != "gpu" or timer.gpu]
    samples = {sample_key(n, c): [] for n in names for c in ["latency", *blocks]} | {"dropped": []}

    def keep(name: str, clock: str, r: int, block: list) -> None:
        samples[sample_key(name, clock)].append([ms for ms, compiled in block if not compiled])
        samples["dropped"].extend({"side": name, "clock": clock, "round": r, "ms": ms}
                                  for ms, compiled in block if compiled)

    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name, block in zip(order, timer.latency([sides[n] for n in order], watch)):
            keep(name, "latency", r, block)
        for clock in blocks:
            for name in order:
                keep(name, clock, r, getattr(timer, BLOCK_CLOCKS[clock])(sides[name], watch))
        if between_rounds is not None:  # a reference timed over the same stretch of time (Crosscheck)
            between_rounds()
        report("measuring", (r + 1) / rounds)
    for name in names:
        if not any(samples[name]):
            raise ExperimentFailed(f"every timed {name} call triggered a compile; no steady state to measure "
                                   f"({len(samples['dropped'])} calls recompiled)")
    return samples


HOST_BOUND = 0.5  # a side whose GPU idles this share of its latency is host-bound (launches, Python, guards)
# a side whose GPU idles this share of its latency moves with the host's speed, which differs from process to
# process: one process cannot vouch for it (noisy). On an H100, mlp bs 64 compiled (GPU idle 39-47% of its
# latency) read 0.170 and 0.195 ms in fresh processes, eager 0.135 and 0.201 ms in another run
HOST_SENSITIVE = 0.25


def clock_fields(samples: dict, gpu: bool, cudagraphs: bool = False) -> dict:
    """The record's numbers from the three clocks' samples (runner.timing). The headline (eager_ms,
    compiled_ms, speedup, percentiles, spreads) is latency; throughput and GPU time beside it under their
    own names; the host overhead (1 - GPU time / latency) and, past HOST_BOUND, why in words; `noisy` and
    why (`noise_note`)."""
    out = {}
    for side in ("eager", "compiled"):
        lat = _flat(samples[side])
        out[f"{side}_ms"] = percentile(lat, 50)
        out[f"{side}_p10_ms"], out[f"{side}_p90_ms"] = percentile(lat, 10), percentile(lat, 90)
        out[f"{side}_spread"] = spread(_round_medians(samples[side]))
        out[f"{side}_throughput_ms"] = _median_or_none(_flat(samples.get(f"{side}_throughput", [])))
        gpu_ms = _median_or_none(_flat(samples.get(f"{side}_gpu", []))) if gpu else None
        out[f"{side}_gpu_ms"] = gpu_ms
        out[f"{side}_host_overhead"] = (max(0.0, 1.0 - gpu_ms / out[f"{side}_ms"])
                                        if gpu_ms is not None and out[f"{side}_ms"] > 0 else None)
    out["speedup"] = out["eager_ms"] / out["compiled_ms"]
    out["throughput_speedup"] = _ratio(out["eager_throughput_ms"], out["compiled_throughput_ms"])
    out["gpu_speedup"] = _ratio(out["eager_gpu_ms"], out["compiled_gpu_ms"])
    out["host_note"] = host_note(out["eager_host_overhead"], out["compiled_host_overhead"], cudagraphs)
    out["host_bound"] = None if out["eager_host_overhead"] is None else out["host_note"] is not None
    reasons = [f"{side}'s round medians spread {out[f'{side}_spread']:.0%} (IQR / median; past {NOISY_SPREAD:.0%})"
               for side in ("eager", "compiled") if (out[f"{side}_spread"] or 0) > NOISY_SPREAD]
    idle = {s: out[f"{s}_host_overhead"] for s in ("eager", "compiled") if (out[f"{s}_host_overhead"] or 0) >= HOST_SENSITIVE}
    if idle:
        sides = " and ".join(f"{s}'s {v:.0%}" for s, v in idle.items())
        reasons.append(f"host-sensitive: the host's Python, guards and launches are {sides} of the latency, and the "
                       "host's speed moves from process to process; repeat it (--repeat) to see how far")
    out["noisy"] = bool(reasons)
    out["noise_note"] = "; ".join(reasons) or None
    return out


def host_note(eager_idle: float | None, compiled_idle: float | None, cudagraphs: bool) -> str | None:
    """In words, when either side leaves the GPU idle for HOST_BOUND or more of each call: the caller's
    latency is then set by the host (Python, dispatch, guards, kernel launches), not by the kernels."""
    parts = []
    if eager_idle is not None and eager_idle >= HOST_BOUND:
        parts.append(f"eager leaves the GPU idle {eager_idle:.0%} of each call: launch-bound"
                     + ("" if cudagraphs else "; reduce-overhead's CUDA graphs target this"))
    if compiled_idle is not None and compiled_idle >= HOST_BOUND:
        parts.append(f"compiled leaves the GPU idle {compiled_idle:.0%} of each call: "
                     + ("the host work around the CUDA graph (guards, Python, copies) outweighs its kernels"
                        if cudagraphs else "dynamo's guards, Python and kernel launches outweigh the kernels"))
    return "; ".join(parts) or None


def paired_spread(samples: dict) -> dict:
    """speedup_p10 / speedup_p90 over per-round ratios of latency medians: the same round's two sides, so
    drift between rounds cancels."""
    ratios = [percentile(e, 50) / percentile(c, 50) for e, c in zip(samples["eager"], samples["compiled"]) if e and c]
    return {"speedup_p10": percentile(ratios, 10) if ratios else None,
            "speedup_p90": percentile(ratios, 90) if ratios else None}


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _flat(rounds: list[list[float]]) -> list[float]:
    return [x for block in rounds for x in block]


def _median_or_none(values: list[float]) -> float | None:
    return percentile(values, 50) if values else None


def _round_medians(rounds: list[list[float]]) -> list[float]:
    return [percentile(block, 50) for block in rounds if block]


# -- roofline -----------------------------------------------------------------------------------------
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
    io_bytes = sum(t.numel() * t.element_size() for t in list(inputs) + _tensors(out))
    return {"flops": float(counter.get_total_flops()),
            "min_bytes": float(io_bytes + state_bytes * (3 if training else 1)),
            "state_bytes": float(state_bytes), "io_bytes": float(io_bytes)}


def achieved_rates(work: dict, compiled_ms: float) -> dict:
    """Achieved rates of the compiled call. The % of roofline needs the device's measured ceilings,
    which the worker supplies (runner.roofline); without them those fields stay null."""
    seconds = compiled_ms / 1e3
    return {"achieved_tflops": work["flops"] / seconds / 1e12 if seconds > 0 else None,
            "achieved_gbps": work["min_bytes"] / seconds / 1e9 if seconds > 0 else None}


def break_even_calls(eager_first_s: float, compiled_first_s: float, eager_ms: float, compiled_ms: float) -> int | None:
    """Calls after which compiling has paid for itself, counting both first calls; None if never."""
    saved_per_call_s = (eager_ms - compiled_ms) / 1e3
    if saved_per_call_s <= 0:
        return None
    extra_s = compiled_first_s - eager_first_s
    if extra_s <= 0:
        return 1
    return 1 + math.ceil(round(extra_s / saved_per_call_s, 9))  # round: 9.9 / 0.001 is 9900.000000000002


def run_schedule(timer, watch, module, entry, spec, device, dtype, eager_step, compiled_step) -> list[dict]:
    calls = []
    for size in spec.schedule:
        inputs = _inputs(module, entry, spec, size, device, dtype)
        error, eager_s, compiled_s = None, None, None
        try:  # a size too large for memory ends this call's entry, not the job and its measurements
            eager_s, _ = _timed_once(timer, eager_step, inputs)
        except Exception as exc:
            calls.append({"size": size, "dim": entry.info.size_dim, "eager_s": None, "compiled_s": None,
                          "recompiled": False, "graphs_compiled": 0, "reason": None,
                          "error": f"eager call failed: {type(exc).__name__}: {_first_line(exc)}"})
            continue
        n_metrics, graphs = len(_metrics()), watch.count()
        try:
            compiled_s, _ = _timed_once(timer, compiled_step, inputs)
        except Exception as exc:
            error = describe_compile_failure(exc, spec, _metrics()[n_metrics:])
        new = _metrics()[n_metrics:]
        reasons = [m.recompile_reason for m in new if m.recompile_reason]
        calls.append({"size": size, "dim": entry.info.size_dim, "eager_s": eager_s, "compiled_s": compiled_s,
                      "recompiled": bool(reasons) or watch.count() != graphs,
                      "graphs_compiled": watch.count() - graphs, "reason": "; ".join(reasons) or None,
                      "error": error})
    return calls


class Crosscheck:
    """COMPILE_LAB_CROSSCHECK=1: time the same two callables again, in this process, with references a
    reader trusts. `harness`: PyTorch's compiler benchmark loop (benchmarks/dynamo common.py: per repeat,
    eager then compiled, each one call between a sync and a perf_counter read; medians, their ratio), the
    reference for `speedup`. On CUDA also `do_bench` (triton.testing.do_bench, median: kernel time from a
    flushed L2), the reference for `gpu_speedup`. bench/runner_vs_references.py prints them side by side.

    The harness runs in slices between the runner's rounds (SECONDS in all, at least 50 repeats), so both
    sample the same stretch of the host's time: run after the rounds, 2 s of it caught a slow spell of an
    H100 host that the rounds had mostly missed, and the reference, not the runner, read 11% low."""

    MIN_REPEAT, MAX_REPEAT, SECONDS = 50, 5000, 2.0
    DO_BENCH_REP_MS = 500  # triton's default is 100 ms: a host stall then moves its median

    def __init__(self, timer, steps: dict[str, Callable], rounds: int):
        self.timer, self.steps, self.slice_s = timer, steps, self.SECONDS / max(rounds, 1)
        self.times: dict[str, list[float]] = {name: [] for name in steps}

    @classmethod
    def wanted(cls) -> bool:
        return os.environ.get("COMPILE_LAB_CROSSCHECK") == "1"

    def harness_slice(self, seconds: float | None = None) -> None:
        """benchmarks/dynamo's loop for a slice of time: eager then compiled, one synchronous call each."""
        started = time.perf_counter()
        while len(self.times["eager"]) < self.MAX_REPEAT:
            for name, step in self.steps.items():
                self.times[name].append(self.timer.once(step) * 1e3)
            if time.perf_counter() - started >= (seconds or self.slice_s):
                break

    def result(self, device: str) -> dict:
        while len(self.times["eager"]) < self.MIN_REPEAT:
            self.harness_slice(0.0)
        out = {"harness_repeats": len(self.times["eager"])}
        out |= {f"harness_{n}_ms": percentile(v, 50) for n, v in self.times.items()}
        out["harness_speedup"] = out["harness_eager_ms"] / out["harness_compiled_ms"]
        if device == "cuda":
            from triton.testing import do_bench

            for name, step in self.steps.items():
                out[f"do_bench_{name}_ms"] = do_bench(step, rep=self.DO_BENCH_REP_MS, return_mode="median")
            out["do_bench_speedup"] = out["do_bench_eager_ms"] / out["do_bench_compiled_ms"]
            torch.cuda.synchronize()
        return out


# -- compiler introspection ---------------------------------------------------------------------------
def _metrics() -> list:
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


def compile_breakdown(metrics: list, first_call_s: float) -> dict:
    """The compiled first call cut into disjoint parts that add up to it: dynamo tracing (without what
    it calls), AOT autograd, inductor lowering and scheduling, code generation and kernel compile,
    autotuning, and the rest (guards, wrappers, the first run itself)."""
    phases = compile_phases(metrics)
    if not phases:
        return {"other (run, guards)": first_call_s}
    dynamo = phases.get("dynamo", 0.0)
    aot = phases.get("aot_autograd", 0.0)
    inductor = phases.get("inductor", 0.0)
    codegen = phases.get("inductor_codegen", 0.0)
    lowering = max(0.0, inductor - codegen)
    # max-autotune benchmarks its choices while lowering; carve that out of lowering, then codegen
    autotune = phases.get("autotune", 0.0)
    from_lowering = min(autotune, lowering)
    from_codegen = min(autotune - from_lowering, codegen)
    parts = {"dynamo tracing": dynamo - aot, "aot autograd": aot - inductor,
             "inductor lowering": lowering - from_lowering, "codegen + kernel compile": codegen - from_codegen,
             "autotuning": from_lowering + from_codegen}
    parts = {k: max(0.0, v) for k, v in parts.items()}
    parts["other (run, guards)"] = max(0.0, first_call_s - sum(parts.values()))
    return parts


def _cache_hits(metrics: list) -> dict:
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
    """Turn on torch's `graph_breaks` artifact. set_logs replaces every log setting, so a user's own
    TORCH_LOGS (say `recompiles,+dynamo` while debugging a model) is kept by adding graph_breaks to it
    and re-reading it instead."""
    user = os.environ.get("TORCH_LOGS", "").strip()
    if not user:
        torch._logging.set_logs(graph_breaks=True)
        return
    if "graph_breaks" not in user.replace("+", "").split(","):
        os.environ["TORCH_LOGS"] = f"{user},graph_breaks"
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


# -- memory -------------------------------------------------------------------------------------------
class Memory:
    """Peak memory of each side.

    CUDA: caching-allocator peak above what the models and inputs hold (taken at setup), so persistent
    compiled state (CUDA-graph pools) counts. CPU: peak resident set size above the size just before
    the side's calls (Linux VmHWM, reset through /proc/self/clear_refs): transient memory only."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        if self.cuda:
            torch.cuda.synchronize()
            self.base = torch.cuda.memory_allocated()
            self.method = "cuda allocator peak above models+inputs"
        else:
            self.base = 0
            self.method = "cpu peak RSS above RSS before the calls (VmHWM)"
        self.ok = True

    def start(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            return
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
            self.base = _proc_status_kb("VmRSS") * 1024
        except OSError:
            self.ok = False

    def peak_mb(self) -> float | None:
        if self.cuda:
            torch.cuda.synchronize()
            return (torch.cuda.max_memory_allocated() - self.base) / 2 ** 20
        if not self.ok:
            return None
        return max(0.0, (_proc_status_kb("VmHWM") * 1024 - self.base) / 2 ** 20)


def _proc_status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise OSError(f"{key} not in /proc/self/status")


# -- environment --------------------------------------------------------------------------------------
def environment(device: str) -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    if device == "cuda":
        name = torch.cuda.get_device_name(0)
    else:
        name = _cpu_model()
    return {"torch_version": torch.__version__, "triton_version": triton_version, "device_name": name,
            "cuda_version": torch.version.cuda, "hostname": socket.gethostname()}


def environment_detail(device: str) -> dict:
    d = {"python": platform.python_version(), "platform": platform.platform(), "cpu": _cpu_model(),
         "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
         "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
         "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        d.update(gpu_capability=f"{props.major}.{props.minor}", gpu_memory_gb=props.total_memory / 2 ** 30,
                 gpu_sms=props.multi_processor_count, gpu_uuid=str(getattr(props, "uuid", "")))
    return d


def gpu_state(device: str) -> dict | None:
    """SM clock, temperature and power when the rounds start and end (through NVML, where installed):
    a job that ran throttled or at idle clocks says so."""
    if device != "cuda":
        return None
    out = {}
    for key, read in (("sm_clock_mhz", torch.cuda.clock_rate), ("temperature_c", torch.cuda.temperature),
                      ("power_w", lambda: torch.cuda.power_draw() / 1000)):
        try:
            out[key] = read()
        except Exception:  # no NVML (pynvml) here, or the call is not supported: leave it out
            pass
    return out or None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
