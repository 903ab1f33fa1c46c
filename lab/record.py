"""The result of one succeeded job, declared once: the child fills a ResultRecord, db.queue writes it as one
`results` row (db.models derives the table's columns from it), db.results exports it, bench.synthetic builds
fake ones. No torch, no SQLAlchemy: plain fields and their meaning, and how the raw ones are stored (lab.packing).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

RAW = ("schedule", "detail", "samples")  # the raw material behind the numbers: JSON values
# The detail's keys that pages read for thousands of results at once (the First call tab's compile breakdown, each
# run's cache state, the job page's runs alike): the results row holds a copy of them as JSON (`detail_keys`), which
# SQL reads by name, while the detail itself, like the samples, is stored packed (lab.packing), ~2.5 kB of ~6 kB
DETAIL_KEYS = ("compile_breakdown_s", "cache_hits", "cache_layers")


def text(length: int):
    """A short text field; the database refuses values longer than `length` (PostgreSQL checks)."""
    return field(default=None, metadata={"length": length})


@dataclass(kw_only=True)
class ResultRecord:
    """The numbers of one succeeded job; the field names are the export record's names."""

    # warmup cost
    eager_first_call_s: float | None = None
    compiled_first_call_s: float | None = None
    # what the compiled first call compiled from: "cold" (an empty cache), "warm" (a cache that held this
    # configuration: the worker's, or its first run's for a process repeat) or "portable" (a colleague's bundle)
    first_call_cache: str | None = text(16)
    # a measured cause met the compiled first call, read just before and after it (another process on the job's
    # cores or GPU, a thermal brake, a precompiled header built: the causes, in words, in the detail's
    # first_call_disturbance): its cold first call is left out of the cold first
    # calls' spread and interval (lab.answer), as a disturbed run's rounds are left out of the answer. None: not
    # measured (stored before it was)
    first_call_disturbed: bool | None = None
    # did inductor's FX graph cache serve the compiled graph: True, False (it was asked and missed: a warm run that
    # compiled from nothing), None (never asked: another backend). From the detail's cache_hits (graph_cache_hit)
    graph_cache_hit: bool | None = None
    compiled_second_call_s: float | None = None
    # steady state, in three clocks (runner/child/timing.py). The headline is latency as the caller sees it (one
    # synchronous call, host clock): medians and p10/p90 over every kept sample, speedup = eager / compiled
    eager_ms: float | None = None
    compiled_ms: float | None = None
    eager_p10_ms: float | None = None
    eager_p90_ms: float | None = None
    compiled_p10_ms: float | None = None
    compiled_p90_ms: float | None = None
    speedup: float | None = None
    # a configuration that saves a few ns a call pays off after billions of calls: 64-bit (PostgreSQL's integer is not)
    break_even_calls: int | None = field(default=None, metadata={"big": True})
    # throughput: back-to-back calls, one sync per block, per call
    eager_throughput_ms: float | None = None
    compiled_throughput_ms: float | None = None
    throughput_speedup: float | None = None
    # GPU time (CUDA only, a diagnosis): kernels from a cold L2, no launch gaps
    eager_gpu_ms: float | None = None
    compiled_gpu_ms: float | None = None
    gpu_speedup: float | None = None
    # 1 - GPU time / latency: the share of a call the GPU idles (host-bound past runner.child.stats.HOST_BOUND)
    eager_host_overhead: float | None = None
    compiled_host_overhead: float | None = None
    host_bound: bool | None = None
    host_note: str | None = None
    timing_method: str | None = text(200)
    # the host's pace through the headline rounds: the median of a fixed piece of Python timed before each, in us
    # (lab.host_pace; lower is faster): processes that ran at different paces read a host-bound speedup apart
    host_pace_us: float | None = None
    # 1: before caller latency (a CUDA result's only clock was GPU time); 2: the three clocks above
    timing_protocol: int | None = None
    samples_per_side: int | None = None
    # how far the numbers can be trusted: IQR / median of each side's per-round medians (how far the latency moves
    # with the host), and of the per-round eager/compiled ratios (how far the speedup does: the two sides alternate
    # call by call, so drift that slows both cancels). The flag (lab.noise) goes by the speedup's spread past a
    # threshold, or a GPU idle a quarter of a call or more (such a latency moves from process to process), with why
    eager_spread: float | None = None
    compiled_spread: float | None = None
    speedup_spread: float | None = None
    # this process's answer to the headline, for the answer across processes (lab.interval): the median of its
    # per-round eager/compiled latency ratios, and that median's standard error on a log scale
    round_speedup: float | None = None
    round_speedup_se: float | None = None
    # a cause from outside measured during the rounds (another process on the cores or the GPU, throttled or moving
    # clocks, memory pressure: runner.child.disturbance), named in noise_note; such a run is re-run and left out of the
    # answer. None: stored before causes were measured. `noisy` says the same for newer results (older ones set it
    # from the rounds' scatter, which is not a cause: the answer no longer reads it)
    disturbed: bool | None = None
    noisy: bool | None = None
    noise_note: str | None = None  # why noisy, in words
    # roofline: work per call, and what fraction of the device's measured ceiling the compiled call reaches
    flops: float | None = None
    min_bytes: float | None = None
    achieved_tflops: float | None = None
    achieved_gbps: float | None = None
    roofline_bound: str | None = text(16)  # "memory" or "compute"
    roofline_pct: float | None = None
    mfu: float | None = None
    # compiler
    graph_count: int | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    measure_recompiles: int | None = None
    # fusion made visible: per call, from torch.profiler over one steady-state call of each side
    # (runner.child.capture.profile_counts):
    # device kernels on CUDA; on the CPU the operators that compute (outermost aten ops, plus the kernels inductor
    # generated), and every aten op the host dispatches
    eager_kernels: int | None = None
    compiled_kernels: int | None = None
    eager_host_ops: int | None = None
    compiled_host_ops: int | None = None
    # memory and accuracy
    peak_mem_eager_mb: float | None = None
    peak_mem_compiled_mb: float | None = None
    max_abs_error: float | None = None
    rel_error: float | None = None
    accuracy_ok: bool | None = None
    # environment
    torch_version: str | None = text(64)
    triton_version: str | None = text(64)
    device_name: str | None = text(200)
    cuda_version: str | None = text(32)
    hostname: str | None = text(200)
    # raw material: the schedule calls, compiler reasons and phase times, every timing sample by round (tens of kB of
    # JSON: last, as the results table's columns are on SQLite, migration 0015). Stored as lab.packing's bytes: the
    # detail compressed, the samples as numbers, exactly (migration 0018)
    schedule: list = field(default_factory=list)
    detail: dict = field(default_factory=dict, metadata={"packed": "json"})
    samples: dict = field(default_factory=dict, metadata={"packed": "samples"})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ResultRecord":
        """From the child's result file; a field this version does not know is refused, naming it."""
        unknown = sorted(set(d) - set(FIELDS))
        if unknown:
            raise ValueError(f"result has fields the database does not know: {', '.join(unknown)}")
        return cls(**d)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_row(self) -> dict:
        """The values of its results row: every field (db.models packs the raw ones), and the copy of the detail's
        keys read by name (detail_keys)."""
        return self.to_dict() | {"detail_keys": detail_keys(self.detail)}


def detail_keys(detail) -> dict:
    """The detail's DETAIL_KEYS that it has: the results row's `detail_keys`."""
    return {k: detail[k] for k in DETAIL_KEYS if k in detail} if isinstance(detail, Mapping) else {}


def graph_cache_hit(hits: Mapping | None) -> bool | None:
    """ResultRecord.graph_cache_hit from the compile's cache counters (runner.child.capture.introspect.cache_hits)."""
    if not isinstance(hits, Mapping):
        return None
    hit, miss = hits.get("inductor_fx_local_cache_hit_count") or 0, hits.get("inductor_fx_local_cache_miss_count") or 0
    return True if hit > 0 else False if miss > 0 else None


FIELDS = tuple(f.name for f in fields(ResultRecord))
SCALARS = tuple(f for f in FIELDS if f not in RAW)
