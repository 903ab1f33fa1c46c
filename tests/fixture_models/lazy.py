"""Test fixture: a model that allocates a 64 MB scratch buffer on its first call only (lazy initialisation,
like a table built on first use). A steady-state memory window must not count it for one side alone."""
import torch

DESCRIPTION = "fixture: Linear 16-16 with a 64 MB buffer made on the first call"
PARAMS = {"width": 16}
SCRATCH_MB = 64


class Lazy(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)
        self.scratch = None

    @torch._dynamo.disable
    def _first_use(self):
        if self.scratch is None:
            self.scratch = torch.ones(SCRATCH_MB * 2 ** 20 // 4)  # written, so every page is resident

    def forward(self, x):
        self._first_use()
        return self.linear(x)


def build(width):
    return Lazy(width)


def example_inputs(batch_size, width):
    return (torch.randn(batch_size, width),)
