"""Test fixture: a model whose calls sleep, as a noisy host would make them. Quiet, every call sleeps a fixed 8 ms,
so its rounds agree (it takes a real-time priority where it may: below). Noisy, each call sleeps 2 to 10 ms at
random from one seeded stream that eager and compiled calls draw from in turn: each side's sleeps differ from the
other's, so the per-round eager / compiled ratios spread too (noise that slowed both sides alike would cancel in
them, and the speedup would not be noisy), IQR / median some 25-40%, far past the 5% noise threshold.
`noise=always` is noisy in every process, `never` in none;
`first` only in the first process that builds it once COMPILE_LAB_TEST_NOISE_MARK (a file path) is set: the file
keeps that process's pid, so a re-run in a fresh process is quiet. The sleep is torch.compiler.disable'd: dynamo
leaves it to Python on both sides."""
import os
import random
import time

import torch

DESCRIPTION = "fixture: Linear 8-8 whose calls sleep 8 ms, or 2-10 ms at random when noisy"
PARAMS = {"noise": {"default": "first", "choices": ["first", "always", "never"]}}
SLEEP_S = 0.008
# one stream for every instance (the runner's eager and compiled models are built alike, and a stream each would
# make each side's n-th call sleep alike); seeded: the same sleeps in every run, reliably noisy, not by luck
_RNG = random.Random(13)


class Jittery(torch.nn.Module):
    def __init__(self, noisy: bool):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.noisy = noisy

    def forward(self, x):
        _nap(self)
        return self.linear(x)


@torch.compiler.disable
def _nap(model):
    # noisy: anywhere from a quarter to 1.25 times as long, so the rounds' medians spread over a range (two values
    # would let most rounds land on their mean, and the IQR come out small); never 0, or a warm-up that read 0 ms
    # would plan a hundred calls a round
    time.sleep(_RNG.uniform(SLEEP_S / 4, SLEEP_S * 1.25) if model.noisy else SLEEP_S)


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
    noisy = _noisy(noise)
    if not noisy:
        _realtime()
    return Jittery(noisy)


def _realtime() -> None:
    """Quiet means quiet even on a box other work loads (at load 6 on 2 cores, a plain 4 ms sleep's wake-up delays
    spread its rounds 15-30%; with this, 8 ms calls spread 0.6-1.0% at load 7): where allowed (root), this process
    takes a real-time priority, so the box's other processes cannot delay its wake-ups. Its calls mostly sleep, so
    it takes little from them."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (AttributeError, PermissionError, OSError):
        pass


def example_inputs(batch_size, noise):
    return (torch.randn(batch_size, 8),)
