"""The arithmetic the record is built from: percentiles, break-even, accuracy."""
import logging
import math

import pytest
import torch

from runner.measure import break_even_calls, compare
from runner.timing import percentile


def test_percentile_matches_linear_interpolation():
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(xs, 50) == 3.0
    assert percentile(xs, 10) == pytest.approx(1.4)
    assert percentile(xs, 90) == pytest.approx(4.6)
    assert percentile([7.0], 90) == 7.0


def test_break_even_counts_calls_until_compile_paid_off():
    # compile costs 10.0 s - 0.1 s extra; each call saves 1 ms -> 9900 more calls, +1 for the first call
    assert break_even_calls(0.1, 10.0, 2.0, 1.0) == 9901
    assert break_even_calls(0.1, 10.0, 1.0, 1.0) is None  # never pays off
    assert break_even_calls(0.1, 10.0, 1.0, 2.0) is None  # compiled is slower
    assert break_even_calls(0.5, 0.2, 2.0, 1.0) == 1


def test_compare_reports_relative_error_against_dtype_tolerance():
    ref = [torch.ones(100)]
    same = compare(ref, [torch.ones(100)], "float32", None)
    assert same["ok"] and same["max_abs_error"] == 0.0
    off = compare(ref, [torch.ones(100) * 1.01], "float32", None)
    assert not off["ok"] and off["rel_error"] == pytest.approx(0.01, rel=1e-6)
    assert compare(ref, [torch.ones(100) * 1.01], "bfloat16", None)["ok"]  # within bf16's 3e-2
    nan = torch.ones(100)
    nan[3] = math.nan
    assert not compare(ref, [nan], "float32", None)["ok"]
    assert compare(ref, [torch.ones(3)], "float32", None)["ok"] is False
    skipped = compare(ref, [torch.zeros(100)], "float32", "random by design")
    assert skipped["ok"] is None and skipped["note"] == "random by design"


def test_compare_requires_nonfinite_values_to_match_and_checks_each_tensor():
    inf = torch.tensor([1.0, math.inf, 3.0])
    assert compare([inf], [inf.clone()], "float32", None)["ok"]
    assert not compare([inf], [torch.tensor([1.0, 2.0, 3.0])], "float32", None)["ok"]  # inf vs finite
    assert not compare([inf], [torch.tensor([1.0, -math.inf, 3.0])], "float32", None)["ok"]  # sign
    # a large correct output must not hide a small wrong one (say a bias's gradient)
    big, small = torch.ones(10_000) * 100, torch.ones(4)
    wrong = compare([big, small], [big.clone(), small * 2], "float32", None)
    assert not wrong["ok"] and wrong["rel_error"] == pytest.approx(1.0)


def test_graph_break_capture_keeps_the_users_torch_logs(monkeypatch):
    from torch._logging import _internal as logs

    from runner.measure import GraphBreakLog

    monkeypatch.setenv("TORCH_LOGS", "recompiles,+dynamo")  # what a user debugging a model sets
    try:
        GraphBreakLog()
        assert logs.log_state.is_artifact_enabled("graph_breaks")  # ours, for the reasons we record
        assert logs.log_state.is_artifact_enabled("recompiles")  # and theirs, still on
        assert logging.getLogger("torch._dynamo").level == logging.DEBUG  # "+dynamo"
        monkeypatch.delenv("TORCH_LOGS")
        GraphBreakLog()
        assert logs.log_state.is_artifact_enabled("graph_breaks")
        assert not logs.log_state.is_artifact_enabled("recompiles")
    finally:
        torch._logging.set_logs()  # back to torch's defaults for the other tests
