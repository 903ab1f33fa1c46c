"""Test fixture: a deliberately wrong compile. Its compile hook ignores the spec's backend and compiles with one that
adds 1% of the output's scale to every output: what an accuracy check must catch."""
import torch

DESCRIPTION = "fixture: Linear 16-16, compiled by a backend that perturbs its output"
PARAMS = {"width": 16}


def build(width):
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh())


def example_inputs(batch_size, width):
    return (torch.randn(batch_size, width),)


def _perturbing(gm, example_inputs):
    def run(*args):
        outs = gm(*args)
        return [o + 0.01 * o.detach().abs().mean() if isinstance(o, torch.Tensor) and o.is_floating_point() else o
                for o in outs] if isinstance(outs, (list, tuple)) else outs
    return run


def compile(module, compile_fn, width):
    return torch.compile(module, backend=_perturbing)
