"""Issue 29, "what changed between these two compiles?" across torch versions: one model submitted pinned to two
torch versions, each job run by its own worker (this venv's torch, and the second interpreter's: .venv/extras,
torch 2.14.1, running this checkout through PYTHONPATH as docs/operations.md says), then `runner diff A B` lists the
torch row and whatever else differs (kernels, compile phases, the generated code's unified diff)."""
import os
import subprocess
import sys

import pytest

from db.database import get_engine
from db.results import export_records
from lab import jobdiff
from tests.conftest import EXTRAS_PYTHON, FIXTURE_MODELS, ROOT, run_cli, submit

pytestmark = [pytest.mark.extras,
              pytest.mark.skipif(not EXTRAS_PYTHON.exists(), reason=f"{EXTRAS_PYTHON} missing (make test makes it)")]


def version(python) -> str:
    return subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_runner_diff_of_one_model_under_two_torch_versions_on_two_workers(tmp_path):
    here, there = version(sys.executable), version(EXTRAS_PYTHON)
    pin_here, pin_there = (".".join(v.split("+")[0].split(".")[:2]) for v in (here, there))
    if pin_here == pin_there:
        pytest.skip(f"both interpreters run torch {pin_here}")
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    a, b = submit(url, "--model", "sincos", "--batch", "8", "--device", "cpu", "--iters", "3", "--trace", "false",
                  "--torch", pin_here, "--torch", pin_there)
    for python, home in ((sys.executable, "home-a"), (str(EXTRAS_PYTHON), "home-b")):
        # each worker claims only the job its torch matches, then stops
        done = subprocess.run([python, "-m", "runner", "work", "--db", url, "--home", str(tmp_path / home),
                               "--models-dir", str(FIXTURE_MODELS), "--max-jobs", "1"], cwd=ROOT, capture_output=True,
                              text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr[-3000:]
    records = {r["job_id"]: r for r in export_records(get_engine(url), job_ids=[a, b])}
    assert [records[j]["status"] for j in (a, b)] == ["succeeded"] * 2, [r["error"] for r in records.values()]
    assert (records[a]["torch_version"], records[b]["torch_version"]) == (here, there)

    out = run_cli("diff", "--db", url, str(a), str(b))
    assert out.returncode == 0, out.stderr
    rows = jobdiff.story_rows(records[a], records[b])
    differing = {r["what"] for r in rows if any(line.startswith(f"* {r['what']}:") for line in out.stdout.splitlines())}
    assert "torch" in differing and differing == {r["what"] for r in rows if r["differs"]}
    assert {"mode", "dynamic", "device"}.isdisjoint(differing)  # the same settings on the same host
    torch_row = next(line for line in out.stdout.splitlines() if line.startswith("* torch"))
    assert here in torch_row and there in torch_row
    assert f"--- job {a}\n+++ job {b}\n" in out.stdout or "generated code (output_code): the same" in out.stdout
