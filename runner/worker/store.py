"""A job's outcome, from its child's end to the database: how it ended (Outcome: exactly one state, with a reason,
and the child's record when it measured), kept in its job folder until the database has it (Kept), and the worker's
writes for its jobs (Store).

A child's measurement can take an hour; a database outage while it is being stored must not throw it away
(and re-run the job, counting an attempt). So before storing, the worker writes the outcome beside the job's
artifacts, and removes it once it is stored, or once the job is provably someone else's (claimed again,
cancelled). A worker that stops meanwhile leaves it there: the next worker started with the same home stores
it (db.queue.finish_kept: fenced by the lease token, or by the worker and attempt that ran it once its lease
ran out, so it is never stored twice). Stdlib and db/ only: no torch.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from sqlalchemy.exc import DBAPIError, OperationalError

from db import queue
from db.engine import check_identity
from db.models import JobStatus
from lab import artifact_files, tabular
from lab.errors import first_line
from lab.record import ResultRecord
from lab.result_file import ResultFile

log = logging.getLogger("compile_lab.worker")
FILE = "outcome.json"


@dataclass
class Outcome:
    status: JobStatus | None  # None: the lease is gone (cancelled, taken back, handed back); nothing to write
    error: str | None = None
    record: ResultRecord | None = None
    phases: list = field(default_factory=list)  # the child's phases (lab.timeline), as its result file gives them
    written_at: float | None = None  # when the child began writing its result file


HANDED_BACK = Outcome(None, "handed back: the worker's own files failed")


def read_outcome(rc: int, result_file: Path, phase: str) -> Outcome:
    """Turn how the child ended (its exit code and its result file) into one recorded state."""
    try:
        said = ResultFile.read(result_file)
    except ValueError as e:
        return Outcome(JobStatus.CRASHED, f"child wrote an unreadable result file ({e})")
    if said is not None and said.record is not None and rc == 0:
        return Outcome(JobStatus.SUCCEEDED, None, said.record, said.phases, said.written_at)
    if said is not None and said.record is None:
        return Outcome(JobStatus.FAILED, said.error)
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return Outcome(JobStatus.CRASHED, f"child killed by {name} while {phase}")
    return Outcome(JobStatus.CRASHED, f"child exited with code {rc} without a result while {phase}")


def log_outcome(job_id: int, o: Outcome) -> None:
    if o.status is None:
        log.info("job %s: stopped without a result (cancelled or handed back)", job_id)
    elif o.status is JobStatus.SUCCEEDED:
        r = o.record
        log.info("job %s: succeeded, eager %.4g ms, compiled %.4g ms, speedup %.3gx, first call %.3g s",
                 job_id, r.eager_ms, r.compiled_ms, r.speedup, r.compiled_first_call_s)
        t = r.detail.get("traffic")
        if t and t.get("ratio") is not None:  # lab.traffic: the answer under the job's stream
            log.info("job %s: under its traffic (%d calls) compiled %.4g s / eager %.4g s = %.3gx, %d recompiles, "
                     "%d recompile-limit hits, %d fallback calls", job_id, t["calls_compared"],
                     t["compiled_total_s"], t["eager_total_s"], t["ratio"], t["recompiles"], t["limit_hits"],
                     t["fallback_calls"])
    else:
        log.info("job %s: %s: %s", job_id, o.status.value, o.error)


@dataclass(frozen=True)
class Kept:
    """An outcome waiting for the database: what finish_kept needs, and where it lies."""

    path: Path
    job_id: int
    token: str
    attempt: int
    worker_id: str
    status: JobStatus
    error: str | None
    result: dict | None
    log_tail: str | None

    def store(self, engine, with_artifacts: bool = True) -> bool:
        """Store it (its job folder's artifacts with it); True if it went in, False if the job is someone else's
        now. Either way the file is done with and removed; a database error leaves it for the next try."""
        items = artifact_files.read_dir(self.path.parent / "artifacts") if with_artifacts else []
        stored = queue.finish_kept(engine, self.job_id, self.token, self.worker_id, self.attempt, self.status,
                                   self.error, self.result, self.log_tail, items)
        self.drop()
        return stored

    def refused(self, why: str) -> "Kept":
        """What is stored instead when the database refuses the outcome itself (a value it cannot hold): the job
        still ends, failed with why, rather than running again."""
        return replace(self, status=JobStatus.FAILED, result=None,
                       error=f"the database refused this job's {self.status.value} outcome: {why}")

    def drop(self) -> None:
        self.path.unlink(missing_ok=True)


def keep_or_hold(jobdir: Path, claim: queue.Claim, worker_id: str, status: JobStatus, error: str | None,
                 result: dict | None, log_tail: str | None) -> Kept:
    """keep(); where the job folder takes no file (a full disk), the outcome held in memory only, as before."""
    who = (claim.job_id, claim.token, claim.attempt, worker_id)
    try:
        return keep(jobdir, *who, status, error, result, log_tail)
    except OSError as e:
        log.warning("job %s: cannot keep its outcome on disk (%s)", claim.job_id, first_line(e))
        return Kept(jobdir / FILE, *who, status, error, tabular.finite(result), log_tail)


class Store:
    """The worker's writes for its jobs, each retried through an outage: what an attempt (runner.worker.attempt) and its lease
    are handed instead of the worker."""

    def __init__(self, engine, worker_id: str, lease_s: float, hurry: threading.Event, db_file=None):
        self.engine, self.worker_id, self.lease_s, self.hurry, self.db_file = engine, worker_id, lease_s, hurry, db_file

    def retry(self, what: str, write, patient: bool = False):
        """Run a database write, retrying while the database is unreachable or locked (or its lock file
        unwritable), for up to one lease (after that the lease is gone anyway: another worker re-runs the
        job), or, if patient, until it goes in (handing a job back is all there is left to do; a second
        SIGTERM ends the wait). None if it never went in."""
        deadline = None if patient else time.monotonic() + self.lease_s
        while True:
            try:
                return write()
            except (OperationalError, OSError) as e:
                if self.hurry.is_set() if deadline is None else time.monotonic() > deadline:
                    log.error("worker %s: could not %s: %s; giving up", self.worker_id, what, first_line(e))
                    return None
                log.warning("worker %s: could not %s (%s); retrying", self.worker_id, what, first_line(e))
                time.sleep(1.0)

    def check_identity(self) -> None:
        """DatabaseGone when the SQLite file was deleted or replaced under the worker."""
        check_identity(self.engine, self.db_file)

    def note(self, state: str, job_id: int | None = None) -> None:
        """The worker's row: idle, busy (with its job), stopped."""
        self.retry(f"note the worker {state}", lambda: queue.heartbeat_worker(self.engine, self.worker_id, state, job_id))

    def publish(self, what: str, capabilities: dict) -> None:
        self.retry(f"publish {what}", lambda: queue.publish_capabilities(self.engine, self.worker_id, capabilities))

    def release(self, claim: queue.Claim, why: str) -> None:
        """Back to the queue, the attempt not counted (a lease that is still ours)."""
        self.retry("release the job", lambda: queue.release(self.engine, claim.job_id, claim.token, why))

    def hand_back(self, claim: queue.Claim, why: str, log_tail: str | None = None) -> None:
        """Back to the queue uncounted, fenced by the worker and attempt that ran it; waits out an outage."""
        self.retry("hand the job back", lambda: queue.hand_back(self.engine, claim.job_id, claim.token, self.worker_id,
                                                                claim.attempt, why, log_tail=log_tail), patient=True)

    def record(self, outcome: Kept) -> bool | None:
        """Store a finished outcome, retrying through an outage for as long as it lasts, past the lease: finish_kept
        still takes it once the lease ran out, unless the job was claimed again meanwhile. None: a second signal
        stopped the worker before it went in (the outcome stays on disk for the next start)."""
        try:
            return self.retry("store the outcome", lambda: outcome.store(self.engine), patient=True)
        except DBAPIError as e:  # the database refused the record itself (a value it cannot hold): the job still
            # ends, failed with why, instead of the worker dying and the job running again
            refused = outcome.refused(first_line(e))
            log.error("job %s: %s", outcome.job_id, refused.error)
            return self.retry("record the refused outcome",
                              lambda: refused.store(self.engine, with_artifacts=False), patient=True)

    def record_found(self, kept: list[Kept]) -> None:
        """The outcomes workers of this home kept and could not store (from found()), before the worker claims
        anything. A database error is left to the caller (its poll retries); each of the rest is stored, or found to
        be someone else's now, and taken off the list."""
        while kept:
            k = kept[0]
            try:
                stored = k.store(self.engine)
            except OperationalError:
                raise
            except DBAPIError as e:
                stored = k.refused(first_line(e)).store(self.engine, with_artifacts=False)
            kept.pop(0)
            log.info("job %s: its %s outcome kept in %s %s", k.job_id, k.status.value, k.path,
                     "is stored" if stored else "is not stored: the job is someone else's now")
            if stored:  # the report its own worker did not get to make (runner.worker.reports)
                from runner.worker import reports

                reports.make(self.engine, k.job_id, k.path.parent, k.result,  # the heartbeat kept up meanwhile
                             beat=lambda: queue.heartbeat_worker(self.engine, self.worker_id, "idle"))


def keep(jobdir: Path, job_id: int, token: str, attempt: int, worker_id: str, status: JobStatus,
         error: str | None, result: dict | None, log_tail: str | None) -> Kept:
    """Write the outcome into the job folder (atomically: a crash mid-write leaves the old file or none) and
    return it. The result as strict JSON: a number that is not finite becomes null, as the child writes it."""
    kept = Kept(jobdir / FILE, job_id, token, attempt, worker_id, status, error, tabular.finite(result), log_tail)
    tmp = kept.path.with_suffix(".tmp")
    tmp.write_text(tabular.json_text({"job_id": job_id, "token": token, "attempt": attempt, "worker_id": worker_id,
                                      "status": status.value, "error": error, "result": kept.result,
                                      "log_tail": log_tail}))
    os.replace(tmp, kept.path)
    return kept


def found(home: Path) -> list[Kept]:
    """The outcomes earlier workers of this home kept and could not store, oldest job first. A file that does not
    read as one (cut by a full disk, edited) is logged and left where it is."""
    out = []
    for path in sorted((home / "jobs").glob(f"*/{FILE}")):
        try:
            d = json.loads(path.read_text())
            out.append(Kept(path, int(d["job_id"]), str(d["token"]), int(d["attempt"]), str(d["worker_id"]),
                            JobStatus(d["status"]), d.get("error"), d.get("result"), d.get("log_tail")))
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.error("kept outcome %s cannot be read (%s); left as it is", path, e)
    return sorted(out, key=lambda k: k.job_id)
