"""Test fixture: three identical blocks in a ModuleList, for --scope blocks (regional compilation)."""
import torch

DESCRIPTION = "fixture: 3 x (Linear 16-16 + tanh) in a ModuleList"
PARAMS = {"width": 16}
BLOCKS = "layers"


class Stack(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh())
                                          for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build(width):
    return Stack(width)


def example_inputs(batch_size, width):
    return (torch.randn(batch_size, width),)
