"""runner.child.compile_workers: inductor's compile-worker pool, started as on a GPU (torch starts it at the first compile
there; on this CPU the test starts it itself), is gone before the rounds, sidecar and workers, without torch logging
a dead sidecar; compiling still works after."""
import logging
import os
import time

import pytest
import torch

from runner.child import compile_workers
from runner.child.disturbance import process_tree
from tests.conftest import pid_alive


@pytest.mark.subprocess  # starts torch's compile-worker sidecar and its workers (fresh interpreters)
@pytest.mark.parametrize("ready", [False, True], ids=["still starting", "workers up"])
def test_the_compile_worker_pool_is_ended_before_the_rounds_and_compiling_goes_on(ready, caplog):
    import torch._inductor.async_compile as async_compile

    if async_compile.get_compile_threads() <= 1:
        pytest.skip("one compile thread here: torch starts no pool")
    async_compile.AsyncCompile.process_pool()
    async_compile.AsyncCompile.wakeup()
    if ready:  # the sidecar has imported torch and forked its workers
        async_compile.AsyncCompile.wait_pool_ready()
        deadline = time.monotonic() + 60
        while len(process_tree(os.getpid())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    pool = process_tree(os.getpid())
    assert len(pool) >= (2 if ready else 1), pool
    with caplog.at_level(logging.WARNING, logger="torch._inductor"):
        stopped = compile_workers.stop()
    assert stopped["processes"] == len(pool) and stopped["error"] is None, (stopped, pool)
    assert not [pid for pid in pool if pid_alive(pid)]  # every one gone, wherever it was reparented
    assert stopped["stop_s"] < 1.0  # not torch's graceful wait for a sidecar still importing torch
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text  # no "sidecar died"
    assert compile_workers.stop()["processes"] == 0  # nothing left to stop
    fn = torch.compile(lambda x: x * 2 + 1)  # exact in float: sin(x) + 1 near 0 differs by an ulp between kernels
    x = torch.randn(8)
    assert torch.equal(fn(x), x * 2 + 1)


def test_torchs_shutdown_runs_whatever_a_kill_met(monkeypatch):
    """A pool of another torch's shape (no lock, or one whose kill fails) is left to torch's shutdown, which always
    runs: a pool left in torch's caches would serve the next compile, dead. What failed is recorded."""
    import types

    calls = []

    class Odd:  # a pool whose sidecar cannot be read: its kill raises
        @property
        def process(self):
            raise RuntimeError("no sidecar here")

    fake = types.SimpleNamespace(_pool_set=[Odd(), object()], shutdown_compile_workers=lambda: calls.append("shutdown"))
    monkeypatch.setitem(__import__("sys").modules, "torch._inductor.async_compile", fake)
    stopped = compile_workers.stop()
    assert calls == ["shutdown"] and stopped["processes"] == 0
    assert stopped["error"] == "RuntimeError: no sidecar here"


@pytest.mark.subprocess  # starts torch's compile-worker sidecar twice
def test_a_pool_started_again_after_the_first_stop_is_stopped_and_counted_with_it():
    """The child stops the pools before the warm-up and after it: a graph first compiled in the warm-up (convnetmix's
    heads) starts a new pool, which must not run beside the rounds. The second stop adds to the first's record."""
    import torch._inductor.async_compile as async_compile

    if async_compile.get_compile_threads() <= 1:
        pytest.skip("one compile thread here: torch starts no pool")
    counts = []
    stopped = None
    for _ in range(2):
        async_compile.AsyncCompile.process_pool()  # the cache cleared by the first stop: a new pool
        async_compile.AsyncCompile.wakeup()
        pool = process_tree(os.getpid())
        assert pool
        counts.append(len(pool))
        stopped = compile_workers.stop(stopped)
        assert not [pid for pid in pool if pid_alive(pid)]
    assert stopped["processes"] == sum(counts) and stopped["error"] is None, (stopped, counts)
    assert compile_workers.stop(stopped)["processes"] == sum(counts)  # no pool: nothing added


@pytest.mark.subprocess  # starts torch's compile-worker sidecar after the block, to show the setting came back
def test_no_pool_starts_during_the_rounds_and_the_setting_comes_back_after():
    """A graph first compiled during the rounds compiles in this process: every way torch starts a pool (warm_pool,
    wakeup, a compile's use_process_pool) finds one compile thread. After them, the user's setting is back: a shape
    schedule or traffic replay compiles with its pool, as the user's program does."""
    import torch._inductor.async_compile as async_compile
    import torch._inductor.config as inductor_config

    if async_compile.get_compile_threads() <= 1:
        pytest.skip("one compile thread here: torch starts no pool")
    before = inductor_config.compile_threads
    compile_workers.stop()
    with compile_workers.none_started() as held:
        async_compile.AsyncCompile.warm_pool()
        async_compile.AsyncCompile.wakeup()
        assert async_compile.get_compile_threads() == 1
        fn = torch.compile(lambda x: x * 3 - 1)
        x = torch.randn(8)
        assert torch.equal(fn(x), x * 3 - 1)
        assert not process_tree(os.getpid())
    assert held == {"pool_blocked_during_rounds": True} and inductor_config.compile_threads == before
    async_compile.AsyncCompile.warm_pool()
    async_compile.AsyncCompile.wakeup()
    assert process_tree(os.getpid())  # outside the rounds, torch's pool starts again
    assert compile_workers.stop()["processes"] >= 1
