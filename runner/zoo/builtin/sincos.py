"""sin(x) + cos(y) from seed 001: a memory-bound elementwise pair that fusion turns into one pass."""
import torch
from torch import nn

DESCRIPTION = "sin(x) + cos(y) on two batch x width tensors (seed 001: first vs second call vs eager)"
PARAMS = {"width": {"default": 10000, "maximum": 1048576}}
TASKS = ("inference",)  # no parameters to train


class SinCos(nn.Module):
    def forward(self, x, y):
        a = torch.sin(x)
        b = torch.cos(y)
        return a + b


def build(width):
    return SinCos()


def example_inputs(batch_size, width):
    return (torch.randn(batch_size, width), torch.randn(batch_size, width))
