"""A configuration's compile cache, kept for its follow-up processes (db.noise): the cold first call is measured
once, by the configuration's first run, and its process repeats and re-runs compile from what that run left, so
their first call is a warm one (recorded so) and they cost a sweep little beyond their rounds.

The first run's fresh cache folder is moved, whole, under the worker's home once its child has exited (a rename:
a repeat never sees half of it); a follow-up of that configuration on this worker compiles in it. A follow-up on
another worker, or after the folder was pruned, compiles cold and its record says so. The newest KEEP folders are
kept. No torch here.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from db.spec import spec_key

KEEP = 32
FOLDER = "repeat-cache"


def key(spec: dict, torch_version: str | None) -> str:
    """The configuration (db.spec.spec_key) on this worker's torch: another torch compiles otherwise."""
    return spec_key({"spec": spec, "torch": torch_version})


def find(home: Path, name: str) -> Path | None:
    """The kept cache of a configuration, if this worker has it."""
    path = Path(home) / FOLDER / name
    return path if path.is_dir() else None


def keep(home: Path, name: str, cache_dir: Path) -> Path | None:
    """Move a first run's cache folder into place for its follow-ups; an existing one is left as it is (a follow-up
    may be compiling in it). Returns where it is kept, or None when the move failed (the follow-ups compile cold)."""
    root = Path(home) / FOLDER
    target = root / name
    if target.exists():
        shutil.rmtree(cache_dir, ignore_errors=True)
        return target
    try:
        root.mkdir(parents=True, exist_ok=True)
        os.rename(cache_dir, target)  # one file system (the worker's home); fails if another worker kept one meanwhile
    except OSError:
        shutil.rmtree(cache_dir, ignore_errors=True)
        return None
    prune(root)
    return target


def prune(root: Path, keep_n: int = KEEP) -> None:
    """Remove all but the newest `keep_n` kept caches."""
    try:
        kept = sorted((p for p in root.iterdir() if p.is_dir()),
                      key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in kept[keep_n:]:
        shutil.rmtree(old, ignore_errors=True)
