"""The timing protocol, in one place. Every host clock read is preceded by a device sync.

A job's steady state is timed with three clocks per side, each answering its own question. Every
sample is kept, and the rounds interleave eager and compiled (ABBA), as PyTorch's compiler benchmark
harness does "to handle frequency scaling and load changes":

latency (the headline): one synchronous call as the caller sees it: sync, clock, call, sync, clock;
  no L2 flush and no GPU head start. This is benchmarks/dynamo's `timed()` and the HUD's speedup: what a
  script that waits for each result pays per call, so Python dispatch, dynamo's guards and wrappers and
  kernel launches are in it (launch overhead is what reduce-overhead's CUDA graphs remove). As in the
  harness, the calls alternate between the sides one by one (eager, compiled, eager, ...; which side
  leads alternates by round), each one sample, after one untimed call of each side, so no side is timed
  with its own code hot from the call before while the other is not: on a host-bound model on an H100,
  blocks of one side's calls read compiled 13% faster against eager than the harness did (the first
  calls of a block were 20-35% slower than its later ones), alternating calls read within a few %.
throughput: a block of back-to-back calls with one sync at the end, per call: what a training loop or a
  batched pipeline sees, where the host queues the next call while the GPU runs this one.
gpu (CUDA only; a diagnosis of the generated code, never the headline): kernel time of each call, from a
  cold L2, with no launch gap in it. Per call the host first queues a GPU spin (torch.cuda._sleep, its
  rate measured once with events) 1.25x as long as the host needs to issue the call plus 20 us, then an
  L2 flush (a 256 MB write, as triton.testing.do_bench does), then a CUDA event, the call, another
  event: while the GPU spins, the host queues the whole call, so the bracket holds its kernels alone.

On the CPU, latency is perf_counter around each call (CPU work is synchronous) and there is no GPU clock.
The record's `timing_method` names the clocks, `timing_protocol` their version (runner.child.measure).
"""
from __future__ import annotations

import time
from typing import Callable

import torch

FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2 (H100: 50 MB, H200: 60 MB)
ROUND_MS = 20.0  # time one clock of one side of one round takes, roughly
MAX_CALLS = 25  # per-call samples per side per round, at most (latency, gpu)
MIN_BLOCK, MAX_BLOCK = 2, 100  # back-to-back calls in one throughput block
HEAD_START = 1.25  # spin this many times the host's time to issue one call
HEAD_START_EXTRA_S = 20e-6
CLOCKS = ("latency", "throughput", "gpu")  # the order within a round


class CompileWatch:
    """Counts compiles (new frames compiled by dynamo), to flag timings that included one."""

    def __init__(self):
        from torch._dynamo.utils import counters

        self._counters = counters

    def count(self) -> int:
        return int(self._counters["stats"]["unique_graphs"])


Sample = tuple[float, bool]  # (ms per call, a compile happened during it)


class CpuTimer:
    gpu = False
    method = "cpu: latency = perf_counter per call; throughput = back-to-back block per call"

    def __init__(self):
        self.latency_calls = 1
        self.block_calls = MIN_BLOCK

    def sync(self) -> None:
        pass

    def once(self, fn: Callable[[], object]) -> float:
        """Seconds for one synchronous call (first calls, schedule calls, warm-up)."""
        self.sync()
        t0 = time.perf_counter()
        fn()
        self.sync()
        return time.perf_counter() - t0

    def once_and_issue(self, fn: Callable[[], object]) -> tuple[float, float]:
        """(seconds for one synchronous call, seconds the host spent issuing it before the sync)."""
        self.sync()
        t0 = time.perf_counter()
        fn()
        issued = time.perf_counter()
        self.sync()
        return time.perf_counter() - t0, issued - t0

    def plan(self, call_ms: float, issue_ms: float) -> None:
        """Size the rounds from the slower side's warm-up estimates (ms per synchronous call, ms to issue)."""
        self.latency_calls = _fit(ROUND_MS / max(call_ms, 1e-6), 1, MAX_CALLS)
        self.block_calls = _fit(ROUND_MS / max(call_ms, 1e-6), MIN_BLOCK, MAX_BLOCK)

    def latency(self, fns: list[Callable[[], object]], watch: CompileWatch) -> list[list[Sample]]:
        """Per side (in `fns`' order, which leads), one sample per synchronous call, the sides' calls
        alternating one by one after one untimed call each."""
        for fn in fns:
            fn()
        out: list[list[Sample]] = [[] for _ in fns]
        for _ in range(self.latency_calls):
            for i, fn in enumerate(fns):
                before = watch.count()
                self.sync()
                t0 = time.perf_counter()
                fn()
                self.sync()
                out[i].append(((time.perf_counter() - t0) * 1e3, watch.count() != before))
        return out

    def throughput(self, fn: Callable[[], object], watch: CompileWatch) -> list[Sample]:
        """One sample: a block of back-to-back calls, one sync at its end, per call."""
        fn()
        before = watch.count()
        self.sync()
        t0 = time.perf_counter()
        for _ in range(self.block_calls):
            fn()
        self.sync()
        return [((time.perf_counter() - t0) * 1e3 / self.block_calls, watch.count() != before)]

    def gpu_time(self, fn: Callable[[], object], watch: CompileWatch) -> list[Sample]:
        return []  # no GPU clock on the CPU


class CudaTimer(CpuTimer):
    gpu = True
    method = ("cuda: latency = perf_counter around one synchronous call; throughput = back-to-back block per "
              "call; gpu = CUDA events behind a host head start, L2 flushed")

    def __init__(self):
        super().__init__()
        self._flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        self._spin_cycles = 0
        self.gpu_calls = 1
        self.spin_cycles_per_s = self._spin_rate()

    def sync(self) -> None:
        torch.cuda.synchronize()

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

    def plan(self, call_ms: float, issue_ms: float) -> None:
        super().plan(call_ms, issue_ms)
        spin_s = issue_ms / 1e3 * HEAD_START + HEAD_START_EXTRA_S
        self._spin_cycles = int(spin_s * self.spin_cycles_per_s)
        self.gpu_calls = _fit(ROUND_MS / (spin_s * 1e3 + call_ms), 1, MAX_CALLS)

    def gpu_time(self, fn: Callable[[], object], watch: CompileWatch) -> list[Sample]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.gpu_calls)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.gpu_calls)]
        compiled = []
        torch.cuda.synchronize()
        for i in range(self.gpu_calls):
            torch.cuda._sleep(self._spin_cycles)  # the host's head start: it queues the call meanwhile
            self._flush.zero_()
            before = watch.count()
            starts[i].record()
            fn()
            ends[i].record()
            compiled.append(watch.count() != before)
        torch.cuda.synchronize()
        return [(s.elapsed_time(e), c) for s, e, c in zip(starts, ends, compiled)]


def _fit(x: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, int(x)))


def make_timer(device: str) -> CpuTimer:
    return CudaTimer() if device == "cuda" else CpuTimer()
