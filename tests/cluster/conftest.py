"""The cluster tier: a real one-node Slurm cluster (.ci/slurm.sh starts one; `make test` names its slurm.conf in
COMPILE_LAB_TEST_SLURM), real workers in its job arrays, a real database. Each test's scheduler jobs carry a name of
their own, so tests running side by side (and anything else on the cluster) never count each other's, and every job
of that name is cancelled when the test ends."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_MODELS, ROOT, wait_until

SLURM_ENV = "COMPILE_LAB_TEST_SLURM"  # the test cluster's slurm.conf (never a SLURM_CONF a shell happens to have)
CLUSTER_MODELS = Path(__file__).resolve().parent / "models"


class Slurm:
    """The test cluster, seen from a submit host, for one test: its commands with this cluster's config, and the
    test's own job name prefix."""

    def __init__(self, conf: str, prefix: str):
        self.conf, self.prefix = conf, prefix
        self.env = {**os.environ, "SLURM_CONF": conf}

    def run(self, *argv: str) -> str:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, env=self.env)
        assert done.returncode == 0, f"{argv}: {done.stderr}"
        return done.stdout

    def tasks(self, states: str = "all") -> dict[str, tuple[str, str]]:
        """This test's scheduler jobs: "812_3" -> (state, reason); states="all" includes those just ended."""
        out = self.run("squeue", "-h", "-r", f"--states={states}", "-o", "%i|%j|%T|%r")
        found = {}
        for line in out.splitlines():
            job_id, name, state, reason = line.strip().split("|")
            if name.startswith(self.prefix):
                found[job_id] = (state, reason)
        return found

    def in_squeue(self) -> dict[str, tuple[str, str]]:
        """What plain `squeue` lists (pending, running, completing)."""
        return self.tasks(states="PENDING,RUNNING,COMPLETING,CONFIGURING,SUSPENDED")

    def config(self, tmp_path: Path, **over) -> Path:
        """A launcher config for this test: a cpu pool, workers from this checkout with the test models."""
        text = over.pop("text", "")
        settings = {"name": self.prefix, "max_workers": 3, "idle_exit_s": 10, "interval_s": 1} | over
        lines = [f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in settings.items()]
        models = ", ".join(f'"--models-dir", "{d}"' for d in (FIXTURE_MODELS, CLUSTER_MODELS))
        lines += ["[worker]", f'home = "{tmp_path / "home"}"', f"args = [{models}]",
                  "[slurm]", "cpus_per_task = 1", f'log_dir = "{tmp_path / "logs"}"', text,
                  "[[pool]]", 'name = "cpu"', 'device = "cpu"']
        path = tmp_path / "cluster.toml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def launcher(self, config: Path, db_url: str, *args: str, env: dict | None = None) -> subprocess.Popen:
        """`python -m runner launch slurm --config ... --watch` in the background; its log beside the config."""
        log = open(config.parent / "launcher.log", "w")
        proc = subprocess.Popen([sys.executable, "-m", "runner", "launch", "slurm", "--config", str(config), "--db",
                                 db_url, *args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
                                env={**self.env, **(env or {})})
        log.close()
        proc.log_path = config.parent / "launcher.log"
        return proc


@pytest.fixture
def slurm():
    conf = os.environ.get(SLURM_ENV)
    if not conf:
        pytest.skip(f"{SLURM_ENV} is not set: no Slurm cluster for this run (`make test` starts a one-node cluster "
                    "where it runs as root; see docs/operations.md)")
    cluster = Slurm(conf, f"t{uuid.uuid4().hex[:8]}")
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30, env=cluster.env)
    if "UP" not in ping.stdout:
        pytest.skip(f"the Slurm controller of {conf} does not answer: {ping.stdout.strip() or ping.stderr.strip()}")
    yield cluster
    subprocess.run(["scancel", f"--name={cluster.prefix}-cpu"], env=cluster.env, capture_output=True, timeout=30)


def stop(proc: subprocess.Popen, timeout: float = 30) -> int:
    """SIGTERM a launcher and wait for it to exit; its exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    wait_until(lambda: proc.poll() is not None, timeout, "the launcher to exit after SIGTERM")
    return proc.returncode
