"""One experiment as a user's own plain script would run it, in a fresh interpreter: build the model, time the
eager first call, torch.compile it and time the compiled first call, then the same warm-up and rounds as a
worker's job (runner.child.rounds, the same clocks and number of rounds), and nothing else: no analysis passes, no
trace, no database. bench/sweep_overhead.py runs one of these per configuration against the worker.

    python -m bench.plain_job --model simplenet --batch 32 --mode default --dynamic false --device cpu --iters 10

Prints one JSON line: the first calls (the compiled one also cut into the parts a worker's job reports), warm-up
and rounds (seconds) and the process's own time to that point.
The compile cache is whatever TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR say (the bench gives a fresh one).
"""
from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

ZOO = Path(__file__).resolve().parent.parent / "runner" / "zoo" / "builtin"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--mode", default="default")
    p.add_argument("--dynamic", default="false", choices=("none", "true", "false"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--instrument", action="store_true",
                   help="attach what a worker's job listens to the compile with (graph-break log, compile trace)")
    p.add_argument("--crosscheck", action="store_true",
                   help="the compiler harness's loop in this process too, in slices between the rounds "
                        "(runner.child.rounds.Crosscheck): our loop and theirs over the same stretch of one process")
    args = p.parse_args()
    from runner.child.rounds import measure_rounds, warmup
    from runner.child.timing import CompileWatch, make_timer

    model, inputs = zoo_model(args.model, args.batch, args.device)
    timer = make_timer(args.device)
    cudagraphs = args.device == "cuda" and args.mode in ("reduce-overhead", "max-autotune")
    if args.instrument:  # as runner.child.build.build does, in its order
        from runner.child.capture.introspect import GraphBreakLog
        from runner.child.capture.trace import CompileTrace

        listeners = (GraphBreakLog(), CompileTrace())  # noqa: F841  (kept alive while compiling)
    compiled_model = torch.compile(model, mode=args.mode, dynamic={"none": None, "true": True, "false": False}[
        args.dynamic])

    def step(m, mark):
        def call():
            if mark:
                torch.compiler.cudagraph_mark_step_begin()
            with torch.no_grad():
                return m(*inputs)
        return call

    eager, compiled = step(model, False), step(compiled_model, cudagraphs)
    from runner.child.gcpause import Pauses

    out = {"eager_first_call_s": timer.once(eager)}
    with Pauses() as gc_pauses:  # the collector's share of the first call, as the worker's job names it
        out["compiled_first_call_s"] = timer.once(compiled)
    out["gc_pauses"] = gc_pauses.as_dict()
    out["pages"] = huge_pages()  # a fork's copied pages are small ones where a fresh heap may have huge ones
    from runner.child.capture.introspect import compile_breakdown, metrics

    out["compile_breakdown_s"] = compile_breakdown(metrics(), out["compiled_first_call_s"])  # the worker's parts
    t = time.perf_counter()
    est_c, est_e = warmup(timer, compiled), warmup(timer, eager)
    timer.plan(call_ms=max(est_e[0], est_c[0]), issue_ms=max(est_e[1], est_c[1]))
    out["warmup_s"] = time.perf_counter() - t
    t = time.perf_counter()
    from runner.child.rounds import Crosscheck

    check = Crosscheck(timer, {"eager": eager, "compiled": compiled}, args.iters) if args.crosscheck else None
    samples = measure_rounds(timer, CompileWatch(), {"eager": eager, "compiled": compiled}, args.iters,
                             lambda *_: None, between_rounds=check.harness_slice if check else None)
    out["rounds_s"] = time.perf_counter() - t
    if check:
        out["crosscheck"] = check.result(args.device)
    out["samples"] = sum(len(b) for b in samples["compiled"])
    for side in ("eager", "compiled"):  # the steady state's per-call latency, ms: the median over every round's calls
        out[f"{side}_ms"] = statistics.median(x for b in samples[side] for x in b)
    out["in_process_s"] = time.perf_counter() - STARTED
    print(json.dumps(out))
    return 0


def zoo_model(name: str, batch: int, device: str) -> tuple[torch.nn.Module, tuple]:
    """The zoo's model file `name` as a user's script builds it: its default sizes, seeded, on `device`, in eval mode;
    and its example inputs for `batch` there."""
    spec = importlib.util.spec_from_file_location(f"plain_{name}", ZOO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    place = torch.device("cuda", 0) if device == "cuda" else torch.device("cpu")
    torch.manual_seed(0)
    params = {k: v["default"] for k, v in getattr(module, "PARAMS", {}).items()}  # the zoo's default sizes
    model = module.build(**params).to(place).eval()
    return model, tuple(t.to(place) for t in module.example_inputs(batch, **params))


def huge_pages() -> dict:
    """This process's anonymous memory and the part of it in transparent huge pages (MB, /proc/self/smaps_rollup),
    and the kernel's setting for them (the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled)."""
    out: dict = {}
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Anonymous", "AnonHugePages"):
                    out[key] = round(int(rest.split()[0]) / 1024)
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            out["thp"] = f.read().split("[", 1)[1].split("]", 1)[0]
    except (OSError, IndexError, ValueError):
        pass
    return out


if __name__ == "__main__":
    raise SystemExit(main())
