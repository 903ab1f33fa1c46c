"""A job's phases outside the measurement on a GPU, finer than its timeline (issue 23, item 5): runs the measurement
(runner.child.measure.run) for a few configurations in children forked from a preloaded parent (as the worker's are), a
first run and then a follow-up in the first run's compile cache, and times the steps inside the overhead phases
(the accuracy reference and comparison, the kernel counts, the trace's share of the compile):

    python -m bench.gpu_job_phases [--only NAME ...] [-o FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench.said import Said

CONFIGS = {
    "simplenet bs4": {"model": "simplenet", "batch_size": 4},
    "sincos bs10000": {"model": "sincos", "batch_size": 10000},
    "complexnet bs32": {"model": "complexnet", "batch_size": 32},
    "resnet18 bs16 training": {"model": "resnet18", "batch_size": 16, "task": "training"},
}


def timed(module, name: str, log: dict):
    fn = getattr(module, name)

    def wrapper(*a, **k):
        started = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            log[name] = log.get(name, 0.0) + time.perf_counter() - started
    setattr(module, name, wrapper)


def child(config: dict, repeat: bool, cache: str, write_fd: int, device: str = "cuda") -> None:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    from lab.spec import ExperimentSpec
    from lab.timeline import Phases
    from runner import zoo
    from runner.child import accuracy, measure

    log: dict = {}
    for name in ("reference", "compare", "on_device"):
        timed(accuracy, name, log)
    timed(measure, "count_both", log)
    measure.reference, measure.compare, measure.on_device = accuracy.reference, accuracy.compare, accuracy.on_device
    entry = zoo.catalog()[config["model"]]
    spec = ExperimentSpec.from_dict({**config, "device": device, "model_args": entry.info.param_defaults()})
    phases = Phases()
    role = measure.Role(repeat=repeat, cache_from_first_run=repeat)
    with tempfile.TemporaryDirectory() as arts:
        measure.run(spec, entry, lambda *a: None, Path(arts), phases, role)
    out = {"phases": {}, "inside": log}
    for iv in phases.intervals:
        out["phases"][iv["phase"]] = out["phases"].get(iv["phase"], 0.0) + iv["end"] - iv["start"]
    os.write(write_fd, (json.dumps(out) + "\n").encode())


def fork_run(config: dict, repeat: bool, cache: str, device: str) -> dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 1
        try:
            os.setsid()
            child(config, repeat, cache, w, device)
            code = 0
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    os.close(r)
    return json.loads(data) if data else {"phases": {}, "inside": {"failed": 1}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("-o", "--out")
    args = ap.parse_args()
    from runner.child import zygote

    zygote._preload()
    measured = {"eager first call", "compiled first call", "warm-up", "rounds"}
    say = Said()
    for name, config in CONFIGS.items():
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as cache:
            for repeat in (False, True):
                got = fork_run(config, repeat, cache, args.device)
                phases = {k: v for k, v in got["phases"].items() if k not in measured and v >= 0.01}
                say(f"{name} ({'follow-up' if repeat else 'first run'}): outside the measurement "
                    f"{sum(phases.values()):.2f} s")
                say("  phases: " + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))
                say("  inside: " + ", ".join(f"{k} {v:.3f}" for k, v in got["inside"].items()))
    say.write(Path(args.out) if args.out else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
