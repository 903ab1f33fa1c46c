"""What the GPU benches share: submit named configurations through the real CLI, then drain them with the
real worker (one child per job), on a fresh SQLite database under the bench's output folder."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def submit_all(db: str, configs: dict[str, list[str]], *common: str) -> dict[str, list[int]]:
    """Each configuration as its own sweep named after it: {name: job ids}; one refused is printed, not fatal. One job
    each (no automatic re-runs or process repeats, unless `common` or the flags ask): the benches compare one run
    against references."""
    ids = {}
    for name, flags in configs.items():
        follow_ups = [] if {"--reruns", "--process-repeats"} & {*common, *flags} else [
            "--reruns", "0", "--process-repeats", "1"]
        done = subprocess.run([sys.executable, "-m", "runner", "submit", "--db", db, *follow_ups, *common, "--name",
                               name, *flags],
                              cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{name}: not submitted: {done.stderr.strip()}")
            continue
        ids[name] = [int(x) for x in done.stdout.split()]
    return ids


def drain(db: str, out: Path, device: str, *extra: str, home: str | None = None, env: dict | None = None) -> float:
    """Run every queued job with one worker (GPU 0 on CUDA), its log in out/worker.log; the wall seconds."""
    t0 = time.time()
    with open(out / "worker.log", "w") as log:
        subprocess.run([sys.executable, "-m", "runner", "work", "--drain", "--no-calibrate", "--db", db,
                        "--home", home or str(out / "home"), *extra, *(["--gpu", "0"] if device == "cuda" else [])],
                       cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return time.time() - t0
