"""How a job ended, as the worker records it: exactly one state, with a reason, and the child's record when it
measured."""
from __future__ import annotations

import logging
import signal
from dataclasses import dataclass, field
from pathlib import Path

from db.models import JobStatus
from lab.record import ResultRecord
from lab.result_file import ResultFile

log = logging.getLogger("compile_lab.worker")


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
