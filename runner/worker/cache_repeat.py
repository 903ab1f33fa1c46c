"""A configuration's compile cache, kept for its follow-up processes (lab.noise): the cold first call is measured
once, by the configuration's first run, and its process repeats and re-runs compile from what that run left, so
their first call is a warm one (recorded so) and they cost a sweep little beyond their rounds.

A first run compiles in a fresh folder under the worker's home, named by its configuration and job, which stays
where it is: inductor's cache records where its kernels and their tuned launch settings lie, and a folder moved
after the compile gives slower kernels (docs/measurement.md). A follow-up of
that configuration on this worker compiles in the newest such folder. A follow-up on another worker, or after its
folder was pruned, compiles cold and its record says so; its folder is then kept like a first run's, so the
configuration's later follow-ups here compile warm. The newest KEEP folders are kept. No torch here.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from lab.spec import spec_key

KEEP = 32
FOLDER = "repeat-cache"


def key(spec: dict, torch_version: str | None) -> str:
    """The configuration (lab.spec.spec_key) on this worker's torch: another torch compiles otherwise."""
    return spec_key({"spec": spec, "torch": torch_version})


def fresh(home: Path, name: str, job_id: int) -> Path:
    """An empty folder for a cold run of configuration `name` to compile in, and to leave for its follow-ups."""
    path = Path(home) / FOLDER / f"{name}-{job_id}"
    shutil.rmtree(path, ignore_errors=True)  # a handed-back attempt of the same job starts afresh
    path.mkdir(parents=True)
    return path


def find(home: Path, name: str) -> Path | None:
    """The newest kept cache of a configuration on this worker, if any."""
    root = Path(home) / FOLDER
    try:
        kept = [p for p in root.glob(f"{name}-*") if p.is_dir()]
    except OSError:
        return None
    return max(kept, key=lambda p: p.stat().st_mtime, default=None)


def settle(path: Path, keep: bool) -> None:
    """After a cold run: its folder stays for the follow-ups (the oldest beyond KEEP go), or goes now."""
    if not keep:
        shutil.rmtree(path, ignore_errors=True)
        return
    path.touch()  # the newest kept
    prune(path.parent)


def prune(root: Path, keep_n: int = KEEP) -> None:
    """Remove all but the newest `keep_n` kept caches."""
    try:
        kept = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in kept[keep_n:]:
        shutil.rmtree(old, ignore_errors=True)
