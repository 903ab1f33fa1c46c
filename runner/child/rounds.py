"""Steady state: warm-up, then interleaved rounds of the three clocks (runner.child.timing), every sample kept;
and the crosscheck against references a reader trusts."""
from __future__ import annotations

import os
import time
from typing import Callable

import torch

from lab import host_pace
from runner.child.stats import percentile

WARMUP_MIN_CALLS, WARMUP_MIN_S = 3, 0.1
PACE_WORK = 2000  # the fixed piece of Python host_pace_us times: ~25 us on a current server core
Report = Callable[[str, "float | None"], None]


class ExperimentFailed(Exception):
    """The experiment itself failed (compile error, unsupported setting, out of memory); says why and where."""


def warmup(timer, fn) -> tuple[float, float]:
    """Settle, then estimate: calls until at least WARMUP_MIN_CALLS and WARMUP_MIN_S seconds (the first calls' lazy
    work), then calls until the same again, for the estimate: the fastest synchronous call, and the median time the
    host took to issue one (ms). The rounds are sized from the call's time (timer.plan), so a slow spell must not be
    taken for it: a call stalled by another process (a page drawing on the host as the warm-up began) ended the old
    warm-up of a 0.2 ms call after three calls, their median made every round one call a side, and 300 rounds were
    over in a third of a second. Sized from the fastest, a few stalled calls cannot shorten the rounds; a warm-up
    slowed all along is caught by the rounds' own calls (timer.follow). The issue time stays a median: the GPU
    clock's head start must not be too short."""
    _calls(timer, fn)
    calls, issues = _calls(timer, fn)
    return min(calls), percentile(issues, 50)


def _calls(timer, fn) -> tuple[list[float], list[float]]:
    calls, issues, spent = [], [], 0.0
    while len(calls) < WARMUP_MIN_CALLS or spent < WARMUP_MIN_S:
        seconds, issue_s = timer.once_and_issue(fn)
        calls.append(seconds * 1e3)
        issues.append(issue_s * 1e3)
        spent += seconds
        if len(calls) >= 1000:
            break
    return calls, issues


def host_pace_us() -> float:
    """The host's pace at this moment: a fixed piece of pure Python (no torch), the fastest of three runs, in
    microseconds. Timed before each headline round (lab.host_pace reads the rounds by it); ~0.1 ms a round."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        sum(range(PACE_WORK))
        best = min(best, time.perf_counter() - t0)
    return best * 1e6


BLOCK_CLOCKS = {"throughput": "throughput", "gpu": "gpu_time"}  # clock -> timer method, one side at a time


def sample_key(side: str, clock: str) -> str:
    """Where a clock's samples live in the record's `samples`: the headline (latency) under the side's own
    name, the others as eager_throughput, compiled_gpu, ..."""
    return side if clock == "latency" else f"{side}_{clock}"


def measure_rounds(timer, watch, sides: dict[str, Callable], rounds: int, report: Report,
                   between_rounds: Callable[[], None] | None = None, clocks: tuple[str, ...] = ("latency",),
                   phase: str = "measuring") -> dict:
    """Interleaved rounds of `clocks`: in each round, latency alternates the sides call by call, and each block
    clock times one side and then the other; which side leads alternates by round (ABBA). Every kept sample by
    round; calls during which dynamo compiled are dropped and counted. The headline (latency) is timed in rounds of
    its own, the same in every process of a configuration; the diagnosis clocks in rounds after them (runner.child.measure)."""
    names = list(sides)
    blocks = [c for c in clocks if c in BLOCK_CLOCKS and (c != "gpu" or timer.gpu)]
    latency = "latency" in clocks
    samples = {sample_key(n, c): [] for n in names for c in (["latency"] if latency else []) + blocks}
    samples["dropped"] = []
    if latency:
        samples[host_pace.KEY] = []  # one a round, before its calls, between two rounds' synchronous calls

    def keep(name: str, clock: str, r: int, block: list) -> None:
        samples[sample_key(name, clock)].append([ms for ms, compiled in block if not compiled])
        samples["dropped"].extend({"side": name, "clock": clock, "round": r, "ms": ms}
                                  for ms, compiled in block if compiled)

    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        if latency:
            samples[host_pace.KEY].append(host_pace_us())
            timed = timer.latency([sides[n] for n in order], watch)
            for name, block in zip(order, timed):
                keep(name, "latency", r, block)
            timer.follow(timed, r)
        for clock in blocks:
            for name in order:
                keep(name, clock, r, getattr(timer, BLOCK_CLOCKS[clock])(sides[name], watch))
        if between_rounds is not None:  # a reference timed over the same stretch of time (Crosscheck), causes
            between_rounds()
        report(phase, (r + 1) / rounds)
    for name in names if latency else []:
        if not any(samples[name]):
            raise ExperimentFailed(f"every timed {name} call triggered a compile; no steady state to measure "
                                   f"({len(samples['dropped'])} calls recompiled)")
    return samples


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
