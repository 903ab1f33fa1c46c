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


def test_a_warmed_child_begins_no_step_once_its_job_has_come(monkeypatch):
    import os

    from runner.child import accuracy, prewarm

    done = []
    warm_up = lambda device, dtype: done.append("libraries")  # noqa: E731
    monkeypatch.setattr(accuracy, "warm_kernels", lambda device: done.append("comparison"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)  # no GPU here: the steps are the stand-ins above
    r, w = os.pipe()
    try:
        os.write(w, b"{}")  # its job is there: it is not kept waiting for a step
        said = {"cuda": True}
        prewarm.while_waiting(r, said, warm_up)
        assert done == [] and set(said) == {"cuda"}
        os.read(r, 2)  # none yet: each step, in order, and its seconds said
        prewarm.while_waiting(r, said, warm_up)
        assert done == ["libraries", "comparison"]
        assert said["float32_warm_up_s"] >= 0 and said["accuracy_kernels_s"] >= 0
        done.clear()
        warm_up = lambda device, dtype: os.write(w, b"{}") and done.append("x")  # noqa: E731
        said = {"cuda": True}  # a job that comes during a step: the next is not begun
        prewarm.while_waiting(r, said, warm_up)
        assert done == ["x"] and "accuracy_kernels_s" not in said
        warm_up = lambda device, dtype: 1 / 0  # noqa: E731
        os.read(r, 2)
        said = {"cuda": True}  # a step that fails is said, never raised: the job loads them itself
        prewarm.while_waiting(r, said, warm_up)
        assert said["float32_warm_up"].startswith("not loaded ahead (ZeroDivisionError")
        prewarm.while_waiting(r, {"cuda": False}, warm_up)  # a child with no GPU warms nothing
        assert done == ["x"]
    finally:
        os.close(r)
        os.close(w)
