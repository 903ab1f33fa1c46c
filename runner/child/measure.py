"""The measurement protocol of one job as named steps, run inside the child: build, first calls, steady state, kernel
counts and the work of a call, the shape schedule, then the record. docs/measurement.md says what each step measures
and why."""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from lab.artifact_files import write_dir
from lab.errors import first_line
from lab.record import ResultRecord
from lab.spec import ExperimentSpec
from lab.timeline import RETIMED, Phases
from runner.child import cache_bundle, compile_workers, traffic
from runner.child.accuracy import NOT_COMPARED, compare, float64_run, on_device, pristine, reference, skip_reason
from runner.child.build import Setup, build, inputs_for, make_step, seed, timed_once, warm_libraries
from runner.child.capture import autotune_picks, recompiles, tlparse_report
from runner.child.capture import cudagraphs as cudagraphs_health
from runner.child.capture.introspect import describe_compile_failure, metrics
from runner.child.capture.memory import Memory
from runner.child.capture.profile_counts import count_both
from runner.child.capture.roofline_work import cached_work, count_work
from runner.child.disturbance import Around, my_cpus
from runner.child.disturbance import Watch as Disturbances
from runner.child.environment import gpu_state, host_state
from runner.child.gcpause import Pauses
from runner.child.recording import FirstCalls, SteadyState, record, trace_overhead
from runner.child.rounds import BLOCK_CLOCKS, Crosscheck, ExperimentFailed, Report, host_pace_us, measure_rounds, warmup
from runner.zoo import ZooEntry

__all__ = ["Analyses", "ExperimentFailed", "Role", "run"]


@dataclass(frozen=True)
class Role:
    """What this process is to its configuration (lab.noise): its first run, which times every clock and runs every
    analysis, or a follow-up (a process repeat or a re-run), which times the headline the same way and skips the
    rest: it is there to show how the headline moves between processes, at a fraction of the first run's cost."""

    repeat: bool = False
    cache_from_first_run: bool = False  # the cache holds its configuration's compile (its first run's, or an earlier
    # follow-up's on this worker): a warm first call


@dataclass(frozen=True)
class Analyses:
    """What a first run measures beside the clocks: kernel counts, the work of a call (FLOPs and bytes), the shape
    schedule. A follow-up measures none of them (its first run's stand for it): the defaults are its."""

    kernels: dict = field(default_factory=lambda: {"detail": None})
    work: dict = field(default_factory=lambda: {"flops": None, "min_bytes": None})
    work_cached: bool | None = None
    schedule: list = field(default_factory=list)


def run(spec: ExperimentSpec, entry: ZooEntry, report: Report, artifacts_dir: Path | None = None,
        phases: Phases | None = None, role: Role | None = None, measured: Callable[[], None] = lambda: None
        ) -> ResultRecord:
    """Measure one job: build, the first calls (with the accuracy check), the steady state's rounds, the analyses,
    the record. The compiler's texts (runner.child.capture.trace) go to `artifacts_dir`, whether it succeeds or not.
    A follow-up process (`role`) runs the same line with the headline clock alone: no compile trace, accuracy check,
    diagnosis clocks, analyses, artifacts, portable cache or traffic (its first run has them). Each step is a phase
    in `phases` (lab.timeline): the worker builds the job's timeline from them. `measured` is called once nothing
    more is timed (after the clocks; after the schedule's calls or a traffic replay where the job has them): what
    follows counts (kernels, FLOPs) or runs on the host alone."""
    started = time.perf_counter()
    phases = phases if phases is not None else Phases()
    role = role or Role()
    first_run = not role.repeat
    with phases.phase("compiler setup"):
        from torch._dynamo.utils import set_compilation_metrics_limit

        set_compilation_metrics_limit(1_000_000)  # we slice this list by position: it must never roll over (64)
    loaded = cache_bundle.load() if first_run else None  # a portable job: a colleague's artifacts, before any compile
    report("building", None)
    job = build(spec, entry, phases, trace=first_run)
    # runtime launch-setting picks are a GPU's (triton's autotuner): elsewhere the cache is not walked for them
    cached_picks = autotune_picks.before() if spec.device == "cuda" else None  # a warm cache's or a bundle's
    try:
        first = first_calls(job, report, check=first_run)
        if role.cache_from_first_run:  # its cache's picks were removed (runner.worker.cache_repeat.retune): timing them
            first = replace(first, retimed_s=first.autotune_s or 0.0)  # again: not a warm first call's
        steady = steady_state(job, report, diagnose=first_run)
        timed_after = first_run and bool(spec.schedule or spec.traffic)  # a schedule's calls, a traffic replay
        if not timed_after:  # the analyses count (kernels, FLOPs): nothing more is timed, the next child may start
            measured()
        more = analyse(job, report) if first_run else Analyses()
    except BaseException:  # the compiler's texts of a failed job say why; its error names the phase it failed in
        with contextlib.suppress(Exception):  # and keeping them must not replace that error
            keep_artifacts(job, artifacts_dir if first_run else None, None)
        raise
    if timed_after and not spec.traffic:  # a traffic replay, after the record, is the GPU's last timed part
        measured()
    if first_run:
        with phases.phase("artifacts"):
            no_tlparse = keep_artifacts(job, artifacts_dir, report)
    else:
        no_tlparse = keep_artifacts(job, None, None)  # closes the trace: a follow-up keeps none
    with phases.phase("record"):
        result = record(job, first, steady, more.work, more.schedule, more.kernels,
                        first_call_cache(spec, role, loaded))
    # the trace is captured while compiling; torch times that share, which is lab overhead, not the compile's
    phases.carve("compiled first call", "trace capture", trace_overhead(first.metrics))
    phases.carve("compiled first call", RETIMED, first.retimed_s)  # not the warm call's: a fresh process's (lab.timeline)
    if first_run:
        saved = cache_bundle.save()  # a cold job: what a portable job of the same settings will load
        if spec.traffic:  # last: it resets dynamo (runner.child.traffic), and a portable bundle holds the job's compile only
            report("traffic", 0.0)
            with phases.phase("traffic"):
                result.detail["traffic"] = traffic.replay(job, report)
            measured()
        if loaded is not None:
            loaded["kernel_libraries_built"] = cache_bundle.built_here(loaded)
            loaded.pop("restored", None)
        result.detail["mega_cache"] = {k: v for k, v in (("loaded", loaded), ("saved", saved)) if v is not None}
        result.detail["work_cached"] = more.work_cached
        if no_tlparse:
            result.detail["tlparse_note"] = no_tlparse
    else:
        result.detail["follow_up_protocol"] = ("the headline clock only; accuracy, diagnosis clocks, kernel counts "
                                               "and artifacts are its configuration's first run's")
    if cached_picks is not None:
        result.detail["autotune_picks"] = autotune_picks.picked(cached_picks)  # this process's, not the cache's
    result.detail["measure_s"] = time.perf_counter() - started
    return result


def analyse(job: Setup, report: Report) -> Analyses:
    """A first run's analyses, after the clocks: each side's kernels counted by the profiler, the work of one eager
    call (runner.child.capture.roofline_work, cached across a sweep), and the shape schedule's calls."""
    phases, spec = job.phases, job.spec
    report("counting kernels", None)
    with phases.phase("profiler"):
        kernels = count_both(job.eager_step, job.compiled_step, job.inputs, job.device, job.trace.kernel_calls)
    with phases.phase("FLOP count"):
        work, work_cached = cached_work(_work_key(spec, job.entry), lambda: count_work(
            job.eager_model, job.eager_step, job.inputs, job.training))
    schedule = []
    if spec.schedule:
        report("schedule", None)
        with phases.phase("schedule"):
            schedule = run_schedule(job)
    return Analyses(kernels=kernels, work=work, work_cached=work_cached, schedule=schedule)


def first_call_cache(spec: ExperimentSpec, role: Role, loaded: dict | None) -> str:
    """What the compiled first call compiled from (lab.record: first_call_cache)."""
    if spec.cache == "warm" or role.cache_from_first_run:
        return "warm"
    if spec.cache == "portable" and loaded is not None and not loaded.get("error"):
        return "portable"
    return "cold"


def _work_key(spec: ExperimentSpec, entry: ZooEntry) -> dict:
    """What the work of one eager call depends on (runner.child.capture.roofline_work.cached_work)."""
    try:
        mtime = entry.path.stat().st_mtime_ns if entry.path is not None else None  # a family member: none
    except OSError:
        mtime = None
    return {"model": spec.model, "file": str(entry.path), "mtime": mtime, "model_args": dict(spec.model_args),
            "batch_size": spec.batch_size, "dtype": spec.dtype, "task": spec.task, "device": spec.device,
            "torch": torch.__version__}


def keep_artifacts(job: Setup, folder: Path | None, report: Report | None) -> str | None:
    """The trace's texts (runner.child.capture.trace) into the artifacts folder; returns why there is no tlparse report
    yet: the worker makes it from the trace once the outcome is stored (runner.worker.reports). `report` is None for
    a failed job: its error names the phase it failed in, not this one."""
    job.trace.close()  # `--spawn inline` runs the next job in this same process
    if folder is None:
        return None
    texts = job.trace.artifacts()
    if job.spec.trace:
        why = tlparse_report.pending()
    else:  # the sweep keeps the output code and FX graphs only
        texts.pop("trace")
        why = "its sweep kept no compile trace (trace false)"
    write_dir(folder, texts)
    return why


def first_calls(job: Setup, report: Report, check: bool = True) -> FirstCalls:
    """The warmup cost. Each side's memory window holds its second call alone: the same call on both sides,
    past one-time work (the eager side's lazy initialisation, the compiled side's compile temporaries).
    References for the accuracy check are copied at once: on a GPU kept there where they fit (their bytes are taken
    off the eager window's peak), else to the host, so they take no device memory; a follow-up process (`check`
    False) compares nothing: its configuration's first run did."""
    timer, inputs, training, phase = job.timer, job.inputs, job.training, job.phases.phase
    mem = Memory(job.spec.device)
    report("eager first call", None)
    with phase("library warm-up"):
        warm_libraries(job.device, job.dtype, job.eager_model)  # handles and pools (cuBLAS, cuDNN, ...): not eager's cost
    skip = skip_reason(job.entry, job.eager_model, training) if check else None
    check = check and skip is None
    before = None
    if check and training:  # the float64 run's weights, copied before eager's step changes them (after Memory's
        with phase("accuracy"):  # baseline; freed before its window)
            before = pristine(job.eager_model)
    seed(2)
    with phase("eager first call"):
        eager_first_s, out = timed_once(timer, job.eager_step, inputs)
    with phase("accuracy"):
        eager_ref = reference(out, job.eager_model if training else None, training) if check else None
        del out
        if check and training:  # from the weights before eager's step (held until now; freed before its window)
            wide = float64_run(before, inputs, True, _float64_step(job))
        elif check:  # run only where the compiled side lies past the tolerance (accuracy.compare): inference leaves
            # the eager model as it was, so the float64 run can wait for the compiled first call
            wide = lambda: float64_run(pristine(job.eager_model), inputs, False, _float64_step(job))  # noqa: E731
        else:
            wide = None
        del before
        held = sum(getattr(r, "held", 0) for r in (eager_ref, wide))
    with phase("memory"):
        mem.start()
        eager_second_s, out = timed_once(timer, job.eager_step, inputs)
        peak_eager = mem.peak_mb()
        if peak_eager is not None and held:  # the reference kept on the GPU is not the eager call's memory
            peak_eager -= held / 2 ** 20
        del out  # nothing of the eager side may sit in the compiled side's memory window
        if training:
            job.eager_model.zero_grad(set_to_none=True)

    report("compiling", None)
    n_metrics = len(metrics())
    seed(2)
    try:
        tuned_before = autotune_picks.runtime_autotune_us()
        with Around("the compile", job.spec.device, header=job.spec.device == "cpu" and job.spec.backend == "inductor") \
                as around:  # what else ran on its cores (and GPU): read outside it
            pace_before = host_pace_us()  # the host's pace around the compile (lab.host_pace.around): ~0.1 ms, untimed
            with phase("compiled first call"), Pauses() as gc_pauses:  # the collector's share (runner.child.gcpause)
                compiled_first_s, out = timed_once(timer, job.compiled_step, inputs)
            pace = (pace_before, host_pace_us())
        tuned_after = autotune_picks.runtime_autotune_us()
        autotune_s = None if None in (tuned_before, tuned_after) else max(0.0, (tuned_after - tuned_before) / 1e6)
    except Exception as exc:
        raise ExperimentFailed(describe_compile_failure(exc, job.spec, metrics()[n_metrics:])) from exc
    with phase("accuracy"):
        first_metrics = metrics()[n_metrics:]
        graph_count = job.watch.count()
        if check:
            compiled_ref = on_device(out, job.compiled_base if training else None, training)  # compared where it lies
            accuracy = compare(eager_ref, compiled_ref, job.spec.dtype, None, wide)
            del eager_ref, compiled_ref, wide
        else:
            accuracy = {**NOT_COMPARED, "note": skip or "checked by its configuration's first run"}
        del out
    with phase("memory"):
        mem.start()  # after the compile: its temporaries (autotuning buffers) are not the model's memory
        compiled_second_s, _ = timed_once(timer, job.compiled_step, inputs)
    return FirstCalls(eager_first_s=eager_first_s, eager_second_s=eager_second_s, compiled_first_s=compiled_first_s,
                      compiled_second_s=compiled_second_s, peak_eager=peak_eager, peak_compiled=mem.peak_mb(),
                      memory_method=mem.method, metrics=first_metrics, graph_count=graph_count, accuracy=accuracy,
                      gc_pauses=gc_pauses.as_dict(), autotune_s=autotune_s, pace_us=pace, compile_host=around.said())


def _float64_step(job: Setup):
    """The step the float64 run takes: the sides' own (an SGD step in training), in full precision (no autocast)."""
    def make(model, training):
        seed(2)
        return make_step(model, model.parameters(), training, mark_cudagraph_step=False, device_type=job.device.type)
    return make


def steady_state(job: Setup, report: Report, diagnose: bool = True) -> SteadyState:
    """Both sides warmed up, then the headline's interleaved rounds, the same in every process of a configuration;
    then, in a first run (`diagnose`), the diagnosis clocks' rounds. What disturbed them from outside is measured
    around and between the rounds (runner.child.disturbance), never while a call is timed."""
    timer, inputs, spec = job.timer, job.inputs, job.spec
    report("warming up", None)
    with job.phases.phase("compile workers"):  # not beside the rounds: a steady-state program's pool is idle
        pool = compile_workers.stop()
    with job.phases.phase("warm-up"):
        est_compiled = warmup(timer, lambda: job.compiled_step(inputs))
        est_eager = warmup(timer, lambda: job.eager_step(inputs))
    with job.phases.phase("compile workers"):  # again: a graph first compiled in the warm-up started a new pool
        pool = compile_workers.stop(pool)
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

    graphs_before = job.watch.count()
    with job.phases.phase("rounds"), compile_workers.none_started() as held:
        outside.start()
        samples = measure_rounds(timer, job.watch, sides, spec.iters, report, between_rounds=between)
        if diagnose:
            samples_diag = measure_rounds(timer, job.watch, sides, spec.iters, report, between_rounds=outside.between,
                                          clocks=tuple(BLOCK_CLOCKS), phase="diagnosis clocks")
            dropped = samples.pop("dropped") + samples_diag.pop("dropped")
            samples = {**samples, **samples_diag, "dropped": dropped}
        causes, measured = outside.stop()
    measured["compile_workers"] = pool | held | {"graphs_compiled_during_rounds": job.watch.count() - graphs_before}
    return SteadyState(samples=samples, metrics=metrics()[n_before:], causes=causes, disturbance=measured,
                       gpu_state={"before_rounds": gpu_before, "after_rounds": gpu_state(spec.device)},
                       host_state={"before_rounds": host_before, "after_rounds": host_state()},
                       crosscheck=check.result(spec.device) if check else None,
                       cudagraphs=cudagraphs_health.health(metrics(), rerecords_before) if job.cudagraphs else None)


def run_schedule(job: Setup) -> list[dict]:
    """Each size of the spec's schedule, one call a side: its time, and whether (and why) it recompiled."""
    timer, watch, entry, spec = job.timer, job.watch, job.entry, job.spec
    eager_step, compiled_step = job.eager_step, job.compiled_step
    calls = []
    for size in spec.schedule:
        inputs = inputs_for(job.module, entry, spec, size, job.device, job.dtype)
        error, eager_s, compiled_s = None, None, None
        try:  # a size too large for memory ends this call's entry, not the job and its measurements
            eager_s, _ = timed_once(timer, eager_step, inputs)
        except Exception as exc:
            calls.append({"size": size, "dim": entry.info.size_dim, "eager_s": None, "compiled_s": None,
                          "recompiled": False, "graphs_compiled": 0, "reason": None,
                          "error": f"eager call failed: {type(exc).__name__}: {first_line(exc, blank='')}"})
            continue
        n_metrics, graphs = len(metrics()), watch.count()
        try:
            compiled_s, _ = timed_once(timer, compiled_step, inputs)
        except Exception as exc:
            error = describe_compile_failure(exc, spec, metrics()[n_metrics:])
        new = metrics()[n_metrics:]
        reasons = [r["reason"] for r in recompiles.explained(new)]
        calls.append({"size": size, "dim": entry.info.size_dim, "eager_s": eager_s, "compiled_s": compiled_s,
                      "recompiled": bool(reasons) or watch.count() != graphs,
                      "graphs_compiled": watch.count() - graphs, "reason": "; ".join(reasons) or None,
                      "hit_recompile_limit": bool(recompiles.limit_hits(new)), "error": error})
    return calls
