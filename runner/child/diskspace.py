"""A full disk, as the child and the worker can tell it: ENOSPC (or EDQUOT, a quota) is an outage of the worker's
home, not the experiment's failure (runner/worker/diskpause.py: what the worker then does).

On a full disk the child cannot write its result file, nor grow its log, so what it knows must travel without new
space: the worker allocates a small marker file in the job folder before the child starts (`reserve`), and the
child, meeting ENOSPC anywhere in its exception's chain (a compile cache, an artifact, the progress file, its
result file, its log), writes the errno, the phase and its traceback's last lines into that marker in place
(`tell`) and exits with EXIT_NO_SPACE. A child that could not even do that (killed on the way, a marker that could
not be allocated) still ends without a result; the worker then asks the file system itself (os.statvfs of the
folders the job wrote to) and treats a home below the free-space threshold as full (`judge`). The log's text is
never read for it. Stdlib only: the child imports this before torch.
"""
from __future__ import annotations

import errno
import json
import os
import traceback
from dataclasses import dataclass
from pathlib import Path

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
EXIT_NO_SPACE = 28  # the child's exit code when its disk was full (ENOSPC's number); an exit needs no disk
MARKER = "no-space"  # in the job folder, allocated by the worker (MARKER_BYTES of zeros), written by the child
MARKER_BYTES = 16384
TAIL_CHARS = 6000  # the traceback's end the marker carries (runner.worker.attempt.LOG_TAIL_CHARS: the stored log's end)
MIN_FREE_ENV = "COMPILE_LAB_MIN_FREE_MB"  # below this much free space in its home a worker claims nothing
MIN_FREE_MB = 256.0  # room for a cold compile's caches, a job's artifacts and its log
CUT = "\n[the log file could not grow (no space left on device); the child's last lines:]\n"


def no_space_error(exc: BaseException | None) -> OSError | None:
    """The OSError with ENOSPC or EDQUOT in an exception's chain (its causes, what it was raised while handling,
    an exception group's members), or None. Compilers wrap it: inductor raises InductorError from it."""
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in NO_SPACE:
            return e
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return None


def reserve(jobdir: Path) -> None:
    """The worker, before a child starts: the marker allocated (zeros, a previous attempt's word gone), so that
    the child can write it on a full disk. An OSError here is the worker's own full disk."""
    fd = os.open(jobdir / MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            os.posix_fallocate(fd, 0, MARKER_BYTES)
        except (AttributeError, OSError) as e:  # no fallocate here (macOS, some file systems): zeros written
            if isinstance(e, OSError) and e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
            os.pwrite(fd, bytes(MARKER_BYTES), 0)
            os.fsync(fd)
    finally:
        os.close(fd)


def tell(jobdir: Path, error: OSError, phase: str, exc: BaseException) -> bool:
    """The child: the full disk said into the reserved marker, in place (no new block), with the traceback's last
    lines, which its log could not take. False if there is no marker to write to."""
    tail = "".join(traceback.format_exception(exc))[-TAIL_CHARS:]
    while True:
        data = json.dumps({"errno": error.errno, "error": str(error), "phase": phase, "tail": tail}).encode()
        if len(data) <= MARKER_BYTES or not tail:
            break
        tail = tail[len(tail) // 2:]  # escaped text can outgrow the marker: keep the end
    try:
        fd = os.open(jobdir / MARKER, os.O_WRONLY)
    except OSError:
        return False
    try:
        os.pwrite(fd, data[:MARKER_BYTES], 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def told(jobdir: Path) -> dict | None:
    """The worker: what the child said in the marker, or None (no marker, or the child said nothing)."""
    try:
        data = (jobdir / MARKER).read_bytes().rstrip(b"\0")
        said = json.loads(data) if data else None
    except (OSError, ValueError):
        return None
    return said if isinstance(said, dict) else None


def free_bytes(path: Path) -> int:
    """Free space for an unprivileged writer on the file system holding `path` (its nearest existing folder); none
    where it has no free inode left (a new file fails with ENOSPC then too)."""
    st = os.statvfs(_existing(path))
    return 0 if st.f_files and not st.f_favail else st.f_bavail * st.f_frsize


def tightest(folders: list[Path]) -> tuple[Path, int | None]:
    """The folder with the least free space of those given (the first of each file system), and that space; None
    where none could be looked at (a file system that cannot answer does not pause a worker)."""
    found: dict[int, tuple[Path, int]] = {}
    for folder in folders:
        try:
            found.setdefault(os.stat(_existing(folder)).st_dev, (Path(folder), free_bytes(folder)))
        except OSError:  # gone meanwhile: the others say it
            continue
    return min(found.values(), key=lambda f: f[1], default=(Path(folders[0]), None))


def _existing(path: Path) -> Path:
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def min_free_bytes() -> int:
    """The free-space threshold: COMPILE_LAB_MIN_FREE_MB (0: only a full disk), default MIN_FREE_MB."""
    try:
        mb = float(os.environ.get(MIN_FREE_ENV) or MIN_FREE_MB)
    except ValueError:
        mb = MIN_FREE_MB
    return int(max(0.0, mb) * 2 ** 20)


def mb(n: int) -> str:
    return f"{n / 2 ** 20:.1f} MB" if n < 10 * 2 ** 20 else f"{n / 2 ** 20:.0f} MB"


@dataclass(frozen=True)
class NoSpace:
    """A job's attempt that met a full disk: where, how much was free, what failed, in which phase."""

    folder: Path
    free: int | None  # None: statvfs could not say
    error: str  # as the child or the worker met it, or what the worker saw itself
    phase: str | None = None
    tail: str | None = None  # the child's traceback's end, from the marker

    def text(self) -> str:
        during = f" while {self.phase}" if self.phase else ""
        free = "free space unknown" if self.free is None else f"{mb(self.free)} free"
        return f"no space left on device under {self.folder} ({free}){during}: {self.error}"


def judge(jobdir: Path, rc: int | None, failed: str | None, folders: list[Path], phase: str) -> NoSpace | None:
    """After a job's child ended: did it meet a full disk? Its marker or its exit code say so; failing those, a child
    that failed or died (`failed`: how) while the tightest of `folders` is at or below the threshold did too."""
    folder, free = tightest(folders)
    said = told(jobdir)
    if said is not None:
        return NoSpace(folder, free, said.get("error") or os.strerror(errno.ENOSPC), said.get("phase") or phase,
                       said.get("tail"))
    if rc == EXIT_NO_SPACE:
        return NoSpace(folder, free, f"the child exited with code {rc}: it met ENOSPC (its marker is empty)", phase)
    if failed and free is not None and free <= min_free_bytes():
        return NoSpace(folder, free, f"{failed}, with less free than the {mb(min_free_bytes())} this worker "
                                     f"needs ({MIN_FREE_ENV})")  # `failed` names the phase
    return None


def from_worker(error: OSError, folders: list[Path]) -> NoSpace | None:
    """The worker's own write (its job folder, the spec file, the marker) failed: a NoSpace if it was ENOSPC."""
    full = no_space_error(error)
    if full is None:
        return None
    folder, free = tightest(folders)
    return NoSpace(folder, free, str(full), "preparing the job")


def with_childs_end(tail: str | None, jobdir: Path) -> str | None:
    """A log file's tail, and after it the child's last lines where its marker has them and the file does not (the
    full disk kept them out)."""
    said = told(jobdir)
    end = (said or {}).get("tail")
    if not end or not end.strip() or (tail and end.rstrip().splitlines()[-1] in tail):
        return tail
    return (tail or "")[-TAIL_CHARS:] + CUT + end
