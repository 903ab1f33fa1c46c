"""The facts a worker reads without torch name the torch its children import: a CUDA wheel's package metadata says
'2.14.1' where torch says '2.14.1+cu130', and a worker that keyed on the first (its kept compile caches, its published
capabilities) before its real probe landed lost them once it had. Run in the second interpreter (.venv/extras: the
CUDA build of torch 2.14.1, on the CPU here), this checkout on its PYTHONPATH."""
import json
import os
import subprocess

import pytest

from tests.conftest import EXTRAS_PYTHON, ROOT

pytestmark = [pytest.mark.extras, pytest.mark.subprocess,
              pytest.mark.skipif(not EXTRAS_PYTHON.exists(), reason=f"{EXTRAS_PYTHON} missing (make test makes it)")]

READ = """
import importlib.metadata, json
from runner.worker import quick_probe
quick = quick_probe.probe({"CUDA_VISIBLE_DEVICES": ""})
import torch
print(json.dumps([quick["torch_version"], importlib.metadata.version("torch"), torch.__version__]))
"""


def test_the_quick_read_names_torch_as_torch_does_on_a_cuda_wheel():
    done = subprocess.run([str(EXTRAS_PYTHON), "-c", READ], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    quick, metadata, torch_says = json.loads(done.stdout.strip().splitlines()[-1])
    assert metadata != torch_says  # the case at hand: the package's version lacks torch's local part
    assert quick == torch_says, (quick, metadata, torch_says)
