"""The MLP of seed 002's benchmark: Linear 1024-4096, GELU, Linear 4096-1024."""
import torch
from torch import nn

DESCRIPTION = "Linear dim-hidden + GELU + Linear hidden-dim (seed 002's benchmark MLP)"
PARAMS = {"dim": {"default": 1024, "maximum": 65536}, "hidden": {"default": 4096, "maximum": 262144}}


def build(dim, hidden):
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))


def example_inputs(batch_size, dim, hidden):
    return (torch.randn(batch_size, dim),)
