"""The lease's end as a file the child can read without the database (runner/worker/lease.py says why).
Stdlib only: the child's keeper reads it in a process forked before anything heavy is imported."""
from __future__ import annotations

import os
from pathlib import Path

WIDTH = 32  # the deadline is rewritten in place at a fixed width: no new block, so a full disk cannot stop it


class LeaseFile:
    """The worker's side: the lease's end as text, rewritten in place (pwrite) at every renewal."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)

    def write(self, deadline: float) -> None:
        os.pwrite(self.fd, f"{deadline:<{WIDTH - 1}.3f}\n".encode(), 0)

    def close(self) -> None:
        os.close(self.fd)


def read_deadline(path: str) -> float | None:
    """The child's side: the lease's end, or None if there is no file (or a torn read: try again)."""
    try:
        with open(path, "rb") as f:
            return float(f.read(WIDTH))
    except (OSError, ValueError):
        return None
