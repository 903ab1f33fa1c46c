"""tlparse's report of a job's compile trace, made by the worker after the job: its child has exited (its device is
free) and its outcome, artifacts and timeline are stored, so the report's seconds (0.8 s for ResNet-18's trace on an
H200) are on no job's timeline and in no measurement. The report is stored as the job's `tlparse` artifact and its
result's `tlparse_note` says why there is none where tlparse made none (runner.child.capture.tlparse_report).

Nothing here fails a job: a report that cannot be made or stored leaves the job as it was stored, said in the log.
"""
from __future__ import annotations

import contextlib
import gzip
import logging
import threading
import time
from pathlib import Path

from sqlalchemy import select

from lab.artifact_files import MAX_TEXT_BYTES
from lab.errors import first_line
from runner.child.capture import tlparse_report

log = logging.getLogger("compile_lab.worker")


def wanted(folder: Path, result: dict | None) -> bool:
    """Whether the job left a trace to report on and its result (if any) waits for the report."""
    if not (folder / "artifacts" / "trace.gz").exists():
        return False
    note = ((result or {}).get("detail") or {}).get("tlparse_note")
    return result is None or note == tlparse_report.PENDING


def make(engine, job_id: int, folder: Path, result: dict | None, beat=None, every_s: float = 5.0) -> float | None:
    """The report of the trace the job's child left in `folder`, stored with the job; the seconds it took, or None
    where nothing was to be made. `beat`, called every `every_s` while tlparse runs (up to its time limit), keeps the
    worker's heartbeat fresh: no job's lease does that now."""
    if not wanted(folder, result) or tlparse_report.executable() is None:
        return None
    started = time.perf_counter()
    try:
        trace = gzip.decompress((folder / "artifacts" / "trace.gz").read_bytes()).decode("utf-8", "replace")
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        data, why = None, f"the job's trace could not be read back ({first_line(e)})"
    else:
        with _beating(beat, every_s):
            data, why = tlparse_report.report(trace)
    try:
        store(engine, job_id, data, why if result is not None else None)
    except Exception as e:  # noqa: BLE001 - the job is stored either way; only its report is missing
        log.warning("job %s: tlparse's report not stored (%s)", job_id, first_line(e))
        return None
    took = time.perf_counter() - started
    log.info("job %s: tlparse's report %s in %.2f s, after the job", job_id, "stored" if data else f"not made: {why}",
             took)
    return took


@contextlib.contextmanager
def _beating(beat, every_s: float):
    """While open, `beat()` every `every_s` from a thread (nothing without a beat); a failing beat is left to the
    next."""
    if beat is None:
        yield
        return
    done = threading.Event()

    def run() -> None:
        while not done.wait(every_s):
            try:
                beat()
            except Exception as e:  # noqa: BLE001 - a missed heartbeat is retried at the next
                log.warning("heartbeat while making tlparse's report failed (%s)", first_line(e))

    thread = threading.Thread(target=run, daemon=True, name="report heartbeat")
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=every_s)


def store(engine, job_id: int, data: bytes | None, why: str | None) -> None:
    """The report as the job's `tlparse` artifact, and its result's note updated (None: the report is there), in
    one transaction. `why` None leaves the note alone (a failed job has no result to say it in)."""
    from db import artifacts
    from db.engine import atomic
    from db.models import Result
    from lab.record import detail_keys

    with atomic(engine) as s:
        kept = data is not None and len(data) <= MAX_TEXT_BYTES
        if kept:
            artifacts.add(s, job_id, [{"name": "tlparse", "bytes": len(data), "truncated": False,
                                       "data": gzip.compress(data, compresslevel=6)}])
        elif data is not None:
            why = f"tlparse's report ({len(data)} bytes zipped) is larger than a job may keep ({MAX_TEXT_BYTES} bytes)"
        row = s.scalars(select(Result).where(Result.job_id == job_id)).first()
        if row is not None and isinstance(row.detail, dict) and (kept or why is not None):
            detail = {k: v for k, v in row.detail.items() if k != "tlparse_note"}
            if not kept:
                detail["tlparse_note"] = why
            row.detail, row.detail_keys = detail, detail_keys(detail)
