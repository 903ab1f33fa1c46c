"""lab.first_call: what each run's compiled first call compiled from, and a configuration's first calls separated into
cold, warm and portable by it: the one rule the answer table, the Warmup chart and the job page share."""
import math

import pytest

from dashboard.data import plot_data
from lab import first_call
from lab.answer import answer_rows
from tests.unit.test_answer import _view, job


def test_each_run_is_what_its_first_call_compiled_from_not_what_its_spec_asked():
    assert first_call.kind("cold", "cold", False) == "cold"
    assert first_call.kind("warm", "cold", True) == "warm"  # a process repeat of a cold-cache configuration
    assert first_call.kind("warm", "warm", False) == "cold"  # a warm run whose graph missed compiled from nothing
    assert first_call.kind("portable", "portable", None) == "portable"
    assert first_call.kind("cold", "portable", None) == "cold"  # no bundle to load: it ran cold
    assert first_call.kind(None, "warm", None) == "warm"  # stored before the record: its spec's setting
    assert first_call.kind(None, None, None) == "cold"


def test_separate_takes_the_median_of_each_kind_and_names_its_jobs():
    calls = first_call.separate([7, 3, 4, 9, 5], [15.72, 2.44, float("nan"), 3.0, 16.0],
                                ["cold", "warm", "warm", "warm", "cold"])
    assert list(calls) == ["cold", "warm"]  # in KINDS order, only the kinds with a first call
    assert calls["cold"] == first_call.Calls(15.86, (5, 7)) and calls["warm"].runs == 2
    assert calls["warm"].seconds == pytest.approx(2.72) and calls["warm"].job_ids == (3, 9)  # NaN: no first call
    assert first_call.separate([], [], []) == {}
    with pytest.raises(ValueError, match="first call kind must be one of cold, warm, portable: 'hot'"):
        first_call.separate([1], [1.0], ["hot"])
    with pytest.raises(ValueError):  # one kind per run, or the runs and their kinds are not one list
        first_call.separate([1, 2], [1.0, 2.0], ["cold"])


def test_the_answer_and_the_warmup_chart_separate_a_process_repeat_the_same_way():
    """A cold-cache configuration measured in two processes: the repeat compiled from the first's cache. The answer's
    cold and warm columns and the Warmup chart's bars are the same two numbers; a median over both (9.08 s) is none."""
    records = [job(1, compiled_first_call_s=15.72, first_call_cache="cold", graph_cache_hit=False),
               job(2, compiled_first_call_s=2.44, first_call_cache="warm", graph_cache_hit=True)]
    (row,) = answer_rows(records)
    assert (row["first_call_cold_s"], row["first_call_warm_s"], row["first_call_portable_s"]) == (15.72, 2.44, None)
    view = _view(*({**r, "config": "default", "compiled_ms": 0.5} for r in records))
    drawn = plot_data.first_calls(view).iloc[0]
    assert (drawn["first_call_cold_s"], drawn["first_call_warm_s"]) == (15.72, 2.44)
    assert (drawn["cold_runs"], drawn["warm_runs"], drawn["portable_runs"]) == (1, 1, 0)
    assert math.isnan(drawn["first_call_portable_s"]) and drawn["compiled_first_call_s"] == pytest.approx(9.08)
