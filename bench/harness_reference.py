"""One fresh process of the reference for the answer: PyTorch's compiler benchmark loop on one configuration, as a
user's own script would run it (benchmarks/dynamo common.py `timed()`: per repeat, eager then compiled, each one
call between a device sync and a perf_counter read; medians over the repeats; speedup = eager / compiled). No
worker, no database, no analysis passes: the zoo's model and the same step the runner times (runner.child.build
.make_step: no_grad forward, or forward + backward + SGD step), torch.compile as the spec says.

    python -m bench.harness_reference --model simplenet --batch 32 --mode default --dynamic false [--task training]

Prints one JSON line: the medians, the speedup, the repeats and the seconds they took. bench/honest_answers.py runs
three of these per configuration, each a fresh interpreter.

Inductor's compile-worker pool is shut down after the first calls and again after the warm-up (torch's own
shutdown_compile_workers), and none starts during the timed loop (compile_threads 1 there); --pool keep leaves
torch's defaults. On a GPU the pool starts at the first compile and its sidecar burns about a core for up to a minute
while its workers import torch, so a timed loop begun seconds after the compile runs beside it, which a program in
its steady state does not; a graph first compiled in the warm-up or the loop (convnetmix's heads) starts a new one.
The worker's child does the same (runner/child/compile_workers.py). Runs h and i (bench/results, 2026-11-27) had the
first shutdown only.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import time

import torch

from runner import zoo
from runner.child import compile_workers
from runner.child.build import make_step
from runner.child.disturbance import Watch, my_cpus
from runner.child.rounds import host_pace_us

MIN_REPEATS, MIN_SECONDS, WARMUP_S = 50, 2.0, 0.5
DYNAMIC = {"none": None, "true": True, "false": False}


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(step, inputs, device: str) -> float:
    sync(device)
    t0 = time.perf_counter()
    step(inputs)
    sync(device)
    return time.perf_counter() - t0


def stop_pool() -> float:
    """Shut inductor's compile workers down (torch's graceful shutdown); the seconds it took."""
    from torch._inductor.async_compile import shutdown_compile_workers

    began = time.perf_counter()
    shutdown_compile_workers()
    return time.perf_counter() - began


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--mode", default="default")
    p.add_argument("--dynamic", default="none", choices=tuple(DYNAMIC))
    p.add_argument("--task", default="inference", choices=("inference", "training"))
    p.add_argument("--device", default="cuda")
    p.add_argument("--arg", action="append", default=[], help="NAME=VALUE: a model size parameter")
    p.add_argument("--warmup-s", type=float, default=WARMUP_S,
                   help="seconds of warm calls after the first (compiling) call of each; 0: the first calls only")
    p.add_argument("--pool", default="stop", choices=("stop", "keep"),
                   help="stop: shut inductor's compile workers down after the first calls (the steady state)")
    p.add_argument("--first-calls-only", action="store_true",
                   help="print the first calls (the compiled one cut into its parts, the collector's pauses) and stop")
    p.add_argument("--instrument", action="store_true",
                   help="attach what a worker's child listens to the compile with (to tell its cost apart)")
    args = p.parse_args()
    if args.instrument:  # as runner.child.build._build does, in its order
        from runner.child.capture import cudagraphs as cudagraphs_health
        from runner.child.capture.introspect import GraphBreakLog
        from runner.child.capture.trace import CompileTrace

        listeners = (GraphBreakLog(), cudagraphs_health.listen(), CompileTrace())  # noqa: F841 (kept alive)
    entry = zoo.resolve(args.model)  # a zoo file, or a family member (hf:, timm:) or an import path by its name
    module = zoo.load_module(entry, args.task)
    params = {pi.name: pi.default for pi in entry.info.params}
    params |= {k: int(v) if v.lstrip("-").isdigit() else v for k, v in (a.split("=", 1) for a in args.arg)}
    device, training = args.device, args.task == "training"
    torch.manual_seed(0)
    eager = module.build(**params).to(device)
    base = copy.deepcopy(eager)
    for m in (eager, base):
        m.train(training)
    torch.manual_seed(1)
    inputs = tuple(t.to(device) for t in module.example_inputs(args.batch, **params))  # sizes in --arg (seq_len)
    compile_fn = lambda m: torch.compile(m, mode=args.mode, dynamic=DYNAMIC[args.dynamic])  # noqa: E731
    compiled = module.compile(base, compile_fn, **params) if hasattr(module, "compile") else compile_fn(base)
    graphs = device == "cuda" and args.mode in ("reduce-overhead", "max-autotune")
    steps = {"eager": make_step(eager, eager.parameters(), training, False, device_type=device),
             "compiled": make_step(compiled, base.parameters(), training, graphs, device_type=device)}
    if args.first_calls_only:  # a user's fresh script's cold first call, as bench/gpu_instrument_costs compares it
        return first_calls(steps, inputs, device)
    from runner.child.capture.introspect import compile_breakdown, metrics
    from runner.child.gcpause import Pauses

    first = {"eager": timed(steps["eager"], inputs, device)}  # the first calls: the compile
    compile_pace = [host_pace_us()]  # the host's pace just before and after the compile, as the worker's child probes it
    with Pauses() as gc_pauses:  # the collector's share, as the worker's child names it (a fork's differs)
        first["compiled"] = timed(steps["compiled"], inputs, device)
    compile_pace.append(host_pace_us())

    parts = compile_breakdown(metrics(), first["compiled"])  # where a cold first call went, beside the worker's
    stop = args.pool == "stop"
    pool_s = stop_pool() if stop else None
    started = time.perf_counter()
    while time.perf_counter() - started < args.warmup_s:  # then warm both up, as the harness's warmup iterations do
        for step in steps.values():
            timed(step, inputs, device)
    if stop:
        pool_s += stop_pool()
    times: dict[str, list[float]] = {name: [] for name in steps}
    # what the worker's child would call a disturbance (another process on the cores or the GPU, throttled clocks),
    # read around the loop and only reported: the reference keeps every process, as the harness does
    watch = Watch(device, my_cpus())
    watch.start()
    paces = [host_pace_us()]  # the host's pace (lab.host_pace), as the worker's rounds probe it, every 0.25 s here
    started = looked = time.perf_counter()
    with compile_workers.none_started() if stop else contextlib.nullcontext():  # as the worker's child times
        while len(times["eager"]) < MIN_REPEATS or time.perf_counter() - started < MIN_SECONDS:
            for name, step in steps.items():
                times[name].append(timed(step, inputs, device) * 1e3)
            if time.perf_counter() - looked > 0.25:  # the GPU's clocks read now and then, never between every call
                watch.between()
                paces.append(host_pace_us())
                looked = time.perf_counter()
    causes, measured = watch.stop()  # no NVML: the GPU's side not read (not_measured), which is not undisturbed
    eager_ms, compiled_ms = (float(torch.tensor(times[n]).median()) for n in ("eager", "compiled"))
    print(json.dumps({"eager_ms": eager_ms, "compiled_ms": compiled_ms, "speedup": eager_ms / compiled_ms,
                      "repeats": len(times["eager"]), "seconds": time.perf_counter() - started,
                      "pool_stop_s": pool_s, "eager_first_call_s": first["eager"],
                      "compiled_first_call_s": first["compiled"], "compile_breakdown_s": parts,
                      "gc": gc_pauses.as_dict(), "disturbed": causes,
                      "not_measured": measured.get("not_measured"), "torch": torch.__version__,
                      "host_pace_us": statistics.median(paces), "first_call_pace_us": compile_pace}))
    return 0


def first_calls(steps: dict, inputs, device: str) -> int:
    from runner.child.capture.introspect import compile_breakdown, metrics
    from runner.child.gcpause import Pauses

    eager_s = timed(steps["eager"], inputs, device)
    compile_pace = [host_pace_us()]
    with Pauses() as pauses:
        compiled_s = timed(steps["compiled"], inputs, device)
    compile_pace.append(host_pace_us())
    print(json.dumps({"eager_first_call_s": eager_s, "compiled_first_call_s": compiled_s,
                      "first_call_pace_us": compile_pace,
                      "compile_breakdown_s": compile_breakdown(metrics(), compiled_s), "gc": pauses.as_dict(),
                      "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
