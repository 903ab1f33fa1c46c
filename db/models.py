"""SQLAlchemy 2.x tables: sweeps, jobs, results (with raw samples) and workers.

A job's settings live in one place, `jobs.spec`: the ExperimentSpec's JSON, rebuilt with
`ExperimentSpec.from_row`. Result scalars are real columns (they are filtered, sorted and plotted);
raw samples and compiler detail are JSON.
"""
from __future__ import annotations

import enum
from datetime import datetime, timezone

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


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
    created_by: Mapped[str] = mapped_column(String(200), default="")

    jobs: Mapped[list["Job"]] = relationship(back_populates="sweep", order_by="Job.id")


class Job(Base):
    __tablename__ = "jobs"
    # the dashboard's data version (count and newest finish of the finished jobs) on every rerun: read from
    # this index alone, not from 100k table rows (27 -> 11 ms at 100k jobs)
    __table_args__ = (Index("ix_jobs_status_finished_at", "status", "finished_at"),)

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
    log_tail: Mapped[str | None] = mapped_column(Text, default=None)  # end of the child's stdout/stderr

    sweep: Mapped[Sweep] = relationship(back_populates="jobs")
    result: Mapped["Result | None"] = relationship(back_populates="job", uselist=False)


class Result(Base):
    """The numbers of one succeeded job; the column names are the export record's names."""

    __tablename__ = "results"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), unique=True)  # a result is stored once
    # warmup cost
    eager_first_call_s: Mapped[float | None] = mapped_column(Float)
    compiled_first_call_s: Mapped[float | None] = mapped_column(Float)
    compiled_second_call_s: Mapped[float | None] = mapped_column(Float)
    # steady state, in three clocks (runner/timing.py). The headline is latency as the caller sees it (one
    # synchronous call, host clock): medians and p10/p90 over every kept sample, speedup = eager / compiled
    eager_ms: Mapped[float | None] = mapped_column(Float)
    compiled_ms: Mapped[float | None] = mapped_column(Float)
    eager_p10_ms: Mapped[float | None] = mapped_column(Float)
    eager_p90_ms: Mapped[float | None] = mapped_column(Float)
    compiled_p10_ms: Mapped[float | None] = mapped_column(Float)
    compiled_p90_ms: Mapped[float | None] = mapped_column(Float)
    speedup: Mapped[float | None] = mapped_column(Float)
    break_even_calls: Mapped[int | None] = mapped_column(Integer)
    # throughput: back-to-back calls, one sync per block, per call
    eager_throughput_ms: Mapped[float | None] = mapped_column(Float)
    compiled_throughput_ms: Mapped[float | None] = mapped_column(Float)
    throughput_speedup: Mapped[float | None] = mapped_column(Float)
    # GPU time (CUDA only, a diagnosis): kernels from a cold L2, no launch gaps
    eager_gpu_ms: Mapped[float | None] = mapped_column(Float)
    compiled_gpu_ms: Mapped[float | None] = mapped_column(Float)
    gpu_speedup: Mapped[float | None] = mapped_column(Float)
    # 1 - GPU time / latency: the share of a call the GPU idles (host-bound past runner.stats.HOST_BOUND)
    eager_host_overhead: Mapped[float | None] = mapped_column(Float)
    compiled_host_overhead: Mapped[float | None] = mapped_column(Float)
    host_bound: Mapped[bool | None] = mapped_column(Boolean)
    host_note: Mapped[str | None] = mapped_column(Text)
    timing_method: Mapped[str | None] = mapped_column(String(200))
    # 1: before caller latency (a CUDA result's only clock was GPU time); 2: the three clocks above
    timing_protocol: Mapped[int | None] = mapped_column(Integer)
    samples_per_side: Mapped[int | None] = mapped_column(Integer)
    # how far the numbers can be trusted: IQR / median of the per-round medians, and a flag past a threshold
    # (or when the GPU idles a quarter of a call or more: such a latency moves from process to process), with why
    eager_spread: Mapped[float | None] = mapped_column(Float)
    compiled_spread: Mapped[float | None] = mapped_column(Float)
    noisy: Mapped[bool | None] = mapped_column(Boolean)
    noise_note: Mapped[str | None] = mapped_column(Text)  # why noisy, in words
    # roofline: work per call, and what fraction of the device's measured ceiling the compiled call reaches
    flops: Mapped[float | None] = mapped_column(Float)
    min_bytes: Mapped[float | None] = mapped_column(Float)
    achieved_tflops: Mapped[float | None] = mapped_column(Float)
    achieved_gbps: Mapped[float | None] = mapped_column(Float)
    roofline_bound: Mapped[str | None] = mapped_column(String(16))  # "memory" or "compute"
    roofline_pct: Mapped[float | None] = mapped_column(Float)
    mfu: Mapped[float | None] = mapped_column(Float)
    # compiler
    graph_count: Mapped[int | None] = mapped_column(Integer)
    graph_breaks: Mapped[int | None] = mapped_column(Integer)
    recompiles: Mapped[int | None] = mapped_column(Integer)
    measure_recompiles: Mapped[int | None] = mapped_column(Integer)  # compiles during timed rounds (samples dropped)
    # memory and accuracy
    peak_mem_eager_mb: Mapped[float | None] = mapped_column(Float)
    peak_mem_compiled_mb: Mapped[float | None] = mapped_column(Float)
    max_abs_error: Mapped[float | None] = mapped_column(Float)
    rel_error: Mapped[float | None] = mapped_column(Float)
    accuracy_ok: Mapped[bool | None] = mapped_column(Boolean)
    # environment
    torch_version: Mapped[str | None] = mapped_column(String(64))
    triton_version: Mapped[str | None] = mapped_column(String(64))
    device_name: Mapped[str | None] = mapped_column(String(200))
    cuda_version: Mapped[str | None] = mapped_column(String(32))
    hostname: Mapped[str | None] = mapped_column(String(200))
    # raw material: every timing sample by round, the schedule calls, compiler reasons, phase times
    samples: Mapped[dict] = mapped_column(JSON, default=dict)
    schedule: Mapped[list] = mapped_column(JSON, default=list)
    detail: Mapped[dict] = mapped_column(JSON, default=dict)

    job: Mapped[Job] = relationship(back_populates="result")


RESULT_SCALARS = tuple(
    c.name for c in Result.__table__.columns if c.name not in ("id", "job_id", "samples", "schedule", "detail"))


class Worker(Base):
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
    measured_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
