"""The child's result file, one codec for both ends: the child writes it, the worker reads it.

A job that measured writes `succeeded` with its ResultRecord, its phases (lab.timeline) and when the write began; a
job that failed writes `failed` with a message a person can act on. No file means the child died."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from lab.record import ResultRecord
from lab.tabular import finite

SUCCEEDED, FAILED = "succeeded", "failed"


@dataclass(frozen=True)
class ResultFile:
    """What the child hands the worker: one of a record (succeeded) or an error (failed)."""

    status: str
    record: ResultRecord | None = None
    error: str | None = None
    phases: list = field(default_factory=list)  # the child's phases, as lab.timeline.Phases.intervals
    written_at: float | None = None  # when the child began writing this file

    @classmethod
    def succeeded(cls, record: ResultRecord, phases: list, written_at: float) -> "ResultFile":
        return cls(SUCCEEDED, record, None, phases, written_at)

    @classmethod
    def failed(cls, error: str) -> "ResultFile":
        return cls(FAILED, None, error)

    def to_json(self) -> str:
        """Strict JSON: a number that is not finite becomes null (the database's JSON columns load it on PostgreSQL)."""
        payload = {"status": self.status, "error": self.error, "phases": self.phases, "written_at": self.written_at,
                   "result": self.record.to_dict() if self.record is not None else None}
        return json.dumps(finite(payload))

    @classmethod
    def from_json(cls, text: str) -> "ResultFile":
        """ValueError when the text is not a result file (cut short, another shape, a field the record lacks)."""
        d = json.loads(text)
        if not isinstance(d, dict) or d.get("status") not in (SUCCEEDED, FAILED):
            raise ValueError("not a result file: its status is neither succeeded nor failed")
        if d["status"] == FAILED:
            return cls.failed(d.get("error") or "failed without a message")
        if not isinstance(d.get("result"), dict):
            raise ValueError("a succeeded result file without its result")
        return cls.succeeded(ResultRecord.from_dict(d["result"]), d.get("phases") or [], d.get("written_at"))

    def write(self, path: str | os.PathLike) -> None:
        """Atomically: a child killed mid-write leaves no file (the worker then records how it died)."""
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            f.write(self.to_json())
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> "ResultFile | None":
        """None when there is no file; ValueError when there is one that does not read as a result file."""
        try:
            text = Path(path).read_text()
        except FileNotFoundError:
            return None
        return cls.from_json(text)
