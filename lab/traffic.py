"""Traffic replay: a job can replay a stream of calls whose size (the model's size dimension: the batch,
or seq_len) varies call to call, eagerly and compiled, in the same order, and answer "compiled total / eager total
under this traffic", recompiles and the recompile limit's eager fallback included.

No torch here. A stream is written as one of:
  uniform:A..B          sizes drawn uniformly from A..B (one seeded draw: every job of a sweep replays the same calls)
  chat:A..B             lengths shaped like a chat log's: log-normal, most short, a long tail up to B
  8, 16, 32             the sizes in this order (one a line, or comma separated: a pasted log); repeated to fill calls
  128: 40               a histogram, one `size: count` a line: that many calls of that size, in a seeded order
                        (with a number of calls: that many, drawn in its proportions)
with a number of calls, and optionally a bucket K: the compiled side pads each size up to a multiple of K (fewer
graphs, more compute); the eager side runs each size as it is."""
from __future__ import annotations

import math
import random
import re
from typing import Mapping

from lab.checks import SpecError, integer

MAX_CALLS = 2000
DEFAULT_CALLS = 200
SEED = 29
_RANGE = re.compile(r"(uniform|chat):\s*([0-9]{1,9})\s*\.\.\s*([0-9]{1,9})")
_DIGITS = re.compile(r"[0-9]{1,9}")  # ASCII digits, a sensible count of them ("²" is a digit to str.isdigit)


def draw(text: str, calls: int | None = None, max_size: int = 1 << 24) -> tuple[str, list[int]]:
    """(the stream's name in words, its sizes) from what a user typed or the file they named; a SpecError names the
    field `traffic` and where in the text the problem is (line, item), never the text itself: it may be a file's
    content that was never a stream (a secret, an environment)."""
    text = text or ""
    if not text.strip():
        raise SpecError("traffic", "give a stream: uniform:1..512, chat:1..512, sizes (8, 16, 32) or size: count lines")
    n = _calls(calls)
    m = _RANGE.fullmatch(text.strip().lower())
    if m:
        kind, lo, hi = m.group(1), int(m.group(2)), int(m.group(3))
        if not 1 <= lo <= hi <= max_size:
            raise SpecError("traffic", f"{kind}:A..B: the range must run from 1 up, low to high (at most {max_size:,})")
        rng = random.Random(SEED)
        n = n or DEFAULT_CALLS
        if kind == "uniform":
            return f"uniform {lo}..{hi}", [rng.randint(lo, hi) for _ in range(n)]
        median, spread = max(lo, (lo + hi) / 6), 0.8  # a chat log: most turns short, a few near the limit
        return f"chat-like {lo}..{hi}", [min(hi, max(lo, round(math.exp(rng.gauss(math.log(median), spread)))))
                                         for _ in range(n)]
    lines = [(number, part.strip()) for number, line in enumerate(text.split("\n"), 1)
             for part in line.split(";") if part.strip()]  # numbered as the file's lines are
    many = len({number for number, _ in lines}) > 1
    if all(":" in part for _, part in lines):
        return _histogram(lines, n, max_size, many)
    sizes = []
    for number, part in lines:
        for item, word in enumerate((w for w in re.split(r"[,\s]+", part) if w), 1):
            where = f"line {number}, item {item}" if many else f"item {item}"
            if not _DIGITS.fullmatch(word):
                raise SpecError("traffic", f"{where} is not a size: give uniform:A..B, chat:A..B, sizes "
                                           "(8, 16, 32) or size: count lines")
            sizes.append(_size(int(word), max_size, where))
    n = n or len(sizes)
    if n > MAX_CALLS:
        raise SpecError("traffic", f"{n:,} calls: at most {MAX_CALLS:,}")
    return f"{len(sizes)} sizes as given", [sizes[i % len(sizes)] for i in range(n)]


def _histogram(lines: list[tuple[int, str]], n: int | None, max_size: int, many: bool) -> tuple[str, list[int]]:
    """`size: count` lines (numbered): that many calls of each size, in one seeded order; with `n` calls, `n` drawn
    in those proportions instead."""
    weights: dict[int, int] = {}
    for number, line in lines:
        where = f"line {number}" if many else "the histogram"
        size, _, count = (x.strip() for x in line.partition(":"))
        if not (_DIGITS.fullmatch(size) and _DIGITS.fullmatch(count)):
            raise SpecError("traffic", f"line {number} is not a histogram line (`size: count`)" if many else
                            "it is not a histogram (`size: count` lines) nor a stream (uniform:A..B, chat:A..B, sizes)")
        if int(count):
            weights[_size(int(size), max_size, where)] = weights.get(int(size), 0) + int(count)
    total = sum(weights.values())
    if not total:
        raise SpecError("traffic", "the histogram's counts are all zero")
    rng = random.Random(SEED)
    if n is None:
        if total > MAX_CALLS:
            raise SpecError("traffic", f"the histogram counts {total:,} calls: at most {MAX_CALLS:,} (or give Calls, "
                                       "to draw that many in its proportions)")
        calls = [size for size, count in weights.items() for _ in range(count)]
        rng.shuffle(calls)
        return f"histogram of {len(weights)} sizes", calls
    return f"histogram of {len(weights)} sizes", rng.choices(list(weights), list(weights.values()), k=n)


def _size(v: int, max_size: int, where: str) -> int:
    if not 1 <= v <= max_size:
        raise SpecError("traffic", f"{where}: a size must be within 1..{max_size:,}")
    return v


def _calls(calls) -> int | None:
    if calls in (None, "", 0):
        return None
    n = integer(calls, "calls")
    if not 1 <= n <= MAX_CALLS:
        raise SpecError("calls", f"must be between 1 and {MAX_CALLS:,}, got {n:,}")
    return n


def check(value, max_size: int = 1 << 24) -> dict:
    """A spec's `traffic` field: {} (no replay) or {"source": words, "sizes": [...], "bucket": K or None}."""
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError("traffic", "expected {source, sizes, bucket}")
    unknown = set(value) - {"source", "sizes", "bucket"}
    if unknown:
        raise SpecError(f"traffic.{sorted(unknown)[0]}", "unknown field (it takes source, sizes, bucket)")
    sizes = value.get("sizes")
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (list, tuple)) or not sizes:
        raise SpecError("traffic.sizes", "expected a list of sizes")
    if len(sizes) > MAX_CALLS:
        raise SpecError("traffic.sizes", f"{len(sizes):,} calls: at most {MAX_CALLS:,}")
    sizes = [_size(integer(v, "traffic.sizes"), max_size, f"call {i}") for i, v in enumerate(sizes, 1)]
    bucket = value.get("bucket")
    if bucket not in (None, 0):
        bucket = integer(bucket, "traffic.bucket")
        if not 1 <= bucket <= max_size:
            raise SpecError("traffic.bucket", f"must be a positive size, got {bucket}")
    source = str(value.get("source") or f"{len(sizes)} sizes as given")[:80]
    return {"source": source, "sizes": sizes, "bucket": bucket or None}


def make(text: str, calls=None, bucket=None) -> dict:
    """A spec's `traffic` from what a user typed (the CLI's --traffic/--calls/--bucket, the form's fields)."""
    source, sizes = draw(text, calls)
    if bucket not in (None, "", 0):
        bucket = integer(bucket, "bucket")
        if bucket < 1:
            raise SpecError("bucket", f"must be a positive size, got {bucket}")
    return check({"source": source, "sizes": sizes, "bucket": bucket or None})


def padded(size: int, bucket: int | None) -> int:
    """The size the compiled side runs: `size` rounded up to a multiple of `bucket` (None: as it is)."""
    return size if not bucket else -(-size // bucket) * bucket


def words(traffic: Mapping) -> str:
    """A stream in a line: "200 calls, uniform 1..512, padded to multiples of 64"."""
    if not isinstance(traffic, Mapping) or not traffic:  # a hand-made row may hold anything: words, not a crash
        return ""
    sizes = traffic.get("sizes")
    pad = f", padded to multiples of {traffic['bucket']}" if traffic.get("bucket") else ""
    return f"{len(sizes) if isinstance(sizes, list) else '?'} calls, {traffic.get('source') or 'sizes as given'}{pad}"


def summarize(calls: list[dict]) -> dict:
    """A replayed stream's answer from its calls ({size, padded, eager_s, compiled_s, compiles, recompiles,
    limit_hit, fallback}): each side's total (the compiled side's compiles and recompiles included), their ratio, when the
    compiled stream had paid for its compiles (break_even_call: the first call from which its running total stays
    at or under eager's; None: never within the stream), recompiles, limit hits and calls served by the eager
    fallback. A call that failed on either side ends the comparison there (`complete` False)."""
    done = [c for c in calls if c.get("eager_s") is not None and c.get("compiled_s") is not None]
    complete = len(done) == len(calls)
    done = calls[:next((i for i, c in enumerate(calls) if c not in done), len(calls))]
    eager = sum(c["eager_s"] for c in done)
    compiled = sum(c["compiled_s"] for c in done)
    even, run_e, run_c = None, 0.0, 0.0
    for i, c in enumerate(done):
        run_e += c["eager_s"]
        run_c += c["compiled_s"]
        if run_c <= run_e:
            even = i if even is None else even
        else:
            even = None
    return {"calls": len(calls), "calls_compared": len(done), "complete": complete,
            "eager_total_s": eager, "compiled_total_s": compiled,
            "ratio": compiled / eager if eager > 0 and done else None,
            "break_even_call": even,
            "compiles": sum(c.get("compiles", 0) for c in calls),
            "recompiles": sum(c.get("recompiles", 0) for c in calls),
            "limit_hits": sum(1 for c in calls if c.get("limit_hit")),
            "fallback_calls": sum(1 for c in calls if c.get("fallback")),
            "distinct_sizes": len({c["size"] for c in calls}),
            "distinct_padded": len({c["padded"] for c in calls})}
