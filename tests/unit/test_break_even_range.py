"""How far a break-even count can be trusted (lab.break_even.break_even_range): the calls after which compiling pays
off at the ends of the speedup's interval and, where it has one, the cold first call's; said in the verdict with both
ends to two significant digits, naming the intervals it took."""
import numpy as np
import pytest

from lab.answer import answer_rows
from lab.break_even import break_even_calls, break_even_range, rounded
from tests.unit.test_answer import job


def test_the_range_takes_the_fast_end_with_the_cheap_compile_and_the_slow_end_with_the_dear_one():
    # 5 s more first call; eager 2 ms a call; speedup 1.8x-2.2x: 2.2x saves 1.0909 ms a call, 1.8x 0.8889 ms
    assert break_even_range(0.01, 5.01, 5.01, 2.0, 1.8, 2.2) == (4585, 5626)
    assert break_even_range(0.01, 5.01, 5.01, 2.0, 1.8, 2.2) == (break_even_calls(0.01, 5.01, 2.0, 2.0 / 2.2),
                                                                  break_even_calls(0.01, 5.01, 2.0, 2.0 / 1.8))
    lo, hi = break_even_range(0.01, 4.01, 7.01, 2.0, 1.8, 2.2)  # and the cold first call's interval, 4-7 s more
    assert (lo, hi) == (break_even_calls(0.01, 4.01, 2.0, 2.0 / 2.2), break_even_calls(0.01, 7.01, 2.0, 2.0 / 1.8))
    assert lo < 4585 and hi > 5626
    assert break_even_range(0.01, 5.01, 5.01, 2.0, 1.8, 2.2, point=9000) == (4585, 9000)  # it holds the count stated
    assert break_even_range(0.01, 5.01, 5.01, 2.0, 1.8, 2.2, point=100) == (100, 5626)


@pytest.mark.parametrize("low,high", [(1.0, 1.2), (0.9, 1.3), (0.5, 0.8), (1.3, 1.2), (float("nan"), 1.2)])
def test_no_range_where_the_slow_end_never_pays_off_or_the_interval_is_not_one(low, high):
    assert break_even_range(0.01, 5.01, 5.01, 2.0, low, high) is None


def test_a_first_call_no_dearer_than_eagers_pays_off_at_once_at_both_ends():
    assert break_even_range(1.0, 0.5, 0.9, 2.0, 1.1, 1.5) == (1, 1)


@pytest.mark.parametrize("calls,down,up", [(11_234, 11_000, 12_000), (5626, 5600, 5700), (4585, 4500, 4600),
                                           (99, 99, 99), (100, 100, 100), (1_000_001, 1_000_000, 1_100_000),
                                           (1, 1, 1)])
def test_a_ranges_ends_are_rounded_outwards_to_two_digits(calls, down, up):
    assert (rounded(calls, up=False), rounded(calls, up=True)) == (down, up)


def test_the_verdict_says_the_range_beside_the_count_and_names_the_intervals_it_took():
    records = [job(1, 2.0, eager_ms=2.0, compiled_ms=1.0), job(2, 2.0, eager_ms=2.0, compiled_ms=1.0)]
    (row,) = answer_rows(records)
    paid = break_even_calls(0.01, 5.01, 2.0, 2.0 / row["speedup"])  # at the headline speedup
    assert row["break_even_low"] < row["break_even_calls"] == paid < row["break_even_high"]
    assert (row["break_even_low"], row["break_even_high"]) == break_even_range(
        0.01, 5.01, 5.01, 2.0, row["speedup_ci_low"], row["speedup_ci_high"])  # its interval's ends, nothing else
    lo, hi = rounded(row["break_even_low"], up=False), rounded(row["break_even_high"], up=True)
    assert f"pays off after {paid:,} calls (between {lo:,} and {hi:,} at the ends of its speedup's interval)" in \
        row["verdict"]
    # four processes compiled it cold (recorded so): its cold first call has an interval, and the range takes it
    cold = [job(i, 2.0, eager_ms=2.0, compiled_ms=1.0, first_call_cache="cold", compiled_first_call_s=s)
            for i, s in ((1, 4.5), (2, 5.0), (3, 5.5), (4, 6.0))]
    (row,) = answer_rows(cold)
    assert row["first_call_cold_low"] < row["first_call_cold_s"] < row["first_call_cold_high"]
    assert (row["break_even_low"], row["break_even_high"]) == break_even_range(
        0.01, row["first_call_cold_low"], row["first_call_cold_high"], 2.0, row["speedup_ci_low"], row["speedup_ci_high"],
        row["break_even_calls"])
    assert "at the ends of its speedup's and cold first call's intervals)" in row["verdict"]


def test_an_answer_not_separable_from_eager_or_slower_has_no_range():
    for center in (1.0, 0.7):
        (row,) = answer_rows([job(i, center, sd=0.05, eager_ms=2.0, compiled_ms=2.0 / center) for i in (1, 2)])
        assert row["break_even_low"] is None and row["break_even_high"] is None and "between" not in row["verdict"]


def test_the_count_is_the_headline_speedups_even_where_the_sides_medians_read_another_ratio():
    """The sides' median calls (2.0 and 1.25 ms: 1.6x) can read another ratio than the paired speedup the headline
    gives (1.42x): the count is the headline's, so its range at the interval's ends holds it without widening."""
    (row,) = answer_rows([job(i, 1.42, eager_ms=2.0, compiled_ms=1.25) for i in (1, 2, 3)])
    assert 1.3 < row["speedup_ci_low"] < row["speedup"] < row["speedup_ci_high"] < 1.55
    assert row["break_even_calls"] == break_even_calls(0.01, 5.01, 2.0, 2.0 / row["speedup"])
    assert (row["break_even_low"], row["break_even_high"]) == break_even_range(
        0.01, 5.01, 5.01, 2.0, row["speedup_ci_low"], row["speedup_ci_high"])
    assert row["break_even_low"] < row["break_even_calls"] < row["break_even_high"]


@pytest.mark.parametrize("odd", [(0.01, 7.0, 4.0, 2.0, 1.8, 2.2), (0.01, float("nan"), 5.0, 2.0, 1.8, 2.2),
                                 (0.01, 5.0, float("inf"), 2.0, 1.8, 2.2), (0.01, 5.0, 5.0, 0.0, 1.8, 2.2),
                                 (0.01, 5.0, 5.0, 2.0, 1.8, float("inf")), (None, 5.0, 5.0, 2.0, 1.8, 2.2)])
def test_ends_out_of_order_or_not_finite_give_no_range(odd):
    assert break_even_range(*odd) is None


def test_a_count_read_back_as_a_float_rounds_as_its_whole_number():
    assert (rounded(1234.0, up=False), rounded(1234.0, up=True)) == (1200, 1300)
    assert rounded(np.float64(56_789.0), up=True) == 57_000
