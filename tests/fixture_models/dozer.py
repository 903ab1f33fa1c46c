"""Test fixture: a call that sleeps 6 ms in eager and 3 ms compiled (the nap's length is a constant dynamo reads
while tracing; the nap itself is torch.compiler.disable'd, so both sides sleep in Python), then one tiny op. Every
compiled setting runs the same 3 ms, so any two are equal, and the speedup, about 2x, is set by the sleeps rather
than by how busy the host is: a race between equal settings on a shared CPU."""
import time

import torch

DESCRIPTION = "fixture: sleeps 6 ms eager, 3 ms compiled, then x * 2"
PARAMS = {"ms": 6}


@torch.compiler.disable
def nap(seconds):
    time.sleep(seconds)


class Dozer(torch.nn.Module):
    def __init__(self, ms):
        super().__init__()
        self.ms = ms

    def forward(self, x):
        nap((self.ms / 2 if torch.compiler.is_compiling() else self.ms) / 1e3)
        return x * 2


def build(ms):
    return Dozer(ms)


def example_inputs(batch_size, ms):
    return (torch.randn(batch_size, 4),)
