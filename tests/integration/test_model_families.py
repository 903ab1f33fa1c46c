"""Your model as it is (issue 26): a lab's model from its own package by import path, built and measured by a real
worker; import paths a worker cannot offer (no such module, a factory that raises, a model that needs a download)
refused at submit with the worker's reason and nothing queued; Hugging Face classes by name with config fields,
inference and a training step, in a real child."""
import importlib.util
import signal
import textwrap

import pytest

from db import queue
from db.database import get_engine
from tests.conftest import records, run_cli, start_worker, wait_until

pytestmark = pytest.mark.subprocess

PACKAGE = '''
import torch


def make_model(width=16, depth=2):
    """A lab's MLP, built by its own factory"""
    layers = [torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU()) for _ in range(depth)]
    return torch.nn.Sequential(*layers), lambda batch_size: (torch.randn(batch_size, width),)


def broken(width=16):
    raise RuntimeError("the lab's factory is broken on purpose")


def from_the_hub():
    from huggingface_hub import hf_hub_download

    hf_hub_download("gpt2", "config.json")  # workers build offline: this needs a download
    return torch.nn.Linear(2, 2), lambda b: (torch.randn(b, 2),)
'''
GOOD, BROKEN, HUB, MISSING = ("labpkg.models:make_model", "labpkg.models:broken", "labpkg.models:from_the_hub",
                              "nosuchpkg.models:make_model")
HAS_HF = importlib.util.find_spec("transformers") is not None


def _sweeps(engine) -> int:
    from sqlalchemy import func, select

    from db.engine import reading
    from db.models import Job

    with reading(engine) as s:
        return s.scalar(select(func.count(Job.id)))


def test_models_by_import_path_and_by_hugging_face_name(db_url, tmp_path):
    pkg = tmp_path / "site" / "labpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(textwrap.dedent(PACKAGE))
    env = {"PYTHONPATH": str(tmp_path / "site"), "COMPILE_LAB_FAMILIES": "1"}
    engine = get_engine(db_url)
    imports = [a for name in (GOOD, BROKEN, HUB, MISSING) for a in ("--model-import", name)]
    proc = start_worker(db_url, tmp_path / "home", "--no-calibrate", *imports, env=env)
    try:
        def refused():
            return {n: why for w in queue.live_workers(engine)
                    for n, why in (w.capabilities.get("refused_models") or {}).items()}

        wait_until(lambda: GOOD in queue.published_catalog(engine) and len(refused()) >= 3, 180,
                   "the worker to list its imported models")
        info = queue.published_catalog(engine)[GOOD]
        assert [(p.name, p.default) for p in info.params] == [("width", 16), ("depth", 2)]
        assert info.description == "A lab's MLP, built by its own factory"
        # refused at submit, with the worker's reason, and nothing queued
        for name, words in ((MISSING, "no module named 'nosuchpkg'"), (BROKEN, "broken on purpose"),
                            (HUB, "needs a download")):
            done = run_cli("submit", "--db", db_url, "--model", name, "--batch", "2", "--device", "cpu", env=env)
            assert done.returncode == 2, done.stderr
            assert words in done.stderr.lower() and name in done.stderr, done.stderr
        assert _sweeps(engine) == 0
        jobs = []
        done = run_cli("submit", "--db", db_url, "--model", GOOD, "--batch", "4", "--arg", "depth=3", "--device",
                       "cpu", "--backend", "eager", "--reruns", "0", "--process-repeats", "1", env=env)
        assert done.returncode == 0, done.stderr
        jobs += [int(x) for x in done.stdout.split()]
        if HAS_HF:
            assert "hf:GPT2LMHeadModel" in queue.published_catalog(engine)
            tiny = ["--arg", "seq_len=16", "--arg", "n_layer=1", "--arg", "n_embd=32", "--arg", "n_head=2"]
            for task in ("inference", "training"):
                done = run_cli("submit", "--db", db_url, "--model", "hf:GPT2LMHeadModel", "--batch", "2", *tiny,
                               "--task", task, "--device", "cpu", "--backend", "eager", "--reruns", "0",
                               "--process-repeats", "1")
                assert done.returncode == 0, done.stderr
                jobs += [int(x) for x in done.stdout.split()]
            bad = run_cli("submit", "--db", db_url, "--model", "hf:GPT2LMHeadModel", "--batch", "2", "--arg",
                          "n_layer=<b>", "--device", "cpu")
            assert bad.returncode == 2 and "--arg n_layer" in bad.stderr, bad.stderr
        wait_until(lambda: all(r["status"] not in ("queued", "running") for r in records(db_url).values()), 400,
                   "the jobs to finish")
        got = records(db_url)
        for job_id in jobs:
            job = got[job_id]
            assert job["status"] == "succeeded", (job_id, job.get("error"))
            assert job["eager_ms"] > 0 and job["compiled_ms"] > 0
        assert got[jobs[0]]["model_args"] == {"depth": 3, "width": 16}
        if HAS_HF:  # the config fields stored as given, and the training step's loss the model's own (finite)
            assert got[jobs[2]]["model_args"] == {"n_embd": 32, "n_head": 2, "n_layer": 1, "seq_len": 16}
            assert got[jobs[2]]["task"] == "training"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
