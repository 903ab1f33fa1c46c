"""A side's peak memory on the CPU (runner.child.capture.memory): RSS growth during the call, measured after the heap's
freed pages went back to the system, so a call that reuses memory freed earlier still shows what it needs (issue 27: a CPU job's
compiled side read "0 MB" as if compiling saved memory)."""
import torch

from runner.child.capture.memory import Memory


def test_a_call_that_reuses_freed_memory_still_shows_its_buffers():
    x = torch.randn(256, 2048)
    w = torch.randn(2048, 4096)

    def call():
        return torch.nn.functional.gelu(x @ w)  # two 4 MB buffers, the first freed once gelu has read it

    for _ in range(3):  # the heap now holds freed pages of exactly these sizes
        call()
    peaks = []
    for _ in range(3):
        mem = Memory("cpu")
        mem.start()
        out = call()
        peaks.append(mem.peak_mb())
        del out
    assert mem.ok and min(peaks) >= 3.5, peaks  # at least the 4 MB result itself, every time
