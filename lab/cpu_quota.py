"""How many CPUs this process may really use: its affinity, and the CPU quota of its cgroup (a container's
`--cpus 2`, a Kubernetes pod's CPU limit, a Slurm job's cgroup), which the affinity does not show. A container
limited to 2 CPUs on a 64-core host sees 64 in its affinity: torch's threads set to 64 would queue for the 2, and the
rounds would time that queue. The worker sets torch's threads to this (runner.worker.loop); a page on a host this
small waits for a timing to end (dashboard.state.quiet). No torch.

cgroup v2: `cpu.max` ("max 100000", or "200000 100000": 2 CPUs) of the process's group (/proc/self/cgroup's "0::"
line) or of an ancestor; v1: `cpu/cpu.cfs_quota_us` over `cpu.cfs_period_us` (-1: none).
"""
from __future__ import annotations

import math
import os
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def _v2_groups(root: Path, proc: Path) -> list[Path]:
    """The process's v2 group and its ancestors, innermost first (a limit may be set on any of them)."""
    try:
        lines = proc.read_text().splitlines()
    except OSError:
        return [root]
    path = next((line[3:] for line in lines if line.startswith("0::")), "/")
    parts = [p for p in path.strip("/").split("/") if p and p != ".."]
    return [root.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]


def quota(root: Path = ROOT, proc: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPUs per second this process's cgroup may use (the tightest quota over its group and its ancestors),
    or None where no quota is set or none can be read."""
    found = []
    for group in _v2_groups(root, proc):
        try:
            limit, period = (group / "cpu.max").read_text().split()[:2]
        except (OSError, ValueError):
            continue
        if limit != "max" and float(period) > 0:
            found.append(float(limit) / float(period))
    try:
        limit_us = float((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = float((root / "cpu" / "cpu.cfs_period_us").read_text())
        if limit_us > 0 and period_us > 0:
            found.append(limit_us / period_us)
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def affinity() -> int:
    """The CPUs this process may run on (its affinity)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def usable(cpus: int, limit: float | None) -> int:
    """The whole CPUs a process may use: `cpus` (its affinity) under its cgroup's quota (`limit`; None: none),
    rounded down (1.5 CPUs: one thread that never waits on another), at least 1."""
    return max(1, min(cpus, math.floor(limit))) if limit is not None else max(1, cpus)


def here() -> int:
    """usable() for this process: its affinity under its cgroup's quota."""
    return usable(affinity(), quota())
