"""`python -m runner calibrate` and `models`: what this host offers, its device ceilings (copy bandwidth, matmul
rate) measured in a child process, and the model zoo as read from its folders."""
from __future__ import annotations

import json
import sys

from db.database import get_engine
from runner import zoo


def add_parsers(sub, add_db) -> None:
    cal = sub.add_parser("calibrate", help="measure this host's device ceilings (copy bandwidth, matmul rate)")
    cal.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    cal.add_argument("--gpu", help="GPU index to pin (CUDA_VISIBLE_DEVICES)")
    add_db(cal)

    m = sub.add_parser("models", help="the model zoo")
    m.add_argument("--models-dir", action="append", default=[])
    m.add_argument("--json", action="store_true")


def cmd_calibrate(args) -> int:
    import os

    from runner.worker import ceilings, gpus
    from runner.worker.loop import PROJECT_ROOT

    env = dict(os.environ)  # the calibration child starts in PROJECT_ROOT, where `-m runner.child` finds the code
    if args.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpus.parse_gpu(args.gpu)
    found = ceilings.measure(get_engine(args.db), args.device, env, PROJECT_ROOT)
    print(f"{found['device_name']}: copy {found['copy_gbps']:.1f} GB/s; matmul " +
          ", ".join(f"{k} {v:.2f} TFLOP/s" for k, v in found["matmul_tflops"].items()))
    return 0


def cmd_models(args) -> int:
    """The models that read, then each file that does not (stderr, exit 2): a broken file hides none of the others."""
    entries, problems = zoo.read_folders(args.models_dir)
    if args.json:
        print(json.dumps([e.info.to_dict() for e in entries.values()], indent=1))
    else:
        for e in entries.values():
            params = ", ".join(f"{p.name}={p.default}" + (f" ({'|'.join(p.choices)})" if p.choices else "")
                               for p in e.info.params)
            tasks = "" if len(e.info.tasks) > 1 else f" [{e.info.tasks[0]} only]"
            print(f"{e.info.name:<12} {e.info.description}{tasks}" + (f"\n{'':<12} params: {params}" if params else ""))
    for problem in problems:
        print(f"error: not offered: {problem}", file=sys.stderr)
    return 2 if problems else 0


COMMANDS = {"calibrate": cmd_calibrate, "models": cmd_models}
