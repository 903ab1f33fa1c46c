"""What a child forked ahead of its job does before the job comes (runner.child.zygote): on a CUDA worker, once a job's
child says its GPU work is done (runner.child.process.measured), the next job's child makes its CUDA context and the
math library's handle beside that job's end (its artifacts and record, its result stored, its compile report made,
the next claim), instead of on the next job's time. The job then finds them made: its "CUDA context" phase takes almost
nothing, and so does a float32 job's library warm-up where the child had time to load it before the job came
(while_waiting); its record says what was made before it came (`detail.prewarmed`). A CUDA
job none was warmed for (a worker's first, or one after a CPU job) gets a child warmed for it then, the same way
(`ahead: false`), so every CUDA job's child is made alike. What the job measures is unchanged: its first calls still
follow its own library warm-up (runner.child.build.warm_libraries), as a fresh child's do."""
from __future__ import annotations

import gc
import json
import os
import threading
import time
from collections.abc import Callable

ENV = "COMPILE_LAB_PREWARMED"  # set for the job by the warmed child: what it made before the job came
HEAP_ENV = "COMPILE_LAB_OWN_HEAP"  # set for the job by a forked child: how its memory was made its own (own_heap)


def warm() -> dict:
    """The CUDA context and cuBLAS's handle, on this process's device; the seconds each took. No kernel runs: what a
    job's child loads before its first calls is loaded by while_waiting only where no job is waiting for it. Nothing
    where there is no GPU (such a worker asks for no warmed child; a test of the hand-over does)."""
    import torch

    if not torch.cuda.is_available():
        return {"cuda": False}
    began = time.perf_counter()
    cuda_context("cuda")  # as the job's own "CUDA context" phase does (runner.child.build.build)
    context = time.perf_counter()
    torch.cuda.current_blas_handle()  # the handle alone
    return {"cuda": True, "cuda_context_s": round(context - began, 3),
            "libraries_s": round(time.perf_counter() - context, 3)}


HAND_OVER_S = 0.05  # a worker that waited for the warming writes its job at once: this long is "at once"


def while_waiting(job_r: int, warmed: dict, warm_up: Callable) -> None:
    """Once warm, a step at a time while no job has come (`job_r` not readable): a float32 job's library warm-up
    (`warm_up(device, dtype)`: runner.child.build.warm_libraries, a small matmul and convolution; passed in, as build
    imports this module), then the accuracy check's float64 comparison kernels on the GPU
    (runner.child.accuracy.warm_kernels), each loaded at its first use in a fresh child. Both
    precede what a job times (its first calls follow its library warm-up; the comparison follows its compiled first
    call), so nothing timed differs; a model without convolutions then holds a cuDNN handle it would not have made.
    A job that came is never kept waiting for a step not begun: on an H200 jobs came within the context's making
    (the last job's end is shorter), and a step it finds running is one load at most (0.2 s). Says in `warmed` the
    seconds of each step done, or why one failed."""
    import select

    if not warmed.get("cuda"):
        return
    import torch

    from runner.child.accuracy import warm_kernels

    device = torch.device("cuda")
    steps = (("float32_warm_up_s", lambda: warm_up(device, torch.float32)),
             ("accuracy_kernels_s", lambda: warm_kernels(device)))
    for i, (name, step) in enumerate(steps):
        if select.select([job_r], [], [], HAND_OVER_S if i == 0 else 0)[0]:
            return
        began = time.perf_counter()
        try:
            step()
            torch.cuda.synchronize()
            torch.cuda.empty_cache()  # the job's allocator starts as a fresh child's: nothing reserved
        except Exception as exc:  # the job loads them itself then: never a reason to lose it
            warmed[name.removesuffix("_s")] = f"not loaded ahead ({type(exc).__name__})"
            return
        warmed[name] = round(time.perf_counter() - began, 3)


def own_heap(ranges: list[tuple[int, int]] | None = None) -> dict:
    """Make the memory this fork shares with its preloaded parent its own, before its job, as a fresh interpreter's
    is: each private writable mapping the parent had filled (`ranges`, else read now) is written through at once
    (Linux's MADV_POPULATE_WRITE, 5.14+), which copies its shared pages (copy-on-write); where the kernel cannot, each
    object the collector tracks is referenced once (gc.get_objects), which copies the pages those lie on. A fork that
    did neither pays the copies in its first compile, at first touch and at the first full collection, which walks
    the parent's objects: on an H200 a small model's compiled first call took 0.24-0.45 s more forked than fresh
    (medians), that collection 0.25-0.33 s against 0.18-0.22 (docs/measurement.md, bench.fork_vs_fresh). Nothing is
    collected: the collector's generations stay as the parent left them, so the job's first call still pays the full
    collections a fresh process pays. What was done: {"how", "mb", "s"}."""
    began = time.perf_counter()
    copied = _populate_private(ranges)
    if copied is None:
        held = gc.get_objects()
        del held
    return {"how": "objects" if copied is None else "pages", "mb": round((copied or 0) / 2 ** 20),
            "s": round(time.perf_counter() - began, 3)}


def own_heap_beside(work: Callable[[], dict]) -> tuple[dict, dict]:
    """own_heap in a thread while `work` (the CUDA context) runs here: the write-through leaves the interpreter's lock
    while the kernel copies, and the mappings are read first, so those `work` makes are never written through.
    (own_heap's answer, its seconds counting the read; `work`'s)."""
    began = time.perf_counter()
    ranges = _private_ranges()
    read_s, heap = time.perf_counter() - began, {}
    thread = threading.Thread(target=lambda: heap.update(own_heap(ranges)), name="own heap")
    thread.start()
    try:
        done = work()
    finally:
        thread.join()
    return heap | {"s": round(heap.get("s", 0.0) + read_s, 3)}, done


POPULATE_WRITE = 23  # MADV_POPULATE_WRITE (linux/mman.h)


def _private_ranges() -> list[tuple[int, int]] | None:
    """Each private writable mapping at least half of which is resident (what the parent filled; not a reservation
    it never touched), up to a line not as smaps writes it; None where smaps cannot be read or names none."""
    try:
        with open("/proc/self/smaps") as f:
            text = f.read()
    except OSError:
        return None
    ranges, mapping = [], None
    for line in text.splitlines():
        head = line.split()
        if len(head) < 2:
            continue
        try:
            if "-" in head[0] and ":" not in head[0]:  # a mapping's first line: range, perms, ...
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                mapping = (lo, hi) if head[1] == "rw-p" else None
                continue
            if mapping is None or head[0] != "Rss:":
                continue
            resident = int(head[1]) * 1024
        except ValueError:  # nothing is taken from here on
            break
        (lo, hi), mapping = mapping, None
        if resident * 2 >= hi - lo:
            ranges.append((lo, hi))
    return ranges or None


def _populate_private(ranges: list[tuple[int, int]] | None = None) -> int | None:
    """Write through `ranges` (else _private_ranges()); the bytes, or None where there are none or the kernel does
    not know how (or this is not Linux)."""
    ranges = ranges if ranges is not None else _private_ranges()
    madvise = _madvise()
    if not ranges or madvise is None:
        return None
    import ctypes

    done = 0
    for lo, hi in ranges:
        if madvise(lo, hi - lo, POPULATE_WRITE) == 0:
            done += hi - lo
        elif ctypes.get_errno() == 22 and done == 0:  # EINVAL at the first: a kernel before 5.14
            return None
    return done


def _madvise():
    """libc's madvise, typed; None where there is none (not Linux)."""
    try:
        import ctypes

        madvise = ctypes.CDLL(None, use_errno=True).madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        return madvise
    except (OSError, AttributeError):
        return None


def note(name: str = ENV) -> dict | None:
    """What this job's child made before its job came (None: it was forked for the job); `name` HEAP_ENV: how its
    memory was made its own (None: not forked from the preloaded parent)."""
    try:
        said = json.loads(os.environ.get(name) or "null")
    except ValueError:
        return None
    return said if isinstance(said, dict) else None


def cuda_context(device) -> None:
    """Start the driver and make this process's context on `device` (a CUDA device), waiting until it is made."""
    import torch

    torch.cuda.init()
    torch.empty(1, device=device)
    torch.cuda.synchronize()
