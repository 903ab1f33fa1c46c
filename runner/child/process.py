"""The child process, one per job (python -m runner.child): reads the spec file, measures, writes its result file
(lab.result_file) atomically. Compiler logs go to stdout/stderr, which the worker keeps as the job's log; the worker
reads results only from the result file."""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import re
import signal
import sys
import time
import traceback
from pathlib import Path

from lab.errors import first_line
from lab.result_file import ResultFile
from runner.child import diskspace
from runner.child.reaper import become_subreaper

WORKER_PID_ENV = "COMPILE_LAB_WORKER_PID"  # set by the worker: the parent this child must outlive never
THREADS_ENV = "COMPILE_LAB_THREADS"  # torch's intra-op threads, pinned by the worker (runner.worker.neighbours)
RESULT_FD_ENV = "COMPILE_LAB_RESULT_FD"  # set by the preloaded parent: where to say "the result file is complete"


def set_pdeathsig(sig: int) -> bool:
    """PR_SET_PDEATHSIG: the kernel sends `sig` to this process when its parent dies (Linux only)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        return libc.prctl(1, int(sig)) == 0
    except (OSError, AttributeError):
        return False


def _die_with_parent() -> bool:
    """Ask the kernel to SIGKILL us when the worker dies, so no orphan keeps a GPU or writes a result."""
    armed = set_pdeathsig(signal.SIGKILL)
    worker = int(os.environ.get(WORKER_PID_ENV) or 0)
    if (worker and os.getppid() != worker) or os.getppid() == 1:  # the worker died before prctl took effect
        os._exit(1)
    return armed


def _start_group_keeper(lease_file: str | None) -> None:
    """Fork a tiny process that kills this job's whole process tree as soon as this child is gone, or
    as soon as the lease that the worker mirrors into `lease_file` runs out (runner/worker/lease.py).

    The worker kills the tree itself on timeout, cancel and stop. But when the worker is killed (-9),
    the parent-death signal ends only this child, and a grandchild (a helper process a model starts)
    would live on, holding memory or a GPU; and when the worker is frozen, nobody would stop this
    child before another worker runs the same job. The keeper's own parent-death signal fires when
    this child dies, by any means; it then SIGKILLs the group, itself included. Forked before the job's
    work, so it costs a few MB; it keeps no descriptor but its output (a child warmed ahead has a CUDA
    context by then, whose device files must close with the child, and its result pipe)."""
    child = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() != 0:
        return
    try:
        os.closerange(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
        signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
        set_pdeathsig(signal.SIGTERM)
        if os.getppid() != child:  # the child died before prctl took effect
            os.killpg(0, signal.SIGKILL)
        if not lease_file:
            while True:
                signal.pause()
        from runner.child.lease_deadline import read_deadline
        from runner.child.reaper import kill_tree

        deadline = None
        while True:  # a watchdog, not a wait for an event: the worker it watches may be frozen
            deadline = read_deadline(lease_file) or deadline
            if deadline is not None and time.monotonic() > deadline:
                print(f"compile-lab child: lease ran out (worker {os.environ.get(WORKER_PID_ENV)} stopped "
                      "renewing it); stopping the job", flush=True)
                kill_tree(child, spare=os.getpid())
                os.killpg(0, signal.SIGKILL)
            time.sleep(LEASE_CHECK_S)
    finally:
        os._exit(0)


LEASE_CHECK_S = 0.05


class Progress:
    """Appends {"phase", "progress", "t"} lines that the worker reads at each heartbeat."""

    def __init__(self, path: str | None):
        self.path = path
        self.phase = "starting"

    def report(self, phase: str, progress: float | None) -> None:
        self.phase = phase
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps({"phase": phase, "progress": progress, "t": time.time()}) + "\n")


def json_safe(value):
    """NaN and infinities become null: the JSON columns must load on PostgreSQL too."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_atomic(path: str, payload: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(json_safe(payload), f)
    os.replace(tmp, path)


def probe(out: str) -> None:
    """What this host's child can do: torch version, whether CUDA is visible, and the device name."""
    import torch

    from runner.child import preload
    from runner.child.driver import nvidia_driver
    from runner.child.environment import environment

    cuda, cpu_env = torch.cuda.is_available(), environment("cpu")
    info = {"torch_version": torch.__version__, "cuda": cuda,
            "device_count": torch.cuda.device_count() if cuda else 0,
            "device_name": torch.cuda.get_device_name(0) if cuda else None,
            # with the versions, what keys a portable compile cache (db.caches)
            "capability": ".".join(map(str, torch.cuda.get_device_capability(0))) if cuda else None,
            "triton_version": cpu_env["triton_version"], "cpu_name": cpu_env["device_name"],
            "driver": nvidia_driver() if cuda else None,
            # the families' packages this child found imported already (by the preloaded parent it was forked from)
            "preloaded": sorted(m[0] for m in preload.FAMILY_MODULES.values() if m[0] in sys.modules)}
    write_atomic(out, info)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m runner.child")
    p.add_argument("--spec")
    p.add_argument("--result")
    p.add_argument("--progress")
    p.add_argument("--lease-file", help="the lease's end, kept by the worker (runner/worker/lease.py)")
    p.add_argument("--models-dir", action="append", default=[])
    p.add_argument("--repeat", action="store_true",
                   help="a follow-up process of a configuration measured before: the headline clock only")
    p.add_argument("--cache-from-first-run", action="store_true",
                   help="the compile cache holds the configuration's first run's compile (a warm first call)")
    p.add_argument("--probe", metavar="OUT")
    p.add_argument("--calibrate", nargs=2, metavar=("DEVICE", "OUT"), help="measure the device's ceilings")
    p.add_argument("--import-cost", metavar="OUT", help="in a fresh interpreter: what preloading takes from a "
                                                         "first call (runner/child/preload.py)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    armed = _die_with_parent()
    if args.probe:
        probe(args.probe)
        return 0
    if args.import_cost:
        import torch  # noqa: F401  (a script has imported torch before its torch.compile line)

        from runner.child import preload

        write_atomic(args.import_cost, preload.measure())
        return 0
    if args.calibrate:
        from runner.child.calibrate import calibrate

        device, out = args.calibrate
        write_atomic(out, calibrate(device))
        return 0
    become_subreaper()  # orphaned descendants stay in this tree, where the job's end finds them
    if armed:
        _start_group_keeper(args.lease_file)
    return run_job(args)


def run_job(args: argparse.Namespace) -> int:
    """Measure the job in `spec_file` and write its result file; every failure becomes a recorded reason.
    The child's work, also called in the worker's own process by `--spawn inline` (debugging under pdb)."""
    entered = time.time()
    spec_file, result_file, progress_file, models_dirs = args.spec, args.result, args.progress, args.models_dir
    from lab.checks import SpecError
    from lab.spec import ExperimentSpec
    from lab.timeline import Phases
    from runner import zoo

    progress = Progress(progress_file)
    phases = Phases()  # the worker turns these into the job's timeline (lab.timeline)
    try:
        spec = ExperimentSpec.from_json(Path(spec_file).read_text())
        entry = zoo.resolve(spec.model, models_dirs)
        if entry is None:
            raise SpecError("model", f"{spec.model!r} is not in this worker's zoo")
        print(f"compile-lab child: {spec.label}", flush=True)
        pin_threads()
        from runner.child import measure

        phases.add("child setup", entered, time.time())  # imports (torch itself in a fresh interpreter), spec, zoo
        role = measure.Role(repeat=args.repeat, cache_from_first_run=args.cache_from_first_run)
        result = measure.run(spec, entry, progress.report, Path(result_file).parent / "artifacts",
                             phases, role, measured)
        # the write's own end is when the worker sees the child exit: it closes the timeline's "result write"
        ResultFile.succeeded(result, phases.intervals, time.time()).write(result_file)
    except Exception as exc:  # every failure becomes a recorded reason, never a vanished job
        if (full := _failed(exc, progress.phase, result_file)) is not None:  # a full disk: the worker's outage
            return full
    result_ready()
    return 0


def _failed(exc: Exception, phase: str, result_file: str) -> int | None:
    """The failure into the log and the result file. Where a full disk is in the exception's chain, or refuses those
    writes, the marker the worker reserved says so (runner.child.diskspace) and the exit code to end with is returned."""
    full = diskspace.no_space_error(exc)
    for write in (traceback.print_exc,
                  lambda: ResultFile.failed(failure_message(exc, phase)).write(result_file)):
        try:
            write()
        except OSError as e:
            if (full := full or diskspace.no_space_error(e)) is None:
                raise
    if full is None:
        return None
    diskspace.tell(Path(result_file).parent, full, phase, exc)
    return diskspace.EXIT_NO_SPACE


def result_ready() -> None:
    """Tell the preloaded parent (runner.child.zygote) that the result file is complete, the log flushed: the worker then
    stores the result while this process exits. Tearing a CUDA context down took 0.12-0.2 s per job on an H100,
    per-job overhead that no longer waits (a forked child only; elsewhere the worker waits for the exit)."""
    sys.stdout.flush()
    sys.stderr.flush()
    _say(b"r", last=True)


def measured() -> None:
    """Tell the preloaded parent that nothing more of this job is timed (its clocks; a schedule's calls or a traffic
    replay where it has them): what is left counts (kernels, FLOPs) or runs on the host (its artifacts, its record),
    so the next job's child may make its CUDA context now, beside it (runner.worker.attempt). Said once, before
    result_ready; a forked child only."""
    _say(b"g", last=False)


def _say(byte: bytes, last: bool) -> None:
    fd = os.environ.get(RESULT_FD_ENV)
    if not fd:
        return
    try:
        os.write(int(fd), byte)
        if last:
            os.close(int(fd))
    except (OSError, ValueError):  # the parent is gone: the worker learns of this child's end from its exit
        pass


def pin_threads() -> None:
    """torch's intra-op threads as the worker set them (its CPUs, or `work --threads`): a CPU job must not run
    more threads than the cores it was given, nor a different count from job to job (detail.host_state keeps it)."""
    threads = os.environ.get(THREADS_ENV)
    if threads:
        import torch

        torch.set_num_threads(int(threads))


def failure_message(exc: BaseException, phase: str) -> str:
    from runner.child.measure import ExperimentFailed

    if isinstance(exc, ExperimentFailed):
        return str(exc)
    first = first_line(exc, blank="")
    where = ""
    tb = traceback.extract_tb(exc.__traceback__)
    if tb:
        frame = tb[-1]
        where = f" | at {frame.filename}:{frame.lineno}"
    if type(exc).__name__ == "OutOfMemoryError":  # torch.cuda.OutOfMemoryError (named so torch stays unimported here)
        return f"out of memory during {phase}: {first}"
    cpu_oom = _CPU_OOM.search(first)
    if cpu_oom:  # torch's CPU allocator refused: a shape too large for this host's memory
        size = int(cpu_oom.group(1))
        return (f"out of memory during {phase} (CPU): tried to allocate {size} bytes ({size / 2**30:.1f} GiB), "
                f"more than this host can give{where}")
    return f"{type(exc).__name__} during {phase}: {first}{where}"


_CPU_OOM = re.compile(r"DefaultCPUAllocator: can't allocate memory: you tried to allocate (\d+) bytes")

