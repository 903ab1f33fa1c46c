"""lab.first_call: what each run's compiled first call compiled from, and a configuration's first calls separated into
cold, warm and portable by it: the one rule the answer table, the Warmup chart and the job page share."""
import math

import numpy as np
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
    assert (calls["cold"].seconds, calls["cold"].job_ids) == (15.86, (5, 7)) and calls["warm"].runs == 2
    assert calls["cold"].var == pytest.approx(np.var(np.log([15.72, 16.0]), ddof=1))
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


def test_a_cold_first_call_is_bracketed_by_every_process_that_compiled_it_cold_on_this_device():
    """lab.first_call.bounds: the configuration's cold processes over every sweep of it give the spread (about the runs
    in hand and the others' own means: Student's t on all of them less 2); three give none worth stating; runs in hand
    that disagree more than the others keep their own spread."""
    from lab.interval import Spread, t975

    logs = np.log([3.0, 2.5, 3.4, 2.8, 3.9])  # the first is in hand, the five over every sweep
    one = first_call.Calls(3.0, (1,), mean_log=logs[0])
    lo, hi, judged = first_call.bounds(one, Spread(5, float(np.var(logs, ddof=1)), float(np.mean(logs))))
    others = np.var(logs[1:], ddof=1) * 3  # their squares about their own mean: 3 degrees of freedom
    half = t975(3) * math.sqrt(others / 3)
    assert (lo, hi, judged) == pytest.approx((3.0 * math.exp(-half), 3.0 * math.exp(half), 5))
    three = logs[:3]
    assert first_call.bounds(one, Spread(3, float(np.var(three, ddof=1)), float(np.mean(three)))) is None  # t = 12.7
    assert first_call.bounds(one, None) is None
    scattered = first_call.Calls(3.0, (1, 2, 3), var=0.3 ** 2, mean_log=math.log(3.0))  # three far apart in hand
    lo, hi, judged = first_call.bounds(scattered, Spread(6, 0.02 ** 2, math.log(3.0)))  # the six agreed
    assert judged == 6 and hi / 3.0 == pytest.approx(math.exp(t975(4) * 0.3 / math.sqrt(3)))
    assert first_call.bounds(scattered, None)[2] == 3  # its own three: two degrees of freedom


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
@pytest.mark.parametrize("processes,held,sd", [(4, 1, 0.05), (5, 1, 0.25), (8, 1, 0.12), (6, 3, 0.2)])
def test_the_cold_interval_covers_a_fresh_processs_median_95_times_in_100(processes, held, sd):
    """Draws of a configuration's cold first calls over fresh processes (log-normal around 4 s): the shown number is
    one sweep's `held` processes, the spread every process's (lab.spreads.by_config, as the database gives it, the
    shown ones among them). Its interval holds the true median (4 s) in 95 of 100 draws, within what 2,000 draws can
    tell (+-1.2 points)."""
    from lab.spreads import by_config

    rng = np.random.default_rng(processes * 10 + held)
    trials, covered = 2000, 0
    for logs in rng.normal(math.log(4.0), sd, (trials, processes)):
        seconds = np.exp(logs)
        spread = by_config(["H200"] * processes, ["2.11"] * processes, ["k"] * processes, seconds)["H200", "2.11", "k"]
        mine = first_call.separate(range(held), seconds[:held], ["cold"] * held)["cold"]
        lo, hi, _ = first_call.bounds(mine, spread)
        covered += lo <= 4.0 <= hi
    assert 0.93 <= covered / trials <= 0.97


def test_the_answer_row_states_its_cold_first_call_with_an_interval_or_from_how_many_processes():
    """The headline cell (`runner report --format md`, the Results table): the cold first call with its interval where
    the database knows enough processes of it, else from how many processes it comes; a run stored before runs recorded
    what they compiled from counts in no cold spread."""
    from lab.answer import Runs, headline_value
    from lab.interval import Spread
    from lab.spreads import Spreads

    key = ("cpu", "2.13.0", "k")
    records = [job(1, config_key="k", sweep_id=1, compiled_first_call_s=3.0, first_call_cache="cold"),
               job(2, config_key="k", sweep_id=1, compiled_first_call_s=0.5, first_call_cache="warm",
                   graph_cache_hit=True)]
    (row,) = answer_rows(records)
    assert (row["first_call_cold_low"], row["cold_processes"]) == (None, 1)
    assert headline_value(row, "first_call_cold_s") == "3 (one process)"
    known = Spreads(colds={key: Spread(6, 0.1 ** 2, math.log(2.9))})
    (row,) = answer_rows(records, known)
    lo, hi, _ = first_call.bounds(first_call.Calls(3.0, (1,), mean_log=math.log(3.0)), known.colds[key])
    assert (row["first_call_cold_low"], row["first_call_cold_high"], row["cold_processes"]) == (lo, hi, 6)
    assert headline_value(row, "first_call_cold_s") == f"3 [{lo:.3g}, {hi:.3g}]"
    assert headline_value(row, "first_call_warm_s") == "0.5"
    disturbed = [{**records[0], "disturbed": True, "noise_note": "another process on its cores"}, records[1]]
    (row,) = answer_rows(disturbed, known)  # a cold run the spread does not count: no interval around it
    assert (row["first_call_cold_low"], headline_value(row, "first_call_cold_s")) == (None, "3 (one process)")
    legacy = [job(i, config_key="k", sweep_id=i, compiled_first_call_s=3.0 + i) for i in range(3, 7)]  # nothing recorded
    cols = {n: [r.get(n) for r in records + legacy] for n in records[0] | {"spec_code": None, "host_pace_us": None}}
    assert Runs(cols).spreads().colds == {}  # one recorded cold run: no spread; the four legacy ones count in none


def test_a_configuration_whose_cold_runs_lie_under_two_keys_is_bracketed_by_all_of_them():
    """One answer row, two stored specs (a cold-cache run and a warm-cache one whose graph missed: both compiled
    cold; jobs.config hashes the cache, the answer does not): its cold spread pools both keys' processes, whatever
    the order of its runs; the speedup's takes the key with the most, the first key on a tie."""
    from lab import answer
    from lab.spreads import by_config, pooled

    seconds = np.array([3.0, 3.2, 2.8, 3.1, 3.5, 3.3, 3.9, 3.4])
    keys = ["k1"] * 4 + ["k2"] * 4
    per_key = by_config(["cpu"] * 8, ["2.13.0"] * 8, keys, seconds)
    (every,) = by_config(["cpu"] * 8, ["2.13.0"] * 8, ["k"] * 8, seconds).values()
    both = pooled(list(per_key.values()))
    assert (both.processes, both.mean, both.var) == (8, pytest.approx(every.mean), pytest.approx(every.var))
    runs = answer.Runs({**{n: [None, None] for n in answer.READ}, "job_id": [1, 2], "device_name": ["cpu", "cpu"],
                        "torch_version": ["2.13.0", "2.13.0"], "config_key": ["k1", "k2"]})
    for order in ([0, 1], [1, 0]):
        assert answer._spread(runs, np.array(order), per_key, pool=True).processes == 8
        assert answer._spread(runs, np.array(order), per_key) == per_key["cpu", "2.13.0", "k1"]


def test_a_cold_first_call_whose_compile_was_disturbed_counts_only_where_no_other_cold_one_is_in_view():
    """lab.first_call.kept: another process on the job's cores during its compile (a measured cause) leaves a cold first
    call out of the answer's cold figure and the Warmup chart's alike, while an undisturbed one is in view; where
    every cold one was disturbed, the figure is theirs, without an interval, and says so. Warm ones are not judged."""
    from lab.answer import headline_value

    shaken = job(1, compiled_first_call_s=30.0, first_call_cache="cold", first_call_disturbed=True)
    quiet = job(2, compiled_first_call_s=15.0, first_call_cache="cold", first_call_disturbed=False)
    warm = job(3, compiled_first_call_s=2.4, first_call_cache="warm", graph_cache_hit=True, first_call_disturbed=True)
    assert first_call.kept(["cold", "cold", "warm"], [30.0, 15.0, 2.4], [True, False, True]) == [False, True, True]
    assert first_call.kept(["cold", "warm"], [30.0, 2.4], [True, False]) == [True, True]
    assert first_call.kept(["cold", "cold"], [30.0, float("nan")], [True, False]) == [True, True]  # no second figure
    (row,) = answer_rows([shaken, quiet, warm])
    assert (row["first_call_cold_s"], row["first_call_warm_s"], row["cold_disturbed"]) == (15.0, 2.4, 1)
    assert headline_value(row, "first_call_cold_s") == "15 (one process; 1 disturbed compile left out)"
    view = _view(*({**r, "config": "default", "compiled_ms": 0.5} for r in (shaken, quiet, warm)))
    drawn = plot_data.first_calls(view).iloc[0]
    assert (drawn["first_call_cold_s"], drawn["cold_runs"], drawn["first_call_warm_s"]) == (15.0, 1, 2.4)
    (row,) = answer_rows([shaken, warm])
    assert row["first_call_cold_s"] == 30.0 and row["first_call_cold_low"] is None and row["cold_disturbed"] == 1
    assert headline_value(row, "first_call_cold_s") == "30 (its compile disturbed: its job says by what)"
    assert plot_data.first_calls(_view(*({**r, "config": "default", "compiled_ms": 0.5} for r in (shaken, warm)))
                                 ).iloc[0]["first_call_cold_s"] == 30.0
