"""SimpleNet from seed 004: the static-vs-dynamic experiment (batch 32 then 64)."""
import torch
from torch import nn

DESCRIPTION = "Linear 512-512 + ReLU + Linear 512-10 (seed 004: static vs dynamic)"
PARAMS = {}


class SimpleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(512, 512)
        self.relu = nn.ReLU()
        self.output = nn.Linear(512, 10)

    def forward(self, x):
        return self.output(self.relu(self.linear(x)))


def build():
    return SimpleNet()


def example_inputs(batch_size):
    return (torch.randn(batch_size, 512),)
