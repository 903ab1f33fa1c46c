"""Synthetic but realistic finished jobs for the render benchmark and the dashboard's tests.

Sweeps of 24 jobs (4 batch sizes x 3 dynamic settings x 2 modes) over a few zoo models, numbers shaped
like real CPU/GPU runs (latency grows with batch size, compile costs seconds, speedups 0.8-3x, p10/p90
around the median), about 2% failed / timed out / crashed jobs with a reason, and a shape schedule on
the dynamic=false jobs. Inserted with bulk Core inserts, one transaction per table.
"""
from __future__ import annotations

import math
import random
from datetime import timedelta

from sqlalchemy import Engine, insert

from db.engine import atomic
from db.models import Job, Result, Sweep, Worker, utcnow

MODELS = {"simplenet": 0.05, "mlp": 0.4, "complexnet": 6.0, "sincos": 1.5}  # eager ms at batch 1
BATCHES = (1, 8, 32, 128)
DYNAMICS = (None, True, False)
MODES = ("default", "max-autotune")
FAILURES = (("failed", "compile failed: fullgraph=True: graph break: call to numpy.random.choice at model.py:41"),
            ("timed_out", "timed out after 1800 s (while compiling); the child's process group was killed"),
            ("crashed", "child killed by SIGSEGV while measuring"))


def fill(engine: Engine, n_jobs: int, seed: int = 0, device: str = "cuda") -> None:
    rng = random.Random(seed)
    now = utcnow()
    worker = f"bench-host:1:gpu0:{seed:06x}"
    env = {"torch_version": "2.13.0", "triton_version": "3.5.0", "device_name": "NVIDIA H100 80GB HBM3",
           "cuda_version": "12.8", "hostname": "bench-host"}
    sweeps, jobs, results = [], [], []
    job_id = 0
    per_sweep = len(BATCHES) * len(DYNAMICS) * len(MODES)
    for s in range(math.ceil(n_jobs / per_sweep)):
        model = list(MODELS)[s % len(MODELS)]
        sweep_id = s + 1
        created = now - timedelta(minutes=n_jobs - s)
        sweeps.append({"id": sweep_id, "name": f"{model} sweep {sweep_id}", "created_at": created,
                       "created_by": "bench", "request": {"model": model, "batch_sizes": list(BATCHES),
                                                          "modes": list(MODES), "device": device}})
        for bs in BATCHES:
            for dyn in DYNAMICS:
                for mode in MODES:
                    if job_id >= n_jobs:
                        break
                    job_id += 1
                    schedule = [bs, bs * 2, bs * 4] if dyn is False else []
                    spec = {"model": model, "batch_size": bs, "model_args": {}, "task": "inference",
                            "device": device, "dtype": "float32", "backend": "inductor", "mode": mode,
                            "dynamic": dyn, "fullgraph": False, "cache": "cold", "schedule": schedule, "iters": 30,
                            "timeout_s": 1800}
                    failed = rng.random() < 0.02
                    status, error = rng.choice(FAILURES) if failed else ("succeeded", None)
                    jobs.append({"id": job_id, "sweep_id": sweep_id, "spec": spec, "status": status, "error": error,
                                 "attempts": 1, "created_at": created, "claimed_at": created,
                                 "finished_at": created + timedelta(seconds=30), "worker_id": worker})
                    if not failed:
                        results.append(_result(rng, job_id, MODELS[model], bs, dyn, mode, schedule, env))
    with atomic(engine) as session:
        session.execute(insert(Worker), [{"id": worker, "hostname": "bench-host", "pid": 1, "gpu": "0",
                                          "state": "stopped", "capabilities": {**env, "devices": [device]},
                                          "started_at": now, "heartbeat_at": now - timedelta(days=1)}])
        session.execute(insert(Sweep), sweeps)
        session.execute(insert(Job), jobs)
        if results:
            session.execute(insert(Result), results)


def _result(rng, job_id, base_ms, bs, dyn, mode, schedule, env) -> dict:
    eager = base_ms * bs ** 0.8 * rng.uniform(0.95, 1.05)
    gain = (1.6 if mode == "max-autotune" else 1.4) * (0.85 if dyn else 1.0) * rng.uniform(0.8, 1.2)
    compiled = eager / gain
    eager_first = eager / 1000 * rng.uniform(3, 6)
    compiled_first = rng.uniform(4, 9) * (3 if mode == "max-autotune" else 1)
    saved = (eager - compiled) / 1000
    calls = [{"size": size, "dim": "batch", "eager_s": eager / 1000 * (size / bs) ** 0.8,
              "compiled_s": (rng.uniform(2, 5) if i else compiled / 1000), "recompiled": i > 0,
              "reason": f"tensor 'x' size mismatch at index 0. expected {bs}, actual {size}" if i else None}
             for i, size in enumerate(schedule)]
    return {"job_id": job_id, "eager_first_call_s": eager_first, "compiled_first_call_s": compiled_first,
            "compiled_second_call_s": compiled / 1000 * rng.uniform(1.2, 2), "eager_ms": eager, "compiled_ms": compiled,
            "eager_p10_ms": eager * 0.96, "eager_p90_ms": eager * 1.08, "compiled_p10_ms": compiled * 0.95,
            "compiled_p90_ms": compiled * 1.1, "speedup": eager / compiled,
            "break_even_calls": math.ceil((compiled_first - eager_first) / saved) if saved > 0 else None,
            "timing_method": "cuda_event", "samples_per_side": 300, "graph_count": 1, "graph_breaks": 0,
            "recompiles": max(0, len(schedule) - 1), "measure_recompiles": 0, "peak_mem_eager_mb": 10.0 * bs,
            "peak_mem_compiled_mb": 8.0 * bs, "max_abs_error": 1e-6, "rel_error": 1e-7, "accuracy_ok": True,
            **env, "samples": {}, "schedule": calls,
            "detail": {"graph_break_reasons": [], "recompile_reasons": [], "compile_phases_s": {"dynamo": 1.0}}}
