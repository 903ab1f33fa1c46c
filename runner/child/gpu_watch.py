"""NVML's view of a job's GPU through a window (the rounds, the compile): another process computing on it, the GPU
slowed by heat or a hardware brake (clock event reasons), its SM clock. Read at the window's ends and between rounds
(tens of microseconds), never while a call is timed. No torch here."""
from __future__ import annotations

import os
import time
from typing import Callable

CLOCK_DROP = 0.15  # the SM clock, sampled between rounds, fell this far below its highest while the GPU was not idle
# NVML clock event reasons that come from outside the job: heat, a hardware slowdown or power brake. Not the GPU being
# idle (0x1), application clock settings (0x2), the software power cap (0x4: the job's own power draw), sync boost
EXTERNAL_REASONS = {0x8: "a hardware slowdown", 0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
                    0x80: "a hardware power brake"}
GPU_IDLE = 0x1


class Gpu:
    """NVML's view of the job's GPU: other processes computing on it, clock event reasons, the SM clock."""

    def __init__(self, tree: Callable[[int], set[int]]):
        self.tree = tree  # a pid -> its descendants now (runner.child.disturbance.process_tree): the job's own
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        first = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]  # the worker pins the job's GPU so
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(int(first) if first.isdigit() else 0)
        self.reasons = 0
        self.clocks: list[tuple[int, bool]] = []  # (SM MHz, the GPU was idle then)
        self.since_us = int(time.time() * 1e6)
        self.tree_computes = False  # the child's own processes may compute on the GPU too (a compile's autotuning)
        self.unread: str | None = None  # NVML could not say which processes computed
        self.ours = 1  # in another pid namespace: how many computing processes can be the job's
        self.foreign = False  # NVML's pids are from another pid namespace (a container's), told apart by count only
        try:  # the child holds a CUDA context by now: NVML lists it under our pid only in our pid namespace
            running = {p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(self.handle)}
            self.same_namespace = (os.getpid() in running) if running else None
        except Exception:  # NVML's error, or a pynvml without the call: decided from the samples instead
            self.same_namespace = None

    def _reasons(self) -> int:
        n = self.nvml
        fn = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or n.nvmlDeviceGetCurrentClocksThrottleReasons
        return int(fn(self.handle))

    def look(self) -> None:
        try:
            reasons = self._reasons()
            self.reasons |= reasons
            clock = int(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
            self.clocks.append((clock, bool(reasons & GPU_IDLE)))
        except self.nvml.NVMLError:  # this GPU or driver does not say: nothing measured
            pass

    def causes(self, during: str = "the rounds", clocks: bool = True) -> tuple[list[str], dict]:
        """The causes NVML saw in words naming the window (`during`); `clocks`: judge the SM clock's moves too."""
        causes = []
        external = [words for bit, words in EXTERNAL_REASONS.items() if self.reasons & bit]
        if external:
            causes.append("the GPU was slowed by " + " and ".join(external) + f" during {during}")
        busy = [c for c, idle in self.clocks if not idle]
        if clocks and len(busy) >= 2 and min(busy) < (1 - CLOCK_DROP) * max(busy):
            causes.append(f"the GPU's SM clock moved between {min(busy)} and {max(busy)} MHz during {during}")
        others = self._others()
        listed = ", ".join(f"pid {p} at {u}% SM" for p, u in others[:3])
        if others and self.foreign:
            causes.append(f"more processes computed on the GPU during {during} than the job has ({len(others)} against "
                          f"{self.ours}; NVML's pids are from another pid namespace: {listed})")
        elif others:
            causes.append(f"another process computed on the GPU during {during} ({listed})")
        measured = {"clock_event_reasons": hex(self.reasons), "sm_clock_mhz_min": min((c for c, _ in self.clocks),
                                                                                     default=None),
                    "sm_clock_mhz_max": max((c for c, _ in self.clocks), default=None),
                    "other_gpu_processes": [{"pid": p, "sm_pct": u} for p, u in others]}
        if self.unread:
            measured["not_measured"] = self.unread
        return causes, measured

    def _others(self) -> list[tuple[int, int]]:
        """Processes other than this one and its children that used the GPU's SMs since the window began."""
        n, me = self.nvml, os.getpid()
        try:
            samples = n.nvmlDeviceGetProcessUtilization(self.handle, self.since_us)
        except n.NVMLError as e:
            if not isinstance(e, getattr(n, "NVMLError_NotFound", ())):  # no samples since then is no failure
                self.unread = f"other processes on the GPU were not read ({type(e).__name__})"
            return []
        computing: dict[int, int] = {}
        for s in samples:
            if s.smUtil and s.timeStamp >= self.since_us:
                computing[s.pid] = max(computing.get(s.pid, 0), int(s.smUtil))
        mine = {me} | self.tree(me)
        same = self.same_namespace if self.same_namespace is not None else me in {s.pid for s in samples}
        if same:
            return sorted(((p, u) for p, u in computing.items() if p not in mine), key=lambda kv: -kv[1])
        # another pid namespace: NVML's pids cannot be told from ours, only counted against the job's processes that
        # opened the GPU (the child; in a compile also max-autotune's benchmark processes under it)
        self.ours = 1 + (sum(_opened_gpu(p) for p in mine - {me}) if self.tree_computes else 0)
        self.foreign = len(computing) > self.ours
        return sorted(computing.items(), key=lambda kv: -kv[1]) if self.foreign else []


def _opened_gpu(pid: int) -> bool:
    """Whether a process holds one of the GPU's device files open; one that cannot be read counts as holding it (so
    it is taken for the job's, never for another's)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return True
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/dev/nvidia"):
                return True
        except OSError:
            continue
    return False
