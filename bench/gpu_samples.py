"""What a real result's per-round samples hold: the child's own clocks (runner.child.timing, runner.child.rounds) on a few
configurations, eager against torch.compile, stored as the child stores them (latency rounds, then the diagnosis
clocks' rounds), without a worker or a database (torch, numpy and this checkout only: a lent GPU host's image).

    python -m bench.gpu_samples [--device cuda] [--iters 30] [--out FILE.json]

Prints per configuration the calls per round, the samples' JSON size and what their values are made of (latency:
differences of perf_counter, in ms; GPU time: CUDA events' float32 milliseconds); --out keeps the samples, as JSON,
for bench.synthetic_raw's shape and lab.samples' tests.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import torch

from runner.child.rounds import BLOCK_CLOCKS, measure_rounds, warmup
from runner.child.timing import CompileWatch, make_timer


def models(device: str) -> dict:
    """(model, input) per configuration: host-bound small models and a GPU-bound one, as a lab's sweeps hold."""
    torch.manual_seed(0)
    nn = torch.nn
    simple = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    mlp = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
    out = {"simplenet bs 8": (simple, torch.randn(8, 512)), "mlp bs 64": (mlp, torch.randn(64, 1024)),
           "mlp bs 4096": (mlp, torch.randn(4096, 1024))}
    try:
        import torchvision
        out["resnet18 bs 32"] = (torchvision.models.resnet18(), torch.randn(32, 3, 224, 224))
    except ImportError:
        pass
    return {k: (m.to(device).eval(), x.to(device)) for k, (m, x) in out.items()}


def steady(device: str, model, x, iters: int) -> dict:
    """runner.child.measure.steady_state's rounds, without its disturbance watch: warm-up, the plan, the latency rounds,
    then the diagnosis clocks' rounds; the samples as a result stores them."""
    timer, watch = make_timer(device), CompileWatch()
    compiled = torch.compile(model)
    with torch.no_grad():
        sides = {"eager": lambda: model(x), "compiled": lambda: compiled(x)}
        for fn in sides.values():
            fn()
        est_c, est_e = warmup(timer, sides["compiled"]), warmup(timer, sides["eager"])
        timer.plan(call_ms=max(est_e[0], est_c[0]), issue_ms=max(est_e[1], est_c[1]))
        quiet = lambda *_: None  # noqa: E731
        samples = measure_rounds(timer, watch, sides, iters, quiet)
        diag = measure_rounds(timer, watch, sides, iters, quiet, clocks=tuple(BLOCK_CLOCKS))
    dropped = samples.pop("dropped") + diag.pop("dropped")
    return {**samples, **diag, "dropped": dropped}


def describe(samples: dict) -> str:
    """Calls per round and what the values are: how many are exact float32, the perf_counter grid they sit on."""
    parts = []
    for key, rounds in samples.items():
        if key == "dropped" or not all(isinstance(r, list) for r in rounds):  # the host's pace: one float a round
            continue
        flat = np.array([v for r in rounds for v in r], dtype=np.float64)
        if not len(flat):
            continue
        f32 = np.mean(flat.astype(np.float32).astype(np.float64) == flat)
        parts.append(f"{key}: {len(rounds)}x{max(len(r) for r in rounds)} median {np.median(flat):.4g} ms "
                     f"float32-exact {f32:.0%}")
    return "; ".join(parts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--out")
    args = p.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}, "
          f"perf_counter now {time.perf_counter():.3f} s (ulp 2^{math.frexp(time.perf_counter())[1] - 53})")
    kept = {}
    for name, (model, x) in models(args.device).items():
        samples = steady(args.device, model, x, args.iters)
        size = len(json.dumps(samples))
        print(f"{name}: {size / 1e3:.1f} kB of JSON; {describe(samples)}")
        kept[name] = samples
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"perf_counter_s": time.perf_counter(), "samples": kept}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
