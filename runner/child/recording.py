"""From the measurement protocol's steps to the result record: what the first calls and the steady state hand over
(FirstCalls, SteadyState), and the ResultRecord made of them: numbers from the samples (runner.child.stats), what
the compiler did (runner.child.capture: introspect, trace, recompiles), where it ran (runner.child.environment) and
what disturbed it (runner.child.disturbance). Runs inside the child process."""
from __future__ import annotations

import os
from dataclasses import dataclass

from lab import host_pace
from lab.break_even import break_even_calls
from lab.record import ResultRecord, graph_cache_hit
from lab.spec import ExperimentSpec
from runner.child import preload, prewarm
from runner.child.build import AUTOCAST, Setup
from runner.child.capture import recompiles
from runner.child.capture.introspect import cache_hits, compile_breakdown, compile_phases, metrics
from runner.child.capture.roofline_work import achieved_rates
from runner.child.capture.trace import cache_layers
from runner.child.environment import environment, environment_detail
from runner.child.stats import clock_fields, paired_spread

# 1: one clock (CUDA: kernel time behind a head start; CPU: perf_counter per call). 2: latency as the caller
# sees it is the headline, throughput and GPU time beside it (runner.child.timing), the three in each round. 3: the
# headline in rounds of its own (the same in every process of a configuration), the other two in rounds after them.
# Stored with every result.
TIMING_PROTOCOL = 3


@dataclass(frozen=True)
class FirstCalls:
    """The warmup cost (runner.child.measure.first_calls): each side's first and second call, the memory of each side's
    second call, the compile's metrics and graphs, and the accuracy check."""

    eager_first_s: float
    eager_second_s: float
    compiled_first_s: float  # timed in this process (a preloading parent spared it some imports: preloaded_imports_s)
    compiled_second_s: float
    peak_eager: float | None
    peak_compiled: float | None
    memory_method: str
    metrics: list  # torch's compilation metrics of the compiled first call
    graph_count: int
    accuracy: dict  # {max_abs_error, rel_error, ok, note} (runner.child.accuracy.compare)
    gc_pauses: dict | None = None  # the garbage collector's pauses inside the compiled first call (runner.child.gcpause)
    autotune_s: float | None = None  # timing kernels' launch settings in the compiled first call (None: torch says not)
    retimed_s: float = 0.0  # of that, what a follow-up paid because its cache's picks were removed: left out
    pace_us: tuple[float, float] | None = None  # the host's pace just before and just after the compiled first call
    # what else ran on the job's cores during the compiled first call ({"causes": [...], ...}: disturbance.Around)
    compile_host: dict | None = None


@dataclass(frozen=True)
class SteadyState:
    """The interleaved rounds (runner.child.measure.steady_state): every raw sample by clock and round, what recompiled
    while they ran, what disturbed them from outside, and the host's and GPU's state around them."""

    samples: dict
    metrics: list  # compilation metrics of recompiles inside the timed rounds
    causes: list[str]  # measured causes from outside, in words (runner.child.disturbance)
    disturbance: dict
    gpu_state: dict
    host_state: dict
    crosscheck: dict | None  # the compiler harness's own timing beside ours, where asked for
    cudagraphs: dict | None  # CUDA graphs' health (runner.child.capture.cudagraphs); None when not used


def record(job: Setup, first: FirstCalls, steady: SteadyState, work: dict, schedule: list, kernels: dict,
           first_cache: str) -> ResultRecord:
    """The result fields: numbers from the samples, what the compiler did, where it ran, what disturbed it."""
    spec, timer, samples = job.spec, job.timer, steady.samples
    all_metrics = metrics()
    preloaded = preloaded_imports_s(spec)
    compiled_first_s = fresh_first_call_s(first, preloaded)
    clocks = clock_fields(samples, timer.gpu, job.cudagraphs)
    # the roofline places what the hardware did: kernel time where there is a GPU clock
    achieved = achieved_rates(work, clocks["compiled_gpu_ms"] or clocks["compiled_ms"])
    hits = cache_hits(first.metrics)
    pace = host_pace.split(samples)  # the rounds by the host's own pace (lab.host_pace): its median a column
    return ResultRecord(
        eager_first_call_s=first.eager_first_s, compiled_first_call_s=compiled_first_s, first_call_cache=first_cache,
        graph_cache_hit=graph_cache_hit(hits), compiled_second_call_s=first.compiled_second_s,
        disturbed=bool(steady.causes), noisy=bool(steady.causes), noise_note="; ".join(steady.causes) or None,
        first_call_disturbed=bool(first.compile_host["causes"]) if (first.compile_host or {}).get("read") else None,
        # what compile costs against what it saves, in the caller's time: first calls and latency
        break_even_calls=break_even_calls(first.eager_first_s, compiled_first_s, clocks["eager_ms"],
                                          clocks["compiled_ms"]),
        timing_method=timer.method, timing_protocol=TIMING_PROTOCOL, host_pace_us=pace and pace["median_us"],
        samples_per_side=sum(len(b) for b in samples["compiled"]), flops=work["flops"], min_bytes=work["min_bytes"],
        graph_count=first.graph_count, graph_breaks=job.breaks.count(),
        recompiles=len(recompiles.explained(all_metrics)),  # an attempt refused at the limit compiled nothing
        measure_recompiles=len(samples["dropped"]),  # timed calls during which dynamo compiled (dropped)
        peak_mem_eager_mb=first.peak_eager, peak_mem_compiled_mb=first.peak_compiled,
        max_abs_error=first.accuracy["max_abs_error"], rel_error=first.accuracy["rel_error"],
        accuracy_ok=first.accuracy["ok"], samples=samples, schedule=schedule,
        detail=detail(job, first, steady, work, kernels, hits, preloaded, all_metrics) | {
            "host_pace": pace, "first_call_pace": host_pace.around(*(first.pace_us or ())),
            "first_call_disturbance": first.compile_host},
        **clocks, **achieved, **{k: v for k, v in kernels.items() if k != "detail"}, **environment(spec.device))


def detail(job: Setup, first: FirstCalls, steady: SteadyState, work: dict, kernels: dict, hits: dict,
           preloaded: float, all_metrics: list) -> dict:
    """The record's `detail`: what the compiler said and did, the calls each clock made per round, and the host and
    GPU around the rounds (the raw material behind the numbers; db.results exports some of it as columns)."""
    spec, timer = job.spec, job.timer
    traced = job.trace.shares.of(first.metrics)  # where in the compile capturing the trace took its share
    breakdown = compile_breakdown(first.metrics, first.compiled_first_s - lab_in_first_call_s(first), traced)
    if preloaded:
        breakdown[preload.COMPILE_PART] = preloaded
    return {
        "eager_second_call_s": first.eager_second_s,
        "calls_per_round": timer.sizes() | {"replanned": timer.replans},
        **paired_spread(steady.samples),
        "work": work,
        "graph_break_reasons": job.breaks.reasons(),
        "recompile_reasons": recompiles.explained(all_metrics),
        "recompile_limit_hits": recompiles.limit_hits(all_metrics),
        "recompiles_while_measuring": [str(m.compile_id) for m in steady.metrics],
        "compile_phases_s": compile_phases(first.metrics),
        "compile_breakdown_s": breakdown,
        # the compiled first call timed in this process, and the imports a preloading parent spared it
        # and what capturing the compile trace added inside it (left out of compiled_first_call_s: no script pays it)
        "first_call_parts": {"timed_in_child_s": first.compiled_first_s, "preloaded_imports_s": preloaded,
                             "trace_capture_s": traced_s(first), "trace_capture_by_part_s": traced,
                             "runtime_autotune_s": first.autotune_s,
                             "retimed_left_out_s": first.retimed_s,
                             "gc_pause_s": (first.gc_pauses or {}).get("seconds")},
        "first_call_gc": first.gc_pauses,
        "cache_hits": hits,
        "cache_layers": cache_layers(job.trace.cache_events),
        "kernel_counts": kernels["detail"],
        # what capturing the trace added to the compile times (torch measures it)
        "trace_overhead_s": trace_overhead(all_metrics),
        "accuracy_note": first.accuracy["note"],
        "accuracy_check": first.accuracy["detail"],  # what was compared, against what, tensor by tensor's worst
        "memory_method": first.memory_method,
        "model_build": job.build_parts,  # lab overhead: where the build's seconds went, where the weights were made
        "prewarmed": prewarm.note(),  # its CUDA context and library handle, made before the job came (None: not)
        "own_heap": prewarm.note(prewarm.HEAP_ENV),  # its memory made its own after the fork, before the job
        "cudagraph_steps_marked": job.cudagraphs,
        "cudagraphs": steady.cudagraphs,  # CUDA graphs health (runner.child.capture.cudagraphs); None when not used
        "crosscheck": steady.crosscheck,
        "env": environment_detail(spec.device) | {"autocast": spec.dtype if spec.dtype in AUTOCAST else None,
                                                  "scope": spec.scope},
        "gpu_state": steady.gpu_state,
        "host_state": steady.host_state,
        "disturbance": steady.disturbance,
    }


def fresh_first_call_s(first: FirstCalls, preloaded: float) -> float:
    """What a fresh process's compiled first call takes: the one timed here, less what capturing the trace added inside
    it (torch measures it) and the launch settings a follow-up timed again only because its cache's picks were removed
    (a warm cache holds them: runner.worker.cache_repeat.retune), plus the imports the preloaded parent spared it."""
    return first.compiled_first_s - lab_in_first_call_s(first) + preloaded


def lab_in_first_call_s(first: FirstCalls) -> float:
    """What the lab added inside the compiled first call: capturing the trace, a follow-up's re-timing (at most all)."""
    return min(traced_s(first) + first.retimed_s, first.compiled_first_s)


def preloaded_imports_s(spec: ExperimentSpec) -> float:
    """What the preloaded parent's imports took from this job's compiled first call, as the worker's probe
    measured it in a fresh interpreter (runner/child/preload.py): a CUDA job compiled by inductor, forked children only."""
    if spec.device != "cuda" or spec.backend != "inductor":
        return 0.0
    try:
        return max(0.0, float(os.environ.get(preload.ENV) or 0.0))
    except ValueError:
        return 0.0


def traced_s(first: FirstCalls) -> float:
    """What capturing the compile trace added to the compiled first call (at most all of it)."""
    return min(trace_overhead(first.metrics), first.compiled_first_s)


def trace_overhead(ms) -> float:
    """What capturing the compile trace added to the compile times these metrics hold (torch measures it). torch keeps
    one running total per frame and compile of it (a training step's backward, compiled later, and compiled autograd
    add to the forward's), and each row holds the total so far: so per total its largest row counts, once."""
    totals: dict[str, float] = {}
    for m in ms:
        key = "/".join(str(getattr(m, "compile_id", None)).lstrip("!").split("/")[-2:])  # torch's frame/compile key
        totals[key] = max(totals.get(key, 0.0), getattr(m, "structured_logging_overhead_s", None) or 0.0)
    return sum(totals.values())
