"""Break-even: after how many calls compiling has paid for itself, counting both first calls (the compile is in the
compiled one) against what each later call saves. The child stores it with each result; the answer states it per
configuration from its medians."""
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
