"""A configuration's compile cache, kept for its follow-up processes (lab.noise): the cold first call is measured
once, by the configuration's first run, and its process repeats and re-runs compile from what that run left, so
their first call is a warm one (recorded so) and they cost a sweep little beyond their rounds.

A first run compiles in a fresh folder under the worker's home, named by its configuration and job, which stays
where it is: inductor's cache records where its kernels and their tuned launch settings lie, and a folder moved
after the compile gives slower kernels (docs/measurement.md). A follow-up of that configuration on this worker
compiles in the newest such folder. A follow-up on another worker, or after its folder was pruned, compiles cold
and its record says so; its folder (named apart, `-r<job>`) is then kept too, so the configuration's later
follow-ups here compile warm. A folder is found only once its run succeeded and it was kept (its KEPT marker): a
sibling worker sharing the home never compiles in one still being filled, or about to go. The newest KEEP folders of
first runs and the newest KEEP of follow-ups are kept, each apart: follow-ups never push a first run's out.

A follow-up takes the compiled code, not the launch settings the first run's autotuner picked (retune): a pointwise
kernel's settings are picked by timing its candidates in the first call, a pick that can differ between fresh
processes (on an H200, sincos bs 10000 read 1.73x and 1.69x in two processes sharing one pick, 1.94-2.01x in five
processes that picked their own, with the same kernel source). Each process picks for itself, as a fresh process
of the user's program does, so the spread between processes holds the pick's. A follow-up holds the folder (an
exclusive lock) from its retune until its child has ended: a sibling's follow-up of the same configuration that finds
it held compiles cold in its own folder rather than read a pick it did not make. No torch here.
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import time
from pathlib import Path

from lab.spec import spec_key

KEEP = 32
FOLDER = "repeat-cache"
KEPT = ".kept"  # written once the run that filled the folder succeeded
HELD = ".held"  # locked (flock) by the follow-up compiling in the folder now
STALE_S = 2 * 86400  # an unkept folder this old was left by a worker that died mid-job (a job runs 1 day at most)


def key(spec: dict, torch_version: str | None) -> str:
    """The configuration (lab.spec.spec_key) on this worker's torch: another torch compiles otherwise."""
    return spec_key({"spec": spec, "torch": torch_version})


def fresh(home: Path, name: str, job_id: int, follow_up: bool = False) -> Path:
    """An empty folder for a cold run of configuration `name` to compile in, and to leave for its follow-ups."""
    path = Path(home) / FOLDER / f"{name}-{'r' if follow_up else ''}{job_id}"
    shutil.rmtree(path, ignore_errors=True)  # a handed-back attempt of the same job starts afresh
    path.mkdir(parents=True)
    return path


def find(home: Path, name: str) -> Path | None:
    """The newest kept cache of a configuration on this worker, if any (a first run's or a follow-up's)."""
    root = Path(home) / FOLDER
    try:
        kept = [p for p in root.glob(f"{name}-*") if (p / KEPT).is_file()]
    except OSError:
        return None
    return max(kept, key=lambda p: (p / KEPT).stat().st_mtime, default=None)


def hold(path: Path) -> int | None:
    """Lock a kept folder for one follow-up (a file descriptor, for release), or None where another holds it or it has
    gone (pruned since it was found). A home whose file system takes no locks (an NFS mount without them) is not held
    by anyone: the follow-up uses it unlocked (-1), as before locks were taken."""
    try:
        fd = os.open(Path(path) / HELD, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        return None if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else -1
    if not (Path(path) / KEPT).is_file():  # pruned between find and the lock
        os.close(fd)
        return None
    return fd


def release(fd: int | None) -> None:
    if fd is not None and fd >= 0:
        os.close(fd)  # closing the descriptor drops its lock


def take(home: Path, name: str) -> tuple[Path | None, int | None]:
    """For a follow-up: its configuration's newest kept folder, held (hold) and retuned (retune), with the lock to
    release once its child has ended; (None, None) where there is none here or a sibling's follow-up holds it (the
    follow-up then compiles cold in a fresh folder of its own)."""
    folder = find(home, name)
    held = None if folder is None else hold(folder)
    if held is None:
        return None, None
    retune(folder)  # its own autotuner's picks, as a fresh process makes them
    return folder, held


def retune(path: Path) -> int:
    """Before a follow-up compiles in a kept folder: remove the autotuner's picks (inductor's `.best_config` files,
    beside each kernel's source), so its first call picks again; the kernels stay compiled. How many went."""
    gone = 0
    for folder, _, names in os.walk(Path(path) / "inductor"):  # a folder gone meanwhile is skipped, never an error
        for name in names:
            if name.endswith(".best_config"):
                try:
                    os.unlink(os.path.join(folder, name))
                    gone += 1
                except OSError:
                    pass
    return gone


def settle(path: Path, keep: bool) -> None:
    """After a cold run: its folder stays for the follow-ups (the oldest of its kind beyond KEEP go), or goes now."""
    if not keep:
        shutil.rmtree(path, ignore_errors=True)
        return
    (path / KEPT).touch()  # found from now on; the newest kept
    prune(path.parent)


def _follow_up(path: Path) -> bool:
    return path.name.rsplit("-", 1)[-1].startswith("r")


def prune(root: Path, keep_n: int = KEEP) -> None:
    """Remove all but the newest `keep_n` kept caches of first runs, and of follow-ups, each apart, and the unkept
    folders a worker that died mid-job left (older than STALE_S: a younger one may be filling now)."""
    try:
        folders = [p for p in root.iterdir() if p.is_dir()]
        kept = sorted((p for p in folders if (p / KEPT).is_file()), key=lambda p: (p / KEPT).stat().st_mtime,
                      reverse=True)
        stale = [p for p in folders if p not in kept and time.time() - p.stat().st_mtime > STALE_S]
    except OSError:
        return
    for kind in (False, True):
        stale += [p for p in kept if _follow_up(p) == kind][keep_n:]
    for old in stale:
        held = hold(old) if (old / KEPT).is_file() else -1  # a follow-up compiling in it now: left for the next prune
        if held is None:
            continue
        shutil.rmtree(old, ignore_errors=True)
        release(held)
