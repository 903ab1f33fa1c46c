"""The accuracy check in a real child: a small Hugging Face model's training step compiled by inductor passes
(its loss and every gradient against a float64 run of the same step), and a deliberately wrong compile fails, with
what was compared and by how much on the record."""
import importlib.util
import signal

import pytest

from db import queue
from db.database import get_engine
from tests.conftest import records, result_detail, start_worker, submit, wait_until, work

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]
TINY_BERT = ["--arg", "seq_len=16", "--arg", "num_hidden_layers=1", "--arg", "hidden_size=32", "--arg",
             "num_attention_heads=2", "--arg", "intermediate_size=64", "--arg", "vocab_size=128"]


def test_a_wrong_compile_fails_the_check_and_says_which_tensor(db_url, tmp_path):
    (job,) = submit(db_url, "--model", "perturbed", "--batch", "8", "--device", "cpu", "--backend", "eager")
    work(db_url, tmp_path / "home", "--drain", "--no-calibrate")
    r = records(db_url)[job]
    assert r["status"] == "succeeded", r["error"]
    check = r["accuracy_check"]
    assert r["accuracy_ok"] is False and check["failing"] == ["output 0"], check
    assert check["reference"] == "float64" and check["compared"] == "1 output"
    worst = check["worst"]
    assert worst["compiled_rmse_vs_float64"] > 100 * worst["eager_rmse_vs_float64"]


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed")
def test_a_hugging_face_training_step_compiled_by_inductor_passes(db_url, tmp_path):
    engine = get_engine(db_url)
    proc = start_worker(db_url, tmp_path / "home", "--no-calibrate",
                        env={"COMPILE_LAB_FAMILIES": "1"})
    try:
        wait_until(lambda: "hf:BertForMaskedLM" in queue.published_catalog(engine), 300,
                   "the worker to offer the hf: family")
        (job,) = submit(db_url, "--model", "hf:BertForMaskedLM", "--batch", "2", *TINY_BERT, "--task", "training",
                        "--device", "cpu", "--iters", "3")
        wait_until(lambda: records(db_url)[job]["status"] not in ("queued", "running"), 600, "the job to finish")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    r = records(db_url)[job]
    assert r["status"] == "succeeded", r["error"]
    check = r["accuracy_check"]
    assert r["accuracy_ok"] is True, check
    assert check["reference"] == "float64" and check["failing"] == []
    assert check["compared"].startswith("the loss and ") and check["tensors"] > 10  # every parameter's gradient
    # its first call's parts: the backward, compiled lazily in a row of its own, takes nothing off the forward's AOT
    # autograd, and torch's running trace total (the backward's row holds the forward's too) is counted once
    parts, said = r["compile_breakdown_s"], result_detail(db_url, job)["first_call_parts"]
    assert parts["aot autograd"] > 0 and sum(parts.values()) == pytest.approx(r["compiled_first_call_s"], abs=1e-6)
    assert sum(said["trace_capture_by_part_s"].values()) == pytest.approx(said["trace_capture_s"], rel=0.2, abs=2e-3)
