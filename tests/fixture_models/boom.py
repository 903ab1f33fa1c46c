"""Test fixture: raises in forward, with a message the record must carry."""
import torch

DESCRIPTION = "fixture: raises ValueError in forward"
PARAMS = {}


class Boom(torch.nn.Module):
    def forward(self, x):
        raise ValueError("boom: fixture model refuses to run")


def build():
    return Boom()


def example_inputs(batch_size):
    return (torch.randn(batch_size, 4),)
