"""The next job's child forked ahead of its job (runner.child.zygote, runner.child.prewarm), with a real preloaded
parent and real jobs on the CPU. On a GPU the warmed child makes its CUDA context and cuBLAS handle before the job
comes; here there is none, so these tests hold the hand-over itself: which job a warmed child may run, that one it
may not run is killed and never heard of, that one left unused ends by itself, and that a CUDA job none was warmed
for (a worker's first) runs in a child warmed for it, made as every other's."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.spec import ExperimentSpec
from runner.worker.spawn import ForkSpawner, FreshSpawner
from tests.conftest import FIXTURE_MODELS, ROOT, wait_until

pytestmark = pytest.mark.subprocess


def _job(tmp_path: Path, name: str) -> list[str]:
    folder = tmp_path / name
    folder.mkdir()
    spec = ExperimentSpec.from_dict({"model": "tiny", "batch_size": 2, "device": "cpu", "backend": "eager",
                                     "iters": 2, "model_args": {"width": 8}})
    (folder / "spec.json").write_text(spec.to_json())
    return ["--spec", str(folder / "spec.json"), "--result", str(folder / "result.json"),
            "--progress", str(folder / "progress.jsonl"), "--models-dir", str(FIXTURE_MODELS)]


def _run(spawner: ForkSpawner, tmp_path: Path, name: str, env: dict, warm_ok: bool) -> dict:
    """One job through the spawner to its result; the result's detail."""
    child = spawner.start(_job(tmp_path, name), env, tmp_path / name, tmp_path / name / "log", warm_ok=warm_ok)
    while child.wait(120) is None and not child.result_ready:
        pass
    result = json.loads((tmp_path / name / "result.json").read_text())
    assert result["status"] == "succeeded", result["error"]
    return result["result"]["detail"]


def _children(pid: int) -> set[int]:
    return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


@pytest.fixture
def spawner(monkeypatch):
    monkeypatch.setenv("COMPILE_LAB_WARM_KEEP_S", "600")  # a warmed child is killed by what the test does, not by age
    env = dict(os.environ)
    s = ForkSpawner(env, ROOT)
    s.prepare()
    s.wait_ready()
    yield s
    s.close()


def test_a_child_warmed_ahead_runs_the_next_job_and_says_so(spawner, tmp_path):
    env = dict(os.environ)
    cold = _run(spawner, tmp_path, "cold", env, warm_ok=True)
    # nothing was warmed ahead: a child is warmed for it then, the same way (here no GPU: nothing made)
    assert cold["prewarmed"]["ahead"] is False and cold["prewarmed"]["cuda"] is False
    assert _run(spawner, tmp_path, "cpu", env, warm_ok=False)["prewarmed"] is None  # a CPU job's: forked for it
    # either way its memory was made its own before the job (runner.child.prewarm.own_heap): torch's, copied
    assert cold["own_heap"]["how"] in ("pages", "objects") and cold["own_heap"]["s"] > 0
    spawner.prewarm(env)
    # its own compile cache places may differ (the job's): they are read after the job starts
    detail = _run(spawner, tmp_path, "warm", {**env, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "c")}, warm_ok=True)
    assert detail["prewarmed"] is not None and detail["prewarmed"]["cuda"] is False  # no GPU here: nothing made
    assert detail["prewarmed"]["waited_s"] >= 0 and detail["prewarmed"]["ahead"] is True
    assert detail["own_heap"]["how"] == cold["own_heap"]["how"] and detail["own_heap"]["s"] > 0


@pytest.mark.parametrize("why", ["not warm_ok", "device env differs"])
def test_a_warmed_child_is_not_given_a_job_it_may_not_run_and_is_never_heard_of(spawner, tmp_path, why):
    env = dict(os.environ)
    spawner.prewarm(env)
    wait_until(lambda: len(_children(spawner._proc.pid)) == 1, 60, "the warmed child")
    warmed = _children(spawner._proc.pid)
    job_env = env if why == "not warm_ok" else {**env, "CUDA_VISIBLE_DEVICES": "7"}  # read when CUDA starts
    child = spawner.start(_job(tmp_path, "job"), job_env, tmp_path / "job", tmp_path / "job" / "log",
                          warm_ok=why != "not warm_ok")
    assert child.pid not in warmed and not (_children(spawner._proc.pid) & warmed)  # gone before the job's child
    while child.wait(120) is None and not child.result_ready:
        pass
    said = json.loads((tmp_path / "job" / "result.json").read_text())["result"]["detail"]["prewarmed"]
    # a CPU job's child is forked for it; a CUDA job's of another device is warmed for it, in its own environment
    assert said is None if why == "not warm_ok" else said["ahead"] is False
    probe = spawner.start(["--probe", str(tmp_path / "p.json")], env, tmp_path, tmp_path / "plog")
    assert probe.wait(120) == 0
    assert not warmed & set(spawner._exits)  # its exit was not said: the worker never knew its pid


def test_a_warmed_child_is_dropped_when_another_parent_runs_the_next_job(spawner, tmp_path):
    env = dict(os.environ)
    spawner.prewarm(env)
    wait_until(lambda: len(_children(spawner._proc.pid)) == 1, 60, "the warmed child")
    warmed = _children(spawner._proc.pid)
    spawner.drop_warm()
    assert not _children(spawner._proc.pid)  # gone when the parent answers: no context left beside the next job
    assert _run(spawner, tmp_path, "next", env, warm_ok=True)["prewarmed"]["ahead"] is False  # warmed for it
    assert not warmed & set(spawner._exits)


def test_a_warmed_child_left_unused_ends_by_itself(tmp_path):
    """The keep (3 s) also bounds the wait for the child then warmed for the job: at 0.5 s, a box busy with the other
    test process sometimes took longer to warm it, and the job got a plain child (prewarmed None)."""
    env = {**os.environ, "COMPILE_LAB_WARM_KEEP_S": "3"}
    spawner = ForkSpawner(env, ROOT)
    try:
        spawner.prepare()
        spawner.wait_ready()
        spawner.prewarm(env)
        wait_until(lambda: len(_children(spawner._proc.pid)) == 1, 60, "the warmed child")
        wait_until(lambda: not _children(spawner._proc.pid), 60, "the unused warmed child ended")
        assert _run(spawner, tmp_path, "later", env, warm_ok=True)["prewarmed"]["ahead"] is False
    finally:
        spawner.close()


@pytest.mark.parametrize(("cuda", "job_on_gpu", "stopping", "asked"),
                         [(True, True, False, True), (False, False, False, False), (True, False, False, False),
                          (True, True, True, False)])
def test_the_worker_asks_for_a_warmed_child_once_a_cuda_jobs_child_is_done(tmp_path, cuda, job_on_gpu, stopping,
                                                                           asked):
    """runner.worker.attempt.Attempt.watch: on a CUDA worker that is not stopping, after a CUDA job the next child is
    asked for as the last one's work ends; never after a CPU job (CPU sweeps: a context made and killed per job
    would burn the cores a neighbour measures on) nor on a CPU-only worker."""
    from db.queue import Claim
    from runner.worker.attempt import Attempt, JobPaths, Lent

    asked_for = []
    stop = threading.Event()
    if stopping:
        stop.set()
    spawner = SimpleNamespace(prewarm=lambda env, family: asked_for.append((env, family)))
    lent = Lent(env={"A": "1"}, spawner=spawner, home=tmp_path, models_dirs=[],
                probe={"cuda": cuda}, signer=None, worker_id="w", hostname="h", cpus=[0], threads=1, beat_s=1.0,
                grace_s=1.0, stop=stop, hurry=threading.Event(), strikes=None)
    spec = ExperimentSpec(model="tiny", batch_size=2, device="cuda" if job_on_gpu else "cpu")
    claim = Claim(job_id=1, token="t", attempt=1, spec=spec.to_dict(), follow_up=None)
    job = Attempt(claim, spec, JobPaths.under(tmp_path, claim), SimpleNamespace(engine=None), lent,
                  SimpleNamespace(marks={}))
    assert job.watch(SimpleNamespace(wait=lambda timeout: 0), None) == 0
    assert asked_for == ([({"A": "1"}, "")] if asked else [])  # a zoo model's: the plain preloaded parent


def test_the_next_child_is_asked_for_when_the_job_says_it_is_done_with_the_gpu_and_only_then(tmp_path):
    """A forked child says it is done with the GPU before its artifacts and record (runner.child.process.measured):
    the next child is asked for as that is heard, while the job goes on, and not asked for again at its end."""
    from db.queue import Claim
    from runner.worker.attempt import Attempt, JobPaths, Lent

    asked_for, registered, seen = [], [], []
    spawner = SimpleNamespace(prewarm=lambda env, family: asked_for.append(env))
    lent = Lent(env={"A": "1"}, spawner=spawner, home=tmp_path, models_dirs=[], probe={"cuda": True}, signer=None,
                worker_id="w", hostname="h", cpus=[0], threads=1, beat_s=1.0, grace_s=1.0, stop=threading.Event(),
                hurry=threading.Event(), strikes=None)
    spec = ExperimentSpec(model="tiny", batch_size=2, device="cuda")
    claim = Claim(job_id=1, token="t", attempt=1, spec=spec.to_dict(), follow_up=None)
    job = Attempt(claim, spec, JobPaths.under(tmp_path, claim), SimpleNamespace(engine=None), lent,
                  SimpleNamespace(marks={}))

    def wait(timeout):  # the child says "measured" while the worker waits on it, then exits
        registered[0]()
        seen.append(len(asked_for))
        return 0

    assert job.watch(SimpleNamespace(wait=wait, when_measured=registered.append), None) == 0
    assert seen == [1] and asked_for == [{"A": "1"}]


def test_a_forked_child_says_it_is_done_with_the_gpu_after_its_clocks_and_before_its_result(spawner, tmp_path):
    from runner.worker.lease import read_progress

    folder = tmp_path / "job"
    child = spawner.start(_job(tmp_path, "job"), dict(os.environ), folder, folder / "log")
    heard = []
    child.when_measured(lambda: heard.append((child.result_ready, (folder / "result.json").exists(),
                                              read_progress(folder / "progress.jsonl")[0])))
    while child.wait(120) is None and not child.result_ready:
        pass
    assert json.loads((folder / "result.json").read_text())["status"] == "succeeded"
    # once: its clocks done, its result not yet written; heard a beat after it was said, so the child may have begun
    # its kernel counts by then (which time nothing: test_follow_up_protocol holds the order within the child)
    assert len(heard) == 1 and heard[0][:2] == (False, False)
    assert heard[0][2] in ("diagnosis clocks", "counting kernels")


def test_a_workers_start_waits_for_its_first_child_warm_and_the_first_job_finds_it(spawner, tmp_path):
    """warm_first (a CUDA worker's start, runner.worker.loop._get_ready): the first job's child is warmed before the
    worker's start ends, so that job runs in a child warmed ahead as every later one does (`ahead`: true), not in one
    warmed for it then on its own time; one killed before it is warm is said too, never waited for."""
    env = dict(os.environ)
    assert spawner.warm_first(env) is True
    (warmed,) = _children(spawner._proc.pid)  # said warm: its child is up now, before any job came
    child = spawner.start(_job(tmp_path, "first"), env, tmp_path / "first", tmp_path / "first" / "log", warm_ok=True)
    assert child.pid == warmed
    while child.wait(120) is None and not child.result_ready:
        pass
    said = json.loads((tmp_path / "first" / "result.json").read_text())["result"]["detail"]["prewarmed"]
    assert said["ahead"] is True and said["waited_s"] >= 0
    assert FreshSpawner().warm_first(env) is False  # fresh interpreters: nothing to warm ahead


def test_a_first_child_that_dies_before_it_is_warm_is_said_and_not_waited_for(tmp_path):
    """A first child that dies before it is warm (here: a request with no environment, which it cannot take) is said
    at once ({"warmed": false}, what warm_first answers), not after warm_first's timeout."""
    env = {**os.environ, "COMPILE_LAB_WARM_KEEP_S": "600"}
    spawner = ForkSpawner(env, ROOT)
    try:
        spawner.prepare()
        spawner.wait_ready()
        spawner._say({"warm": True, "tell": True, "env": None})  # no environment: the child fails before its word
        msg = spawner._read(timeout=60)
        assert msg == {"warmed": False}
    finally:
        spawner.close()
