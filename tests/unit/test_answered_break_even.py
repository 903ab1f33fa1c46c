"""The break-even chart prints the answer table's count for the runs the table's row stands for, matched by jobs:
the plots and the answer label configurations differently (the plots name dynamic=none and split a warm cache)."""
import math

import pandas as pd

from dashboard.data.plot_data import answered_break_even


def test_a_row_of_the_same_jobs_takes_the_answers_numbers_whatever_its_label():
    view = pd.DataFrame({"job_id": [1, 2, 3, 4, 5, 6, 7],
                         "config": ["max-autotune · dynamic=none"] * 2 + ["default · cold cache"] * 2
                         + ["default · warm cache: graph cached", "slow", "slow"],
                         "batch_size": [8, 8, 8, 8, 8, 8, 8],
                         "status": ["succeeded"] * 5 + ["succeeded", "cancelled"]})
    agg = pd.DataFrame({"config": ["max-autotune · dynamic=none", "default · cold cache",
                                   "default · warm cache: graph cached", "slow"],
                        "batch_size": [8, 8, 8, 8], "break_even_calls": [1010.0, 500.0, 90.0, 70.0],
                        "speedup": [1.51, 1.2, 1.2, 1.01]})
    answer = [{"config": "max-autotune", "batch_size": 8, "job_ids": "1 2", "noisy": False, "break_even_calls": 1000,
               "speedup": 1.5},
              {"config": "default", "batch_size": 8, "job_ids": "3 4 5", "noisy": False, "break_even_calls": 480,
               "speedup": 1.25},  # the answer pools a cold and a warm run the plots keep apart
              {"config": "slow", "batch_size": 8, "job_ids": "6", "noisy": False, "break_even_calls": None,
               "speedup": 0.99}]  # its cancelled job is not one of its runs
    out = answered_break_even(agg, view, answer).set_index("config")
    assert out.loc["max-autotune · dynamic=none", ["break_even_calls", "speedup"]].tolist() == [1000, 1.5]
    assert out.loc["default · cold cache", "break_even_calls"] == 500  # other jobs than the answer's row: its own
    assert out.loc["default · warm cache: graph cached", "break_even_calls"] == 90
    assert math.isnan(out.loc["slow", "break_even_calls"]) and out.loc["slow", "speedup"] == 0.99  # never pays off
    assert agg["break_even_calls"].tolist() == [1010.0, 500.0, 90.0, 70.0]  # the plots' own medians untouched


def test_a_configuration_disturbed_in_every_run_takes_the_answers_numbers_too():
    """The answer speaks for such a row with its disturbed runs (lab.noise): the chart prints the same count, marked
    (speed_charts), never a second estimate of its own."""
    view = pd.DataFrame({"job_id": [1], "config": ["default"], "batch_size": [8], "status": ["succeeded"]})
    agg = pd.DataFrame({"config": ["default"], "batch_size": [8], "break_even_calls": [128250.0], "speedup": [1.3]})
    answer = [{"config": "default", "batch_size": 8, "job_ids": "1", "noisy": True, "break_even_calls": 1406,
               "speedup": 2.87}]
    out = answered_break_even(agg, view, answer)
    assert out[["break_even_calls", "speedup"]].values.tolist() == [[1406, 2.87]]
