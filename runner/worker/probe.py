"""What a worker learns at its start about its host: what its children can do (torch, CUDA devices, driver), and,
where triton is installed, what preloading takes from a CUDA job's first compiled call (runner/child/preload.py)."""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from runner.child import preload
from runner.worker.spawn import SpawnError

log = logging.getLogger("compile_lab.worker")


def probe(spawner, env: dict, home: Path) -> dict:
    """runner.child.process.probe's answer: forked from the preloaded parent, which has torch imported already, or a fresh
    interpreter when children are not forked (or the fork failed)."""
    home.mkdir(parents=True, exist_ok=True)
    out, log_file = home / f"probe-{os.getpid()}.json", home / f"probe-{os.getpid()}.log"
    rc = None
    if spawner.method == "fork":
        try:
            spawner.wait_ready()
            rc = spawner.start(["--probe", str(out)], env, home, log_file).wait(600)
        except SpawnError as e:
            log.warning("probing through the preloaded parent failed (%s); probing in a fresh interpreter", e)
    if rc != 0 or not out.exists():
        subprocess.run([sys.executable, "-m", "runner.child", "--probe", str(out)], env=env, check=True, timeout=600,
                       stdout=subprocess.DEVNULL)
    info = json.loads(out.read_text())
    info.pop("preloaded", None)  # what the parent preloaded is this worker's choice, not a fact of the host
    out.unlink()
    log_file.unlink(missing_ok=True)
    return info


def start_import_cost(spawner, env: dict, home: Path):
    """Start measuring what preloading takes from a CUDA job's first call, in a fresh interpreter beside the
    worker's start; only where there is something to take (forked children, triton installed). None otherwise."""
    if spawner.method != "fork" or not preload.enabled() or importlib.util.find_spec("triton") is None:
        return None
    home.mkdir(parents=True, exist_ok=True)
    out = home / f"import-cost-{os.getpid()}.json"
    proc = subprocess.Popen([sys.executable, "-m", "runner.child", "--import-cost", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return proc, out


def import_cost(started) -> float:
    """start_import_cost's answer in seconds (0.0 when nothing was started or the measure failed, said in the log)."""
    if started is None:
        return 0.0
    proc, out = started
    try:
        if proc.wait(timeout=600) == 0:
            return float(json.loads(out.read_text())["first_call_imports_s"])
    except (subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
        proc.kill()
        log.warning("could not measure the first call's imports (%s)", str(e).strip().splitlines()[0] if str(e) else e)
    finally:
        out.unlink(missing_ok=True)
    log.warning("the first call's imports were not measured: CUDA jobs' compiled first calls leave them out")
    return 0.0
