"""What the CLI reads from a file a person names: `submit --traffic FILE` (a stream saved from a log) and `export
--jobs FILE` (job ids). A file that is not what the flag takes is refused with the flag, the file and where in it the
problem is (line, item), never with what the file holds: the name may be any file (`/proc/self/environ`, a key), and
the error line lands in a terminal, a log or a CI transcript."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from lab import traffic
from lab.checks import SpecError
from runner.cli.usage import UsageError

MAX_TRAFFIC_BYTES = 1 << 20  # a stream a person saved; a histogram (`size: count` lines) says more in less


def traffic_stream(value: str, calls, bucket) -> dict:
    """A spec's `traffic` from --traffic (a stream as typed, or the file it names), --calls and --bucket; a
    SpecError for the field `traffic` says which file and where in it."""
    path = Path(value)
    if not path.is_file():
        return traffic.make(value, calls, bucket)
    with path.open("rb") as f:  # at most the limit and one byte: a file under /proc says it holds 0 bytes
        data = f.read(MAX_TRAFFIC_BYTES + 1)
    if len(data) > MAX_TRAFFIC_BYTES:
        raise UsageError(f"--traffic {value}: the file is over 1 MiB; give a histogram (`size: count` lines)")
    try:
        return traffic.make(data.decode("utf-8", errors="replace"), calls, bucket)
    except SpecError as e:
        if e.field != "traffic":
            raise
        raise SpecError("traffic", f"{value}: {str(e).split(': ', 1)[1]}") from None


def job_ids(source: str, row_id: Callable[[str], int]) -> list[int]:
    """The ids a file lists (whitespace between them; '-': stdin), each a job id as `row_id` takes it."""
    data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    ids = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        for item, word in enumerate(line.split(), 1):
            try:
                ids.append(row_id(word))
            except argparse.ArgumentTypeError:
                raise UsageError(f"--jobs {source}: line {number}, item {item} is not a job id (a positive integer "
                                 "below 2**63)") from None
    return ids
