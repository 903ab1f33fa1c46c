"""Test fixture: a model whose calls sleep, as a noisy host would make them. Quiet, every call sleeps a fixed 4 ms,
so its rounds agree (2 ms gave spreads of 0.1-3% on this 2-core box at load 6). Noisy, each call sleeps 0 or 4 ms
at random (seeded, so the same calls sleep in every run): the rounds' medians split between about 0 and 4 ms, far
past the 5% spread (submit it with 30 rounds: that three quarters of the rounds fall on one side is then well under
1% likely). `noise=always` is noisy in every process, `never` in none; `first` only in the first process that builds
it once COMPILE_LAB_TEST_NOISE_MARK (a file path) is set: the file keeps that process's pid, so a re-run in a fresh
process is quiet. The sleep is torch.compiler.disable'd: dynamo leaves it to Python on both sides."""
import os
import random
import time

import torch

DESCRIPTION = "fixture: Linear 8-8 whose calls sleep 10 ms, or 0/10 ms at random when noisy"
PARAMS = {"noise": {"default": "first", "choices": ["first", "always", "never"]}}
SLEEP_S = 0.004


class Jittery(torch.nn.Module):
    def __init__(self, noisy: bool):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.noisy = noisy
        self.rng = random.Random(13)  # the same sleeps in every run: reliably noisy, not by luck

    def forward(self, x):
        _nap(self)
        return self.linear(x)


@torch.compiler.disable
def _nap(model):
    if not model.noisy or model.rng.random() < 0.5:
        time.sleep(SLEEP_S)


def _noisy(noise: str) -> bool:
    if noise in ("always", "never"):
        return noise == "always"
    mark = os.environ.get("COMPILE_LAB_TEST_NOISE_MARK")
    if not mark:
        return False
    try:
        fd = os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # the first process to get here owns the noise
    except FileExistsError:
        with open(mark) as f:
            return f.read().strip() == str(os.getpid())
    with os.fdopen(fd, "w") as f:
        f.write(str(os.getpid()))
    return True


def build(noise):
    return Jittery(_noisy(noise))


def example_inputs(batch_size, noise):
    return (torch.randn(batch_size, 8),)
