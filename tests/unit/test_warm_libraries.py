"""The library warm-up before the eager first call (runner.child.build.warm_libraries) warms the convolution library
only for a model with a layer that calls it: for the others it would be lab overhead no call of theirs pays."""
import torch

from runner.child import build


def _convs_warmed(monkeypatch, model) -> int:
    calls = []
    real = torch.nn.functional.conv2d
    monkeypatch.setattr(torch.nn.functional, "conv2d", lambda *a, **k: calls.append(1) or real(*a, **k))
    build.warm_libraries(torch.device("cpu"), torch.float32, model)
    return len(calls)


def test_the_convolution_library_is_warmed_for_models_that_use_it_only(monkeypatch):
    assert _convs_warmed(monkeypatch, torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())) == 0
    assert _convs_warmed(monkeypatch, torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))) == 1
    assert _convs_warmed(monkeypatch, torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))) == 1
    assert _convs_warmed(monkeypatch, None) == 1  # no model named: everything, as before
