"""The timing protocol, in one place. Every host clock read is preceded by a device sync.

A timer first times single calls (`once`: first calls, schedule calls, warm-up), then `plan`s the
steady state from the warm-up estimate, so that both sides of a job are timed the same way:

CPU: time.perf_counter around each call (CPU work is synchronous); enough calls per round to fill
  ~10 ms, each call one sample.
CUDA, calls of 1 ms and more: like triton.testing.do_bench: per call, the L2 cache is flushed by
  writing a 256 MB buffer, then a pair of CUDA events brackets the call; the calls of a round are
  queued without host syncs, one sync ends the round. Each call is one sample: its device time.
CUDA, sub-millisecond calls: one pair of events brackets a block of back-to-back calls (no flush, no
  sync inside), and the sample is the block's time divided by its calls. Per-call brackets would
  measure mostly the host's launch gaps and jitter (2x from process to process on an H100); a block
  measures the steady-state time per call of a loop: the device time when the GPU is the bottleneck,
  the host's issue time when launching is (the cost reduce-overhead's CUDA graphs remove).
CUDA, `wall`: host-observed latency of one synchronous call (sync, call, sync).
The record's `timing_method` says which of these produced its numbers.
"""
from __future__ import annotations

import time
from typing import Callable

import torch

FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2 (H100: 50 MB, H200: 60 MB)
ROUND_MS = 10.0  # time one side of one round takes
MAX_CALLS = 25  # per-call samples per side per round, at most
SUB_MS = 1.0  # below this per-call estimate, CUDA times blocks of calls
BLOCKS_PER_ROUND = 3
MAX_BLOCK_CALLS = 200


class CompileWatch:
    """Counts compiles (new frames compiled by dynamo), to flag timings that included one."""

    def __init__(self):
        from torch._dynamo.utils import counters

        self._counters = counters

    def count(self) -> int:
        return int(self._counters["stats"]["unique_graphs"])


Sample = tuple[float, bool]  # (ms per call, a compile happened during it)


class CpuTimer:
    device_kind = "cpu"

    def __init__(self):
        self.calls = 1
        self.method = "cpu: perf_counter per call"

    def once(self, fn: Callable[[], object]) -> float:
        """Seconds for one call (first calls, schedule calls)."""
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def plan(self, est_ms: float) -> None:
        """Choose calls per round from the slower side's warm-up estimate (ms per call)."""
        self.calls = max(1, min(MAX_CALLS, int(ROUND_MS / max(est_ms, 1e-6))))

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

    @property
    def calls_per_sample(self) -> int:
        return 1


class CudaTimer(CpuTimer):
    device_kind = "cuda"

    def __init__(self):
        super().__init__()
        self._flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        self.blocked = False
        self.method = "cuda: events per call, L2 flushed (do_bench style)"

    def once(self, fn: Callable[[], object]) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    def plan(self, est_ms: float) -> None:
        self.blocked = est_ms < SUB_MS
        if self.blocked:
            per_block_ms = ROUND_MS / BLOCKS_PER_ROUND
            self.calls = max(2, min(MAX_BLOCK_CALLS, int(per_block_ms / max(est_ms, 1e-6))))
            self.method = (f"cuda: events around blocks of {self.calls} back-to-back calls "
                           f"(sub-ms), {BLOCKS_PER_ROUND} blocks per round")
        else:
            super().plan(est_ms)

    def round(self, fn: Callable[[], object], watch: CompileWatch) -> list[Sample]:
        if self.blocked:
            return [self._block(fn, watch) for _ in range(BLOCKS_PER_ROUND)]
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.calls)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.calls)]
        compiled = []
        torch.cuda.synchronize()
        for i in range(self.calls):
            self._flush.zero_()
            before = watch.count()
            starts[i].record()
            fn()
            ends[i].record()
            compiled.append(watch.count() != before)
        torch.cuda.synchronize()
        return [(s.elapsed_time(e), c) for s, e, c in zip(starts, ends, compiled)]

    def _block(self, fn: Callable[[], object], watch: CompileWatch) -> Sample:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        before = watch.count()
        start.record()
        for _ in range(self.calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / self.calls, watch.count() != before

    def wall(self, fn: Callable[[], object]) -> float:
        return self.once(fn) * 1e3

    @property
    def calls_per_sample(self) -> int:
        return self.calls if self.blocked else 1


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
