"""Peak memory of each side of a job."""
from __future__ import annotations

import torch


class Memory:
    """Peak memory of each side.

    CUDA: caching-allocator peak above what the models and inputs hold (taken at setup), so persistent
    compiled state (CUDA-graph pools) counts. CPU: peak resident set size above the size just before
    the side's calls (Linux VmHWM, reset through /proc/self/clear_refs): transient memory only."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        if self.cuda:
            torch.cuda.synchronize()
            self.base = torch.cuda.memory_allocated()
            self.method = "cuda allocator peak above models+inputs"
        else:
            self.base = 0
            self.method = "cpu peak RSS above RSS before the calls (VmHWM)"
        self.ok = True

    def start(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            return
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


def _proc_status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise OSError(f"{key} not in /proc/self/status")
