"""timm models by name (issue 26) in the second interpreter that has timm (.venv/extras: torch 2.14.1, torchvision,
timm): a test model built by its name as a job's child builds it (runner.zoo.resolve and load_module), its inputs
at a size given, an inference call and a training step whose loss is the model's cross-entropy, compiled."""
import json
import os
import subprocess

import pytest

from tests.conftest import EXTRAS_PYTHON, ROOT

pytestmark = [pytest.mark.extras,
              pytest.mark.skipif(not EXTRAS_PYTHON.exists(), reason=f"{EXTRAS_PYTHON} missing (make test makes it)")]

SCRIPT = r'''
import json, torch
from runner import zoo
from runner.child.build import make_step
out = {}
for task in ("inference", "training"):
    entry = zoo.resolve("timm:test_vit")
    module = zoo.load_module(entry, task)
    model = module.build(image_size=64)
    inputs = module.example_inputs(2, image_size=64)
    compiled = torch.compile(model, backend="aot_eager")
    step = make_step(compiled, model.parameters(), task == "training", mark_cudagraph_step=False)
    model.train(task == "training")
    got = step(inputs)
    out[task] = {"shape": list(got.shape), "inputs": [list(t.shape) for t in inputs], "finite": bool(torch.isfinite(got).all()),
                 "size_dim": entry.info.size_dim, "loss": float(got) if got.dim() == 0 else None}
print(json.dumps(out))
'''


def test_a_timm_model_by_name_runs_inference_and_a_training_step():
    done = subprocess.run([str(EXTRAS_PYTHON), "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["inference"]["inputs"] == [[2, 3, 64, 64]] and got["inference"]["shape"][0] == 2
    train = got["training"]
    assert train["inputs"] == [[2, 3, 64, 64], [2]] and train["shape"] == [] and train["finite"]
    assert 0 < train["loss"] < 20  # a cross-entropy over the model's classes from random weights
    assert got["inference"]["size_dim"] == "batch"


QUICK = r'''
import json, sys, timm
from runner.zoo import family_timm, quick_listing
out = {}
for gpu in (True, False):
    read = quick_listing.listing(["timm"], gpu)
    listed = {m["name"]: m for m in family_timm.listing(gpu)}
    out[str(gpu)] = {"read": len(read["models"]), "listed": len(listed), "version": read["families"]["timm"],
                     "differ": [m["name"] for m in read["models"] if listed.get(m["name"]) != m][:5]}
out["timm"] = timm.__version__
print(json.dumps(out))
'''


def test_the_timm_listing_read_from_its_sources_is_the_childs_where_it_says_anything():
    """runner.zoo.quick_listing, read as text: every entry it makes is the listing child's own (name and default
    input size); on a GPU it leaves out only the models whose size the sources do not say plainly, on a CPU none."""
    done = subprocess.run([str(EXTRAS_PYTHON), "-c", QUICK], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    gpu, cpu = got["True"], got["False"]
    assert gpu["differ"] == [] and cpu["differ"] == [], got
    assert cpu["read"] == cpu["listed"] and 0.9 * gpu["listed"] <= gpu["read"] <= gpu["listed"], got
    assert gpu["version"] == got["timm"]
