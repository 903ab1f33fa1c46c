"""tlparse's report of a job's compile trace, made by the worker after the job: its child has exited (its device is
free) and its outcome, artifacts and timeline are stored, so the report's seconds (0.7 s for ResNet-18's trace on an
H200) are on no job's timeline and in no measurement. Nor do they hold up the next job: the job's trace is owed
(`owe`: moved under the worker's home, reports-owed/) and made when the worker finds nothing to claim (`make_owed`,
one report between two looks at the queue), or by a later worker of the same home where this one was stopped first
(or killed while making one).
The report is stored as the job's `tlparse` artifact and its result's `tlparse_note` says why there is none where
tlparse made none (runner.child.capture.tlparse_report).

Nothing here fails a job: a report that cannot be made or stored leaves the job as it was stored, said in the log.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
import shutil
import socket
import threading
import time
from pathlib import Path

from sqlalchemy import select

from db import queue
from lab.artifact_files import LEVEL, MAX_TEXT_BYTES
from lab.errors import first_line
from runner.child.capture import tlparse_report

log = logging.getLogger("compile_lab.worker")


def wanted(folder: Path, result: dict | None) -> bool:
    """Whether the job left a trace to report on and its result (if any) waits for the report."""
    if not (folder / "artifacts" / "trace.gz").exists():
        return False
    note = ((result or {}).get("detail") or {}).get("tlparse_note")
    return result is None or note == tlparse_report.PENDING


OWED = "reports-owed"  # under the worker's home: one folder per job, its trace and owed.json


def owe(home: Path, job_id: int, folder: Path, result: dict | None) -> bool:
    """The job's trace moved from its job `folder` to the worker's reports owed, to be made when nothing is queued;
    False where no report is wanted (no trace kept, or its result says why there is none)."""
    if not wanted(folder, result) or tlparse_report.executable() is None:
        return False
    dest = home / OWED / str(int(job_id))
    (dest / "artifacts").mkdir(parents=True, exist_ok=True)
    os.replace(folder / "artifacts" / "trace.gz", dest / "artifacts" / "trace.gz")
    (dest / "owed.json").write_text(json.dumps({"has_result": result is not None}))  # its job: the folder's name
    return True


MAKING = ".making-"  # a report being made: `<job>.making-<host>-<pid>`, the maker's host and process


def owed(home: Path) -> list[Path]:
    """The reports owed in `home`, oldest job first: each waiting one, and each a process of this host began and
    did not finish because it is gone (a worker killed while making it)."""
    folders = [f for f in (home / OWED).glob("*") if f.name.isdigit() or _abandoned(f.name)] \
        if (home / OWED).is_dir() else []
    return sorted(folders, key=lambda f: int(f.name.split(".")[0]))


def _abandoned(name: str) -> bool:
    job, sep, maker = name.partition(MAKING)
    host, _, pid = maker.rpartition("-")
    if not (sep and job.isdigit() and pid.isdigit() and host == socket.gethostname()):
        return False  # another host's (a home on a shared disk): its maker may be alive there
    if int(pid) == os.getpid():  # this process makes one report at a time: one of its pid is a killed worker's
        return True  # (a container's worker restarted as pid 1 on the same hostname)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        pass
    return False


def make_owed(engine, home: Path, worker_id: str | None = None, limit: int | None = None) -> int:
    """Make up to `limit` (None: all) of the reports owed in `home`, oldest first, the idle worker `worker_id`'s
    heartbeat kept up meanwhile; how many were taken. Each is taken by renaming its folder first, so two workers of
    one home never make the same report; one that cannot be read is dropped, said in the log (its job's note keeps
    saying the report is missing)."""
    beat = (lambda: queue.heartbeat_worker(engine, worker_id, "idle")) if worker_id else None
    taken = 0
    for folder in owed(home):
        if limit is not None and taken >= limit:
            break
        job_id = int(folder.name.split(".")[0])
        mine = folder.with_name(f"{job_id}{MAKING}{socket.gethostname()}-{os.getpid()}")
        try:
            folder.rename(mine)
        except OSError:  # another worker of this home took it
            continue
        taken += 1
        try:
            has_result = bool(json.loads((mine / "owed.json").read_text())["has_result"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("an owed tlparse report in %s could not be read (%s); dropped", mine, first_line(e))
        else:
            make(engine, job_id, mine, {"detail": {"tlparse_note": tlparse_report.PENDING}} if has_result else None,
                 beat=beat)
        shutil.rmtree(mine, ignore_errors=True)
    return taken


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
    log.info("job %s: tlparse's report %s in %.2f s, off the queue's time", job_id, "stored" if data else f"not made: {why}",
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
                                       "data": gzip.compress(data, compresslevel=LEVEL)}])
        elif data is not None:
            why = f"tlparse's report ({len(data)} bytes zipped) is larger than a job may keep ({MAX_TEXT_BYTES} bytes)"
        row = s.scalars(select(Result).where(Result.job_id == job_id)).first()
        if row is not None and isinstance(row.detail, dict) and (kept or why is not None):
            detail = {k: v for k, v in row.detail.items() if k != "tlparse_note"}
            if not kept:
                detail["tlparse_note"] = why
            row.detail, row.detail_keys = detail, detail_keys(detail)
