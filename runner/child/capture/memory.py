"""Peak memory of each side of a job."""
from __future__ import annotations

import ctypes

import torch


class Memory:
    """Peak memory of each side.

    CUDA: caching-allocator peak above what the models and inputs hold (taken at setup), so persistent
    compiled state (CUDA-graph pools) counts. CPU: peak resident set size above the size just before
    the side's calls (Linux VmHWM, reset through /proc/self/clear_refs), freed heap pages returned to the system
    first (malloc_trim): transient memory only."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        if self.cuda:
            torch.cuda.synchronize()
            self.base = torch.cuda.memory_allocated()
            self.method = "cuda allocator peak above models+inputs"
        else:
            self.base = 0
            self.method = "cpu peak RSS above RSS before the calls (VmHWM, freed heap trimmed first)"
        self.ok = True

    def start(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            return
        _trim()  # freed memory back to the system first: else the call reuses it and its RSS never grows
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
            self.base = _proc_status_kb("VmRSS") * 1024
        except OSError:
            self.ok = False

    def peak_mb(self) -> float | None:
        if self.cuda:
            torch.cuda.synchronize()
            return (torch.cuda.max_memory_allocated() - self.base) / 2 ** 20
        if not self.ok:
            return None
        return max(0.0, (_proc_status_kb("VmHWM") * 1024 - self.base) / 2 ** 20)


def _trim() -> None:
    """glibc's malloc_trim(0): the heap's free pages returned to the system, so the RSS before a call holds what is
    in use, not what was freed and kept. Without it a compiled MLP's transient memory on the CPU read 2 MB where its
    buffers need 6 (eager 5.9 where 10): the call reused freed pages and VmHWM did not move. No glibc: nothing."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL("libc.so.6")
            _libc.malloc_trim  # noqa: B018 (glibc has it; musl's libc does not)
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


_libc = None


def _proc_status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise OSError(f"{key} not in /proc/self/status")
