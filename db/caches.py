"""A team's warm cache: cold jobs' compile cache artifacts (torch's "mega-cache",
torch.compiler.save_cache_artifacts) kept in the database, where every worker can fetch them, for `portable`
jobs (a colleague's first call on another host: a fresh cache directory plus these artifacts).

Keyed by what changes the compiled code: torch and triton versions, the device (name and compute capability)
and the spec's compile settings (model and sizes, task, dtype, backend, mode, dynamic, fullgraph, scope). The
key is a hash; `parts` keeps what it hashes, readable. A key keeps its newest bundle only. No torch here: the
worker computes the key from its probe.

A bundle is code the worker that loads it runs: each row carries the storing worker's signature (runner.worker.cache_key)
and a worker loads only what its own key verifies. This module stores and fetches; it checks nothing.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Mapping

from sqlalchemy import Engine, delete, select

from db.engine import atomic, reading
from db.models import CompileCache
from lab.spec import ExperimentSpec

MAX_CACHE_BYTES = 64 << 20  # one job's artifacts: a large model's kernels on a GPU are a few MB to tens of MB
# the spec fields that change what torch.compile builds (not iters, timeout, schedule, trace, cache)
SETTINGS = ("model", "model_args", "batch_size", "task", "device", "dtype", "backend", "mode", "dynamic",
            "fullgraph", "scope")
ENV = ("torch_version", "triton_version", "device_name", "capability")
NO_ARTIFACTS = "no artifacts for this key"


@dataclass(frozen=True)
class Found:
    """The newest artifacts stored under a key."""

    key: str
    job_id: int | None
    bytes: int
    data: bytes
    signature: str | None  # None: stored before bundles were signed, or by hand; never loaded


def key_parts(spec: ExperimentSpec, env: Mapping) -> dict:
    """What the key hashes: the compile settings of `spec` and the environment that would load them (the
    worker's probe: torch_version, triton_version, and for the spec's device its name and capability)."""
    d = spec.to_dict()
    return {**{k: d[k] for k in SETTINGS}, **{k: env.get(k) for k in ENV}}


def cache_key(parts: Mapping) -> str:
    return hashlib.sha256(json.dumps(dict(parts), sort_keys=True, default=str).encode()).hexdigest()[:32]


def device_env(probe: Mapping, device: str) -> dict:
    """The environment part of a key for a job on `device`, from a worker's probe: the GPU's name and compute
    capability for cuda, the CPU's model name for cpu (inductor's C++ code depends on its instruction set)."""
    if device == "cuda":
        where = {"device_name": probe.get("device_name"), "capability": probe.get("capability")}
    else:
        where = {"device_name": probe.get("cpu_name"), "capability": None}
    return {"torch_version": probe.get("torch_version"), "triton_version": probe.get("triton_version"), **where}


def store(engine: Engine, key: str, parts: Mapping, job_id: int | None, data: bytes, info: Mapping,
          signature: str | None) -> bool:
    """Keep one job's artifacts under `key`, signed, in place of older ones of that key (only the newest is ever
    loaded: every cold job stores one, and a sweep's repeats must not pile up copies); False (nothing stored) past
    MAX_CACHE_BYTES or when empty."""
    if not data or len(data) > MAX_CACHE_BYTES:
        return False
    with atomic(engine) as s:
        row = CompileCache(key=key, parts=dict(parts), job_id=job_id, bytes=len(data), info=dict(info), data=data,
                           signature=signature)
        s.add(row)
        s.flush()
        s.execute(delete(CompileCache).where(CompileCache.key == key, CompileCache.id < row.id))
    return True


def find(engine: Engine, key: str) -> Found | None:
    """The newest artifacts under `key`, or None."""
    q = (select(CompileCache.job_id, CompileCache.bytes, CompileCache.data, CompileCache.signature)
         .where(CompileCache.key == key).order_by(CompileCache.id.desc()).limit(1))
    with reading(engine) as s:
        row = s.execute(q).first()
    return None if row is None else Found(key, row.job_id, row.bytes, row.data, row.signature)


def nearest(engine: Engine, parts: Mapping) -> dict | None:
    """For a key with no bundle: the stored bundle of the same model whose key parts differ from `parts` in the fewest
    (the newest of those), and how: {key, job_id, differs: {part: [here, in the bundle]}}; None without one. What a
    portable job that paid a cold compile says about why (a torch upgrade, another mode, another GPU...)."""
    best = None
    for row in listing(engine):  # newest first: a tie keeps the newest
        theirs = row["parts"] or {}
        if theirs.get("model") != parts.get("model"):
            continue
        differs = {k: [parts.get(k), theirs.get(k)] for k in (*SETTINGS, *ENV) if parts.get(k) != theirs.get(k)}
        if differs and (best is None or len(differs) < len(best["differs"])):
            best = {"key": row["key"], "job_id": row["job_id"], "differs": differs}
    return best


def differs_words(differs: Mapping, there: str = "in the bundle") -> str:
    """`nearest`'s differences in words: "mode (max-autotune here, default in the bundle)"."""
    return "; ".join(f"{k} ({json.dumps(a, default=str)} here, {json.dumps(b, default=str)} {there})"
                     for k, (a, b) in differs.items())


WARM_PARTS = (*SETTINGS, "torch_version", "triton_version", "device_name")  # what a job's result records of ENV


def warm_nearest(engine: Engine, job_id: int, limit: int = 500) -> dict | None:
    """For a warm job that compiled anyway: what the worker's warm cache can have held. The cache lives on the
    job's host, filled by the warm jobs that finished there before this one was claimed (a cold or portable job
    compiles into a fresh folder of its own); of those of the same model (the newest `limit`), the one whose
    settings, torch, triton and device differ from this job's in the fewest, and how: {job_id, differs: {part:
    [here, there]}} (differs empty: the same settings compiled there before, so the miss was something else). None:
    no earlier warm job of this model finished on this host. (By host: a host's workers may keep separate homes.)"""
    from db.models import Job, JobStatus, Result
    from lab.spec import stored_spec

    cols = (Job.id, Job.spec, Result.torch_version, Result.triton_version, Result.device_name)
    with reading(engine) as s:
        me = s.execute(select(*cols, Result.hostname, Job.claimed_at).join(Result, Result.job_id == Job.id)
                       .where(Job.id == job_id)).first()
        if me is None or not isinstance(me.spec, dict) or not me.hostname or me.claimed_at is None:
            return None
        rows = s.execute(select(*cols).join(Result, Result.job_id == Job.id)
                         .where(Result.hostname == me.hostname, Job.id != job_id, Job.finished_at < me.claimed_at,
                                Job.status == JobStatus.SUCCEEDED.value,
                                # only warm jobs compile into the worker's cache: cold and portable ones start fresh
                                Job.spec["cache"].as_string() == "warm",
                                Job.spec["model"].as_string() == str(me.spec.get("model")))
                         .order_by(Job.finished_at.desc()).limit(limit)).all()

    def parts(r) -> dict:
        return {**{k: stored_spec(r.spec).get(k) for k in SETTINGS}, "torch_version": r.torch_version,
                "triton_version": r.triton_version, "device_name": r.device_name}

    mine, best = parts(me), None
    for r in rows:  # newest first: a tie keeps the newest
        theirs = parts(r) if isinstance(r.spec, dict) else {}
        differs = {k: [mine[k], theirs.get(k)] for k in WARM_PARTS if mine[k] != theirs.get(k)}
        if best is None or len(differs) < len(best["differs"]):
            best = {"job_id": r.id, "differs": differs}
        if not differs:
            break
    return best


def listing(engine: Engine) -> list[dict]:
    """Every stored entry, newest first, without the data."""
    q = (select(CompileCache.id, CompileCache.key, CompileCache.job_id, CompileCache.bytes, CompileCache.parts,
                CompileCache.created_at).order_by(CompileCache.id.desc()))
    with reading(engine) as s:
        return [dict(r._mapping) for r in s.execute(q)]


def first_calls_alike(engine: Engine, job_id: int) -> list[dict]:
    """The succeeded jobs of this job's sweep with its compile settings, torch and device, separated by what each
    first call compiled from (lab.first_call: cold, warm, portable, as the answer table separates them):
    [{cache, first_call_s (median), runs, job_ids}], for the job's page."""
    from db.models import Job, JobStatus, Result
    from lab import first_call
    from lab.spec import stored_spec

    with reading(engine) as s:
        me = s.execute(select(Job.spec, Job.sweep_id, Result.torch_version, Result.device_name)
                       .join(Result, Result.job_id == Job.id).where(Job.id == job_id)).first()
        if me is None or not isinstance(me.spec, dict):
            return []
        rows = s.execute(select(Job.id, Job.spec, Result.compiled_first_call_s, Result.first_call_cache,
                                Result.graph_cache_hit, Result.first_call_disturbed)
                         .join(Result, Result.job_id == Job.id)
                         .where(Job.status == JobStatus.SUCCEEDED.value, Job.sweep_id == me.sweep_id,
                                Result.torch_version == me.torch_version, Result.device_name == me.device_name)
                         .order_by(Job.id)).all()
    mine = {k: stored_spec(me.spec).get(k) for k in SETTINGS}
    alike = [(r, stored_spec(r.spec)) for r in rows]
    alike = [(r, spec) for r, spec in alike if {k: spec.get(k) for k in SETTINGS} == mine]
    kinds = [first_call.kind(r.first_call_cache, spec.get("cache"), r.graph_cache_hit) for r, spec in alike]
    keep = first_call.kept(kinds, [r.compiled_first_call_s for r, _ in alike],
                           [bool(r.first_call_disturbed) for r, _ in alike])  # as the answer counts them
    calls = first_call.separate([r.id for (r, _), k in zip(alike, keep) if k],
                                [r.compiled_first_call_s for (r, _), k in zip(alike, keep) if k],
                                [kind for kind, k in zip(kinds, keep) if k])
    return [{"cache": k, "first_call_s": c.seconds, "runs": c.runs, "job_ids": list(c.job_ids)}
            for k, c in calls.items()]
