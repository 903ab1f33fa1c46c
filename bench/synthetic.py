"""Synthetic but realistic finished jobs for the render benchmark and the dashboard's tests.

Sweeps of 24 jobs (4 batch sizes x 3 dynamic settings x 2 modes) over a few zoo models, about 2%
failed / timed out / crashed jobs with a reason, and a shape schedule on the dynamic=false jobs. Every
other sincos sweep runs with a warm compile cache. The last sweep (when there are two or more) is a
repeat sweep like `submit --repeat 4`: complexnet at batch 8 and 32 in three modes, four identical jobs
each, whose spread is small at batch 32 (the modes separate) and larger at batch 8 (they do not).

Numbers are shaped like the H100 runs in bench/results/h100_repeats.txt: each model's work per call
(FLOPs, minimum bytes) sets a floor against the device's measured ceilings (also stored, unless
`ceilings=False`), the compiled call reaches 70-100% of it plus a fixed kernel latency, eager is slower by
a per-model gain; CUDA jobs carry host latency (wall) above device time, smaller under CUDA graphs; a few
jobs (4%) were disturbed from outside (another process on the cores, named). The compiled first call is split
into compile_breakdown_s parts that add up to it. Inserted with bulk Core inserts, one transaction per table.
"""
from __future__ import annotations

import copy
import hashlib
import inspect
import itertools
import math
import os
import random
import shutil
from datetime import timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, insert

from bench import synthetic_raw
from db.engine import atomic
from db.models import DeviceCeiling, Job, Result, Sweep, WorkerRow, utcnow
from lab import host_pace
from lab.interval import round_ratios, run_center
from lab.noise import repeats_because
from lab.record import ResultRecord, detail_keys
from lab.roofline import place
from lab.spec import spec_key

# per model: FLOPs and input+output bytes per sample, parameter bytes, fixed device latency of the
# compiled call (ms), eager's slowdown against compiled default, eager's host overhead per call (ms)
MODELS = {"simplenet": dict(flops=534_528, io=2_088, params=1_071_144, fixed_ms=0.035, gain=1.03, host_ms=0.15),
          "mlp": dict(flops=16_777_216, io=8_192, params=33_574_912, fixed_ms=0.05, gain=1.15, host_ms=0.12),
          "complexnet": dict(flops=3.3e9, io=340_000, params=60_000_000, fixed_ms=0.05, gain=1.45, host_ms=0.4),
          "sincos": dict(flops=0.0, io=120_000, params=0, fixed_ms=0.01, gain=2.38, host_ms=0.07)}
BATCHES = (1, 8, 32, 128)
DYNAMICS = (None, True, False)
MODES = ("default", "max-autotune")
MODE_GAIN = {"default": 1.0, "reduce-overhead": 1.025, "max-autotune": 1.04, "max-autotune-no-cudagraphs": 1.04}
ROUNDS = 30  # a job's default iters: rounds of samples per side
BATCH = 2000  # jobs per insert transaction
EXTRA_SHARE = 0.29  # configurations whose processes disagree and call for one more (lab.noise: 0.29 on an H100)
PROCESSES = 2  # a realistic database's (filled()): the lab's default process repeats
REPEAT = {"model": "complexnet", "batches": (8, 32), "modes": ("default", "reduce-overhead", "max-autotune"), "n": 4}
FAILURES = (("failed", "compile failed: fullgraph=True: graph break: call to numpy.random.choice at model.py:41"),
            ("timed_out", "timed out after 1800 s (while compiling); the child's process group was killed"),
            ("crashed", "child killed by SIGSEGV while measuring"))
DEVICES = {  # name, timing method and measured ceilings (the H100's from bench/results/h100_repeats.txt)
    "cuda": {"device_name": "NVIDIA H100 80GB HBM3", "copy_gbps": 2952.2,
             "matmul_tflops": {"float32": 51.24, "bfloat16": 782.97, "float16": 752.10},
             "timing_method": "cuda: latency = perf_counter around one synchronous call; throughput = "
                                   "back-to-back block per call; gpu = CUDA events behind a host head start, L2 flushed"},
    "cpu": {"device_name": "AMD EPYC 9454 48-Core Processor", "copy_gbps": 38.0,
            "matmul_tflops": {"float32": 1.9, "bfloat16": 0.9, "float16": 0.4},
            "timing_method": "cpu: latency = perf_counter per call; throughput = back-to-back block per call"}}


def fill(engine: Engine, n_jobs: int, seed: int = 0, device: str = "cuda", ceilings: bool = True,
         rounds: int = ROUNDS, models=tuple(MODELS), batches=BATCHES, dynamics=DYNAMICS, modes=MODES,
         processes: int = 1) -> None:
    """`rounds`: the rounds of per-round samples each job stores, as a real job does (bench.synthetic_raw: latency,
    throughput and, on CUDA, GPU time per round and side), with the paired speedup the child computes from them
    (round_speedup, round_speedup_se); 0 stores none, and the paired speedup is then the job's own.
    `models`, `batches`, `dynamics`, `modes`: the sweeps' shape (a sweep per model in turn).
    `processes`: each configuration's processes, as a sweep's process_repeats (the lab's default is 2): the first
    run's follow-ups (process repeats: a warm first call, latency rounds only, a few % from the first), and a third
    process for EXTRA_SHARE of the configurations, as when their first two disagree (lab.noise)."""
    rng = random.Random(seed)
    extra = random.Random(seed + 1)  # the fields added later draw from their own stream: the rest stay as they were
    raw = np.random.default_rng(seed + 2)
    rich = random.Random(seed + 3)
    now = utcnow()
    dev = DEVICES[device]
    worker = f"bench-host:1:gpu0:{seed:06x}"
    env = {"torch_version": "2.13.0", "triton_version": "3.5.0", "device_name": dev["device_name"],
           "cuda_version": "12.8" if device == "cuda" else None, "hostname": "bench-host"}
    with atomic(engine) as session:
        session.execute(insert(WorkerRow), [{"id": worker, "hostname": "bench-host", "pid": 1, "gpu": "0",
                                          "state": "stopped", "capabilities": {**env, "devices": [device]},
                                          "started_at": now, "heartbeat_at": now - timedelta(days=1)}])
        if ceilings:
            session.execute(insert(DeviceCeiling), [
                {"device_name": dev["device_name"], "hostname": "bench-host", "dtype": dtype,
                 "copy_gbps": dev["copy_gbps"], "matmul_tflops": tflops, "torch_version": "2.13.0",
                 "measured_at": now - timedelta(days=1)} for dtype, tflops in dev["matmul_tflops"].items()])
    sweeps, jobs, follow_ups, results = [], [], [], []
    n_done = 0
    per_sweep = len(batches) * len(dynamics) * len(modes)
    # the last sweep is a repeat sweep; with process repeats a sweep holds more jobs than configurations, and should
    # the estimate fall short, sweeps go on until there are n_jobs
    n_sweeps = math.ceil(n_jobs / (per_sweep * (processes + (EXTRA_SHARE if processes > 1 else 0))))
    for s in itertools.count():
        if n_done >= n_jobs:
            break
        repeat = s == n_sweeps - 1 and s > 0
        model = REPEAT["model"] if repeat else models[s % len(models)]
        cache = "warm" if model == "sincos" and s % 8 == 7 else "cold"
        sweep_id = s + 1
        created = now - timedelta(minutes=n_jobs - s)
        if repeat:
            combos = [(bs, None, mode) for bs in REPEAT["batches"] for mode in REPEAT["modes"]] * REPEAT["n"]
            combos.sort(key=lambda c: (c[0], REPEAT["modes"].index(c[2])))
            request = {"model": model, "batch_sizes": list(REPEAT["batches"]), "modes": list(REPEAT["modes"]),
                       "device": device, "repeat": REPEAT["n"]}
        else:
            combos = [(bs, dyn, mode) for bs in batches for dyn in dynamics for mode in modes]
            request = {"model": model, "batch_sizes": list(batches), "modes": list(modes), "device": device,
                       "cache": cache}
        sweeps.append({"id": sweep_id, "name": f"{model} {'repeats' if repeat else 'sweep'} {sweep_id}",
                       "created_at": created, "created_by": "bench", "request": request})
        for bs, dyn, mode in combos:
            if n_done >= n_jobs:
                break
            n_done += 1
            job_id = n_done
            schedule = [bs, bs * 2, bs * 4] if dyn is False else []
            spec = {"model": model, "batch_size": bs, "model_args": {}, "task": "inference", "device": device,
                    "dtype": "float32", "backend": "inductor", "mode": mode, "dynamic": dyn, "fullgraph": False,
                    "cache": cache, "schedule": schedule, "iters": rounds or 30, "timeout_s": 1800}
            failed = not repeat and rng.random() < 0.02
            status, error = rng.choice(FAILURES) if failed else ("succeeded", None)
            job = {"id": job_id, "sweep_id": sweep_id, "spec": spec, "status": status, "error": error,
                   "attempts": 1, "created_at": created, "claimed_at": created,
                   "finished_at": created + timedelta(seconds=30), "worker_id": worker, "config": spec_key(spec)}
            jobs.append(job)
            if not failed:
                # repeats differ by run-to-run noise only: 0.3% at batch 32, 1.5% at batch 8
                jitter = (0.003 if bs >= 32 else 0.015) if repeat else 0.15
                r = _result(rng, extra, job_id, model, bs, dyn, mode, cache, schedule, env, device, jitter)
                first = copy.deepcopy(r)
                _raw_material(raw, rich, r, spec, rounds, device == "cuda")
                results.append(r)
                more = processes - 1 + (processes > 1 and rich.random() < EXTRA_SHARE)
                for n in range(1, min(more, n_jobs - n_done) + 1):
                    n_done += 1
                    why = {"kind": "process", "n": n, "total": more, "because": repeats_because(processes)}
                    follow_ups.append({**job, "id": n_done, "follow_up_of": job_id, "follow_up": why,
                                       "finished_at": job["finished_at"] + timedelta(seconds=20 * n)})
                    r = _process_repeat(rich, first, n_done)
                    _raw_material(raw, rich, r, spec, rounds, device == "cuda", diagnose=False)
                    results.append(r)
        # a transaction per batch: memory stays bounded at 100k jobs
        if len(jobs) + len(follow_ups) >= BATCH or n_done >= n_jobs:
            with atomic(engine) as session:
                session.execute(insert(Sweep), sweeps)
                session.execute(insert(Job), jobs)
                if follow_ups:  # apart: their rows name what they follow, the first runs' leave it NULL
                    session.execute(insert(Job), follow_ups)
                if results:
                    session.execute(insert(Result), results)
            sweeps, jobs, follow_ups, results = [], [], [], []


def _raw_material(gen, rng, result: dict, spec: dict, rounds: int, gpu: bool, diagnose: bool = True) -> None:
    """The samples and the rest of `detail` a real job stores (bench.synthetic_raw), and what the child derives
    from them: the paired speedup of its rounds and the count of calls dropped for compiling."""
    plan = None
    if rounds:
        result["samples"], plan = synthetic_raw.samples(gen, result, rounds, gpu, diagnose)
        result["round_speedup"], result["round_speedup_se"] = run_center(round_ratios(result["samples"]))
        result["measure_recompiles"] = len(result["samples"]["dropped"])
        result["samples_per_side"] = sum(len(b) for b in result["samples"]["compiled"])
        # the host's pace, from a stream of its own per job: the rest of the data stays as it was
        probes, around = synthetic_raw.host_paces(np.random.default_rng([result["job_id"], 41]), rounds)
        result["samples"][host_pace.KEY] = probes
        pace = host_pace.split(result["samples"])
        result["host_pace_us"] = pace and pace["median_us"]
        result["detail"] = result["detail"] | {"host_pace": pace, "first_call_pace": host_pace.around(*around)}
    result["detail"] = synthetic_raw.detail(rng, result, spec, plan, gpu) | result["detail"]
    result["detail_keys"] = detail_keys(result["detail"])


def _result(rng, extra, job_id, model, bs, dyn, mode, cache, schedule, env, device, jitter) -> dict:
    m, dev = MODELS[model], DEVICES[device]
    flops, min_bytes = m["flops"] * bs, m["params"] + m["io"] * bs
    compute_ms = flops / (dev["matmul_tflops"]["float32"] * 1e9)
    memory_ms = min_bytes / (dev["copy_gbps"] * 1e6)
    efficiency = 0.72 if compute_ms > memory_ms else 0.97
    eager = (max(compute_ms, memory_ms) / efficiency + m["fixed_ms"]) * m["gain"] * rng.uniform(1 - jitter, 1 + jitter)
    gain = m["gain"] * MODE_GAIN[mode] * (0.9 if dyn else 1.0) * rng.uniform(1 - jitter, 1 + jitter)
    compiled = eager / gain
    noisy_run = extra.random() < 0.04
    spreads = [extra.uniform(0.05, 0.15) if noisy_run and i == 1 else abs(extra.gauss(0, 0.008)) + 0.001
               for i in range(2)]
    ratio_spread = 1.5 * max(spreads)
    eager_first = eager / 1000 * rng.uniform(3, 6)
    warm = cache == "warm"
    compiled_first = rng.uniform(1.0, 2.5) if warm else rng.uniform(4, 9) * (3 if mode == "max-autotune" else 1)
    breakdown = _breakdown(extra, compiled_first, mode, warm)
    calls = [{"size": size, "dim": "batch", "eager_s": eager / 1000 * (size / bs) ** 0.8,
              "compiled_s": (rng.uniform(2, 5) if i else compiled / 1000), "recompiled": i > 0,
              "reason": f"tensor 'x' size mismatch at index 0. expected {bs}, actual {size}" if i else None}
             for i, size in enumerate(schedule)]
    # the headline is latency: on CUDA the kernels (GPU time) plus what the host adds per call (Python, guards,
    # launches), which CUDA graphs (reduce-overhead, max-autotune) cut; throughput hides part of it
    clocks = {"eager_gpu_ms": None, "compiled_gpu_ms": None, "gpu_speedup": None, "eager_host_overhead": None,
              "compiled_host_overhead": None, "host_bound": None, "host_note": None}
    gpu_eager, gpu_compiled = eager, compiled
    if device == "cuda":
        host = m["host_ms"] * extra.uniform(0.9, 1.4)
        graphs = mode in ("reduce-overhead", "max-autotune")
        eager, compiled = gpu_eager + host, gpu_compiled + host * (0.45 if graphs else 1.3)
        idle = (1 - gpu_eager / eager, 1 - gpu_compiled / compiled)
        clocks = {"eager_gpu_ms": gpu_eager, "compiled_gpu_ms": gpu_compiled, "gpu_speedup": gpu_eager / gpu_compiled,
                  "eager_host_overhead": idle[0], "compiled_host_overhead": idle[1],
                  "host_bound": max(idle) >= 0.5,
                  "host_note": f"eager leaves the GPU idle {idle[0]:.0%} of each call: launch-bound"
                  if max(idle) >= 0.5 else None}
    throughput = (max(gpu_eager, 0.6 * eager), max(gpu_compiled, 0.6 * compiled))
    clocks |= {"eager_throughput_ms": throughput[0], "compiled_throughput_ms": throughput[1],
               "throughput_speedup": throughput[0] / throughput[1]}
    seconds = gpu_compiled / 1e3
    saved = (eager - compiled) / 1000
    record = ResultRecord(**{"eager_first_call_s": eager_first, "compiled_first_call_s": compiled_first,
            "compiled_second_call_s": compiled / 1000 * rng.uniform(1.2, 2), "eager_ms": eager, "compiled_ms": compiled,
            "eager_p10_ms": eager * (1 - 2 * spreads[0]), "eager_p90_ms": eager * (1 + 3 * spreads[0]),
            "compiled_p10_ms": compiled * (1 - 2 * spreads[1]), "compiled_p90_ms": compiled * (1 + 3 * spreads[1]),
            "speedup": eager / compiled,
            "break_even_calls": math.ceil((compiled_first - eager_first) / saved) if saved > 0 else None,
            "timing_method": dev["timing_method"], "timing_protocol": 3, "samples_per_side": 300, **clocks,
            "eager_spread": spreads[0], "compiled_spread": spreads[1], "speedup_spread": ratio_spread,
            "round_speedup": eager / compiled, "round_speedup_se": 1.25 * ratio_spread / 1.35 / math.sqrt(30),
            "disturbed": noisy_run, "noisy": noisy_run,
            "noise_note": "other processes used 0.9 of the job's 16 cores during the rounds (python (pid 4242) 0.9)"
            if noisy_run else None, "first_call_cache": "warm" if warm else "cold", "graph_cache_hit": warm,
            "flops": flops, "min_bytes": min_bytes, "achieved_tflops": flops / seconds / 1e12,
            "achieved_gbps": min_bytes / seconds / 1e9,
            **place(flops, min_bytes, gpu_compiled, {"copy_gbps": dev["copy_gbps"],
                                                 "matmul_tflops": dev["matmul_tflops"]["float32"]}, False),
            "graph_count": 1, "graph_breaks": 0,
            "recompiles": max(0, len(schedule) - 1), "measure_recompiles": 0, "peak_mem_eager_mb": 10.0 * bs,
            "peak_mem_compiled_mb": 8.0 * bs, "max_abs_error": 1e-6, "rel_error": 1e-7, "accuracy_ok": True,
            **env, "samples": {}, "schedule": calls,
            "detail": {"graph_break_reasons": [], "recompile_reasons": [], "compile_breakdown_s": breakdown,
                       "compile_phases_s": _phases(breakdown),
                       "cache_hits": {"inductor_fx_local_cache_hit_count": int(warm),
                                      "inductor_fx_local_cache_miss_count": int(not warm)},
                       "speedup_p10": eager / compiled * (1 - ratio_spread),
                       "speedup_p90": eager / compiled * (1 + ratio_spread)}})
    return {"job_id": job_id, **record.to_dict()}


def _process_repeat(rng, first: dict, job_id: int) -> dict:
    """A process repeat of the run `first` (its result before the raw material): the same configuration in a fresh
    process, compiled from the first run's kept cache (a warm first call), its latency a process's few % apart, no
    diagnosis clocks (runner.child.measure: a repeat times the headline's rounds only)."""
    r = copy.deepcopy(first) | {"job_id": job_id}
    apart = rng.gauss(1, 0.02)
    for name in ("compiled_ms", "compiled_p10_ms", "compiled_p90_ms"):
        r[name] *= apart
    r["speedup"] = r["round_speedup"] = r["eager_ms"] / r["compiled_ms"]
    r |= {name: None for name in ("eager_throughput_ms", "compiled_throughput_ms", "throughput_speedup", "eager_gpu_ms",
                                  "compiled_gpu_ms", "gpu_speedup", "eager_host_overhead", "compiled_host_overhead",
                                  "host_bound", "host_note")}
    first_s = rng.uniform(1.0, 2.5)
    r |= {"compiled_first_call_s": first_s, "first_call_cache": "warm", "graph_cache_hit": True,
          "compiled_second_call_s": r["compiled_ms"] / 1000 * rng.uniform(1.2, 2)}
    r["detail"] = r["detail"] | {"compile_breakdown_s": _breakdown(rng, first_s, "default", True),
                                 "cache_hits": {"inductor_fx_local_cache_hit_count": 1,
                                                "inductor_fx_local_cache_miss_count": 0}}
    r["detail"]["compile_phases_s"] = _phases(r["detail"]["compile_breakdown_s"])
    return r


def _breakdown(rng, first_s: float, mode: str, warm: bool) -> dict:
    """The first call's disjoint parts (runner.child.capture.introspect.compile_breakdown's keys), adding up to it: a warm
    cache skips most of codegen and kernel compile, max-autotune spends most of its time autotuning."""
    shares = {"dynamo tracing": rng.uniform(0.10, 0.16), "aot autograd": rng.uniform(0.06, 0.10),
              "inductor lowering": rng.uniform(0.12, 0.20),
              "codegen + kernel compile": rng.uniform(0.03, 0.06) if warm else rng.uniform(0.40, 0.50),
              "autotuning": rng.uniform(0.55, 0.65) if mode == "max-autotune" and not warm else 0.0}
    scale = 0.92 / max(1.0, sum(shares.values()))
    parts = {k: v * scale * first_s for k, v in shares.items()}
    parts["other (run, guards)"] = first_s - sum(parts.values())
    return parts


def _phases(parts: dict) -> dict:
    """compile_phases_s as torch nests them (dynamo ⊃ aot_autograd ⊃ inductor ⊃ codegen)."""
    codegen = parts["codegen + kernel compile"]
    inductor = parts["inductor lowering"] + codegen + parts["autotuning"]
    aot = parts["aot autograd"] + inductor
    return {"dynamo": parts["dynamo tracing"] + aot, "aot_autograd": aot, "inductor": inductor,
            "inductor_codegen": codegen, "autotune": parts["autotuning"]}


def data_version() -> str:
    """A digest of the code and constants that shape the data, of the schema it is stored in and of the codec that
    packs it (lab.packing), not of the helpers that keep it."""
    from db.database import HEAD
    from lab import packing

    made = (fill, _result, _raw_material, _process_repeat, _breakdown, _phases)
    text = "".join(inspect.getsource(f) for f in made) + inspect.getsource(synthetic_raw) + inspect.getsource(
        packing) + repr(
        (MODELS, BATCHES, DYNAMICS, MODES, MODE_GAIN, REPEAT, FAILURES, DEVICES, ROUNDS, HEAD, EXTRA_SHARE, PROCESSES))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def filled(path: Path | None, n_jobs: int, seed: int = 0, device: str = "cuda", cache: Path | None = None) -> Path:
    """A SQLite file at `path` holding fill(n_jobs, seed, device): at 100k realistic jobs the fill takes minutes
    (a real job's samples are ~60 kB of float text), so with `cache` (or COMPILE_LAB_BENCH_CACHE) the first fill is
    kept there, named by its arguments and this code, and copied for each later run. Without `path`, the kept file
    itself (for a run that only reads it)."""
    from db.database import dispose_engine, get_engine

    cache = cache or (Path(os.environ["COMPILE_LAB_BENCH_CACHE"]) if os.environ.get("COMPILE_LAB_BENCH_CACHE") else None)
    kept = cache / f"synthetic-{n_jobs}-{seed}-{device}-{data_version()}.db" if cache else None
    if kept is not None and kept.exists():
        if path is None:
            return kept
        shutil.copyfile(kept, path)
        return path
    target = kept.with_suffix(".partial") if kept is not None else path
    target.unlink(missing_ok=True)
    url = f"sqlite:///{target}"
    fill(get_engine(url), n_jobs, seed=seed, device=device, processes=PROCESSES)
    dispose_engine(url)  # checkpoints the fill's WAL into the file, as a lab's small commits would have
    if kept is not None:
        target.rename(kept)
        if path is None:
            return kept
        shutil.copyfile(kept, path)
    return path


def filled_pg(base_url: str, n_jobs: int, seed: int = 0, device: str = "cuda", cache: Path | None = None) -> str:
    """A PostgreSQL database holding fill(n_jobs, seed, device), made once beside `base_url`'s (a role that may
    CREATE DATABASE) and named by the arguments and this code, kept for later runs: its URL. Its rows are copied
    from the SQLite fill (filled(); kept in `cache`) with COPY: inserting 100k realistic jobs row by row took an hour
    here. A fill that did not finish is dropped and made again."""
    import sqlite3
    import tempfile

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from db.database import dispose_engine, get_engine
    from db.engine import resolve_url

    name = f"compile_lab_synthetic_{n_jobs}_{seed}_{device}_{data_version()}"
    base = resolve_url(base_url)
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as c:
            exists = c.scalar(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})
        if exists:
            with get_engine(url).connect() as c:
                done = c.scalar(text("SELECT count(*) FROM jobs")) == n_jobs  # the copy is one transaction
            dispose_engine(url)
            if done:
                return url
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            c.execute(text(f'CREATE DATABASE "{name}"'))
        engine = get_engine(url)  # the schema, at head
        with tempfile.TemporaryDirectory() as tmp:
            source = filled(None if cache else Path(tmp) / "fill.db", n_jobs, seed=seed, device=device, cache=cache)
            with sqlite3.connect(source) as lite, engine.begin() as conn:
                cur = conn.connection.driver_connection.cursor()
                for table in ("workers", "device_ceilings", "sweeps", "jobs", "results"):  # results last
                    names = [r[1] for r in lite.execute(f"PRAGMA table_info({table})")]
                    columns = ", ".join(f'"{n}"' for n in names)
                    with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for row in lite.execute(f"SELECT {columns} FROM {table} ORDER BY rowid"):
                            copy.write_row(row)
                    if "id" in names and table != "workers":
                        cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                    f"(SELECT coalesce(max(id), 1) FROM {table}))")
        dispose_engine(url)
    finally:
        admin.dispose()
    return url
