"""runner.compile_workers: inductor's compile-worker pool, started as on a GPU (torch starts it at the first compile
there; on this CPU the test starts it itself), is gone before the rounds, and compiling still works after."""
import os

import pytest
import torch

from runner import compile_workers
from runner.disturbance import process_tree


@pytest.mark.subprocess  # starts torch's compile-worker sidecar (a fresh interpreter)
def test_the_compile_worker_pool_is_ended_before_the_rounds_and_compiling_goes_on():
    import torch._inductor.async_compile as async_compile

    if async_compile.get_compile_threads() <= 1:
        pytest.skip("one compile thread here: torch starts no pool")
    async_compile.AsyncCompile.process_pool()
    async_compile.AsyncCompile.wakeup()
    pool = process_tree(os.getpid())
    assert pool, "the pool's sidecar runs"
    stopped = compile_workers.stop()
    assert stopped["processes"] >= 1 and stopped["error"] is None
    assert not (process_tree(os.getpid()) & pool)  # every one of them gone (killed and reaped)
    assert stopped["stop_s"] < 1.0  # not torch's graceful wait for workers still importing
    assert compile_workers.stop()["processes"] == 0  # nothing left to stop
    fn = torch.compile(lambda x: torch.sin(x) + 1)
    x = torch.randn(8)
    assert torch.allclose(fn(x), torch.sin(x) + 1)
