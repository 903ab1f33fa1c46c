"""Runs stored as a worker stores them (claim, finish: the finishing runs queue their process repeats and re-runs),
with a CPU box's figures, for the tests of the first calls and of disturbed sweeps on the pages: a first run compiles
from an empty cache, a follow-up from its first run's (runner.child.measure.first_call_cache)."""
from db import queue
from db.models import JobStatus
from lab.sweep import SweepRequest
from runner import zoo

ENV = {"torch_version": "2.9.1+cpu", "device_name": "AMD EPYC 7B13", "hostname": "cpu-box", "timing_protocol": 2,
       "samples_per_side": 30, "timing_method": "latency: host clock around one synchronous call"}
DISTURBED = "other processes used 0.4 of the job's 2 cores during the rounds"


def result(first_s: float, made: str, speedup: float, disturbed: bool = False) -> dict:
    """One CPU run of simplenet at bs 8 as the child records it; a disturbed one with the long tail another process
    on its cores leaves (p90 25x the median)."""
    eager = 6.0
    compiled = eager / speedup
    tail = 25.0 if disturbed else 1.05
    return {**ENV, "eager_first_call_s": 0.0121, "compiled_first_call_s": first_s, "first_call_cache": made,
            "graph_cache_hit": made == "warm", "compiled_second_call_s": 0.0043, "eager_ms": eager,
            "compiled_ms": compiled, "eager_p10_ms": eager * 0.97, "eager_p90_ms": eager * tail,
            "compiled_p10_ms": compiled * 0.97, "compiled_p90_ms": compiled * tail, "speedup": speedup,
            "round_speedup": speedup, "round_speedup_se": 0.004, "speedup_spread": 0.012, "eager_spread": 0.02,
            "compiled_spread": 0.02, "accuracy_ok": True, "max_abs_error": 1e-6, "disturbed": disturbed,
            "noisy": disturbed, "noise_note": DISTURBED if disturbed else None}


def run_sweep(engine, first_s: dict, speedup: dict, disturbed: bool = False, name: str = "") -> dict[int, dict]:
    """Submit simplenet bs 8 on the CPU with dynamic false and true, and finish every job the queue hands out (the
    follow-ups the finishing runs queue included): a first run compiles cold, a follow-up from its first run's cache.
    `first_s`: per dynamic setting, its (cold, warm) first call. Returns each job's spec and what it recorded."""
    request = SweepRequest(model="simplenet", batch_sizes=(8,), device="cpu", dynamics=(False, True), name=name)
    queue.submit(engine, request, zoo.model_infos(zoo.catalog()))
    done = {}
    while (claim := queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)) is not None:
        made = "cold" if claim.follow_up is None else "warm"
        dyn = claim.spec["dynamic"]
        rec = result(first_s[dyn][made == "warm"], made, speedup[dyn], disturbed)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=rec)
        done[claim.job_id] = {"dynamic": dyn, "made": made, **rec}
    return done
