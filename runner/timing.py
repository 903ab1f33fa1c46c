"""The timing protocol, in one place. Every clock read is preceded by a device sync.

CPU: time.perf_counter around each call (CPU work is synchronous).
CUDA, steady state: like triton.testing.do_bench: per call, the L2 cache is flushed by writing a
256 MB buffer, then a pair of CUDA events brackets the call; calls of a block are queued without host
syncs, one sync ends the block. While the GPU is the bottleneck this is the call's device time; when
the host issues the call more slowly than the GPU runs it (tiny models), the bracket includes the wait
for the host.
CUDA, `wall`: host-observed latency of one synchronous call (sync, call, sync), which includes Python
dispatch and kernel-launch overhead: what reduce-overhead (CUDA graphs) removes.
"""
from __future__ import annotations

import time
from typing import Callable

import torch

FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2 (H100: 50 MB, H200: 60 MB)


class CompileWatch:
    """Counts compiles (new frames compiled by dynamo), to flag timings that included one."""

    def __init__(self):
        from torch._dynamo.utils import counters

        self._counters = counters

    def count(self) -> int:
        return int(self._counters["stats"]["unique_graphs"])


class CpuTimer:
    method = "cpu: perf_counter per call"
    device_kind = "cpu"

    def sync(self) -> None:
        pass

    def once(self, fn: Callable[[], object]) -> float:
        """Seconds for one call (first calls, schedule calls)."""
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def block(self, fn: Callable[[], object], n: int, watch: CompileWatch) -> list[tuple[float, bool]]:
        """n back-to-back calls: (ms, compiled_during_call) for each."""
        out = []
        for _ in range(n):
            before = watch.count()
            t0 = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t0) * 1e3
            out.append((ms, watch.count() != before))
        return out

    def wall(self, fn: Callable[[], object]) -> float | None:
        return None  # on the CPU the per-call samples already are host latency


class CudaTimer(CpuTimer):
    method = "cuda: events per call, L2 flushed (do_bench style)"
    device_kind = "cuda"

    def __init__(self):
        self._flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def sync(self) -> None:
        torch.cuda.synchronize()

    def once(self, fn: Callable[[], object]) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    def block(self, fn: Callable[[], object], n: int, watch: CompileWatch) -> list[tuple[float, bool]]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        compiled = []
        torch.cuda.synchronize()
        for i in range(n):
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
