"""A small tmpfs of a test's own (a full disk that fills in milliseconds and cannot touch the box's), and a file
written until it refuses: the full-disk tests' real ENOSPC. Mounting needs root; elsewhere the test is skipped."""
import contextlib
import os
import subprocess
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted(where: Path, size: str):
    """A tmpfs of `size` (mount's "64m") at the new folder `where`, unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def fill(folder: Path) -> Path:
    """A file in `folder` written until its file system refuses with ENOSPC, to its last page."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        for chunk in (65536, 4096):  # the last pages: less than a large chunk
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError as e:
                assert e.errno == 28, e
    return filler
