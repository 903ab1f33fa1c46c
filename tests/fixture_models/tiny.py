"""Test fixture: the smallest trainable model, for quick real compiles."""
import torch

DESCRIPTION = "fixture: Linear 16-16 + tanh"
PARAMS = {"width": 16}


def build(width):
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh())


def example_inputs(batch_size, width):
    return (torch.randn(batch_size, width),)
