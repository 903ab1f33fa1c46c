"""What the preloaded parent (runner/child/zygote.py) imports beyond torch, and what that takes from a child's
compiled first call.

A user's fresh script pays three imports for its first compiled call: torch itself, what the
`torch.compile(model)` line imports (torch._dynamo, and inductor's front: config, compile_fx, codecache), and
what the first call imports while it compiles (on CUDA: triton and inductor's triton code generation). The
first two come before the first call in that script too, so preloading them changes no measured number:
they move from the child's "compiler setup" and "model build" phases into the parent, once per worker. The
third is inside the compiled first call; preloading it (FIRST_CALL_MODULES, where installed) would shrink the
child's first call below a fresh process's. So the probe, a fresh interpreter, measures what importing
FIRST_CALL_MODULES costs after the same `torch.compile` line (`first_call_imports_s`), once per worker, and
a forked child on CUDA with inductor adds it back to its compiled first call as its own named part
(COMPILE_PART). A CPU job's first call imports none of them (its C++ back end is imported by the compile line),
so nothing is added there.
"""
from __future__ import annotations

import importlib
import os
import time

# imported by a CUDA job's first compiled call (inductor's Triton back end), not by the torch.compile line
FIRST_CALL_MODULES = ("triton", "triton.compiler", "torch._inductor.runtime.triton_heuristics",
                      "torch._inductor.codegen.triton")
COMPILE_PART = "compiler imports (preloaded; a fresh process's cost)"
# what building a family's model imports before its first call, common to the family's members: a script imports
# them before its compile line too, so preloading them changes no measured number; they leave the child's "model
# build" phase (lab overhead: 1.6 s of GPT-2's on this 2-core box, timm's import 1.5 s). A member's own module
# (transformers' modeling_gpt2) is left to the child. Each family's jobs have a parent of their own
# (runner.worker.spawn.FamilySpawner): preloaded for every job, they slowed a zoo model's first compile (its dynamo
# tracing 3x on this box), which no script of that model pays
FAMILY_MODULES = {"hf": ("transformers", "transformers.modeling_utils", "transformers.generation"),
                  "timm": ("timm",)}
FAMILIES_ENV = "COMPILE_LAB_PRELOAD_FAMILIES"  # the worker's offered families; for a parent, the one it serves
ENV = "COMPILE_LAB_FIRST_CALL_IMPORTS_S"  # set by the worker for forked children: the probe's measure
SWITCH = "COMPILE_LAB_PRELOAD_COMPILER"  # 0: the preloaded parent imports torch only (the children the rest)


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def compile_line() -> None:
    """What `torch.compile(model)` imports before any call: dynamo and inductor's front. Wrapping a function
    compiles nothing and leaves no state a job could see (no frame is ever run under it)."""
    import torch
    import torch._dynamo  # noqa: F401

    torch.compile(lambda x: x)


def first_call_modules() -> float:
    """Import FIRST_CALL_MODULES (those installed); the seconds it took."""
    started = time.perf_counter()
    for name in FIRST_CALL_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # not installed here (triton on a CPU-only torch): a fresh process does not pay it either
            pass
    return time.perf_counter() - started


def measure() -> dict:
    """In a fresh interpreter that has imported torch only: what the compile line costs, then what the
    preloaded first-call modules cost after it (the part a forked child's first call no longer pays)."""
    started = time.perf_counter()
    compile_line()
    line_s = time.perf_counter() - started
    return {"compile_line_import_s": line_s, "first_call_imports_s": first_call_modules()}


def family_modules() -> list[str]:
    """Import FAMILY_MODULES of the families FAMILIES_ENV names; the modules imported (one that fails to import is
    left to the child, which then fails or succeeds as it would have)."""
    done = []
    for family in os.environ.get(FAMILIES_ENV, "").split(","):
        for name in FAMILY_MODULES.get(family.strip(), ()):
            try:
                importlib.import_module(name)
                done.append(name)
            except Exception:  # noqa: BLE001 - a broken install: the child's build says why
                break
    return done


def cudnn_libraries() -> list[str]:
    """Open cuDNN's sub-libraries, which cuDNN 9 opens at its first use (in a child: the library warm-up, lab
    overhead), beside the libcudnn torch loaded; nothing where torch loaded none (a CPU build). Opening a library
    touches no CUDA state. Measured on an H100 (bench/gpu_child_costs.py): 0.04 s less per forked child."""
    import ctypes
    import glob

    try:
        with open("/proc/self/maps") as f:
            loaded = [line.split()[-1] for line in f if "/libcudnn.so" in line]
    except OSError:
        return []
    if not loaded:
        return []
    opened = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(loaded[0]), "libcudnn_*.so*"))):
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            opened.append(os.path.basename(path))
        except OSError:  # a library this cuDNN cannot load here: it would fail at first use in the child too
            pass
    return opened

