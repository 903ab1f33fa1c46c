"""Bad input at the CLI: exit 2, one clear message naming the flag, nothing stored. And `runner artifact`."""
import pytest
from sqlalchemy import func, select

from db import artifacts, queue
from db.database import get_engine
from db.engine import reading
from db.models import Job, JobStatus, Sweep
from lab import artifact_files
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.conftest import run_cli


@pytest.mark.parametrize("args, message", [
    (["--model", "nope", "--batch", "8"], "--model: unknown model 'nope'"),
    (["--model", "simplenet", "--batch", "0"], "--batch: must be a positive integer"),
    (["--model", "simplenet", "--batch", "-2"], "--batch: must be a positive integer"),
    (["--model", "simplenet", "--batch", "8", "--batch", "x"], "--batch: expected an integer"),
    (["--model", "simplenet", "--batch", "8", "--mode", "fast"], "--mode: unknown value 'fast'"),
    (["--model", "simplenet", "--batch", "8", "--dynamic", "maybe"], "--dynamic: unknown value 'maybe'"),
    (["--model", "simplenet", "--batch", "8", "--fullgraph", "yes"], "--fullgraph: expected true or false"),
    (["--model", "simplenet", "--batch", "8", "--device", "gpu"], "--device: unknown value 'gpu'"),
    (["--model", "simplenet", "--batch", "8", "--trace", "sometimes"], "--trace: expected true or false"),
    (["--model", "simplenet", "--batch", "8", "--timeout", "-5"], "--timeout: must be between"),
    (["--model", "simplenet", "--batch", "8", "--schedule", "8,x"], "--schedule: expected an integer"),
    (["--model", "simplenet", "--batch", "8", "--schedule", "8,,16"], "--schedule: an empty entry in '8,,16'"),
    (["--model", "simplenet", "--batch", "8,,16"], "--batch: an empty entry in '8,,16'"),
    (["--model", "localopt", "--batch", "2", "--arg", "scope=layers"], "--arg scope: 'layers' is not one of"),
    (["--model", "localopt", "--batch", "2", "--arg", "depth"], "--arg 'depth': expected NAME=VALUE"),
    (["--model", "sincos", "--batch", "2", "--task", "training"], "--task: model 'sincos' supports inference only"),
    (["--model", "simplenet", "--batch", "8", "--backend", "aot_eager", "--mode", "max-autotune"],
     "--mode: no combination left"),
])
def test_bad_submit_exits_2_and_stores_nothing(db_url, args, message):
    done = run_cli("submit", "--db", db_url, *args)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""
    with reading(get_engine(db_url)) as s:
        assert s.scalar(select(func.count(Job.id))) == 0 and s.scalar(select(func.count(Sweep.id))) == 0


def test_unknown_flag_exits_2(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "8", "--mdoe", "default")
    assert done.returncode == 2 and "--mdoe" in done.stderr


def test_batch_sizes_may_be_one_list(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "8,16", "--batch", "32", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    with reading(get_engine(db_url)) as s:
        assert s.scalar(select(func.count(Job.id))) == 3


def test_good_submit_prints_job_ids(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "8", "--batch", "16",
                   "--dynamic", "true", "--dynamic", "false", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    assert [int(x) for x in done.stdout.split()] == [1, 2, 3, 4]


def test_cancel_of_a_missing_job_exits_2(db_url):
    done = run_cli("cancel", "42", "--db", db_url)
    assert done.returncode == 2 and "job 42: no such job" in done.stderr


def test_cli_refuses_bad_gpu_lists_with_exit_2(db_url):
    done = run_cli("work", "--db", db_url, "--gpus", "0,x")
    assert done.returncode == 2 and done.stderr.strip() == (
        "error: --gpus: 'x' is not a GPU index or UUID; use all or a list like 0,1")
    done = run_cli("work", "--db", db_url, "--lease", "-5")
    assert done.returncode == 2 and "--lease must be between 1 and 86,400 seconds, got -5" in done.stderr
    done = run_cli("work", "--db", db_url, "--gpu", "0", "--gpus", "0,1")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


def test_cli_writes_one_artifact_out(db_url, tmp_path):
    engine = get_engine(db_url)
    artifact_files.write_dir(tmp_path / "a", {"output_code": "# generated\ndef call(args): pass\n"})
    queue.submit(engine, SweepRequest(process_repeats=1, model="tiny", batch_sizes=[2], device="cpu"),
                 {"tiny": ModelInfo("tiny", "d")})
    claim = queue.claim_next(engine, "w", ["cpu"], ["tiny"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={"speedup": 2.0},
                 artifacts=artifact_files.read_dir(tmp_path / "a"))
    out = tmp_path / "code.py"
    done = run_cli("artifact", str(claim.job_id), "output_code", "-o", str(out), "--db", db_url)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "# generated\ndef call(args): pass\n"
    missing = run_cli("artifact", str(claim.job_id), "trace", "--db", db_url)
    assert missing.returncode == 2 and "has no artifact 'trace' (it has: output_code)" in missing.stderr


def test_runner_artifact_refuses_a_bomb_without_holding_it(any_db_url, tmp_path):
    """1 MB stored, 1 GiB of text unpacked: `runner artifact` exits 2 naming the artifact and the limit, and its
    process never grows near the gibibyte (its own peak resident size, bench.untrusted.measured)."""
    from bench.bombs import gzip_bomb
    from bench.untrusted import measured

    engine = get_engine(any_db_url)
    queue.submit(engine, SweepRequest(model="tiny", batch_sizes=[2], device="cpu"), {"tiny": ModelInfo("tiny", "d")})
    claim = queue.claim_next(engine, "w", ["cpu"], ["tiny"], 60)
    bomb = {"name": "output_code", "bytes": 10, "truncated": False, "data": gzip_bomb(1 << 30)}
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={"speedup": 2.0}, artifacts=[bomb])
    code, stderr, peak_mib = measured(["-m", "runner", "artifact", str(claim.job_id), "output_code",
                                       "-o", str(tmp_path / "code.py"), "--db", any_db_url])
    assert code == 2, stderr[-2000:]
    assert stderr.strip() == (f"error: job {claim.job_id}'s artifact 'output_code' unpacks to more than "
                              f"{artifacts.MAX_UNPACKED_BYTES:,} bytes, the limit: refused")
    assert 0 < peak_mib < 300, peak_mib  # the interpreter and SQLAlchemy are ~100 MiB
    assert not (tmp_path / "code.py").exists()


def test_a_worker_claims_jobs_pinned_to_its_torch_and_never_another(db_url, tmp_path):
    """A real worker (this venv's torch) runs the job pinned to its version; the one pinned to 2.99 stays queued,
    and `status` (text and --json) says which torch it waits for while the worker is live."""
    import json
    import signal

    import torch

    from tests.conftest import records, start_worker, submit, wait_until

    mine = ".".join(torch.__version__.split("+")[0].split(".")[:2])  # "2.13"
    ids = submit(db_url, "--model", "tiny", "--batch", "4", "--backend", "eager", "--device", "cpu", "--iters", "2",
                 "--trace", "false", "--torch", "2.99", "--torch", mine)
    proc = start_worker(db_url, tmp_path / "home")
    try:
        wait_until(lambda: records(db_url)[ids[1]]["status"] not in ("queued", "running"), 300, "the pinned job")
        recs = records(db_url)
        assert recs[ids[1]]["status"] == "succeeded", recs[ids[1]]["error"]
        assert recs[ids[1]]["torch_version"] == torch.__version__ and recs[ids[0]]["status"] == "queued"
        status = json.loads(run_cli("status", "--db", db_url, "--json").stdout)
        job = next(j for j in status["jobs"] if j["job_id"] == ids[0])
        assert job["waiting_reason"] == f"no live worker has torch 2.99 (live: {torch.__version__})"
        assert [w["torch_version"] for w in status["workers"]] == [torch.__version__]
        text = run_cli("status", "--db", db_url).stdout
        assert f"torch 2.99  (no live worker has torch 2.99 (live: {torch.__version__}))" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert records(db_url)[ids[0]]["status"] == "queued"
