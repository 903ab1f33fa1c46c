"""SQLAlchemy 2.x tables: sweeps, jobs, results (with raw samples) and workers.

A job's settings live in one place, `jobs.spec`: the ExperimentSpec's JSON, rebuilt with
`ExperimentSpec.from_row`. Result scalars are real columns (they are filtered, sorted and plotted);
the raw samples and the compiler detail are lab.packing's bytes (Packed: read back as the dicts they were), the
schedule and the few detail keys SQL reads by name are JSON.
"""
from __future__ import annotations

import enum
from dataclasses import fields as dataclass_fields
from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from lab import packing
from lab.record import SCALARS, ResultRecord


def utcnow() -> datetime:
    """Naive UTC: what every timestamp column holds, on SQLite and PostgreSQL alike."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


class JobStatus(str, enum.Enum):
    """Where a job stands. Every job ends in exactly one terminal state, with a reason unless it succeeded."""

    QUEUED = "queued"        # waiting for a worker that offers its device and model
    RUNNING = "running"      # claimed under a lease; a child process is measuring it
    SUCCEEDED = "succeeded"  # measured; exactly one results row holds the numbers
    FAILED = "failed"        # the experiment failed (compile error, exception, out of memory, lost too often)
    TIMED_OUT = "timed_out"  # the child ran past the job's timeout_s and its process group was killed
    CANCELLED = "cancelled"  # a person cancelled it, queued or running
    CRASHED = "crashed"      # the child died (signal, or exit without a result); error names how

    @property
    def terminal(self) -> bool:
        return self not in (JobStatus.QUEUED, JobStatus.RUNNING)


TERMINAL = tuple(s.value for s in JobStatus if s.terminal)


class Base(DeclarativeBase):
    pass


class Sweep(Base):
    __tablename__ = "sweeps"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    request: Mapped[dict] = mapped_column(JSON)  # the SweepRequest as submitted, for re-submit
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")  # the submitter: a signed-in name, or user@host
    note: Mapped[str] = mapped_column(Text, default="", server_default="")  # why it ran; editable (db.team)
    archived_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)  # out of the default views
    archived_by: Mapped[str | None] = mapped_column(String(200), default=None)

    jobs: Mapped[list["Job"]] = relationship(back_populates="sweep", order_by="Job.id")
    tag_rows: Mapped[list["SweepTag"]] = relationship(cascade="all, delete-orphan", passive_deletes=True,
                                                      order_by="SweepTag.tag")


class SweepTag(Base):
    """One tag of a sweep (lab.team.check_tag: letters, digits and . _ - + : /), searchable by index."""

    __tablename__ = "sweep_tags"

    sweep_id: Mapped[int] = mapped_column(ForeignKey("sweeps.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(String(64), primary_key=True, index=True)


class Baseline(Base):
    """A model's baseline to beat: a sweep, or one configuration of it (config: lab.spec.spec_key); every other
    answer row of the model shows its change against the matching row of this one (lab.baseline)."""

    __tablename__ = "baselines"

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    sweep_id: Mapped[int] = mapped_column(ForeignKey("sweeps.id", ondelete="CASCADE"))
    config: Mapped[str | None] = mapped_column(String(64), default=None)
    pinned_by: Mapped[str] = mapped_column(String(200), default="")
    pinned_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class LabEvent(Base):
    """What a person did to the lab's record (tags or note changed, archived, deleted, a baseline pinned), by whom
    and when, and what the lab declined to do by itself (follow-ups past a job limit, db.follow_ups; actor "lab"):
    kept after what it names is gone (no foreign key)."""

    __tablename__ = "lab_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(32))
    sweep_id: Mapped[int | None] = mapped_column(Integer, default=None, index=True)
    detail: Mapped[dict] = mapped_column(JSON, default=dict)


class Job(Base):
    __tablename__ = "jobs"
    # the dashboard's data version (count and newest finish of the finished jobs) on every rerun: read from
    # this index alone, not from 100k table rows (27 -> 11 ms at 100k jobs)
    __table_args__ = (Index("ix_jobs_status_finished_at", "status", "finished_at"),
                      # a finished run finds the other runs of its configuration in its sweep (db.queue follow-ups)
                      Index("ix_jobs_sweep_config", "sweep_id", "config"),
                      # a finished run reads its configuration's earlier processes, newest first (db.follow_ups)
                      Index("ix_jobs_config_id", "config", "id"))

    id: Mapped[int] = mapped_column(primary_key=True)
    sweep_id: Mapped[int] = mapped_column(ForeignKey("sweeps.id"), index=True)
    spec: Mapped[dict] = mapped_column(JSON)  # ExperimentSpec.to_dict(); the worker rebuilds it with from_row
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.QUEUED.value, index=True)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)
    worker_id: Mapped[str | None] = mapped_column(String(200), default=None)
    lease_token: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)
    phase: Mapped[str | None] = mapped_column(String(64), default=None)  # what the child is doing now
    progress: Mapped[float | None] = mapped_column(Float, default=None)  # 0..1 within the phase
    phase_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)  # when the phase was first published
    log_tail: Mapped[str | None] = mapped_column(Text, default=None)  # end of the child's stdout/stderr
    # a job queued because another's result was noisy or host-sensitive (lab.noise): that job's id (no foreign
    # key: deleting the first run must not be refused for its follow-ups), and why ({kind, n, total, because})
    follow_up_of: Mapped[int | None] = mapped_column(Integer, default=None)
    follow_up: Mapped[dict | None] = mapped_column(JSON, default=None)
    config: Mapped[str | None] = mapped_column(String(64), default=None)  # lab.spec.spec_key(spec)

    sweep: Mapped[Sweep] = relationship(back_populates="jobs")
    result: Mapped["Result | None"] = relationship(back_populates="job", uselist=False)
    # a job's artifacts go with it: deleting the job deletes them (ORM cascade, and ON DELETE CASCADE in the table)
    artifacts: Mapped[list["Artifact"]] = relationship(cascade="all, delete-orphan", passive_deletes=True)


class Result(Base):
    """The numbers of one succeeded job; the column names are the export record's names."""

    __tablename__ = "results"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), unique=True)  # a result is stored once
    # every other column comes from lab.record.ResultRecord (below the class): the record is declared once
    job: Mapped[Job] = relationship(back_populates="result")


class Packed(TypeDecorator):
    """A dict stored as lab.packing's bytes (`kind` "samples": numbers, exactly; "json": compressed JSON), read back
    as the dict. Bytes are stored as they are (already packed). A reader of raw rows (db.views' cursor) gets the
    bytes and unpacks what it reads itself."""

    impl = LargeBinary
    cache_ok = True

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def process_bind_param(self, value, dialect):
        if value is None or isinstance(value, (bytes, bytearray, memoryview)):
            return value
        return packing.pack_samples(value) if self.kind == "samples" else packing.pack_json(value)

    def process_result_value(self, value, dialect):
        return unpack(self.kind, value)


def unpack(kind: str, value) -> dict:
    """A Packed column's dict from its stored bytes (None or empty: {})."""
    return packing.unpack_samples(value) if kind == "samples" else packing.unpack_json(value, {})


_SQL_TYPES = {"float": Float, "int": Integer, "bool": Boolean, "str": Text, "dict": JSON, "list": JSON}


def _record_column(f):
    """A results column for a ResultRecord field: its type from the annotation ("float | None" -> Float), a
    length where the record gives one (String(n)); the raw fields default to empty, packed where the record says."""
    kind = f.type.split("|")[0].strip()
    if f.metadata.get("packed"):
        return mapped_column(f.name, Packed(f.metadata["packed"]), nullable=False, default=dict)
    if f.metadata.get("length"):
        return mapped_column(f.name, String(f.metadata["length"]))
    if kind in ("dict", "list"):
        return mapped_column(f.name, JSON, nullable=False, default=dict if kind == "dict" else list)
    if f.metadata.get("big"):
        return mapped_column(f.name, BigInteger)
    return mapped_column(f.name, _SQL_TYPES[kind])


for _f in dataclass_fields(ResultRecord):
    if _f.name == "detail":  # before the packed detail: SQL reads it by name (lab.record.DETAIL_KEYS)
        Result.detail_keys = mapped_column("detail_keys", JSON, nullable=True, default=None)
    setattr(Result, _f.name, _record_column(_f))
RESULT_SCALARS = SCALARS

# The answer's columns of a result (lab.answer.READ), beside its job id: on SQLite the answer reads them from this
# index alone (db.views.rows_sql names it), not from the results rows, each a page or more of its own (the raw JSON
# makes a row ~60 kB): 0.71 -> 0.50 s at 100k jobs. SQLite only: PostgreSQL keeps the raw JSON out of the row
# (TOAST), and its index entries have a size limit that a long noise_note could pass.
ANSWER_INDEX = "ix_results_answer"
ANSWER_INDEXED = ("job_id", "graph_cache_hit", "noise_note", "accuracy_ok", "disturbed", "round_speedup",
                  "round_speedup_se", "first_call_cache", "speedup_spread", "eager_first_call_s", "compiled_first_call_s",
                  "eager_ms", "compiled_ms", "speedup", "graph_breaks", "recompiles", "max_abs_error",
                  "peak_mem_eager_mb", "peak_mem_compiled_mb", "torch_version", "device_name", "host_pace_us",
                  "first_call_disturbed")
Index(ANSWER_INDEX, *(Result.__table__.c[n] for n in ANSWER_INDEXED)).ddl_if(dialect="sqlite")


class Artifact(Base):
    """One file the compiler wrote for a job (output code, FX graphs, the structured trace), gzip-compressed and
    size-capped (db.artifacts): in the database, so a dashboard on another host than the worker can show it."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("job_id", "name", name="uq_artifacts_job_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    bytes: Mapped[int] = mapped_column(Integer)  # the text's size as the compiler wrote it, before any cut
    stored_bytes: Mapped[int] = mapped_column(Integer)  # compressed, as kept
    truncated: Mapped[bool] = mapped_column(Boolean, default=False)  # cut at lab.artifact_files.MAX_TEXT_BYTES
    data: Mapped[bytes] = mapped_column(LargeBinary)  # gzip of the (possibly cut) UTF-8 text
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class CompileCache(Base):
    """A cold job's compile cache artifacts (torch.compiler.save_cache_artifacts, the "mega-cache"), kept in the
    database so that a `portable` job on any worker can load them (db.caches). Looked up by `key`: a hash of
    torch, triton, the device and the spec's compile settings; the newest row of a key is the one loaded."""

    __tablename__ = "compile_caches"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(64), index=True)
    parts: Mapped[dict] = mapped_column(JSON, default=dict)  # what the key hashes, readable
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"), default=None)
    bytes: Mapped[int] = mapped_column(Integer)  # as torch serialised them
    info: Mapped[dict] = mapped_column(JSON, default=dict)  # torch's CacheInfo: artifact keys per kind
    data: Mapped[bytes] = mapped_column(LargeBinary)
    # HMAC-SHA256 (hex) of the key and data with the lab's cache key (runner.worker.cache_key); a row without one never loads
    signature: Mapped[str | None] = mapped_column(String(64), nullable=True, default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class WorkerRow(Base):
    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)  # host:pid:random
    hostname: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    gpu: Mapped[str | None] = mapped_column(String(64), default=None)  # CUDA_VISIBLE_DEVICES it pins
    state: Mapped[str] = mapped_column(String(16), default="idle")  # idle, busy, stopping, stopped
    current_job_id: Mapped[int | None] = mapped_column(Integer, default=None)
    capabilities: Mapped[dict] = mapped_column(JSON, default=dict)  # devices, device_name, torch version, models
    started_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class DeviceCeiling(Base):
    """A device's measured ceilings (calibration job): copy bandwidth and matmul rate per dtype."""

    __tablename__ = "device_ceilings"

    id: Mapped[int] = mapped_column(primary_key=True)
    device_name: Mapped[str] = mapped_column(String(200), index=True)
    hostname: Mapped[str] = mapped_column(String(200))
    dtype: Mapped[str] = mapped_column(String(16))
    copy_gbps: Mapped[float] = mapped_column(Float)  # device-to-device copy, bytes read + written
    matmul_tflops: Mapped[float] = mapped_column(Float)
    torch_version: Mapped[str] = mapped_column(String(64))
    driver: Mapped[str | None] = mapped_column(String(64), default=None)  # NVIDIA's: a new driver is measured again
    measured_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
