"""Glue between the worker (no torch) and device calibration: measure a device's ceilings once, in a
child process, store them; place each result on its device's roofline before it is stored."""
from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from sqlalchemy import Engine

from db.device_ceilings import has_ceilings, latest_ceilings, store_ceilings
from lab.record import ResultRecord
from lab.roofline import place
from lab.spec import ExperimentSpec

log = logging.getLogger("compile_lab.ceilings")


def measure(engine: Engine, device: str, env: dict, cwd: Path) -> dict:
    """Run the calibration child for `device` (cpu or cuda) and store what it measured."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ceilings.json"
        subprocess.run([sys.executable, "-m", "runner.child", "--calibrate", device, str(out)], env=env, cwd=cwd,
                       check=True, timeout=900, stdout=subprocess.DEVNULL)
        found = json.loads(out.read_text())
    store_ceilings(engine, found["device_name"], socket.gethostname(), found["torch_version"],
                   found["copy_gbps"], found["matmul_tflops"], found.get("driver"))
    log.info("calibrated %s: copy %.0f GB/s, matmul %s TFLOP/s", found["device_name"], found["copy_gbps"],
             ", ".join(f"{k} {v:.1f}" for k, v in found["matmul_tflops"].items()))
    return found


def ensure(engine: Engine, device: str, device_name: str | None, env: dict, cwd: Path,
           torch_version: str | None = None, driver: str | None = None) -> bool:
    """Calibrate this host's device unless the database holds its ceilings, measured on this host with this
    torch and driver: a worker on such a host is ready without measuring (`runner calibrate` measures again on
    demand). True if it measured."""
    if device_name and has_ceilings(engine, device_name, socket.gethostname(), torch_version, driver):
        return False
    measure(engine, device, env, cwd)
    return True


def place_result(engine: Engine, spec: ExperimentSpec, record: ResultRecord) -> ResultRecord:
    """The record with roofline_bound / roofline_pct / mfu filled in where ceilings are known: what the
    hardware did, so against GPU time where there is one (latency on the CPU, where the two are one)."""
    ceilings = latest_ceilings(engine, record.device_name or "", record.hostname)
    ceiling = ceilings.get(spec.dtype.removeprefix("amp-"))  # AMP's matmuls run in the low precision
    return replace(record, **place(record.flops, record.min_bytes, record.compiled_gpu_ms or record.compiled_ms,
                                   ceiling, spec.task == "training"))
