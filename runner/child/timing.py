"""The timing protocol, in one place: three clocks per side, every host clock read preceded by a device sync, every
sample kept, eager and compiled interleaved as PyTorch's compiler harness does.

latency (the headline): one synchronous call as the caller sees it (sync, clock, call, sync, clock; no L2 flush),
  the sides alternating call by call after one untimed call each, so neither is timed hot from its own last call.
throughput: a block of back-to-back calls with one sync at the end, per call.
gpu (CUDA only, a diagnosis): kernel time per call from a cold L2, the host's launches hidden behind a GPU spin.

On the CPU latency is perf_counter around each call and there is no GPU clock. docs/measurement.md says why each
clock, with the figures; the record's `timing_method` names the clocks, `timing_protocol` their version."""
from __future__ import annotations

import time
from typing import Callable

import torch

FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2 (H100: 50 MB, H200: 60 MB)
ROUND_MS = 20.0  # time one clock of one side of one round takes, roughly
MAX_CALLS = 25  # per-call samples per side per round, at most (latency, gpu)
MIN_BLOCK, MAX_BLOCK = 2, 100  # back-to-back calls in one throughput block
REPLAN = 2.0  # a round whose calls ran this many times faster than the plan's estimate sizes the rounds after it
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
        self.call_ms = self.issue_ms = None
        self.replans: list[dict] = []

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
        self.call_ms, self.issue_ms = call_ms, issue_ms
        self.latency_calls = _fit(ROUND_MS / max(call_ms, 1e-6), 1, MAX_CALLS)
        self.block_calls = _fit(ROUND_MS / max(call_ms, 1e-6), MIN_BLOCK, MAX_BLOCK)

    def follow(self, timed: list[list[Sample]], after_round: int) -> None:
        """Re-plan from a latency round's calls (`timed`, per side) when the slower side's fastest call that did not
        compile ran REPLAN times faster than planned: the warm-up was slowed from outside all along (a page on the
        host drawing as it began: in a CI run every estimate call of a 0.1 ms step took 5 ms or more, the rounds got
        3 calls a side, and 300 were over in 0.73 s). Only ever towards more calls; each re-plan is recorded
        (`calls_per_round.replanned`). The issue time stays the warm-up's: a GPU head start too long is safe, one
        too short is not. Rounds of different sizes are still paired rounds: each round's medians and its ratio
        stand on their own (lab.interval)."""
        fastest = [min(ms for ms, compiled in side if not compiled) for side in timed
                   if not all(compiled for _, compiled in side)]
        if self.call_ms is None or not fastest or len(fastest) < len(timed) or max(fastest) * REPLAN > self.call_ms:
            return
        call_ms = max(fastest)
        before = self.sizes()
        self.plan(call_ms, self.issue_ms)
        if before != self.sizes():
            self.replans.append({"after_round": after_round, "call_ms": round(call_ms, 6), "before": before,
                                 "after": self.sizes()})

    def sizes(self) -> dict:
        """Calls per round of each clock (the record's `calls_per_round`)."""
        return {"latency": self.latency_calls, "throughput": self.block_calls, "gpu": getattr(self, "gpu_calls", None)}

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
