"""The timing protocol, in one place. Every host clock read is preceded by a device sync.

A timer first times single calls (`once`: first calls, schedule calls, warm-up), then `plan`s the
steady state from the warm-up estimate, so that both sides of a job are timed the same way:

CPU: time.perf_counter around each call (CPU work is synchronous); enough calls per round to fill
  ~20 ms, each call one sample.
CUDA: the device time of each call, measured so that launch overhead cannot leak into it. Per call,
  the host first queues a GPU spin (torch.cuda._sleep, its rate measured once with events) 1.25x as
  long as the host needs to issue the call (measured in the warm-up: the host time of `fn()` without
  a sync) plus 20 us, then an L2 flush (a 256 MB write, as triton.testing.do_bench
  does), then a CUDA event, the call, and another event. While the GPU spins, the host queues every
  kernel of the call, so between the two events the GPU never waits for Python: the bracket holds
  the call's kernels and nothing else, from a cold L2. (Brackets without a head start, the seed
  notes' way, measure the host's launch gaps whenever issuing is slower than the GPU: 2x jitter.)
  One sync ends each round.
CUDA, `wall`: host-observed latency of one synchronous call (sync, call, sync), which includes Python
  dispatch and kernel launches: what a caller waiting on each result sees, and what reduce-overhead's
  CUDA graphs shrink. wall - device time ~ the launch overhead.
The record's `timing_method` says which of these produced its numbers.
"""
from __future__ import annotations

import time
from typing import Callable

import torch

FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2 (H100: 50 MB, H200: 60 MB)
ROUND_MS = 20.0  # time one side of one round takes
MAX_CALLS = 25  # per-call samples per side per round, at most
HEAD_START = 1.25  # spin this many times the host's time to issue one call
HEAD_START_EXTRA_S = 20e-6


class CompileWatch:
    """Counts compiles (new frames compiled by dynamo), to flag timings that included one."""

    def __init__(self):
        from torch._dynamo.utils import counters

        self._counters = counters

    def count(self) -> int:
        return int(self._counters["stats"]["unique_graphs"])


Sample = tuple[float, bool]  # (ms per call, a compile happened during it)


class CpuTimer:
    def __init__(self):
        self.calls = 1
        self.method = "cpu: perf_counter per call"

    def once(self, fn: Callable[[], object]) -> float:
        """Seconds for one call (first calls, schedule calls)."""
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def once_and_issue(self, fn: Callable[[], object]) -> tuple[float, float]:
        """(seconds for one call, seconds the host spent issuing it); the same on the CPU."""
        seconds = self.once(fn)
        return seconds, seconds

    def plan(self, call_ms: float, issue_ms: float) -> None:
        """Choose calls per round from the slower side's warm-up estimates (ms per call)."""
        self.calls = max(1, min(MAX_CALLS, int(ROUND_MS / max(call_ms, 1e-6))))

    def round(self, fn: Callable[[], object], watch: CompileWatch) -> list[Sample]:
        out = []
        for _ in range(self.calls):
            before = watch.count()
            t0 = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t0) * 1e3
            out.append((ms, watch.count() != before))
        return out

    def wall(self, fn: Callable[[], object]) -> float | None:
        return None  # on the CPU the per-call samples already are host latency


class CudaTimer(CpuTimer):
    def __init__(self):
        super().__init__()
        self._flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        self._spin_cycles = 0
        self.method = "cuda: events per call behind a GPU spin (host head start) and an L2 flush"
        self.spin_cycles_per_s = self._spin_rate()

    @staticmethod
    def _spin_rate() -> float:
        """Cycles of torch.cuda._sleep per second on this GPU (its clock varies by model and state)."""
        cycles = 2_000_000
        rates = []
        for _ in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            torch.cuda.synchronize()
            rates.append(cycles / (start.elapsed_time(end) / 1e3))
        return max(rates)  # the fastest clock seen: sizing with it never makes the spin too short

    def once(self, fn: Callable[[], object]) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    def once_and_issue(self, fn: Callable[[], object]) -> tuple[float, float]:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        issued = time.perf_counter()
        torch.cuda.synchronize()
        return time.perf_counter() - t0, issued - t0

    def plan(self, call_ms: float, issue_ms: float) -> None:
        spin_s = issue_ms / 1e3 * HEAD_START + HEAD_START_EXTRA_S
        self._spin_cycles = int(spin_s * self.spin_cycles_per_s)
        per_call_ms = spin_s * 1e3 + call_ms
        self.calls = max(1, min(MAX_CALLS, int(ROUND_MS / per_call_ms)))

    def round(self, fn: Callable[[], object], watch: CompileWatch) -> list[Sample]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.calls)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.calls)]
        compiled = []
        torch.cuda.synchronize()
        for i in range(self.calls):
            torch.cuda._sleep(self._spin_cycles)  # the host's head start: it queues the call meanwhile
            self._flush.zero_()
            before = watch.count()
            starts[i].record()
            fn()
            ends[i].record()
            compiled.append(watch.count() != before)
        torch.cuda.synchronize()
        return [(s.elapsed_time(e), c) for s, e, c in zip(starts, ends, compiled)]

    def wall(self, fn: Callable[[], object]) -> float:
        return self.once(fn) * 1e3


def make_timer(device: str) -> CpuTimer:
    return CudaTimer() if device == "cuda" else CpuTimer()


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty list, as numpy's default."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def spread(values: list[float]) -> float | None:
    """Interquartile range over median: how far one number of this set can be trusted."""
    if len(values) < 2:
        return None
    mid = percentile(values, 50)
    return (percentile(values, 75) - percentile(values, 25)) / mid if mid > 0 else None
