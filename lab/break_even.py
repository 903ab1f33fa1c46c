"""Break-even: after how many calls compiling has paid for itself, counting both first calls (the compile is in the
compiled one) against what each later call saves. The child stores it with each result; the answer states it per
configuration from its medians, with the calls its intervals' ends allow (break_even_range)."""
from __future__ import annotations

import math


def break_even_calls(eager_first_s: float, compiled_first_s: float, eager_ms: float, compiled_ms: float) -> int | None:
    """Calls after which compiling has paid for itself, counting both first calls; None if never."""
    saved_per_call_s = (eager_ms - compiled_ms) / 1e3
    if saved_per_call_s <= 0:
        return None
    extra_s = compiled_first_s - eager_first_s
    if extra_s <= 0:
        return 1
    return 1 + math.ceil(round(extra_s / saved_per_call_s, 9))  # round: 9.9 / 0.001 is 9900.000000000002


def break_even_range(eager_first_s: float, first_low_s: float, first_high_s: float, eager_ms: float,
                     speedup_low: float, speedup_high: float, point: int | None = None) -> tuple[int, int] | None:
    """The calls after which compiling pays for itself at the ends of the intervals behind it: the fewest with the
    fastest speedup its interval allows and the cheapest compiled first call (the cold first call's interval, or the
    first call itself where it has none), the most with the slowest speedup and the dearest first call, each call
    saving eager_ms less eager_ms / speedup. None where the slow end never pays off (its speedup interval reaches 1x or
    below: the verdict then says the answer is not separable from eager or slower). `point`: the count the answer
    states (at the headline speedup: it lies inside by construction), which the range is widened to hold should it
    not (a cold first call's median outside its interval). None for inputs that are not finite numbers in order."""
    ends = (eager_first_s, first_low_s, first_high_s, eager_ms, speedup_low, speedup_high)
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in ends) or eager_ms <= 0:
        return None
    if not speedup_low > 1 or not speedup_high >= speedup_low or not first_high_s >= first_low_s:
        return None
    low = break_even_calls(eager_first_s, first_low_s, eager_ms, eager_ms / speedup_high)
    high = break_even_calls(eager_first_s, first_high_s, eager_ms, eager_ms / speedup_low)
    if low is None or high is None:
        return None
    if point is not None:  # the medians' ratio can lie outside the interval (lab.verdict.medians_apart says so)
        low, high = min(low, point), max(high, point)
    return low, high


def rounded(calls: int, up: bool) -> int:
    """A count to two significant digits, down (a range's low end) or up (its high end): 11,234 -> 11,000 or 12,000.
    Counts under 100 as they are."""
    calls = int(calls)  # a float read back (a data frame's, JSON's) counts as the whole number it holds
    if calls < 100:
        return calls
    step = 10 ** (len(str(calls)) - 2)
    return -(-calls // step) * step if up else calls // step * step


def range_words(low: int | None, high: int | None, intervals: str = "intervals") -> str:
    """" (between 1,700 and 2,200 at the ends of its intervals)": a break-even range (break_even_range) with its ends
    rounded outwards to two significant digits, naming the intervals it took; "" where there is none or both ends
    read the same."""
    ends = shown_ends(low, high)
    return f" (between {ends[0]:,} and {ends[1]:,} at the ends of its {intervals})" if ends else ""


def shown_ends(low, high) -> tuple[int, int] | None:
    """A break-even range's ends as the lab shows them: rounded outwards to two significant digits; None where there
    is none (either end missing or not a finite number) or both ends read the same."""
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (low, high)):
        return None
    lo, hi = rounded(low, up=False), rounded(high, up=True)
    return None if lo == hi else (lo, hi)
