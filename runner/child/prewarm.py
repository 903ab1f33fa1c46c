"""What a child forked ahead of its job does before the job comes (runner.child.zygote): on a CUDA worker, once a
job's GPU work is done, the next job's child makes its CUDA context and the math library's handle beside that job's
end (its result stored, its compile report made, the next claim), instead of on the next job's time. The job then
finds them made: its "CUDA context" phase and its library warm-up take almost nothing, and its record says what was
made before it came (`detail.prewarmed`). What the job measures is unchanged: its first calls still follow its own
library warm-up (runner.child.build.warm_libraries), as a fresh child's do."""
from __future__ import annotations

import json
import os
import time

ENV = "COMPILE_LAB_PREWARMED"  # set for the job by the warmed child: what it made before the job came


def warm() -> dict:
    """The CUDA context and cuBLAS's handle, on this process's device; the seconds each took. No kernel runs: the
    job's library warm-up still loads its dtype's (runner.child.build.warm_libraries), as a fresh child's does.
    Nothing where there is no GPU (such a worker asks for no warmed child; a test of the hand-over does)."""
    import torch

    if not torch.cuda.is_available():
        return {"cuda": False}
    began = time.perf_counter()
    cuda_context("cuda")  # as the job's own "CUDA context" phase does (runner.child.build.build)
    context = time.perf_counter()
    torch.cuda.current_blas_handle()  # the handle alone: no kernel of any dtype loaded that a fresh child lacks
    return {"cuda": True, "cuda_context_s": round(context - began, 3),
            "libraries_s": round(time.perf_counter() - context, 3)}


def note() -> dict | None:
    """What this job's child made before its job came (None: it was forked for the job)."""
    try:
        said = json.loads(os.environ.get(ENV) or "null")
    except ValueError:
        return None
    return said if isinstance(said, dict) else None


def cuda_context(device) -> None:
    """Start the driver and make this process's context on `device` (a CUDA device), waiting until it is made."""
    import torch

    torch.cuda.init()
    torch.empty(1, device=device)
    torch.cuda.synchronize()
