"""The racing search behind `runner advise` and the Submit page's "Find the best settings": which compile settings
are still in contention, when one is separable from the rest at 95%, and when compiling cannot pay off for the
caller's number of calls. Pure: the candidates' answers (lab.answer's numbers and interval) come in, a Step goes
out; db.advice stores the search and queues what a Step asks for.

The race. Candidates are screened in stages, one process each (lab.advise_plan: the simpler and likely-good ones
first, a dynamic or scope variant only where the caller's calls or traffic can reward it, where calls count a scout
alone first; lab.advise_screen leaves out those that cannot win). After each round a candidate is dropped when it
failed, when even its interval's top cannot pay off for the caller (below eager for N calls, or slower), or when its
interval's top lies below the leader's bottom. Once every stage has run, the leader is recommended when it is the only
one left and its interval's bottom is above eager's (the caller gains, at 95%); candidates equal to it within the
measurement, or that more processes could not tell from it, stop racing (the one cheapest to compile is chosen;
over the best measured only where it compiles clearly faster: lab.advise_screen.indifferent); the others get one more
process each, while the budget and the process limit allow. Compiling is not worth it ("don't compile") when every
candidate is dropped, when the lightest compile measured cannot be repaid by the caller's calls, or when the search
ends with the leader not separable from eager.

What "for the caller" means: with no number of calls, the steady-state latency speedup (the answer's number). With
N calls, the time of the caller's N calls, eager against compiled, first calls included:
  (E1 + B) / (C1 + B / s)    E1, C1: eager's and the cold compiled first call; B: eager's seconds for the other
                             N - 1 calls; s: the steady-state speedup
which rises with s, so the interval of s maps onto it end to end. The compile cost is taken as measured (one cold
first call per candidate: later processes compile from its cache), not as a spread. With a traffic stream, s is the
stream's own ratio (eager total / compiled total, recompiles included, one per process, with the device's spread
between processes: lab.interval) and B its eager total.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from lab import advise_plan as plan
from lab import advise_screen as screen
from lab.advise_core import (  # noqa: F401 (re-exported: lab.advise is where callers find them)
    DEFAULT_BUDGET_S,
    FULL_PROCESSES,
    MAX_PROCESSES,
    REPEAT_SHARE,
    SETTINGS,
    Drop,
    Measured,
    Outcome,
    Search,
    Step,
    for_caller,
    interval_words,
    payoff,
    settings_words,
    varying,
)
from lab.axes import folded_mode
from lab.checks import SpecError, parse_dynamic


def parse_budget(text: str) -> int:
    """'10m', '600', '600s', '1h', '1h30m' -> seconds."""
    t = (text or "").strip().lower()
    parts = re.fullmatch(r"(?:([0-9]{1,4})h)?\s*(?:([0-9]{1,5})m)?\s*(?:([0-9]{1,7})s?)?", t)
    if not t or not parts or not any(parts.groups()):
        raise SpecError("budget", f"expected a duration like 10m, 600s or 1h, got {text[:20]!r}")
    h, m, s = (int(g or 0) for g in parts.groups())
    return h * 3600 + m * 60 + s


def candidates(device: str, modes: Iterable[str], dynamics: Iterable, scopes: Iterable[str], blocks: bool,
               backends: Iterable[str] = ("inductor",)) -> list[dict]:
    """The settings to race, each once: modes apply to inductor (other backends run with mode default), the modes
    that are one compile on this device are one candidate (lab.axes.folded_mode), scope blocks only where the model
    names its blocks."""
    out: list[dict] = []
    for backend in backends:
        for mode in (modes if backend == "inductor" else ("default",)):
            for dynamic in dynamics:
                for scope in scopes:
                    if scope == "blocks" and not blocks:
                        continue
                    c = {"backend": backend, "mode": folded_mode(mode, device), "dynamic": parse_dynamic(dynamic),
                         "scope": scope}
                    if c not in out:
                        out.append(c)
    return out


DEFAULT_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
DEFAULT_DYNAMICS = ("false", "true")  # static shapes, and shapes marked dynamic from the first call
DEFAULT_SCOPES = ("model", "blocks")


def search_request(fields: Mapping, blocks: bool) -> tuple[dict, list[str]]:
    """A search's sweep request (lab.sweep.SweepRequest's fields) from what the person gave: the candidate lists they
    left out filled with every value that applies (every mode, dynamic false and true, scope model and blocks where
    the model names its blocks), one process per candidate (the search adds more); notes on what was left out."""
    out, notes = dict(fields), []
    out.setdefault("modes", list(DEFAULT_MODES))
    out.setdefault("dynamics", list(DEFAULT_DYNAMICS))
    scopes = list(out.get("scopes") or DEFAULT_SCOPES)
    if "blocks" in scopes and not blocks:
        scopes.remove("blocks")
        if "scopes" in fields:
            notes.append("scope blocks left out: the model names no repeated blocks (BLOCKS)")
    out["scopes"] = scopes or ["model"]
    out["process_repeats"] = 1
    return out, notes


def shown(m: Measured) -> str:
    """'1.42x [1.36, 1.48]' for the caller, and what it comes from where first calls count."""
    p = payoff(m)
    if p is None:
        return "no speedup measured"
    text = interval_words(p)
    if m.base_s is not None and m.cold_first_s is not None:
        text += f" over the caller's workload ({m.speedup:.2f}x per call, {m.cold_first_s:.1f} s to compile)"
    return text


def cannot_pay(m: Measured, calls: int | None) -> str:
    """Why m's interval's top stays below eager's, in words."""
    p = payoff(m)
    if m.base_s is None or m.cold_first_s is None or (m.high or 0) <= 1:
        return "slower than eager: its whole interval lies below 1x"
    saved = m.eager_ms * (1 - 1 / m.high) if m.eager_ms else None
    per_call = f", saves at most {saved:.3g} ms a call" if saved is not None else ""
    over = f"{calls:,} calls" if calls else "this traffic"
    be = f" (pays off after {m.break_even:,} calls)" if m.break_even else ""
    return (f"cannot pay off in {over}: {m.cold_first_s:.1f} s to compile{per_call}{be}; at best "
            f"{p[2]:.2f}x for the caller")


def decide(measured: Mapping[str, Measured], out: Mapping[str, str] | set[str], search: Search,
           spent_s: float) -> Step:
    """The decision after a round: `measured`, every candidate so far (those not run yet with started False);
    `out`, those dropped before (a mapping to their Drop's kind, or a set); `spent_s`, the device-seconds spent."""
    kinds = dict(out) if isinstance(out, Mapping) else dict.fromkeys(out, "")
    live = {k: m for k, m in measured.items() if k not in kinds and m.started}
    waiting = {k: m for k, m in measured.items() if k not in kinds and not m.started}
    dropped: list[Drop] = []
    for k, m in list(live.items()):
        if payoff(m) is None:
            why = f"did not succeed: {m.error}" if m.failed else "no speedup measured"
            dropped.append(Drop(k, why, "failed"))
        elif payoff(m)[2] < 1:
            pays = m.base_s is not None and m.cold_first_s is not None and (m.high or 0) > 1
            dropped.append(Drop(k, cannot_pay(m, search.calls), "cannot_pay" if pays else "slower"))
    for d in dropped:
        live.pop(d.key)
    in_calls = f" in {search.calls:,} calls" if search.calls else ""
    if waiting and not live and (floor := screen.compile_floor(measured, search)):
        dropped += [Drop(k, f"not run: {floor}", "unrun") for k in waiting]
        return Step(Outcome.DONT_COMPILE, None, dropped=tuple(dropped),
                    why=f"no setting pays off for the caller{in_calls}: {floor}")
    leader, lead = None, None
    if live:
        leader = max(live, key=lambda k: (payoff(live[k])[0], k))
        lead = payoff(live[leader])
        for k, m in list(live.items()):
            if k != leader and payoff(m)[2] < lead[1]:
                dropped.append(Drop(k, f"below the leader: {shown(m)} against {lead[0]:.2f}x [{lead[1]:.2f}, "
                                       f"{lead[2]:.2f}]", "below"))
                live.pop(k)
    if waiting and live:
        for d in screen.settled(live, leader, search):
            dropped.append(d)
            live.pop(d.key)
    if waiting:
        gone = kinds | {d.key: d.kind for d in dropped}
        for d in screen.cannot_win(measured, waiting, gone, search, lead, live.get(leader)):
            dropped.append(d)
            waiting.pop(d.key)
    if waiting:
        start = screen.next_stage(measured, waiting, search)
        cost = sum(_like(measured, measured[k]) for k in start)  # an autotuning stage priced as autotuning
        if spent_s + cost <= search.budget_s:
            return Step(Outcome.CONTINUE, leader, start=start, dropped=tuple(dropped),
                        why=f"screening: {len(start)} more setting{'s' * (len(start) != 1)}, one process each")
        stop = f"the budget: {spent_s:,.0f} of {search.budget_s:,} s spent, the next settings would take about " \
               f"{cost:,.0f} s"
        dropped += [Drop(k, f"not run: {stop}", "unrun") for k in waiting]
        if live:
            return undecided(leader, live, dropped, stop)
        # what was run does not pay off; what was not run is said as not run, not judged
        return Step(Outcome.DONT_COMPILE, None, dropped=tuple(dropped),
                    why=f"no setting that ran pays off for the caller{in_calls}; {len(waiting)} not run: {stop}")
    if not live:
        return Step(Outcome.DONT_COMPILE, None, dropped=tuple(dropped),
                    why=f"no setting pays off for the caller{in_calls}")
    zone = screen.indifferent(live, leader, search)
    if zone is not None:
        leader, gone, zone_why = zone
        dropped += gone
        live = {leader: live[leader]}
        lead = payoff(live[leader])
    if len(live) == 1 and lead[1] > 1:
        tied = _still_tied(measured, {**kinds, **{d.key: d.kind for d in dropped}}, leader, search)
        n, mine = len(tied), measured[leader].cold_first_s
        slower = mine is not None and all(measured[k].cold_first_s is not None and measured[k].cold_first_s >= mine
                                          for k in tied)
        why = ("separable from every other setting and from eager at 95%" if not n else
               f"separable from eager at 95%; {n} other setting{'s' * (n != 1)} equal to it within the "
               f"measurement or not separable from it{', and slower to compile,' if slower else ''} "
               f"{'was' if n == 1 else 'were'} left out of the race")
        return Step(Outcome.RECOMMEND, leader, dropped=tuple(dropped),
                    why=f"{zone_why}; separable from eager at 95%" if zone is not None else why)
    more = tuple(sorted(live, key=lambda k: (k != leader, k)))
    if len(live) == 1 and (near := plan.futile(lead, live[leader].processes, (1.0, 1.0, 1.0), search.max_processes,
                                               search.max_processes)):
        return undecided(leader, live, dropped, f"a race that more processes would not settle: {near[0]:.0%} from "
                                                f"eager, its interval still about ±{near[1]:.0%} at "
                                                f"{search.max_processes} processes")
    if any(live[k].processes >= search.max_processes for k in more):
        return undecided(leader, live, dropped, f"{search.max_processes} processes each, the search's limit")
    cost = round_cost(measured, more)
    if spent_s + cost > search.budget_s:
        return undecided(leader, live, dropped, f"the budget: {spent_s:,.0f} of {search.budget_s:,} s spent, another "
                                                 f"round would take about {cost:,.0f} s")
    why = ("not yet separable from eager" if len(live) == 1
           else f"{len(live)} settings still overlap the leader's interval")
    if zone is not None:
        why = f"{zone_why}; {why}"
    return Step(Outcome.CONTINUE, leader, more=more, dropped=tuple(dropped), why=why)


def _still_tied(measured: Mapping[str, Measured], kinds: Mapping[str, str], leader: str, search: Search) -> list[str]:
    """The settings settled as equal (or not separable) that are so against this leader too: one settled against
    an earlier leader may lie well below a later one."""
    lead, n_lead = payoff(measured[leader]), measured[leader].processes
    out = []
    for key, kind in kinds.items():
        p = payoff(measured[key]) if kind in ("equal", "futile") and key in measured else None
        if p is not None and (plan.equal(p, lead) or
                              plan.futile(p, measured[key].processes, lead, n_lead, search.max_processes)):
            out.append(key)
    return out


def undecided(leader: str, live: Mapping[str, Measured], dropped: list[Drop], stop: str) -> Step:
    lead = payoff(live[leader])
    if lead[1] <= 1:  # the best left is not separable from eager: nothing says compiling gains the caller anything
        return Step(Outcome.DONT_COMPILE, leader, dropped=tuple(dropped),
                    why=f"stopped at {stop}; the best setting is not separable from eager "
                        f"({lead[0]:.2f}x [{lead[1]:.2f}, {lead[2]:.2f}])")
    return Step(Outcome.BUDGET, leader, dropped=tuple(dropped),
                why=f"stopped at {stop}; {len(live)} settings still in contention: the leader is the best measured, "
                    "not separable from them at 95%")


def repeat_share(measured: Mapping[str, Measured]) -> float:
    """A later process's cost against its candidate's first, as this search measured it (else REPEAT_SHARE)."""
    shares = [sum(m.later_s) / len(m.later_s) / m.first_s for m in measured.values() if m.later_s and m.first_s]
    return sorted(shares)[len(shares) // 2] if shares else REPEAT_SHARE


def round_cost(measured: Mapping[str, Measured], keys: Iterable[str]) -> float:
    """About what one more process of each of these candidates costs, in device-seconds."""
    share = repeat_share(measured)
    total = 0.0
    for k in keys:
        m = measured[k]
        total += sum(m.later_s) / len(m.later_s) if m.later_s else (m.first_s or 0.0) * share
    return total


def full_sweep_cost(measured: Mapping[str, Measured], processes: int = FULL_PROCESSES) -> float:
    """What a plain sweep of the same candidates, `processes` each, would have cost: each candidate's first process
    as measured, its later ones as measured where it ran them, else at the search's repeat share."""
    share = repeat_share(measured)
    total = 0.0
    for m in measured.values():
        if not m.started:
            m = replace(m, first_s=_like(measured, m))
        later = list(m.later_s[:processes - 1])
        mean = sum(later) / len(later) if later else (m.first_s or 0.0) * share
        total += (m.first_s or 0.0) + sum(later) + mean * (processes - 1 - len(later))
    return total


def _like(measured: Mapping[str, Measured], m: Measured) -> float:
    """A candidate not run, priced as the first processes of those most like it that ran: its mode's, else (an
    autotuning mode, whose compile can be minutes) the other autotuning mode's, else a typical one's (the median)."""
    ran = [x for x in measured.values() if x.started and x.first_s]
    mode = m.settings.get("mode")
    for same in ([x for x in ran if x.settings.get("mode") == mode],
                 [x for x in ran if mode in plan.AUTOTUNES and x.settings.get("mode") in plan.AUTOTUNES], ran):
        if same:
            firsts = sorted(x.first_s for x in same)
            return firsts[len(firsts) // 2]
    return 0.0


@dataclass(frozen=True)
class Round:
    """One stored decision: the round it followed and the Step."""

    round: int
    step: Step
    spent_s: float = 0.0
    at: str | None = None
