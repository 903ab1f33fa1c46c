"""What a worker learned about its host at an earlier start, kept in its home folder (one file per key), so that a
restart is ready (registered, claiming) at once instead of after the preloaded parent's imports (torch and the
compiler: seconds on a GPU host).

The facts: the probe's answer (torch, triton, CUDA devices: what the claim filters on and a portable cache's key
holds) and what preloading takes from a CUDA job's first call (runner/child/preload.py). They are kept under a key of
everything that could change them and is read without importing torch: the host, the interpreter, torch's and
triton's installed versions and where they lie (with the install's modification time), the NVIDIA driver, the
GPUs this worker may see and whether the compiler is preloaded. Any change of those is a miss: the worker then
starts as it would without facts. A hit is still checked: the same start probes again in the background before
the first job's child starts (the first job waits for it, and its timeline says so), and a probe that differs
replaces the facts and what the worker publishes.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import socket
import sys
from pathlib import Path

from runner.child.driver import nvidia_driver
from runner.worker import quick_probe

FILE = "host-facts-*.json"  # one file per key: the workers of `work --gpus` share a home, each its own GPU


def _package(name: str) -> dict | None:
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    spec = importlib.util.find_spec(name)  # a top-level package: found, not imported
    origin = spec.origin if spec is not None else None
    try:
        mtime = os.stat(origin).st_mtime if origin else None
    except OSError:
        mtime = None
    return {"version": version, "origin": origin, "mtime": mtime}


def key(env: dict) -> dict:
    """What the facts depend on, as the worker's children would see it (their environment)."""
    return {"host": socket.gethostname(), "python": sys.executable, "torch": _package("torch"),
            "triton": _package("triton"), "driver": nvidia_driver(),
            "visible_gpus": env.get("CUDA_VISIBLE_DEVICES"), "preload_compiler": env.get("COMPILE_LAB_PRELOAD_COMPILER", "1"),
            "nvml_check": env.get("PYTORCH_NVML_BASED_CUDA_CHECK")}


def _canonical(k: dict) -> str:
    return json.dumps(k, sort_keys=True, default=str)


def path(home: Path, env: dict) -> Path:
    """Where the facts of this key are kept."""
    return _path(home, _canonical(key(env)))


def _path(home: Path, canonical: str) -> Path:
    return home / FILE.replace("*", hashlib.sha256(canonical.encode()).hexdigest()[:16])


def load(home: Path, env: dict) -> dict | None:
    """The facts kept for this key ({"probe", "first_call_imports_s"}), or None."""
    canonical = _canonical(key(env))
    try:
        kept = json.loads(_path(home, canonical).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or _canonical(kept.get("key")) != canonical:
        return None
    facts = kept.get("facts")
    return facts if isinstance(facts, dict) and isinstance(facts.get("probe"), dict) else None


def save(home: Path, env: dict, facts: dict) -> None:
    """Keep the facts for this key (atomically: a worker starting beside this one reads a whole file or none)."""
    home.mkdir(parents=True, exist_ok=True)
    canonical = _canonical(key(env))
    final = _path(home, canonical)
    tmp = final.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({"key": json.loads(canonical), "facts": facts}, sort_keys=True, default=str))
        os.replace(tmp, final)
    except OSError:  # a home that cannot keep them only costs the next start its wait
        tmp.unlink(missing_ok=True)


def read_quickly(env: dict) -> dict | None:
    """On a host (or key) with no kept facts: the probe's answer read without torch (runner.worker.quick_probe),
    marked `quick`, for a start that is ready at once while the real probe runs; None where it cannot tell."""
    found = quick_probe.probe(env)
    return None if found is None else {"probe": found, "quick": True}


def changed(known: dict, facts: dict) -> bool:
    """Whether the start's facts differ from those it began with: kept ones as a whole, quickly read ones in the
    probe's answer (they hold no measured import cost)."""
    if known.get("quick"):
        return known["probe"] != facts["probe"]
    return json.dumps(known, sort_keys=True, default=str) != json.dumps(facts, sort_keys=True, default=str)
