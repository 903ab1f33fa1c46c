"""Test fixture: raises torch.cuda.OutOfMemoryError in forward, on the CPU. The CPU build of torch has
the class, so this exercises how the child records an out-of-memory error; a GPU's real OOM is not
exercised here (no GPU in CI)."""
import torch

DESCRIPTION = "fixture: raises torch.cuda.OutOfMemoryError in forward (on the CPU)"
PARAMS = {}


class OutOfMemory(torch.nn.Module):
    def forward(self, x):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (fixture)")


def build():
    return OutOfMemory()


def example_inputs(batch_size):
    return (torch.randn(batch_size, 4),)
