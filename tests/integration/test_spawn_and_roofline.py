"""The preloaded parent (fork) and the plain interpreter (fresh) run the same job the same way; a
calibrated device puts results on its roofline."""
import json
import os
import signal
from pathlib import Path

import pytest

from runner.worker.spawn import ForkSpawner, FreshSpawner, SpawnError
from tests.conftest import FIXTURE_MODELS, ROOT, records, run_cli, submit, work


@pytest.mark.parametrize("method", ["fork", "fresh"])
def test_both_spawn_methods_measure_a_job(db_url, tmp_path, method):
    (job_id,) = submit(db_url, "--model", "tiny", "--batch", "4", "--device", "cpu", "--backend", "eager",
                       "--iters", "2")
    done = work(db_url, tmp_path / "home", "--drain", "--spawn", method)
    assert f"{method} children" in done.stderr
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded", rec["error"]
    assert rec["compiled_ms"] > 0 and rec["accuracy_ok"] is True


def _env():
    return dict(os.environ)  # the installed package (make setup) is importable from any folder


def test_forked_child_reports_its_signal_and_keeps_its_code(tmp_path):
    spawner = ForkSpawner(_env(), ROOT)
    try:
        child = spawner.start(["--probe", str(tmp_path / "p.json")], _env(), tmp_path, tmp_path / "log")
        os.killpg(child.pid, signal.SIGKILL) if _leads_group(child.pid) else os.kill(child.pid, signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
        assert child.wait(0) == -signal.SIGKILL  # a second wait answers at once, as Popen's does
        ok = spawner.start(["--probe", str(tmp_path / "q.json")], _env(), tmp_path, tmp_path / "log")
        assert ok.wait(60) == 0 and (tmp_path / "q.json").exists()  # the parent lives on
    finally:
        spawner.close()


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def test_death_of_the_preloaded_parent_is_reported(tmp_path):
    spawner = ForkSpawner(_env(), ROOT)
    try:
        spawner.prepare()
        spawner._proc.kill()
        spawner._proc.wait()
        # the next start finds it dead and starts a new one
        child = spawner.start(["--probe", str(tmp_path / "p.json")], _env(), tmp_path, tmp_path / "log")
        assert child.wait(60) == 0
        parent = spawner._proc
        child = spawner.start(["--probe", str(tmp_path / "r.json")], _env(), tmp_path, tmp_path / "log")
        parent.kill()  # mid-job: its children die with it (parent-death signal); we must hear of it
        with pytest.raises(SpawnError):
            while child.wait(5) is None:
                pass
    finally:
        spawner.close()


def test_fresh_spawner_matches_popen_semantics(tmp_path):
    child = FreshSpawner().start(["--probe", str(tmp_path / "p.json")], _env(), tmp_path, tmp_path / "log")
    assert child.wait(120) == 0 and Path(tmp_path / "p.json").exists()


def test_calibrated_cpu_places_results_on_its_roofline(db_url, tmp_path):
    cal = run_cli("calibrate", "--device", "cpu", "--db", db_url)
    assert cal.returncode == 0, cal.stderr
    assert "copy" in cal.stdout and "TFLOP/s" in cal.stdout
    (job_id,) = submit(db_url, "--model", "tiny", "--batch", "64", "--arg", "width=256", "--device", "cpu",
                       "--backend", "eager", "--iters", "3")
    work(db_url, tmp_path / "home", "--drain")
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded", rec["error"]
    # 64 x 256 x 256 matmul: 2*64*256*256 FLOPs plus the elementwise tanh the counter does not count
    assert rec["flops"] == 2 * 64 * 256 * 256
    assert rec["min_bytes"] > 0 and rec["achieved_gbps"] > 0 and rec["achieved_tflops"] > 0
    assert rec["roofline_bound"] in ("memory", "compute")
    assert 0 < rec["roofline_pct"] < 1000


def test_inline_runs_the_job_in_the_workers_own_process(db_url, tmp_path, monkeypatch):
    """`--spawn inline` (debugging under pdb): the child's work runs in the worker's process, the result is
    stored as from a child, and the worker lives on (kill_group must not kill its own group)."""
    from db import queue
    from db.database import get_engine
    from runner.worker import loop as worker

    models = tmp_path / "models"
    models.mkdir()
    (models / "whereami.py").write_text(
        "import os\nimport torch\n\nDESCRIPTION = 'records its pid'\nPARAMS = {}\n\n\n"
        "def build():\n"
        "    open(os.environ['WHEREAMI_OUT'], 'w').write(str(os.getpid()))\n"
        "    return torch.nn.Linear(4, 4)\n\n\n"
        "def example_inputs(batch_size):\n"
        "    return (torch.randn(batch_size, 4),)\n")
    out = tmp_path / "pid"
    monkeypatch.setenv("WHEREAMI_OUT", str(out))
    (job_id,) = submit(db_url, "--model", "whereami", "--batch", "2", "--device", "cpu", "--backend", "eager",
                       "--iters", "2", "--models-dir", str(models))
    w = worker.Worker(worker.WorkerConfig(db_url=db_url, home=tmp_path / "home", spawn="inline", calibrate=False,
                                          models_dirs=[str(models)]))
    w.capabilities = {"devices": ["cpu"]}
    engine = get_engine(db_url)
    w.run_claim(queue.claim_next(engine, w.id, ["cpu"], ["whereami"], 60))
    assert int(out.read_text()) == os.getpid()
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded", rec["error"]
    assert rec["compiled_ms"] > 0


def test_a_forked_child_says_its_result_is_ready_before_its_exit(tmp_path):
    """The worker stores a forked child's result while the child exits (an H100 child's CUDA teardown took
    0.12-0.2 s of every job): the preloaded parent says "result" before "exit", the result file is complete by
    then, and an exit nobody waits for leaves nothing behind in the spawner."""
    import json

    from lab.spec import ExperimentSpec

    spec = ExperimentSpec.from_dict({"model": "tiny", "batch_size": 2, "device": "cpu", "backend": "eager",
                                     "iters": 2, "model_args": {"width": 8}})
    (tmp_path / "spec.json").write_text(spec.to_json())
    argv = ["--spec", str(tmp_path / "spec.json"), "--result", str(tmp_path / "result.json"),
            "--progress", str(tmp_path / "progress.jsonl"), "--models-dir", str(FIXTURE_MODELS)]
    spawner = ForkSpawner(_env(), ROOT)
    try:
        child = spawner.start(argv, _env(), tmp_path, tmp_path / "log")
        while (rc := child.wait(120)) is None and not child.result_ready:
            pass
        assert rc is None and child.result_ready  # heard before the exit, which the parent reports after it
        assert json.loads((tmp_path / "result.json").read_text())["status"] == "succeeded"
        assert child.wait(0) is None  # and the wait answers at once from then on
        child.forget()
        while child.pid in spawner._forgotten:  # its exit still comes, and is dropped
            msg = spawner._read(timeout=60)
            assert msg is not None
            spawner._take(msg)
        assert child.pid not in spawner._exits and child.pid not in spawner._results
    finally:
        spawner.close()


def test_the_preloaded_parent_imports_the_offered_families_for_its_children(tmp_path):
    """A child forked for a job of an offered family (hf:) finds its common imports made (model build is lab
    overhead: paid once per worker); a zoo model's child, and any where the worker offers none, find none: a fresh
    script of that model imports no transformers, and preloading it slowed that model's first compile."""
    from runner.child import preload
    from runner.worker.spawn import make_spawner

    for families, family, expected in (("hf", "hf", ["transformers"]), ("hf", "", []), ("", "hf", [])):
        spawner = make_spawner("fork", {**_env(), preload.FAMILIES_ENV: families}, ROOT)
        try:
            out = tmp_path / f"probe-{families or 'none'}-{family or 'zoo'}.json"
            child = spawner.start(["--probe", str(out)], _env(), tmp_path, tmp_path / "log", family=family)
            assert child.wait(120) == 0
            assert json.loads(out.read_text())["preloaded"] == expected
        finally:
            spawner.close()


@pytest.mark.parametrize(("model", "family"), [("hf:GPT2LMHeadModel", "hf"), ("timm:resnet50", "timm"),
                                               ("mypkg.models:Net", ""), ("simplenet", "")])
def test_a_jobs_preloaded_parent_is_its_model_familys(model, family):
    from runner.worker.spawn import family_of

    assert family_of(model) == family
