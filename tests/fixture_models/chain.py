"""Test fixture: 24 tiny elementwise blocks in a row (BLOCKS), on a small tensor. Eager runs two ops a block, each
paying the dispatcher's few microseconds; inductor fuses the chain into one kernel, so compiling is clearly faster,
while backend aot_eager still runs every op (and adds its wrappers): a clearly worse setting beside it."""
import torch

DESCRIPTION = "fixture: 24 x (x * 1.01 then tanh) in a ModuleList"
PARAMS = {"depth": 24}
BLOCKS = "layers"


class Block(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x * 1.01)


class Chain(torch.nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.layers = torch.nn.ModuleList(Block() for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build(depth):
    return Chain(depth)


def example_inputs(batch_size, depth):
    return (torch.randn(batch_size, 8),)
