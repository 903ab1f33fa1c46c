"""The measurement protocol of one job, as a handful of named steps. Runs inside the child process, never in
the worker.

Order (DESIGN.md, "Measurement protocol"):
  build: the model twice from one seed (eager copy, compiled copy), random inputs on the device/dtype;
  first calls: the eager first call, then the compiled first call (compile + run: the warmup cost), then
    each side's second call in its own memory window; outputs compared (runner.accuracy);
  steady state: both sides warmed up, then interleaved rounds of three clocks (runner.rounds, runner.timing),
    every raw sample kept, calls that triggered a compile dropped and counted;
  kernels per call, eager and compiled (runner.profile_counts), the work of one call (runner.work), the shape
    schedule, then the record: numbers from the samples (runner.stats), what the compiler did (runner.introspect,
    runner.trace), where it ran (runner.environment). The compiler's texts go to the artifacts folder, failed or not.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from lab.artifact_files import write_dir
from lab.break_even import break_even_calls
from lab.record import ResultRecord, graph_cache_hit
from lab.spec import ExperimentSpec
from lab.timeline import Phases
from runner import cudagraphs as cudagraphs_health
from runner import megacache, preload, recompiles, tlparse_report
from runner.accuracy import compare, on_device, reference, skip_reason, tensors
from runner.disturbance import Watch as Disturbances
from runner.disturbance import my_cpus
from runner.environment import environment, environment_detail, gpu_state, host_state
from runner.introspect import (
    GraphBreakLog,
    cache_hits,
    compile_breakdown,
    compile_phases,
    describe_compile_failure,
    metrics,
)
from runner.memory import Memory
from runner.profile_counts import count_both
from runner.rounds import BLOCK_CLOCKS, Crosscheck, ExperimentFailed, Report, measure_rounds, warmup
from runner.stats import clock_fields, paired_spread
from runner.timing import CompileWatch, make_timer
from runner.trace import CompileTrace, cache_layers
from runner.work import achieved_rates, cached_work, count_work
from runner.zoo import ZooEntry, load_module

__all__ = ["ExperimentFailed", "Role", "run", "make_step", "TIMING_PROTOCOL"]

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "amp-bfloat16": torch.float32, "amp-float16": torch.float32}  # the weights' and inputs' dtype
# mixed precision: fp32 weights, the step under torch.autocast in this dtype (what AMP training means)
AUTOCAST = {"amp-bfloat16": torch.bfloat16, "amp-float16": torch.float16}
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
# 1: one clock (CUDA: kernel time behind a head start; CPU: perf_counter per call). 2: latency as the caller
# sees it is the headline, throughput and GPU time beside it (runner.timing), the three in each round. 3: the
# headline in rounds of its own (the same in every process of a configuration), the other two in rounds after them.
# Stored with every result.
TIMING_PROTOCOL = 3


@dataclass(frozen=True)
class Role:
    """What this process is to its configuration (lab.noise): its first run, which times every clock and runs every
    analysis, or a follow-up (a process repeat or a re-run), which times the headline the same way and skips the
    rest: it is there to show how the headline moves between processes, at a fraction of the first run's cost."""

    repeat: bool = False
    cache_from_first_run: bool = False  # the compile cache holds the first run's compile: a warm first call


@dataclass
class Setup:
    """What every step works on: the spec, both sides' models and steps, the inputs, the clocks."""
    spec: ExperimentSpec
    entry: ZooEntry
    module: object
    device: torch.device
    dtype: torch.dtype
    training: bool
    cudagraphs: bool
    eager_model: torch.nn.Module
    compiled_base: torch.nn.Module
    eager_step: Callable
    compiled_step: Callable
    inputs: tuple
    timer: object
    watch: CompileWatch
    breaks: GraphBreakLog
    trace: CompileTrace
    phases: Phases


def run(spec: ExperimentSpec, entry: ZooEntry, report: Report, artifacts_dir: Path | None = None,
        phases: Phases | None = None, role: Role | None = None) -> ResultRecord:
    """Measure one job; the compiler's texts (runner.trace) go to `artifacts_dir`, whether it succeeds or not.
    Each step is a phase in `phases` (lab.timeline): the worker builds the job's timeline from them."""
    started = time.perf_counter()
    phases = phases if phases is not None else Phases()
    role = role or Role()
    if role.repeat:
        return run_repeat(spec, entry, report, phases, role, started)
    with phases.phase("compiler setup"):
        from torch._dynamo.utils import set_compilation_metrics_limit

        set_compilation_metrics_limit(1_000_000)  # we slice this list by position: it must never roll over (64)
    loaded = megacache.load()  # a portable job: a colleague's artifacts, before anything compiles
    report("building", None)
    job = build(spec, entry, phases)
    try:
        first = first_calls(job, report)
        steady = steady_state(job, report)
        report("counting kernels", None)
        with phases.phase("profiler"):
            kernels = count_both(job.eager_step, job.compiled_step, job.inputs, job.device, job.trace.kernel_calls)
        with phases.phase("FLOP count"):
            work, work_cached = cached_work(_work_key(spec, entry), lambda: count_work(
                job.eager_model, job.eager_step, job.inputs, job.training))
        schedule = []
        if spec.schedule:
            report("schedule", None)
            with phases.phase("schedule"):
                schedule = run_schedule(job.timer, job.watch, job.module, entry, spec, job.device, job.dtype,
                                        job.eager_step, job.compiled_step)
    except BaseException:  # the compiler's texts of a failed job say why; its error names the phase it failed in
        with contextlib.suppress(Exception):  # and keeping them must not replace that error
            keep_artifacts(job, artifacts_dir, None)
        raise
    with phases.phase("artifacts"):
        keep_artifacts(job, artifacts_dir, report)
    with phases.phase("record"):
        result = record(job, first, steady, work, schedule, kernels, first_call_cache(spec, role, loaded))
    # the trace is captured while compiling; torch times that share, which is lab overhead, not the compile's
    phases.carve("compiled first call", "trace capture", _trace_overhead(first["metrics"]))
    saved = megacache.save()  # a cold job: what a portable job of the same settings will load
    if loaded is not None:
        loaded["kernel_libraries_built"] = megacache.built_here(loaded)
        loaded.pop("restored", None)
    result.detail["mega_cache"] = {k: v for k, v in (("loaded", loaded), ("saved", saved)) if v is not None}
    result.detail["measure_s"] = time.perf_counter() - started
    result.detail["work_cached"] = work_cached
    return result


def run_repeat(spec: ExperimentSpec, entry: ZooEntry, report: Report, phases: Phases, role: Role,
               started: float) -> ResultRecord:
    """A follow-up process: the first calls and the headline's rounds as the first run times them; no accuracy
    check, diagnosis clocks, kernel counts, FLOP count, schedule or artifacts (its first run has them)."""
    with phases.phase("compiler setup"):
        from torch._dynamo.utils import set_compilation_metrics_limit

        set_compilation_metrics_limit(1_000_000)
    report("building", None)
    job = build(spec, entry, phases)
    try:
        first = first_calls(job, report, check=False)
        steady = steady_state(job, report, diagnose=False)
    finally:
        job.trace.close()
    with phases.phase("record"):
        empty = {"flops": None, "min_bytes": None}
        result = record(job, first, steady, empty, [], {"detail": None}, first_call_cache(spec, role, None))
    phases.carve("compiled first call", "trace capture", _trace_overhead(first["metrics"]))
    result.detail["measure_s"] = time.perf_counter() - started
    result.detail["follow_up_protocol"] = ("the headline clock only; accuracy, diagnosis clocks, kernel counts and "
                                           "artifacts are its configuration's first run's")
    return result


def first_call_cache(spec: ExperimentSpec, role: Role, loaded: dict | None) -> str:
    """What the compiled first call compiled from (lab.record: first_call_cache)."""
    if spec.cache == "warm" or role.cache_from_first_run:
        return "warm"
    if spec.cache == "portable" and loaded is not None and not loaded.get("error"):
        return "portable"
    return "cold"


def _work_key(spec: ExperimentSpec, entry: ZooEntry) -> dict:
    """What the work of one eager call depends on (runner.work.cached_work)."""
    try:
        mtime = entry.path.stat().st_mtime_ns
    except OSError:
        mtime = None
    return {"model": spec.model, "file": str(entry.path), "mtime": mtime, "model_args": dict(spec.model_args),
            "batch_size": spec.batch_size, "dtype": spec.dtype, "task": spec.task, "device": spec.device,
            "torch": torch.__version__}


def preloaded_imports_s(spec: ExperimentSpec) -> float:
    """What the preloaded parent's imports took from this job's compiled first call, as the worker's probe
    measured it in a fresh interpreter (runner/preload.py): a CUDA job compiled by inductor, forked children only."""
    if spec.device != "cuda" or spec.backend != "inductor":
        return 0.0
    try:
        return max(0.0, float(os.environ.get(preload.ENV) or 0.0))
    except ValueError:
        return 0.0


def _trace_overhead(ms) -> float:
    return sum(getattr(m, "structured_logging_overhead_s", None) or 0 for m in ms)


def keep_artifacts(job: Setup, folder: Path | None, report: Report | None) -> None:
    """The trace's texts (runner.trace) into the artifacts folder, and tlparse's report when the sweep keeps the
    trace. `report` is None for a failed job: its error names the phase it failed in, not this one."""
    job.trace.close()  # `--spawn inline` runs the next job in this same process
    if folder is None:
        return
    texts = job.trace.artifacts()
    if job.spec.trace:
        if report is not None:
            report("tlparse", None)
        texts["tlparse"] = tlparse_report.report(texts["trace"])
    else:  # the sweep keeps the output code and FX graphs only
        texts.pop("trace")
    write_dir(folder, texts)


def build(spec: ExperimentSpec, entry: ZooEntry, phases: Phases) -> Setup:
    """Both sides from one seed (same weights), the compiled one wrapped by torch.compile as the spec says."""
    device, dtype, training = _device(spec.device), DTYPES[spec.dtype], spec.task == "training"
    if device.type == "cuda":  # its own phase: else the first tensor moved to the device pays it, unnamed
        with phases.phase("CUDA context"):
            torch.cuda.init()
            torch.empty(1, device=device)
            torch.cuda.synchronize()
    with phases.phase("model build"):
        return _build(spec, entry, phases, device, dtype, training)


def _build(spec: ExperimentSpec, entry: ZooEntry, phases: Phases, device, dtype, training) -> Setup:
    breaks = GraphBreakLog()
    cudagraphs_health.listen()
    trace = CompileTrace()  # after GraphBreakLog: its set_logs resets torch's handlers (never ours)
    module = load_module(entry)
    params = dict(spec.model_args)
    _seed(0)
    eager_model = build_on(device, module, params)
    compiled_base = copy.deepcopy(eager_model)  # same weights on both sides
    for m in (eager_model, compiled_base):
        m.to(device=device, dtype=dtype)
        m.train(training)
    inputs = _inputs(module, entry, spec, spec.batch_size, device, dtype)
    compile_fn = functools.partial(torch.compile, backend=spec.backend,
                                   mode=spec.mode if spec.backend == "inductor" else None,
                                   dynamic=spec.dynamic, fullgraph=spec.fullgraph)
    if spec.scope == "blocks":  # regional compilation: each repeated block, in place; the model stays eager
        compiled_model = compile_blocks(compiled_base, entry.info.blocks, compile_fn)
    elif hasattr(module, "compile"):
        compiled_model = module.compile(compiled_base, compile_fn, **params)
    else:
        compiled_model = compile_fn(compiled_base)
    cudagraphs = spec.device == "cuda" and (spec.mode in CUDAGRAPH_MODES or spec.backend == "cudagraphs")
    amp = AUTOCAST.get(spec.dtype)
    return Setup(spec=spec, entry=entry, module=module, device=device, dtype=dtype, training=training,
                 cudagraphs=cudagraphs, eager_model=eager_model, compiled_base=compiled_base,
                 eager_step=make_step(eager_model, eager_model.parameters(), training, mark_cudagraph_step=False,
                                      autocast=amp, device_type=device.type),
                 compiled_step=make_step(compiled_model, compiled_base.parameters(), training,
                                         mark_cudagraph_step=cudagraphs, autocast=amp, device_type=device.type),
                 inputs=inputs, timer=make_timer(spec.device), watch=CompileWatch(), breaks=breaks, trace=trace,
                 phases=phases)


def first_calls(job: Setup, report: Report, check: bool = True) -> dict:
    """The warmup cost. Each side's memory window holds its second call alone: the same call on both sides,
    past one-time work (the eager side's lazy initialisation, the compiled side's compile temporaries).
    References for the accuracy check are copied to the host at once, so they take no device memory; a follow-up
    process (`check` False) compares nothing: its configuration's first run did."""
    timer, inputs, training, phase = job.timer, job.inputs, job.training, job.phases.phase
    mem = Memory(job.spec.device)
    report("eager first call", None)
    with phase("library warm-up"):
        warm_libraries(job.device, job.dtype)  # handles and pools (cuBLAS, cuDNN, oneDNN, OpenMP): not eager's cost
        _seed(2)
    with phase("eager first call"):
        eager_first_s, out = _timed_once(timer, job.eager_step, inputs)
    with phase("accuracy"):
        eager_ref = reference(out, job.eager_model if training else None) if check else None
        del out
    with phase("memory"):
        mem.start()
        eager_second_s, out = _timed_once(timer, job.eager_step, inputs)
        peak_eager = mem.peak_mb()
        del out  # nothing of the eager side may sit in the compiled side's memory window
        if training:
            job.eager_model.zero_grad(set_to_none=True)

    report("compiling", None)
    n_metrics = len(metrics())
    _seed(2)
    try:
        with phase("compiled first call"):
            compiled_first_s, out = _timed_once(timer, job.compiled_step, inputs)
    except Exception as exc:
        raise ExperimentFailed(describe_compile_failure(exc, job.spec, metrics()[n_metrics:])) from exc
    with phase("accuracy"):
        first_metrics = metrics()[n_metrics:]
        graph_count = job.watch.count()
        if check:
            compiled_ref = on_device(out, job.compiled_base if training else None)  # compared where it lies
            accuracy = compare(eager_ref, compiled_ref, job.spec.dtype,
                               skip_reason(job.entry, job.eager_model, training))
            del eager_ref, compiled_ref
        else:
            accuracy = {"max_abs_error": None, "rel_error": None, "ok": None,
                        "note": "checked by its configuration's first run"}
        del out
    with phase("memory"):
        mem.start()  # after the compile: its temporaries (autotuning buffers) are not the model's memory
        compiled_second_s, _ = _timed_once(timer, job.compiled_step, inputs)
    return {"eager_first_s": eager_first_s, "eager_second_s": eager_second_s, "compiled_first_s": compiled_first_s,
            "compiled_second_s": compiled_second_s, "peak_eager": peak_eager, "peak_compiled": mem.peak_mb(),
            "memory_method": mem.method, "metrics": first_metrics, "graph_count": graph_count,
            "accuracy": accuracy}


def steady_state(job: Setup, report: Report, diagnose: bool = True) -> dict:
    """Both sides warmed up, then the headline's interleaved rounds, the same in every process of a configuration;
    then, in a first run (`diagnose`), the diagnosis clocks' rounds. What disturbed them from outside is measured
    around and between the rounds (runner.disturbance), never while a call is timed."""
    timer, inputs, spec = job.timer, job.inputs, job.spec
    report("warming up", None)
    with job.phases.phase("warm-up"):
        est_compiled = warmup(timer, lambda: job.compiled_step(inputs))
        est_eager = warmup(timer, lambda: job.eager_step(inputs))
    timer.plan(call_ms=max(est_eager[0], est_compiled[0]), issue_ms=max(est_eager[1], est_compiled[1]))
    gpu_before, host_before = gpu_state(spec.device), host_state()
    rerecords_before = cudagraphs_health.rerecords() if job.cudagraphs else None
    n_before = len(metrics())
    sides = {"eager": lambda: job.eager_step(inputs), "compiled": lambda: job.compiled_step(inputs)}
    check = Crosscheck(timer, sides, spec.iters) if Crosscheck.wanted() else None
    outside = Disturbances(spec.device, my_cpus())

    def between() -> None:
        outside.between()
        if check is not None:
            check.harness_slice()

    with job.phases.phase("rounds"):
        outside.start()
        samples = measure_rounds(timer, job.watch, sides, spec.iters, report, between_rounds=between)
        if diagnose:
            samples_diag = measure_rounds(timer, job.watch, sides, spec.iters, report, between_rounds=outside.between,
                                          clocks=tuple(BLOCK_CLOCKS), phase="diagnosis clocks")
            dropped = samples.pop("dropped") + samples_diag.pop("dropped")
            samples = {**samples, **samples_diag, "dropped": dropped}
        causes, measured = outside.stop()
    return {"samples": samples, "metrics": metrics()[n_before:], "causes": causes, "disturbance": measured,
            "gpu_state": {"before_rounds": gpu_before, "after_rounds": gpu_state(spec.device)},
            "host_state": {"before_rounds": host_before, "after_rounds": host_state()},
            "crosscheck": check.result(spec.device) if check else None,
            "cudagraphs": cudagraphs_health.health(metrics(), rerecords_before) if job.cudagraphs else None}


def record(job: Setup, first: dict, steady: dict, work: dict, schedule: list, kernels: dict,
           first_cache: str) -> ResultRecord:
    """The result fields: numbers from the samples, what the compiler did, where it ran, what disturbed it."""
    spec, timer, samples = job.spec, job.timer, steady["samples"]
    all_metrics = metrics()
    preloaded = preloaded_imports_s(spec)
    compiled_first_s = first["compiled_first_s"] + preloaded  # what a fresh process's first call takes
    breakdown = compile_breakdown(first["metrics"], first["compiled_first_s"])
    if preloaded:
        breakdown[preload.COMPILE_PART] = preloaded
    clocks = clock_fields(samples, timer.gpu, job.cudagraphs)
    # the roofline places what the hardware did: kernel time where there is a GPU clock
    achieved = achieved_rates(work, clocks["compiled_gpu_ms"] or clocks["compiled_ms"])
    accuracy = first["accuracy"]
    causes = steady["causes"]
    hits = cache_hits(first["metrics"])
    return ResultRecord(**{
        "eager_first_call_s": first["eager_first_s"],
        "compiled_first_call_s": compiled_first_s,
        "first_call_cache": first_cache,
        "graph_cache_hit": graph_cache_hit(hits),
        "compiled_second_call_s": first["compiled_second_s"],
        **clocks,
        "disturbed": bool(causes),
        "noisy": bool(causes),
        "noise_note": "; ".join(causes) or None,
        # what compile costs against what it saves, in the caller's time: first calls and latency
        "break_even_calls": break_even_calls(first["eager_first_s"], compiled_first_s,
                                             clocks["eager_ms"], clocks["compiled_ms"]),
        "timing_method": timer.method,
        "timing_protocol": TIMING_PROTOCOL,
        "samples_per_side": sum(len(b) for b in samples["compiled"]),
        "flops": work["flops"],
        "min_bytes": work["min_bytes"],
        **achieved,
        "graph_count": first["graph_count"],
        "graph_breaks": job.breaks.count(),
        "recompiles": len(recompiles.explained(all_metrics)),  # an attempt refused at the limit compiled nothing
        "measure_recompiles": len(samples["dropped"]),  # timed calls during which dynamo compiled (dropped)
        **{k: v for k, v in kernels.items() if k != "detail"},
        "peak_mem_eager_mb": first["peak_eager"],
        "peak_mem_compiled_mb": first["peak_compiled"],
        "max_abs_error": accuracy["max_abs_error"],
        "rel_error": accuracy["rel_error"],
        "accuracy_ok": accuracy["ok"],
        **environment(spec.device),
        "samples": samples,
        "schedule": schedule,
        "detail": {
            "eager_second_call_s": first["eager_second_s"],
            "calls_per_round": {"latency": timer.latency_calls, "throughput": timer.block_calls,
                                "gpu": getattr(timer, "gpu_calls", None)},
            **paired_spread(samples),
            "work": work,
            "graph_break_reasons": job.breaks.reasons(),
            "recompile_reasons": recompiles.explained(all_metrics),
            "recompile_limit_hits": recompiles.limit_hits(all_metrics),
            "recompiles_while_measuring": [str(m.compile_id) for m in steady["metrics"]],
            "compile_phases_s": compile_phases(first["metrics"]),
            "compile_breakdown_s": breakdown,
            # the compiled first call timed in this process, and the imports a preloading parent spared it
            "first_call_parts": {"timed_in_child_s": first["compiled_first_s"], "preloaded_imports_s": preloaded},
            "cache_hits": hits,
            "cache_layers": cache_layers(job.trace.cache_events),
            "kernel_counts": kernels["detail"],
            # what capturing the trace added to the compile times (torch measures it)
            "trace_overhead_s": _trace_overhead(all_metrics),
            "accuracy_note": accuracy["note"],
            "memory_method": first["memory_method"],
            "cudagraph_steps_marked": job.cudagraphs,
            "cudagraphs": steady["cudagraphs"],  # CUDA graphs health (runner.cudagraphs); None when not used
            "crosscheck": steady["crosscheck"],
            "env": environment_detail(spec.device) | {"autocast": spec.dtype if spec.dtype in AUTOCAST else None,
                                                      "scope": spec.scope},
            "gpu_state": steady["gpu_state"],
            "host_state": steady["host_state"],
            "disturbance": steady["disturbance"],
        },
    })


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
    with torch.device(device):  # drawn where they are used: 2 x 10000 x 10000 randn on the host took 2 s
        raw = module.example_inputs(batch, **params)
    if isinstance(raw, torch.Tensor):
        raw = (raw,)
    return tuple(t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device) for t in raw)


def make_step(model, parameters, training: bool, mark_cudagraph_step: bool, autocast: torch.dtype | None = None,
              device_type: str = "cpu") -> Callable:
    """One call of the thing being measured: a forward under no_grad, or forward+backward+SGD step. With
    `autocast` (AMP), the forward runs under torch.autocast in that dtype over fp32 weights; a float16
    training step scales its loss (GradScaler), as AMP training does."""
    optimizer = torch.optim.SGD(list(parameters), lr=1e-3) if training else None
    scaler = torch.amp.GradScaler(device_type) if training and autocast == torch.float16 else None

    def forward(inputs):
        if autocast is None:
            return model(*inputs)
        with torch.autocast(device_type, dtype=autocast):
            return model(*inputs)

    def step(inputs):
        if mark_cudagraph_step:  # tells CUDA-graph trees a new iteration begins (outputs may be reused)
            torch.compiler.cudagraph_mark_step_begin()
        if optimizer is None:
            with torch.no_grad():
                return forward(inputs)
        optimizer.zero_grad(set_to_none=True)
        loss = _loss(forward(inputs))
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss.detach()

    return step


def build_on(device: torch.device, module, params: dict) -> torch.nn.Module:
    """The model, its weights initialised on the device it runs on (on the host, ResNet-18's took 0.4 s); a model
    whose construction needs the host (numpy on a parameter, say) is built there instead."""
    if device.type == "cpu":
        return module.build(**params)
    try:
        with torch.device(device):
            return module.build(**params)
    except Exception:  # built on the host, as a script would: the same model, its first numbers drawn there
        _seed(0)
        return module.build(**params)


def compile_blocks(model: torch.nn.Module, containers: tuple[str, ...], compile_fn) -> torch.nn.Module:
    """PyTorch's regional compilation recipe: each block in the named containers replaced by its compiled
    self, so identical blocks share one compiled graph (dynamo inlines nn modules) and the model around
    them stays eager. Returns the model itself. (nn.Module.compile() set on a block was never called
    through here: a container calls the block's __call__, and on torch 2.13 that compiled nothing.)"""
    for name in containers:
        container = model.get_submodule(name)
        for child, block in list(container.named_children()):
            setattr(container, child, compile_fn(block))
    return model


def _loss(out) -> torch.Tensor:
    return sum(t.float().pow(2).mean() for t in tensors(out))


def _timed_once(timer, step, inputs) -> tuple[float, object]:
    box = []
    seconds = timer.once(lambda: box.append(step(inputs)))
    return seconds, box[0]


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
        n_metrics, graphs = len(metrics()), watch.count()
        try:
            compiled_s, _ = _timed_once(timer, compiled_step, inputs)
        except Exception as exc:
            error = describe_compile_failure(exc, spec, metrics()[n_metrics:])
        new = metrics()[n_metrics:]
        reasons = [r["reason"] for r in recompiles.explained(new)]
        calls.append({"size": size, "dim": entry.info.size_dim, "eager_s": eager_s, "compiled_s": compiled_s,
                      "recompiled": bool(reasons) or watch.count() != graphs,
                      "graphs_compiled": watch.count() - graphs, "reason": "; ".join(reasons) or None,
                      "hit_recompile_limit": bool(recompiles.limit_hits(new)), "error": error})
    return calls
