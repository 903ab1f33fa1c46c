"""What sets a process's speed: fresh processes of one host-bound configuration (mlp bs 64, default mode, by
default), each timing the compiler harness's loop (runner.child.rounds.Crosscheck: eager then compiled, one
synchronous call each, medians) and, before and after it, probes of the host alone:

  python    a pure-Python loop (no torch): the core's speed for interpreted code
  torch cpu a small CPU tensor op called back to back: the dispatcher on the host, no CUDA
  launch    a one-element CUDA op issued back to back, one sync at the end, per call: the host's launch path
  sync      torch.cuda.synchronize() on an idle device, per call: the wait's round trip
  cpu, MHz  the core the process is on (sched_getcpu) and its clock where the kernel says (cpufreq)

On an H200 mlp bs 64's processes read 0.63x-0.81x, most steady through their rounds, with our loop and the harness's
agreeing within 1% in every process (bench/results/h200_loop_vs_process_2026-11-30.txt): which of these moves with
a process's speed says where its time goes.

    python -m bench.process_speed [--processes 12] [--model mlp --batch 64] [--device cuda]   (the driver)
    python -m bench.process_speed --hash-seeds 1,2,3,4,5,6 --processes 2         (2 processes per hash seed)
    python -m bench.process_speed --one ...                                                  (one process)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def probes(device: str) -> dict:
    import torch

    def per_call_us(fn, n: int, sync=lambda: None) -> float:
        runs = []
        for _ in range(5):
            sync()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            sync()
            runs.append((time.perf_counter() - t0) / n * 1e6)
        return statistics.median(runs)

    out = {"python_us": per_call_us(lambda: sum(range(2000)), 2000)}
    a, b = torch.ones(8), torch.ones(8)
    out["torch_cpu_us"] = per_call_us(lambda: torch.add(a, b), 5000)
    if device == "cuda":
        x = torch.ones(1, device="cuda")
        out["launch_us"] = per_call_us(lambda: x.add_(1), 2000, torch.cuda.synchronize)
        out["sync_us"] = per_call_us(torch.cuda.synchronize, 2000)
    cpu = out["cpu"] = _current_cpu()
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq") as f:
            out["mhz"] = int(f.read()) // 1000
    except (OSError, TypeError, ValueError):
        out["mhz"] = None
    return out


def _current_cpu() -> int | None:
    """The core this thread runs on now (glibc's sched_getcpu); None where it cannot be asked."""
    try:
        import ctypes

        cpu = ctypes.CDLL(None, use_errno=True).sched_getcpu()
        return cpu if cpu >= 0 else None
    except (OSError, AttributeError):
        return None


def one(args) -> int:
    import torch

    from bench.plain_job import zoo_model
    from runner.child.rounds import Crosscheck
    from runner.child.timing import make_timer

    model, inputs = zoo_model(args.model, args.batch, args.device)
    compiled = torch.compile(model)

    def step(m):
        def call():
            with torch.no_grad():
                return m(*inputs)
        return call

    calls = {"eager": step(model), "compiled": step(compiled)}
    timer = make_timer(args.device)
    for call in calls.values():  # the first calls (the compile), then a short warm-up
        for _ in range(20):
            timer.once(call)
    before = probes(args.device)
    check = Crosscheck(timer, calls, 1)
    check.harness_slice(args.seconds)
    x = check.result("cpu")  # the harness loop's medians (do_bench is not this bench's question)
    after = probes(args.device)
    print(json.dumps({"speedup": x["harness_speedup"], "eager_ms": x["harness_eager_ms"],
                      "compiled_ms": x["harness_compiled_ms"], "repeats": x["harness_repeats"],
                      **{k: before[k] for k in before if k not in ("cpu", "mhz")},
                      **{f"{k}_after": after[k] for k in after if k not in ("cpu", "mhz")},
                      "cpus": [before["cpu"], after["cpu"]], "mhz": [before["mhz"], after["mhz"]]}))
    return 0


def drive(args) -> int:
    cache = tempfile.mkdtemp()
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": f"{cache}/inductor", "TRITON_CACHE_DIR": f"{cache}/triton"}
    rows = []
    seeds = [int(x) for x in args.hash_seeds.split(",")] if args.hash_seeds else []
    runs = [seed for _ in range(args.processes) for seed in seeds] if seeds else [None] * args.processes  # seeds in turn
    for i, seed in enumerate(runs):
        run_env = env if seed is None else {**env, "PYTHONHASHSEED": str(seed)}
        p = subprocess.run([sys.executable, "-m", "bench.process_speed", "--one", "--model", args.model, "--batch",
                            str(args.batch), "--device", args.device, "--seconds", str(args.seconds)],
                           cwd=ROOT, env=run_env, capture_output=True, text=True)
        line = (p.stdout.strip().splitlines() or [""])[-1]
        if p.returncode != 0 or not line.startswith("{"):
            print(f"process {i}: failed rc {p.returncode}: {p.stderr.strip()[-300:]}", file=sys.stderr)
            continue
        rows.append(json.loads(line) | ({"hash_seed": seed} if seed is not None else {}))
        print(f"process {i}: {line}", file=sys.stderr, flush=True)
    keys = [k for k in ("eager_ms", "compiled_ms", "python_us", "torch_cpu_us", "launch_us", "sync_us",
                        "launch_us_after", "sync_us_after") if rows and k in rows[0]]
    print(f"{args.model} bs {args.batch} on {args.device}: {len(rows)} fresh processes, harness loop "
          f"{args.seconds} s each; host probes before the loop (and after, where named)")
    print(f"{'speedup':>7} " + " ".join(f"{k:>15}" for k in keys) + "  cpus      MHz" + ("  hash seed" if seeds else ""))
    for r in sorted(rows, key=lambda r: r["speedup"]):
        print(f"{r['speedup']:>7.3f} " + " ".join(f"{r[k]:>15.4g}" for k in keys) + f"  {r['cpus']!s:<9} {r['mhz']}"
              + (f"  {r['hash_seed']}" if seeds else ""))
    if seeds:  # does the hash seed set the mode? each seed's processes side by side
        print("by hash seed (PYTHONHASHSEED): " + "; ".join(
            f"{seed}: " + " ".join(f"{r['speedup']:.3f}" for r in rows if r.get("hash_seed") == seed) for seed in seeds))
    if len(rows) >= 3:
        print("correlation with the speedup (Pearson r over the processes):")
        s = [r["speedup"] for r in rows]
        for k in keys:
            print(f"  {k:<16} {statistics.correlation(s, [r[k] for r in rows]):+.2f}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--one", action="store_true")
    p.add_argument("--processes", type=int, default=12)
    p.add_argument("--model", default="mlp")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--device", default="cuda")
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--hash-seeds", help="S1,S2,...: --processes processes with each PYTHONHASHSEED (the driver): does "
                                        "the seed of Python's string hashing set a process's mode?")
    args = p.parse_args()
    return one(args) if args.one else drive(args)


if __name__ == "__main__":
    sys.exit(main())
