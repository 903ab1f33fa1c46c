"""What disturbed a job's timed rounds from outside, measured, never guessed from the timings' scatter.

A run is left out of the answer (and re-run) only for a cause measured here, named in words:
  - other processes busy on the cores this job may use (/proc/stat over its CPUs, less this process and its own
    children), or the hypervisor taking them (steal time);
  - tasks stalled for memory (/proc/pressure/memory) or pages swapped in;
  - on CUDA, through NVML: another process computing on the GPU, the GPU slowed by heat or a hardware brake
    (clock event reasons), or its SM clock dropping while the GPU was busy (runner.child.gpu_watch).
Scatter alone is not a cause: it widens the answer's interval (lab.interval). Reads happen before the rounds, between
rounds (NVML only: tens of microseconds) and after them, never while a call is timed. No torch here.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab.noise import dashboard_pids
from runner.child.gpu_watch import Gpu
from runner.child.reaper import proc_stats

log = logging.getLogger("compile_lab.child")

CPU_SHARE = 0.10  # others' CPU time past this share of the job's cores during the rounds is a cause
CPU_MIN_S = 0.05  # and at least this much of it (/proc/stat counts in 10 ms ticks)
MEMORY_STALL = 0.05  # some task stalled for memory this share of the rounds
SWAP_PAGES = 256  # pages swapped in during the rounds (1 MB)
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def my_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity), sorted: a job's cores, whose other users disturb it."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


@dataclass
class Reading:
    """One look at the host: the job's cores' busy and steal ticks, every process's CPU ticks, memory stalls."""

    at: float
    busy: int = 0
    steal: int = 0
    parts: dict = field(default_factory=dict)  # /proc/stat's columns over the job's CPUs, ticks
    own: float = 0.0  # this process and its children, seconds
    procs: dict = field(default_factory=dict)  # pid -> (name, ticks)
    stall_us: int | None = None
    swapped_in: int | None = None


def cpu_ticks(cpus: set[int]) -> tuple[int, int, dict]:
    """Busy ticks of the job's CPUs (user, nice, system: what processes ran; interrupts are the machine serving
    devices, the job's own GPU among them, and are kept apart), their steal ticks, and each part."""
    parts = dict.fromkeys(("user", "nice", "system", "irq", "softirq", "steal"), 0)
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu") or line.startswith("cpu "):
                continue
            name, *values = line.split()
            if int(name[3:]) not in cpus:
                continue
            v = [int(x) for x in values] + [0] * 10
            for key, value in zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"), v):
                if key in parts:
                    parts[key] += value
    return parts["user"] + parts["nice"] + parts["system"], parts["steal"], parts


def _processes() -> dict[int, tuple[str, int, int, int]]:
    """pid -> (name, CPU ticks: utime + stime, parent pid, its reaped children's: cutime + cstime) for every process
    in /proc. A compile worker's compiler processes (g++ under inductor's pool on a CPU) end inside a window: their
    time is their parent's reaped children's."""
    return {pid: (name, int(rest[11]) + int(rest[12]), int(rest[1]), int(rest[13]) + int(rest[14]))
            for pid, (name, rest) in proc_stats().items()}


def _own_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _pressure() -> tuple[int | None, int | None]:
    stall = swapped = None
    try:
        with open("/proc/pressure/memory") as f:
            for line in f:
                if line.startswith("some"):
                    stall = int(line.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("pswpin "):
                    swapped = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return stall, swapped


def read_host(cpus: set[int], with_processes: bool = True) -> Reading:
    r = Reading(at=time.monotonic(), own=_own_seconds())
    try:
        r.busy, r.steal, r.parts = cpu_ticks(cpus)
        r.procs = _processes() if with_processes else {}
    except (OSError, ValueError):  # not Linux, or /proc unreadable: nothing measured
        pass
    r.stall_us, r.swapped_in = _pressure()
    return r


def process_tree(root: int) -> set[int]:
    """Every process descended from `root` now (children, theirs, ...), not `root` itself."""
    return _descendants(_processes(), root)


def _descendants(procs: dict, root: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for pid, (_, _, parent, *_) in procs.items():
        kids.setdefault(parent, []).append(pid)
    out, todo = set(), [root]
    while todo:
        for child in kids.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def _named(pid: int, name: str, apps: set[int]) -> str:
    """Who a busy process is, in words where the lab knows it: this job's worker, or this lab's dashboard server
    (`apps`: lab.noise.dashboard_pids, read once per look)."""
    if pid == os.getppid():
        return "this job's worker"
    if pid in apps:
        return "this lab's dashboard server"
    return name


def host_causes(before: Reading, after: Reading, cpus: set[int], during: str = "the rounds") -> tuple[list[str], dict]:
    """The host's causes between two readings, in words (`during`: the window they bound), and what was measured."""
    wall = max(after.at - before.at, 1e-9)
    capacity = wall * len(cpus)
    me = os.getpid()
    helpers = _descendants(after.procs, me)  # the job's own: compile workers, its keeper
    top, mine, apps = [], [], dashboard_pids()
    for pid, (name, ticks, _, reaped) in after.procs.items():
        if pid == me:
            continue
        _, was, _, was_reaped = before.procs.get(pid, (name, 0, 0, 0))  # one started meanwhile: all of its time
        if pid in helpers:  # with the processes it started and ended meanwhile (a compile worker's compilers)
            mine.append(((ticks + reaped - was - was_reaped) / TICK, pid, name))
            continue
        used = (ticks - was) / TICK
        if used >= 0.05 * wall:
            top.append((used, pid, _named(pid, name, apps)))
    helpers_s = sum(used for used, _, _ in mine)
    # a process of the job's that ran before the window and was reaped inside it lands whole in its parent's reaped
    # time (the child's own, or a helper's): its time before the window is not the window's
    earlier = _descendants(before.procs, me)
    before_s = sum(t + r for pid, (_, t, _, r) in before.procs.items() if pid in earlier and pid not in after.procs) / TICK
    others_s = max(0.0, (after.busy - before.busy) / TICK - (after.own - before.own) - helpers_s + before_s)
    steal_s = max(0.0, (after.steal - before.steal) / TICK)
    top.sort(reverse=True)
    measured = {"rounds_s": round(wall, 3), "cores": len(cpus), "others_cpu_s": round(others_s, 3),
                "others_share": round(others_s / capacity, 4), "steal_s": round(steal_s, 3),
                "busiest_others": [{"pid": pid, "name": name, "cpu_s": round(used, 3)} for used, pid, name in top[:8]],
                "cpu_s_by_kind": {k: round((after.parts.get(k, 0) - before.parts.get(k, 0)) / TICK, 3)
                                  for k in after.parts},
                "own_cpu_s": round(after.own - before.own, 3),
                "own_helpers": [{"pid": pid, "name": name, "cpu_s": round(used, 3)}
                                for used, pid, name in sorted(mine, reverse=True)[:5] if used > 0]}
    causes = []
    if before.procs and others_s >= CPU_MIN_S and others_s / capacity > CPU_SHARE:
        who = ", ".join(f"{name} (pid {pid}) {used / wall:.1f}" for used, pid, name in top[:3])
        who += f", {len(top) - 3} more" if len(top) > 3 else ""
        rest = others_s - sum(used for used, _, _ in top)  # processes that ended meanwhile, or each ran briefly
        if rest / wall >= 0.05:
            who += f"{', ' if who else ''}{rest / wall:.1f} by processes that ended meanwhile or ran briefly"
        causes.append(f"other processes used {others_s / wall:.1f} of the job's {len(cpus)} cores during {during}"
                      + (f" ({who})" if who else ""))
    if before.procs and steal_s >= CPU_MIN_S and steal_s / capacity > CPU_SHARE:
        causes.append(f"the hypervisor took {steal_s / capacity:.0%} of the job's cores during {during} (steal time)")
    if before.stall_us is not None and after.stall_us is not None:
        stalled = (after.stall_us - before.stall_us) / 1e6
        measured["memory_stall_s"] = round(stalled, 3)
        if stalled / wall > MEMORY_STALL:
            causes.append(f"memory pressure: tasks waited for memory {stalled / wall:.0%} of {during}")
    if before.swapped_in is not None and after.swapped_in is not None:
        pages = after.swapped_in - before.swapped_in
        measured["pages_swapped_in"] = pages
        if pages > SWAP_PAGES:
            causes.append(f"memory pressure: {pages} pages swapped in during {during}")
    return causes, measured


class Around:
    """The host around one window outside the rounds (the compiled first call, whose cold compile is a number the
    answer gives): read just before and just after it, never during; `causes` in words naming the window, and
    `measured` (its seconds as `window_s`). A window that raised reads nothing after it."""

    def __init__(self, during: str, device: str = "cpu", header: bool = False):
        self.during, self.cpus = during, set(my_cpus())
        self.causes: list[str] = []
        self.measured: dict = {}
        self.headers = Headers() if header else None  # a CPU inductor compile: did it build inductor's header?
        self.gpu: Gpu | None = None
        if device == "cuda":  # on a GPU also what NVML saw: another process computing on it, a thermal or power brake
            try:
                self.gpu = Gpu(process_tree)
                self.gpu.tree_computes = True
            except Exception as e:  # no pynvml, or no NVML: said in the record, as the rounds' Watch says it
                self.measured["not_measured"] = f"the GPU was not watched ({type(e).__name__}: {e})"[:300]

    def __enter__(self) -> Around:
        self.before = read_host(self.cpus)
        if self.gpu is not None:
            self.gpu.since_us = int(time.time() * 1e6)
            self.gpu.look()
        return self

    def __exit__(self, kind, *_) -> None:
        if self.headers is not None:
            self.headers.close()  # torch's own function back, whatever the window did
        if kind is None:
            after = read_host(self.cpus)
            causes, measured = host_causes(self.before, after, self.cpus, self.during)
            measured["window_s"] = measured.pop("rounds_s")
            if self.gpu is not None:  # the SM clock is not judged here: a compile leaves the GPU idle between kernels
                self.gpu.look()
                gpu_causes, measured["gpu"] = self.gpu.causes(self.during, clocks=False)
                causes += gpu_causes
            if self.headers is not None and (built := self.headers.built()):
                causes.append(built)
            self.causes, self.measured = causes, self.measured | measured

    def said(self) -> dict:
        """What the record keeps: {"causes": [...], "read": whether /proc could be read at all, ...measured}."""
        return {"causes": self.causes, "read": bool(self.before.procs), **self.measured}


class Headers:
    """Inductor's precompiled C++ headers: built once per machine, compiler, torch and flags, outside every compile
    cache (the worker builds the usual one ahead: runner.worker.header_warm). A compile that builds one pays what a
    script on a machine that has compiled with those flags before does not, so it is named as a cause. Its own:
    a header file new in torch's folder that this process asked torch for in the window (torch's
    `_precompile_header`, called in the compiling process, watched for the window), not one another process built."""

    def __init__(self):
        try:
            from torch._inductor import codecache
        except Exception:  # inductor does not import: the compile says why itself, and no header is claimed
            codecache = None
        self.codecache, self.asked = codecache, []
        folder = getattr(codecache, "_HEADER_DIR", None)  # torch's own names (private: absent, nothing is claimed)
        self.inner = getattr(codecache, "_precompile_header", None)
        self.folder = Path(folder) if folder and self.inner else None
        self.before = self._files()
        if self.folder is not None:
            def asked(*args, **kwargs):
                path = self.inner(*args, **kwargs)
                self.asked.append(Path(str(path)).name + ".gch")
                return path
            codecache._precompile_header = asked

    def _files(self) -> dict[str, int]:
        try:
            return {f.name: f.stat().st_size for f in self.folder.glob("*.gch")} if self.folder else {}
        except OSError:
            return {}

    def close(self) -> None:
        if self.folder is not None:
            self.codecache._precompile_header = self.inner

    def built(self) -> str | None:
        """After close(): the header this process built in the window, in words; None for none."""
        new = {k: v for k, v in self._files().items() if k not in self.before and k in self.asked}
        if not new:
            return None
        return (f"the compile built inductor's precompiled C++ header ({sum(new.values()) / 2 ** 20:.0f} MB): a cost "
                "paid once per machine and compiler flags, which a script on a machine that has compiled with these "
                "flags before does not pay")


class Watch:
    """Measures the rounds: `start()` before them, `between()` between two rounds, `stop()` after them."""

    def __init__(self, device: str, cpus: list[int]):
        self.cpus = set(cpus)
        self.device = device
        self.gpu: Gpu | None = None
        self.before: Reading | None = None
        self.note: str | None = None

    def start(self) -> None:
        if self.device == "cuda":
            try:
                self.gpu = Gpu(process_tree)
            except Exception as e:  # no pynvml, or no NVML: the GPU's causes are not measured, and the record says so
                self.note = f"the GPU's clocks and other processes were not measured ({type(e).__name__}: {e})"[:300]
        if self.gpu is not None:
            self.gpu.since_us = int(time.time() * 1e6)
            self.gpu.look()
        self.before = read_host(self.cpus)

    def between(self) -> None:
        if self.gpu is not None:
            self.gpu.look()

    def stop(self) -> tuple[list[str], dict]:
        """The causes in words (empty: nothing disturbed the rounds), and what was measured."""
        after = read_host(self.cpus)
        causes, measured = host_causes(self.before, after, self.cpus) if self.before else ([], {})
        if self.gpu is not None:
            self.gpu.look()
            gpu_causes, gpu_measured = self.gpu.causes()
            causes += gpu_causes
            measured["gpu"] = gpu_measured
        if self.note:
            measured["not_measured"] = self.note
        return causes, measured
