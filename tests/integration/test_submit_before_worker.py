"""The README's own order: `runner submit`, then `runner work --drain`. A Hugging Face model no live worker lists yet
is checked where the user is (transformers installed here: the class exists, its sizes filled in) and runs when a
worker comes; a class transformers does not have is refused at once; an import path this machine cannot import is
queued, saying what it waits for."""
import importlib.util

import pytest

from db import queue
from db.database import get_engine
from tests.conftest import records, run_cli, work

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]
TINY_GPT2 = ["--arg", "seq_len=16", "--arg", "n_layer=1", "--arg", "n_embd=32", "--arg", "n_head=2"]


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed")
def test_a_hugging_face_model_submitted_before_any_worker_runs_when_one_drains(db_url, tmp_path):
    assert queue.live_workers(get_engine(db_url)) == []
    done = run_cli("submit", "--db", db_url, "--model", "hf:GPT2LMHeadModel", "--batch", "2", *TINY_GPT2,
                   "--device", "cpu", "--backend", "eager", "--reruns", "0", "--process-repeats", "1")
    assert done.returncode == 0, done.stderr
    (job,) = [int(x) for x in done.stdout.split()]
    assert records(db_url)[job]["model_args"] == {"n_embd": 32, "n_head": 2, "n_layer": 1, "seq_len": 16}
    wrong = run_cli("submit", "--db", db_url, "--model", "hf:NoSuchModelForCausalLM", "--batch", "2",
                    "--device", "cpu")
    assert wrong.returncode == 2 and "has no model named 'NoSuchModelForCausalLM'" in wrong.stderr, wrong.stderr
    work(db_url, tmp_path / "home", "--drain", "--no-calibrate", env={"COMPILE_LAB_FAMILIES": "1"})
    r = records(db_url)[job]
    assert r["status"] == "succeeded", r["error"]
    assert r["speedup"] > 0 and r["accuracy_ok"] is True


def test_an_import_path_this_machine_cannot_check_is_queued_saying_what_it_waits_for(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "labpkg_absent_here.models:make_model", "--batch", "2",
                   "--device", "cpu", "--reruns", "0", "--process-repeats", "1")
    assert done.returncode == 0, done.stderr
    assert ("no live worker offers labpkg_absent_here.models:make_model yet and this machine cannot check it: its "
            "jobs wait for a worker started with --model-import labpkg_absent_here.models:make_model") in done.stderr
    (job,) = [int(x) for x in done.stdout.split()]
    assert records(db_url)[job]["status"] == "queued"
