"""The host's pace through a run's rounds: before each round the child times a fixed piece of pure Python
(runner.child.rounds.host_pace_us), so a run says whether the machine itself ran slower in part of its rounds, and
what its speedup read in those rounds and in the rest.

Why: on some hosts (the H200 lent to this project is a KVM guest) the pace of interpreted and dispatch-bound code
moves in episodes of seconds that nothing inside the machine shows: no steal time, no other
process on the cores, the process's own CPU time equal to its wall time. On an H200 host a fixed piece of Python took
about 25 us in some seconds and 45 us in others, and mlp bs 64's speedup read 0.75x in the fast seconds and 0.67-0.70x
in the slow ones (bench/README.md, "The host's pace"): a process whose rounds fell in a slow stretch read low.
That is the machine the user's program runs on too, so no round is left out for it: the headline counts both, and
this says how they differ. No pandas, torch, streamlit or SQLAlchemy."""
from __future__ import annotations

import math
from statistics import median

from lab.interval import t975

KEY = "host_pace_us"  # the record's samples: one probe per headline round, in microseconds, the round's own index
MIN_ROUNDS = 20  # fewer rounds say nothing about two paces
MIN_SHARE = 0.1  # each pace holds at least this share of the rounds
APART = 1.3  # the slow rounds' probe at least this many times the fast rounds'
FASTEST = 1.15  # a process whose pace lies within this of the fastest process's counts as run at that pace


def split(samples: dict | None) -> dict | None:
    """The run's rounds by the host's pace: {"rounds", "median_us"} (the probes' median: lower is faster), and where
    the pace moved within the run, also {"slow_rounds", "slow_share", "fast_us", "slow_us", "slower", "fast_speedup",
    "slow_speedup"}, each speedup the median of its rounds' paired ratios (eager / compiled, each side's median call in
    the round). No split where its two groups' medians lie less than APART apart, or where there are fewer than
    MIN_ROUNDS probed rounds; None where the samples hold no probes (a run made before they were kept, a hand-made
    row). The split is the one that leaves the least scatter within the two groups of log probe times (Otsu's), with
    at least MIN_SHARE of the rounds in each."""
    if not isinstance(samples, dict):
        return None
    probes, eager, compiled = samples.get(KEY), samples.get("eager"), samples.get("compiled")
    if not all(isinstance(x, list) for x in (probes, eager, compiled)):
        return None
    rounds = [(p, median(e) / median(c)) for p, e, c in zip(probes, eager, compiled)
              if _positive(p) and _blocks(e) and _blocks(c) and median(c) > 0]
    n = len(rounds)
    if not n:
        return None
    out = {"rounds": n, "median_us": round(median(p for p, _ in rounds), 2)}
    if n < MIN_ROUNDS:
        return out
    rounds.sort()
    logs = [math.log(p) for p, _ in rounds]
    least = math.ceil(MIN_SHARE * n)
    k = min(range(least, n - least + 1), key=_within(logs))
    fast, slow = rounds[:k], rounds[k:]
    fast_us, slow_us = median(p for p, _ in fast), median(p for p, _ in slow)
    if slow_us < APART * fast_us:
        return out
    return out | {"slow_rounds": len(slow), "slow_share": round(len(slow) / n, 3), "fast_us": round(fast_us, 2),
                  "slow_us": round(slow_us, 2), "slower": round(slow_us / fast_us, 2),
                  "fast_speedup": round(median(r for _, r in fast), 4),
                  "slow_speedup": round(median(r for _, r in slow), 4)}


def words(pace: dict | None) -> str | None:
    """split's finding in a sentence, or None where the pace held or there is none (or the value is not split's: a
    hand-made row)."""
    keys = ("slow_share", "fast_us", "slow_us", "slower", "fast_speedup", "slow_speedup", "rounds")
    if not isinstance(pace, dict) or not all(_number(pace.get(k)) for k in keys):
        return None
    return (f"The host's own pace moved during the rounds: a fixed piece of Python took {pace['slow_us']:.0f} us in "
            f"{pace['slow_share']:.0%} of them against {pace['fast_us']:.0f} us in the rest ({pace['slower']:.1f}x "
            f"slower), and the speedup read {pace['slow_speedup']:.2f}x in the slow rounds, {pace['fast_speedup']:.2f}x "
            f"in the rest ({pace['rounds']:,} rounds). A host whose hardware is shared beneath the machine (a cloud VM) can "
            "do this with nothing on the machine's own cores to show it. The headline counts both, as a program run here "
            "meets both, and another process of this configuration can land in either.")


def pace_words(pace: dict | None) -> str | None:
    """The run's pace in a line, where it has one: what another process of the configuration can be told apart by."""
    if not isinstance(pace, dict) or not _positive(pace.get("median_us")) or not _positive(pace.get("rounds")):
        return None
    return (f"The host's pace: a fixed piece of Python took {pace['median_us']:.0f} us before each round (the median of "
            f"{pace['rounds']:,.0f}; lower is faster). Processes of one configuration that read different speedups "
            "of a host-bound call can differ in it: the host ran at another pace.")


def around(before: float | None = None, after: float | None = None) -> dict | None:
    """The host's pace probed just before and just after a compiled first call, as the record keeps it
    ({"before_us", "after_us"}), or None where either probe is missing or not a positive number."""
    if not (_positive(before) and _positive(after)):
        return None
    return {"before_us": round(before, 2), "after_us": round(after, 2)}


def first_call_words(paced: dict | None, rounds_us: float | None = None) -> str | None:
    """`around`'s probes in a sentence for the job page, beside the pace through the run's rounds (`rounds_us`, its
    median) where there is one: a compile is mostly host work, so a cold first call compiled at a slower pace takes
    longer, and a fresh process that compiles at another pace pays another time. None without both probes."""
    if not isinstance(paced, dict) or not (_positive(paced.get("before_us")) and _positive(paced.get("after_us"))):
        return None
    before, after = paced["before_us"], paced["after_us"]
    piece = "the same piece of Python" if _positive(rounds_us) else "a fixed piece of Python"  # as the rounds' line
    said = (f"The host's pace around the compiled first call: {piece} took {before:.0f} us just before it and "
            f"{after:.0f} us just after")
    said += f" ({rounds_us:.0f} us through the rounds)." if _positive(rounds_us) else " (lower is faster)."
    if max(before, after) >= APART * min(before, after):
        said += (" The two lie 1.3x apart: the host's pace moved around the compile, or the probe just after it met "
                 "the compile's own aftermath.")
    elif _positive(rounds_us) and min(before, after) >= APART * rounds_us:
        said += " The host ran slower while it compiled than through the rounds."
    return said + (" A compile is mostly host work: at a slower pace it takes longer, so a fresh process that compiles "
                   "at another pace pays another time.")


def across(paces: list[float], speedups: list[float]) -> str | None:
    """Where a configuration's processes ran at different host paces (each one's median, `split`), what those at the
    fastest of them read and what the rest read: "its processes ran at different host paces (a fixed piece of Python
    before each round took 21-42 us, lower is faster): the 3 at 21-22 us read 0.83x-0.85x, the 6 at 32-42 us
    0.66x-0.81x". None with fewer than two paced processes, or where the slowest pace lies within APART of the
    fastest."""
    pairs = [(p, x) for p, x in zip(paces, speedups) if _positive(p) and _positive(x)]
    if len(pairs) < 2:
        return None
    top = min(p for p, _ in pairs)
    if max(p for p, _ in pairs) < APART * top:
        return None
    fast = [(p, x) for p, x in pairs if p <= FASTEST * top]
    slow = [(p, x) for p, x in pairs if p > FASTEST * top]

    def part(group: list[tuple[float, float]]) -> tuple[str, str]:
        who = "the one" if len(group) == 1 else f"the {len(group)}"
        return f"{who} at {_span([p for p, _ in group], '{:.0f}')} us", _span([x for _, x in group], "{:.2f}x")
    (fast_who, fast_read), (slow_who, slow_read) = part(fast), part(slow)
    return (f"its processes ran at different host paces (a fixed piece of Python before each round took "
            f"{_span([p for p, _ in pairs], '{:.0f}')} us, lower is faster): {fast_who} read {fast_read}, "
            f"{slow_who} {slow_read}")


def slower_than(paces: list[float], fast: float | None, brief: bool = False) -> str | None:
    """Where every one of a configuration's paced processes ran at APART or more of the pace its device runs at when
    its host runs fast (`fast`: lab.spreads.device_paces), say so: two processes at one slow pace agree with each
    other, and their interval cannot know the host runs faster at other times. None otherwise. `brief`: after
    `across`, which has said the paces already."""
    paces = [p for p in paces if _positive(p)]
    if not paces or not _positive(fast) or min(paces) < APART * fast:
        return None
    if brief:
        return (f"all of them slower than this device's host runs when it runs fast ({fast:.0f} us in its fastest tenth "
                "of processes): a host-bound call's speedup can read otherwise there")
    return (f"its processes all ran slower than this device's host runs when it runs fast (a fixed piece of Python took "
            f"{_span(paces, '{:.0f}')} us against {fast:.0f} us in its fastest tenth of processes): a host-bound "
            "call's speedup can read otherwise there")


def at_fast_words(spread) -> str | None:
    """What a configuration's processes read when its host ran fast (lab.spreads.at_fast_pace: a Spread with their
    count, and the mean and variance of their log speedups), in words for an answer whose processes all ran slower:
    "its 6 processes at that pace, over every sweep of it, read 0.84x: a process at that pace reads 0.80x to 0.88x, 95
    times in 100" (their geometric mean, and where the next process at that pace should read: Student's t over them
    with sqrt(1 + 1/n) of their spread, taking them as independent draws of one configuration, whatever their sweeps);
    with two, their geometric mean alone (one degree of freedom gives a range of no use). None with fewer than two."""
    n, var, mean = (getattr(spread, k, None) for k in ("processes", "var", "mean"))
    if not (_number(n) and n >= 2 and _number(var) and var >= 0 and _number(mean)):
        return None
    said = f"its {n:.0f} processes at that pace, over every sweep of it, read {math.exp(mean):.2f}x"
    if n < 3:
        return said + " (their geometric mean)"
    half = t975(n - 1) * math.sqrt(var * (1 + 1 / n))
    return said + (f": a process at that pace reads {math.exp(mean - half):.2f}x to {math.exp(mean + half):.2f}x, 95 "
                   "times in 100")


def _span(xs: list[float], fmt: str) -> str:
    lo, hi = fmt.format(min(xs)), fmt.format(max(xs))
    return lo if lo == hi else f"{lo}-{hi}"


def _within(xs: list[float]):
    """i -> the squared scatter of xs[:i] and xs[i:] about their own means, from running sums (xs sorted)."""
    s1, s2 = [0.0], [0.0]
    for x in xs:
        s1.append(s1[-1] + x)
        s2.append(s2[-1] + x * x)
    n = len(xs)

    def scatter(i: int) -> float:
        left = s2[i] - s1[i] ** 2 / i
        right = (s2[n] - s2[i]) - (s1[n] - s1[i]) ** 2 / (n - i)
        return left + right
    return scatter


def _positive(x) -> bool:
    return _number(x) and x > 0


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _blocks(xs) -> bool:
    return isinstance(xs, list) and bool(xs) and all(_positive(x) for x in xs)
