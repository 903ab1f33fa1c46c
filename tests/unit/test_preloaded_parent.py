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


def test_a_family_parent_that_cannot_fork_sends_its_jobs_to_the_plain_parent():
    """runner.worker.spawn.FamilySpawner: the hf: parent failed (its imports touched CUDA, say): the job runs in a
    child of the plain parent, and so do the family's later jobs; the plain parent's own failure is the worker's."""
    import pytest

    from runner.child.preload import FAMILIES_ENV
    from runner.worker.spawn import FamilySpawner, SpawnError

    started = []

    class Parent:
        def __init__(self, name, fails):
            self.name, self.fails, self.closed = name, fails, False

        def start(self, argv, env, cwd, log, warm_ok=False):
            if self.fails:
                raise SpawnError(f"{self.name} exited")
            started.append(self.name)
            return self.name

        def close(self):
            self.closed = True

        def drop_warm(self):
            dropped.append(self.name)

    dropped = []
    spawner = FamilySpawner({FAMILIES_ENV: "hf,timm"}, None)
    hf = Parent("hf", fails=True)
    spawner.parents.update({"": Parent("plain", fails=False), "hf": hf})
    assert spawner.start([], {}, None, None, family="hf") == "plain" and hf.closed
    assert spawner.families == ["timm"] and "hf" not in spawner.parents
    assert spawner.start([], {}, None, None, family="hf") == "plain"  # from then on, without trying again
    spawner.parents[""] = Parent("plain", fails=True)
    with pytest.raises(SpawnError):
        spawner.start([], {}, None, None, family="")
    assert started == ["plain", "plain"]
    spawner.parents.update({"": Parent("plain", fails=False), "timm": Parent("timm", fails=False)})
    dropped.clear()
    assert spawner.start([], {}, None, None, family="timm") == "timm"
    assert dropped == ["plain"]  # its child warmed ahead would sit on the GPU beside the timm job's
