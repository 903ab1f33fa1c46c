"""The launch control for a lab whose cluster config COMPILE_LAB_CLUSTER_CONFIG names: `python -m runner launch
slurm` run as a command (the dashboard imports nothing of the runner), on a host where Slurm's commands work."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dashboard.data.connection import absolute_sqlite

CONFIG_ENV = "COMPILE_LAB_CLUSTER_CONFIG"  # runner.launch.config reads the same variable
PROJECT_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 90.0  # sbatch and squeue answer in seconds; a controller that does not is said as such


def configured(environ=os.environ) -> str | None:
    """The lab's launcher config file, where one is set (the control is drawn only then)."""
    path = environ.get(CONFIG_ENV, "").strip()
    return path or None


def launch(db_url: str, config: str) -> tuple[bool, str]:
    """Start workers for what is queued now: (whether it went, what the launcher said)."""
    argv = [sys.executable, "-m", "runner", "launch", "slurm", "--config", config, "--db", absolute_sqlite(db_url)]
    try:
        done = subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return False, f"the launcher did not finish within {TIMEOUT_S:g} s (is the Slurm controller answering?)"
    said = "\n".join(line for line in (done.stderr + done.stdout).splitlines() if "schema of" not in line)
    return done.returncode == 0, said.strip() or "nothing to say"
