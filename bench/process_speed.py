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
    python -m bench.process_speed --slices 40 --processes 4 [--cores 1,5,9,13]   (each process in 40 slices of
        --seconds, probes before each slice, the slice pinned to the next of CORES in turn: does a process's speed
        move within it, with the host's probes or with the core it runs on?)
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


def probes(device: str, quick: bool = False) -> dict:
    """The host's probes; quick: a quarter of the calls, 3 runs of them (between slices)."""
    import torch

    def per_call_us(fn, n: int, sync=lambda: None) -> float:
        runs = []
        n = n // 4 if quick else n
        for _ in range(3 if quick else 5):
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
    if args.slices:
        return slices(args, timer, calls)
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


def slices(args, timer, calls) -> int:
    """One process in slices: the harness loop for --seconds, the host's probes before each, each slice pinned to the
    next core of --cores (where given). One JSON line: the slices in order."""
    from runner.child.disturbance import TICK, cpu_ticks
    from runner.child.rounds import Crosscheck

    cores = [int(c) for c in args.cores.split(",")] if args.cores else []
    every = os.sched_getaffinity(0)
    out = []
    for i in range(args.slices):
        if cores:
            os.sched_setaffinity(0, {cores[i % len(cores)]})
        probe = probes(args.device, quick=True)
        core = cores[i % len(cores)] if cores else probe["cpu"]
        ticks = cpu_ticks({core}), cpu_ticks(every), os.times()
        check = Crosscheck(timer, calls, 1)
        check.harness_slice(args.seconds)
        eager, compiled = (statistics.median(check.times[n]) for n in ("eager", "compiled"))
        (busy, steal, _), (all_busy, all_steal, _), t = cpu_ticks({core}), cpu_ticks(every), os.times()
        wall = t.elapsed - ticks[2].elapsed
        out.append({"speedup": eager / compiled, "eager_ms": eager, "compiled_ms": compiled,
                    **{k: probe[k] for k in ("python_us", "torch_cpu_us", "launch_us") if k in probe},
                    "cpu": probe["cpu"], "pinned": cores[i % len(cores)] if cores else None,
                    # the slice's core: the hypervisor's share of it (steal) and how busy it was; the whole host's
                    # busy share, this process's own CPU time over the slice's wall time
                    "steal": (steal - ticks[0][1]) / TICK / wall, "core_busy": (busy - ticks[0][0]) / TICK / wall,
                    "host_busy": (all_busy - ticks[1][0]) / TICK / wall / len(every),
                    "host_steal": (all_steal - ticks[1][1]) / TICK / wall / len(every),
                    "own_cpu": (t.user + t.system - ticks[2].user - ticks[2].system) / wall})
    print(json.dumps({"slices": out}))
    return 0


def _r(xs: list[float], ys: list[float]) -> str:
    try:
        return f"{statistics.correlation(xs, ys):+.2f}"
    except statistics.StatisticsError:  # a constant series
        return "  n/a"


def table_slices(rows: list[list[dict]], args) -> None:
    """Within each process: the spread of its slices, its thirds, and what moved with its speed; then the spread
    between processes' medians beside the spread within them."""
    print(f"{args.model} bs {args.batch} on {args.device}: {len(rows)} fresh processes, each {args.slices} slices of "
          f"{args.seconds} s of the harness loop, the host's probes before each slice"
          + (f", slices pinned to cores {args.cores} in turn" if args.cores else ""))
    named = {"python_us": "r python", "torch_cpu_us": "r cpu op", "launch_us": "r launch", "steal": "r steal",
             "host_busy": "r busy"}
    probed = [k for k in named if rows and rows[0] and k in rows[0][0]]
    print(f"{'process':>7} {'median':>7} {'min':>6} {'max':>6} {'thirds':>20} "
          + " ".join(f"{named[k]:>9}" for k in probed) + ("  median by core" if args.cores else ""))
    medians, spreads = [], []
    for i, s in enumerate(rows):
        x = [r["speedup"] for r in s]
        k = len(x) // 3
        thirds = " ".join(f"{statistics.median(x[j * k:(j + 1) * k]):.3f}" for j in range(3)) if k else ""
        by_core = ""
        if args.cores:
            by_core = " ".join(f"{c}:{statistics.median([r['speedup'] for r in s if r['pinned'] == c]):.3f}"
                               for c in sorted({r["pinned"] for r in s}))
        print(f"{i:>7} {statistics.median(x):>7.3f} {min(x):>6.3f} {max(x):>6.3f} {thirds:>20} "
              + " ".join(f"{_r(x, [r[p] for r in s]):>9}" for p in probed) + ("  " + by_core if by_core else ""))
        if "steal" in s[0]:
            print(f"{'':>7} steal on the slice's core: mean {statistics.mean(r['steal'] for r in s):.1%}, max "
                  f"{max(r['steal'] for r in s):.1%}; the host's cores busy: mean "
                  f"{statistics.mean(r['host_busy'] for r in s):.1%}; own CPU / wall: mean "
                  f"{statistics.mean(r['own_cpu'] for r in s):.2f}")
        medians.append(statistics.median(x))
        spreads.append(statistics.stdev(x) / statistics.mean(x) if len(x) > 1 else 0.0)
    if len(medians) > 1:
        print(f"between processes: medians {min(medians):.3f}-{max(medians):.3f}, sd/mean "
              f"{statistics.stdev(medians) / statistics.mean(medians):.1%}; within a process, slices' sd/mean "
              f"(median over processes) {statistics.median(spreads):.1%}")


def drive(args) -> int:
    cache = tempfile.mkdtemp()
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": f"{cache}/inductor", "TRITON_CACHE_DIR": f"{cache}/triton"}
    rows = []
    seeds = [int(x) for x in args.hash_seeds.split(",")] if args.hash_seeds else []
    runs = [seed for _ in range(args.processes) for seed in seeds] if seeds else [None] * args.processes  # seeds in turn
    for i, seed in enumerate(runs):
        run_env = env if seed is None else {**env, "PYTHONHASHSEED": str(seed)}
        p = subprocess.run([sys.executable, "-m", "bench.process_speed", "--one", "--model", args.model, "--batch",
                            str(args.batch), "--device", args.device, "--seconds", str(args.seconds),
                            "--slices", str(args.slices), "--cores", args.cores or ""],
                           cwd=ROOT, env=run_env, capture_output=True, text=True)
        line = (p.stdout.strip().splitlines() or [""])[-1]
        if p.returncode != 0 or not line.startswith("{"):
            print(f"process {i}: failed rc {p.returncode}: {p.stderr.strip()[-300:]}", file=sys.stderr)
            continue
        print(f"process {i}: {line}", file=sys.stderr, flush=True)
        if args.slices:
            rows.append(json.loads(line)["slices"])
            continue
        rows.append(json.loads(line) | ({"hash_seed": seed} if seed is not None else {}))
    if args.slices:
        table_slices(rows, args)
        return 0
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
    p.add_argument("--slices", type=int, default=0, help="N: each process in N slices of --seconds (see above)")
    p.add_argument("--cores", default="", help="C1,C2,...: with --slices, pin each slice to the next of these cores")
    p.add_argument("--hash-seeds", help="S1,S2,...: --processes processes with each PYTHONHASHSEED (the driver): does "
                                        "the seed of Python's string hashing set a process's mode?")
    args = p.parse_args()
    return one(args) if args.one else drive(args)


if __name__ == "__main__":
    sys.exit(main())
