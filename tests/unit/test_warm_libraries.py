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


def test_the_comparison_kernels_warmed_ahead_are_compares_own_path(monkeypatch):
    """A warmed child loads the kernels compare() runs on a GPU: a tensor past HOST_COMPARE, beside a float64 run."""
    from runner.child import accuracy

    seen = []
    real = accuracy._tensor_sums
    monkeypatch.setattr(accuracy, "_tensor_sums", lambda a, b, w, tol: seen.append((a, w)) or real(a, b, w, tol))
    accuracy.warm_kernels(torch.device("cpu"))
    (a, w), = seen
    assert a.numel() > accuracy.HOST_COMPARE and w is not None and w.dtype == torch.float64


def test_a_warmed_child_leaves_the_comparison_kernels_to_a_job_that_has_come(monkeypatch):
    import os

    from runner.child import accuracy, prewarm

    warmed_for = []
    monkeypatch.setattr(accuracy, "warm_kernels", lambda device: warmed_for.append(device))
    r, w = os.pipe()
    try:
        os.write(w, b"{}")  # its job is there: it is not kept waiting for kernels a follow-up never runs
        said = {"cuda": True}
        prewarm.while_waiting(r, said)
        assert warmed_for == [] and "accuracy_kernels_s" not in said
        os.read(r, 2)  # none yet: loaded now (this host has no GPU: its failure is said, never raised)
        prewarm.while_waiting(r, said)
        assert len(warmed_for) == 1
        assert "accuracy_kernels_s" in said or said["accuracy_kernels"].startswith("not loaded ahead")
        prewarm.while_waiting(r, {"cuda": False})  # a child with no GPU warms nothing
        assert len(warmed_for) == 1
    finally:
        os.close(r)
        os.close(w)
