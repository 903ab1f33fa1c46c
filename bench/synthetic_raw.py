"""The raw material of a synthetic result, shaped as the child stores it: the per-round samples (runner.child.rounds,
runner.child.timing) and the rest of `detail` (runner.child.recording.record), so that reading, exporting, plotting and storing a
synthetic database costs what a real one of the same size does.

Samples, per side, in `rounds` rounds: latency, one synchronous call per sample, as many per round as fit in
runner.child.timing.ROUND_MS (at most MAX_CALLS); throughput, one block per round; on CUDA the GPU clock, as many calls
per round as fit beside their head start; a few calls during which dynamo compiled are `dropped`. A process repeat
(`diagnose` false) keeps its latency rounds only, as the child does. Each value is made as the child makes it, so it
holds what a real one holds (bench.gpu_samples, on an H200): a host clock sample is `(perf_counter() - t0) * 1e3`
(divided by the block's calls for throughput), perf_counter being whole nanoseconds read as seconds on a host up for
days; a GPU sample is CUDA's float32 milliseconds from a clock of 32 ns ticks. Their scatter is the H200's: a
latency call moves by ~1% and ~12 us, a GPU call by ~0.2% and ~1.2 us, one call in a hundred is slow. A realistic
job on an H100 stores ~55 kB of them as JSON text. Sizes from real jobs (a CPU job's detail is 4.7-6.1 kB, its
timeline ~2.2 kB of it).
"""
from __future__ import annotations

import numpy as np

ROUND_MS, MAX_CALLS = 20.0, 25  # runner.child.timing's: the time one clock of one side of a round takes, calls at most
MIN_BLOCK, MAX_BLOCK = 2, 100
HEAD_START_MS = 0.03  # the GPU clock's spin ahead of each call (runner.child.timing.CudaTimer.plan), for a host-bound model


def calls_per_round(call_ms: float, gpu: bool) -> dict:
    """runner.child.timing's plan: how many samples one round of each clock takes (the slower side sets it)."""
    fit = lambda x, lo, hi: max(lo, min(hi, int(x)))  # noqa: E731
    return {"latency": fit(ROUND_MS / call_ms, 1, MAX_CALLS), "throughput": fit(ROUND_MS / call_ms, MIN_BLOCK, MAX_BLOCK),
            "gpu": fit(ROUND_MS / (HEAD_START_MS + call_ms), 1, MAX_CALLS) if gpu else None}


def samples(gen: np.random.Generator, result: dict, rounds: int, gpu: bool, diagnose: bool = True,
            uptime_s: float = 4 * 86400.0) -> tuple[dict, dict]:
    """(samples, calls per round) around the result's medians: a drift per round that both sides share (the paired
    ratio cancels it), each side's own noise per round sized to its recorded spread (IQR / median of round medians),
    per-call scatter with a slow call now and then, each value made by the clock that times it (host_clock_ms,
    event_clock_ms) on a host up for `uptime_s`. Without `diagnose` (a process repeat): latency rounds only."""
    plan = calls_per_round(max(result["eager_ms"], result["compiled_ms"]), gpu)
    out: dict = {}
    drift = gen.normal(0, 0.01, rounds)
    clocks = [("latency", "", plan["latency"])]
    clocks += [("throughput", "_throughput", 1)] + ([("gpu", "_gpu", plan["gpu"])] if gpu else []) if diagnose else []
    start_ns = int(uptime_s * 1e9)
    for clock, suffix, n in clocks:
        for side in ("eager", "compiled"):
            center = result.get(f"{side}{suffix}_ms") or result[f"{side}_ms"]
            mid = center * (1 + drift + gen.normal(0, (result[f"{side}_spread"] or 0.01) / 1.35, rounds))
            rel, floor = (0.002, 0.0012) if clock == "gpu" else (0.01, 0.012)
            calls = mid[:, None] + np.abs(gen.normal(0, 1, (rounds, n))) * np.hypot(rel * mid, floor)[:, None]
            slow = gen.random((rounds, n)) < 0.01  # a call the host interrupted
            calls[slow] *= gen.uniform(1.5, 4.0, int(slow.sum()))
            if clock == "gpu":
                values = event_clock_ms(calls)
            else:
                block = plan["throughput"] if clock == "throughput" else 1
                values = host_clock_ms(gen, calls, start_ns, block)
            start_ns += int(calls.sum() * 1e6 * 2)
            out[f"{side}{suffix}" if clock != "latency" else side] = values.tolist()
    out["dropped"] = []
    if gen.random() < 0.03:  # a guard failed mid-rounds and dynamo compiled during a call or two
        out["dropped"] = [{"side": "compiled", "clock": "latency", "round": int(r), "ms": float(ms)}
                          for r, ms in zip(gen.integers(0, rounds, 2), gen.uniform(200, 900, 2))]
    return out, plan


def host_paces(gen: np.random.Generator, rounds: int) -> tuple[list[float], tuple[float, float]]:
    """The host's pace a process recorded (lab.host_pace): one probe per headline round, in us, and the two around its
    compiled first call, as on the lent H200 (bench/results/h200_host_pace_2026-11-30.txt): 60% of processes at the
    fast pace (21-22 us), the rest at 28-45 us, and one in ten whose pace moved for a stretch of its rounds."""
    base = 21.0 * gen.uniform(0.99, 1.05) if gen.random() < 0.6 else gen.uniform(28.0, 45.0)
    probes = base * gen.uniform(0.97, 1.03, rounds)
    if gen.random() < 0.1:  # a slow stretch within the rounds
        start, length = int(gen.integers(0, rounds)), int(gen.integers(rounds // 5 + 1, rounds // 2 + 2))
        probes[start:start + length] *= gen.uniform(1.5, 2.1)
    return np.round(probes, 3).tolist(), (round(base * gen.uniform(0.97, 1.1), 3), round(base * gen.uniform(0.97, 1.1), 3))


def host_clock_ms(gen: np.random.Generator, ms: np.ndarray, start_ns: int, block: int = 1) -> np.ndarray:
    """What runner.child.timing stores for calls of `ms` each, timed in blocks of `block` calls: (t1 - t0) * 1e3 / block,
    each reading whole nanoseconds divided by 1e9 (CPython's perf_counter), the calls one after another from
    `start_ns` with a few microseconds between them."""
    took = np.maximum(np.rint(ms * block * 1e6), 1).astype(np.int64)
    t0 = start_ns + np.cumsum(took + gen.integers(500, 5000, took.shape)).reshape(took.shape) - took
    out = (((t0 + took) / 1e9) - (t0 / 1e9)) * 1e3
    return out / block if block != 1 else out


def event_clock_ms(ms: np.ndarray, tick_ns: int = 32) -> np.ndarray:
    """What CUDA's event timer gives for `ms`: float32 milliseconds of whole ticks of `tick_ns`."""
    ticks = np.maximum(np.rint(ms * 1e6 / tick_ns), 1)
    return (ticks * tick_ns / 1e6).astype(np.float32).astype(np.float64)


def detail(rng, result: dict, spec: dict, plan: dict | None, gpu: bool) -> dict:
    """What the child writes beside its numbers (runner.child.recording.record), sized as a real job's: the host and GPU
    around the rounds, what disturbed them, the compile cache's layers, the job's timeline."""
    first = result["compiled_first_call_s"]
    measure_s = first + rng.uniform(8, 25)
    busy = [{"pid": rng.randrange(2000, 90000), "name": rng.choice(("python", "pt_main_thread", "sshd", "node")),
             "cpu_s": round(rng.uniform(0.1, 5), 2)} for _ in range(rng.randrange(1, 5))]
    host = lambda: {"loadavg": [rng.uniform(0.2, 3) for _ in range(3)], "torch_threads": 16,  # noqa: E731
                    "cpus_allowed": 16, "affinity": "0-15", "cpu_count": 96}
    out = {
        "eager_second_call_s": result["eager_ms"] / 1e3 * rng.uniform(1.05, 1.5),
        "calls_per_round": plan or {"latency": None, "throughput": None, "gpu": None},
        "work": {"flops": result["flops"], "min_bytes": result["min_bytes"], "state_bytes": result["min_bytes"] * 0.9,
                 "io_bytes": result["min_bytes"] * 0.1},
        "recompiles_while_measuring": [],
        "first_call_parts": {"timed_in_child_s": first, "preloaded_imports_s": 0.0},
        "cache_layers": {layer: {"hit": 0, "miss": 1, "bypass": 0} for layer in ("fxgraph", "aotautograd", "triton")},
        "kernel_counts": {"unit": "kernels launched per call (torch.profiler, one steady-state call of each side)",
                          "compiled_graph_calls": 1, "estimated": False},
        "trace_overhead_s": rng.uniform(0.02, 0.09),
        "accuracy_note": "largest per-tensor relative error vs tolerance 0.0001 for float32",
        "memory_method": "torch.cuda.max_memory_allocated above the allocation before the calls" if gpu
        else "cpu peak RSS above RSS before the calls (VmHWM)",
        "cudagraph_steps_marked": spec["mode"] == "reduce-overhead",
        "cudagraphs": {"skipped": False, "skip_reasons": [], "skips": 0, "rerecords_in_rounds": 0,
                       "pool_mb": rng.uniform(20, 400)} if gpu and spec["mode"] != "default" else None,
        "crosscheck": None,
        "env": {"python": "3.11.7", "platform": "Linux-6.8.0-49-generic-x86_64-with-glibc2.35",
                "cpu": "AMD EPYC 9454 48-Core Processor", "cpu_count": 96, "torch_threads": 16,
                "cuda_visible_devices": "0" if gpu else None, "tf32_matmul": False, "cudnn_benchmark": False,
                "autocast": None, "scope": "model"},
        "gpu_state": {phase: {"sm_clock_mhz": rng.choice((1755, 1980)), "temperature_c": rng.randrange(35, 70),
                              "power_w": rng.uniform(90, 650)} for phase in ("before_rounds", "after_rounds")}
        if gpu else {"before_rounds": None, "after_rounds": None},
        "host_state": {"before_rounds": host(), "after_rounds": host(), "worker_cpus": "0-15", "shares_cores_with": [],
                       "busy_workers": [], "threads_pinned": 16},
        "disturbance": {"rounds_s": measure_s * 0.6, "cores": 16, "others_cpu_s": rng.uniform(0, 3),
                        "others_share": rng.uniform(0, 0.2), "steal_s": 0.0, "busiest_others": busy,
                        "cpu_s_by_kind": {k: round(rng.uniform(0, 20), 2) for k in
                                          ("user", "nice", "system", "irq", "softirq", "steal")},
                        "own_cpu_s": rng.uniform(5, 20), "own_helpers": busy[:1], "memory_stall_s": 0.0,
                        "pages_swapped_in": 0},
        "mega_cache": {"key": f"{rng.getrandbits(128):032x}", "parts": {**spec, "torch_version": "2.13.0",
                                                                        "triton_version": "3.5.0"},
                       "note": "this worker holds no cache signing key (work --cache-key-file; docs/operations.md): "
                               "it keeps no bundle"},
        "measure_s": measure_s,
        "work_cached": False,
        "timeline": timeline(rng, first, measure_s),
    }
    return out


PHASES = ("claim", "job setup", "child start", "child setup", "compiler setup", "model build", "library warm-up",
          "eager first call", "accuracy", "memory", "unaccounted", "compiled first call", "trace capture", "accuracy",
          "memory", "warm-up", "rounds", "profiler", "FLOP count", "artifacts", "unaccounted", "record", "unaccounted",
          "result write", "job cleanup", "read result", "unaccounted", "cache bundle", "roofline placement", "store")


def timeline(rng, first_s: float, measure_s: float) -> list[dict]:
    """lab.timeline's [{phase, start, seconds}] from the claim to the stored result."""
    out, t = [], 0.0
    for phase in PHASES:
        seconds = (first_s if phase == "compiled first call" else measure_s * 0.6 if phase == "rounds"
                   else rng.uniform(0.0001, 0.05))
        out.append({"phase": phase, "start": t, "seconds": seconds})
        t += seconds
    return out
