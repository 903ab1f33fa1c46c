"""A configuration's answer in words (lab.answer's verdict column): its number and interval, where a re-run reads,
what widens it, and what else the reader must know of its runs. A row is lab.answer.AnswerRow, typed here by the
fields read (Row; not imported: lab.answer imports this). No pandas, torch, streamlit or SQLAlchemy."""
from __future__ import annotations

from typing import Iterable, Protocol

from lab.axes import fold_note
from lab.break_even import range_words
from lab.interval import Interval
from lab.wording import count


class Row(Protocol):
    """What a verdict reads of its row: lab.answer.AnswerRow has these fields."""
    runs: int
    noisy_runs: int
    failed_runs: int
    noisy: bool
    noise_note: str | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    rerun_low: float | None
    rerun_high: float | None
    break_even_calls: int | None
    break_even_low: int | None
    break_even_high: int | None
    first_call_cold_s: float | None
    first_call_cold_low: float | None
    eager_ms: float | None
    compiled_ms: float | None


class Said(str):
    """A verdict: its whole text as a str (the CSV, JSON, Markdown and every test read it so), knowing where its notes
    begin (`notes_at`: the parenthetical after its answer, "(3 processes; ...)"), so a page can draw them quieter
    than the answer itself."""

    notes_at: int

    def __new__(cls, text: str, notes_at: int | None = None) -> "Said":
        said = super().__new__(cls, text)
        said.notes_at = len(text) if notes_at is None else max(0, min(int(notes_at), len(text)))
        return said

    def __reduce__(self):  # kept answers are pickled: the position travels with the text
        return Said, (str(self), self.notes_at)

    @property
    def parts(self) -> tuple[str, str]:
        """(the answer, its notes): "" for notes where it has none."""
        return str(self)[:self.notes_at], str(self)[self.notes_at:]


def end(v: float) -> str:
    """An interval's end to 2 decimals, or as many more as keep it off 1.00 where it is not 1: "slower: 0.95x
    [0.91, 1.00]" read as a contradiction where the end was 0.9996 (another view of the same jobs said "not
    separable" for 1.0003)."""
    text = f"{v:.2f}"
    for digits in (3, 4, 5):
        if text != "1." + "0" * (digits - 1) or v == 1:
            break
        text = f"{v:.{digits}f}"
    return text


def verdict(row: Row, interval: Interval | None = None, round_spread: float | None = None, error: str | None = None,
            device: str | None = None, folded: Iterable[str] = (), moved: str | None = None,
            paced: str | None = None) -> Said:
    """The row in words: "1.42x [1.38, 1.46], a re-run reads 1.33x to 1.52x; pays off after 1,900 calls", "not
    separable from eager: ...", "slower: ..."; a wide interval says how wide and why ("1.30x, but anywhere from 1.10x
    to 1.50x: the rounds scatter 12%"). `error`: its runs' first error (or status), `device`, `folded`: the modes its
    runs were stored as and are counted under this one's (lab.axes.fold_note); `moved`: which side's calls moved
    between its processes (process_notes), said where their disagreement is what widens it; `paced`: where its processes
    ran at different host paces, what each pace's read (lab.host_pace.across)."""
    if row.failed_runs and not (row.runs or row.noisy_runs):
        return Said(f"did not succeed ({row.failed_runs} run{'s' * (row.failed_runs > 1)}): {error}")
    s, lo, hi = row.speedup, row.speedup_ci_low, row.speedup_ci_high
    if s is None:
        return Said("no latency measured (timed before caller latency was: timing protocol 1)")
    if interval is not None and interval.wide:
        shown = f"{s:.2f}x, but anywhere from {end(lo)}x to {end(hi)}x: {interval.why_wide(round_spread, moved)}"
    else:
        shown = f"{s:.2f}x [{end(lo)}, {end(hi)}]"
    if row.rerun_low is not None and row.rerun_high is not None:
        shown += f", a re-run reads {row.rerun_low:.2f}x to {row.rerun_high:.2f}x"
    if lo <= 1 <= hi:
        text = f"not separable from eager: {shown}"
    elif lo > 1:
        be = row.break_even_calls
        text = shown + (f"; pays off after {be:,} calls{paid_range(row)}" if be is not None else "; faster per call")
    else:
        text = f"slower: {shown}"
    extra = [f"{row.runs} processes"] if row.runs > 1 else []
    if interval is not None and interval.processes == 1 and (interval.spread_processes or not interval.wide):
        held = (f"the spread of its {interval.spread_processes} processes on this device, over every sweep of it"
                if interval.spread_processes > 1 else "this device's spread between processes")
        extra += ["one process" if interval.wide else f"one process: its interval holds {held}"]
    if row.noisy:
        extra += [f"every run was disturbed, so these are their numbers: {row.noise_note}"]
    elif row.noisy_runs:
        extra += [f"{count(row.noisy_runs, 'disturbed run')} left out"]
    extra += [f"{row.failed_runs} failed"] if row.failed_runs else []
    extra += [f"{fold_note(m, device)}: its runs are counted here" for m in sorted(folded)]
    apart = medians_apart(row)
    if apart:
        extra += [apart]
    if paced:
        extra += [paced]
    return Said(text + (f" ({'; '.join(extra)})" if extra else ""), notes_at=len(text))


def paid_range(row: Row) -> str:
    """" (between 11,000 and 27,000 at the ends of its speedup's and cold first call's intervals)", where the row has a
    break-even range (lab.break_even.break_even_range), its ends to two significant digits, naming the intervals it
    took: the speedup's alone where the cold first call has none (too few processes compiled it cold: its one
    number is taken as it is). "" where it has none or both ends read the same."""
    which = ("speedup's and cold first call's intervals" if row.first_call_cold_s is not None
             and row.first_call_cold_low is not None else "speedup's interval")
    return range_words(row.break_even_low, row.break_even_high, which)


APART = 1.25  # how far the medians' ratio may lie outside the interval before the row says so


def medians_apart(row: Row) -> str | None:
    """Where the eager and compiled ms columns (each side's median call over its rounds) read a ratio far outside
    the speedup's interval (each round's paired ratio, lab.interval), say so: the calls' times differ from round to
    round (a compiled side that alternates between a fast and a slow graph, say), and the two figures answer different
    questions. Nothing is hidden: both stay, with why they disagree."""
    e, c, lo, hi = row.eager_ms, row.compiled_ms, row.speedup_ci_low, row.speedup_ci_high
    if not (e and c and lo and hi) or e <= 0 or c <= 0:
        return None
    ratio = e / c
    if lo / APART <= ratio <= hi * APART:
        return None
    return (f"the median calls read {ratio:.2f}x ({e:.4g} ms eager, {c:.4g} ms compiled): the calls' times change "
            "from round to round, while the speedup pairs each round's calls; the Repeats tab shows the rounds")
