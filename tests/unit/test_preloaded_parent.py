"""A preloaded parent whose forked children cannot use CUDA (on an H100, importing inductor's Triton code in it
made every forked job fail "Cannot re-initialize CUDA in forked subprocess"): the worker starts it again with
torch alone preloaded, and then falls back to fresh interpreters. There is no GPU here, so the parent's refusal
(runner.child.zygote's canary) is stood in for by spawners that refuse; the canary itself runs for real below."""
import os

import pytest

from runner.child import preload, zygote
from runner.worker import loop as worker
from runner.worker.spawn import SpawnError


class Refusing:
    method = "fork"

    def __init__(self, log, refuse: bool):
        self.log, self.refuse = log, refuse

    def prepare(self):
        self.log.append(("prepare", os.environ.get(preload.SWITCH, "1")))

    def wait_ready(self):
        if self.refuse:
            raise SpawnError("the preloaded parent exited (code 1)")

    def close(self):
        self.log.append(("close", os.environ.get(preload.SWITCH, "1")))


@pytest.fixture
def bare_worker(tmp_path, db_url, monkeypatch):
    monkeypatch.delenv(preload.SWITCH, raising=False)
    w = worker.Worker(worker.WorkerConfig(db_url=db_url, home=tmp_path, spawn="fresh", calibrate=False, threads=1))
    yield w
    os.environ.pop(preload.SWITCH, None)


@pytest.mark.parametrize("torch_alone_works", [True, False])
def test_a_parent_that_cannot_fork_cuda_children_is_restarted_with_torch_alone_then_fresh(bare_worker, monkeypatch,
                                                                                          torch_alone_works):
    log, made, real = [], [], worker.make_spawner

    def make(method, env, cwd):
        made.append((method, env.get(preload.SWITCH, "1"), preload.ENV in env))
        return Refusing(log, refuse=not torch_alone_works) if method == "fork" else real(method, env, cwd)

    monkeypatch.setattr(worker, "make_spawner", make)
    bare_worker.spawner = Refusing(log, refuse=True)
    bare_worker.first_call_imports_s = 1.5
    got = bare_worker._ready_spawner()
    # the second parent preloads torch alone, and its children add nothing back to their first call
    assert made[0] == ("fork", "0", False) and bare_worker.first_call_imports_s == 0.0
    if torch_alone_works:
        assert got.method == "fork" and len(made) == 1
    else:
        assert got.method == "fresh" and [m[0] for m in made] == ["fork", "fresh"]


def test_the_canary_forks_a_child_that_may_use_cuda_where_there_is_none():
    assert zygote._forks_can_use_cuda() is True  # CPU torch: nothing to initialise, the child exits 0
