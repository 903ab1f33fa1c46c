"""Test fixture: a forward that mutates its input, which makes reduce-overhead skip CUDA graphs on a GPU."""
import torch

DESCRIPTION = "fixture: x.add_(1) then Linear 64-64 (an input mutation: CUDA graphs are skipped)"
PARAMS = {"width": 64}


class Mutates(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = torch.nn.Linear(width, width)

    def forward(self, x):
        x.add_(1.0)
        return self.lin(x)


def build(width):
    return Mutates(width)


def example_inputs(batch_size, width):
    return (torch.randn(batch_size, width),)
