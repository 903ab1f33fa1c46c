"""What an answer's verdict says of its processes beyond its number (lab.answer, lab.verdict): which side's calls
moved between them, and the host paces they ran at (lab.host_pace). Numbers in, words out: no pandas, torch, streamlit
or SQLAlchemy."""
from __future__ import annotations

import numpy as np

from lab import host_pace


def paces(centers: np.ndarray, pace: np.ndarray, fast: float | None, at_fast) -> str | None:
    """Where these processes (their paired speedups `centers`, their host paces `pace`, NaN for none) ran at different
    host paces, what each pace's processes read; where they all ran slower than their device's host runs when fast
    (`fast`: lab.spreads.device_paces), that too, and what the configuration's processes that ran at that pace read
    over every sweep of it (`at_fast`: its lab.spreads.at_fast_pace Spread, or None)."""
    keep = ~np.isnan(pace) & ~np.isnan(centers)
    apart = host_pace.across(pace[keep].tolist(), centers[keep].tolist())
    slower = host_pace.slower_than(pace[keep].tolist(), fast, brief=apart is not None)
    said_fast = host_pace.at_fast_words(at_fast) if slower else None
    return "; ".join(s for s in (apart, slower, said_fast) if s) or None


def sides_moved(eager_ms: np.ndarray, compiled_ms: np.ndarray) -> str | None:
    """Which side's calls moved between these processes, as each process's medians read: "eager's calls took 3.71-6.53
    ms in them, compiled's 3.42-3.74 ms". Where one side held and the other moved, the spread between processes is
    that side's (on a GPU, eager on the edge of keeping the GPU busy moves with the host's speed)."""
    keep = ~np.isnan(eager_ms) & ~np.isnan(compiled_ms) & (eager_ms > 0) & (compiled_ms > 0)
    if keep.sum() < 2:
        return None
    return f"eager's calls took {_ms(eager_ms[keep])} ms in them, compiled's {_ms(compiled_ms[keep])} ms"


def _ms(v: np.ndarray) -> str:
    """Their range in ms, 3 significant digits ("4.41-6.53"); one number where both ends read the same."""
    lo, hi = (f"{x:.3g}" if x < 1000 else f"{x:,.0f}" for x in (v.min(), v.max()))
    return lo if lo == hi else f"{lo}-{hi}"
