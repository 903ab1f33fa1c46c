"""The screening half of a search's decision (lab.advise.decide): which candidates not run yet cannot win and are left
out (with why), which stage runs next, when compiling cannot pay off before every candidate has run, and where a
race between candidates equal within the measurement stops (lab.advise_plan says the rules)."""
from __future__ import annotations

import math
from typing import Mapping

from lab import advise_plan as plan
from lab.advise_core import Drop, Measured, Search, interval_words, payoff, settings_words, varying


def compile_floor(measured: Mapping[str, Measured], search: Search) -> str | None:
    """Why no candidate, run or not, can pay off for the caller, or None: the lightest compile measured so far is
    more than ten times the caller's whole eager workload, and a setting not run is taken to compile in at least a
    tenth of it (then to run in no time)."""
    known = [m for m in measured.values() if m.started and m.cold_first_s and m.base_s is not None]
    if not known:
        return None
    light = min(known, key=lambda m: m.cold_first_s)
    eager_total = (light.eager_first_s or 0.0) + light.base_s
    if eager_total >= plan.COMPILE_FLOOR * light.cold_first_s:
        return None
    over = f"the caller's {search.calls:,} calls" if search.calls else "the traffic"
    return (f"the lightest setting measured, {settings_words(light.settings)}, took {light.cold_first_s:.1f} s to "
            f"compile; eager runs {over} in {eager_total:.3g} s, so even a setting compiling ten times faster and "
            "then running in no time would not pay off")


def cannot_win(measured: Mapping[str, Measured], waiting: Mapping[str, Measured], gone: Mapping[str, str],
               search: Search, lead: tuple[float, float, float] | None, leader: Measured | None = None) -> list[Drop]:
    """Candidates not run yet that are left out: at steady state, a variant once its base ran or was left out (it
    cannot run faster than its base at one batch size; where the base failed, or recompiled because shapes change
    inside the model, it runs); the fourth of the autotuning x CUDA graphs square, predicted from the other three,
    where it would not beat the leader by more than the zone (or would tie it without compiling faster); an
    autotuning mode whose compile alone, at least its sibling's, leaves it below the leader for the caller."""
    base_of = plan.bases({k: m.settings for k, m in measured.items()})
    out: list[Drop] = []
    gone = dict(gone)

    def leave(d: Drop) -> None:
        out.append(d)
        gone[d.key] = d.kind  # a variant read after its base sees the base left out

    steady = not search.traffic and search.calls is None
    for key, w in sorted(waiting.items(), key=lambda kv: (plan.rank(kv[1].settings), kv[0])):  # bases first
        base = base_of[key]
        if steady and base != key and gone.get(base) == "unrun":
            leave(Drop(key, "not run: at one batch size and steady state it cannot beat its base setting, "
                       f"{settings_words(measured[base].settings)}, which was left out itself", "unrun"))
            continue
        if (steady and base != key and measured[base].started and gone.get(base) != "failed"
                and not measured[base].recompiles):
            b = measured[base]
            leave(Drop(key, f"not run: at one batch size and steady state it cannot beat its base setting, "
                       f"{settings_words(b.settings)} ({interval_words(payoff(b), 'no speedup measured')} when this "
                       "was decided): "
                       "marking shapes dynamic or compiling block by block changes how much is compiled, not how "
                       "fast the kernels run; give a number of calls to weigh its compile, or traffic to judge "
                       "varying sizes", "unrun"))
            continue
        guess = _square(measured, w)
        ref = lead or (1.0, 1.0, 1.0)  # with none left in contention, it has to beat eager
        why = guess and _cannot_beat(guess[0], guess[1], guess[3], ref, leader, search.max_processes)
        if why:
            against = f"the leader's {lead[0]:.2f}x" if lead else "eager"
            if why != "below":  # a tie, or a difference the race could not settle, that would compile no faster
                cold = f" ({guess[1]:.1f} s against {leader.cold_first_s:.1f} s cold)" \
                    if guess[1] is not None and leader is not None and leader.cold_first_s is not None else ""
                why = f"{why}, and it would compile no faster{cold}"
            leave(Drop(key, f"not run: {guess[2]}, against {against}" + ("" if why == "below" else f": {why}"),
                       "unrun"))
            continue
        bound = _autotune_bound(measured, w)
        if bound is not None and lead is not None and bound[0] < lead[1]:
            leave(Drop(key, f"not run: it compiles at least as long as {settings_words(bound[1].settings)} "
                       f"({bound[1].cold_first_s:.1f} s cold), so for the caller it could reach at most "
                       f"{bound[0]:.2f}x, below the leader's {lead[1]:.2f}x", "unrun"))
    return out


def _square(measured: Mapping[str, Measured], w: Measured) -> tuple[float, float | None, str, float] | None:
    """(the number predicted for an autotuning mode from the other three modes of its square, its compile as its
    autotuning partner's, the words, the half-width (log) one process of it would likely have: the narrower of the
    two it is predicted from), or None where the three are not all measured."""
    modes = plan.SQUARE.get(w.settings.get("mode"))
    if not modes:
        return None
    found = {}
    for m in measured.values():
        if (m.started and m.settings.get("mode") in modes and payoff(m) is not None
                and all(m.settings.get(k) == w.settings.get(k) for k in ("backend", "dynamic", "scope"))):
            found[m.settings["mode"]] = m
    if len(found) < 3:
        return None
    a, b, c = (found[x] for x in modes)
    gain = payoff(b)[0] / payoff(c)[0]
    guess = payoff(a)[0] * gain
    words = (f"{b.settings['mode']} against {c.settings['mode']} gave {gain:.2f}x; the same applied to "
             f"{a.settings['mode']} ({payoff(a)[0]:.2f}x) predicts about {guess:.2f}x for mode={w.settings['mode']}")
    return guess, b.cold_first_s, words, min(plan.log_half(payoff(a)), plan.log_half(payoff(b)))


def _cannot_beat(guess: float, cold: float | None, half: float, lead: tuple[float, float, float],
                 leader: Measured | None, limit: int) -> str:
    """Why a predicted number cannot win ('' where it could): below the leader's by more than the zone; or, without
    a faster compile than the leader's, within the zone (a tie goes to the faster compile) or closer to the leader
    than the race could tell apart by the process limit (it would end equal within the measurement, and be settled
    for its slower compile: an H200's gpt2 ran max-autotune-no-cudagraphs, predicted 1.50x against default's 1.40x
    [1.21, 1.63], for 95 s of autotuning, to read 1.26x)."""
    if guess < lead[0] / (1 + plan.ZONE):
        return "below"
    if cold is not None and leader is not None and leader.cold_first_s is not None and cold < leader.cold_first_s:
        return ""
    if guess <= lead[0] * (1 + plan.ZONE):
        return f"within {plan.ZONE:.0%}"
    if leader is None or not math.isfinite(half + plan.log_half(lead)):  # an interval reaching 0: it runs
        return ""
    near = plan.futile((guess, guess * math.exp(-half), guess * math.exp(half)), 1, lead, leader.processes, limit)
    return (f"a difference of {near[0]:.0%} the race could not tell apart by {limit} processes "
            f"(about +-{near[1]:.0%} by then)") if near else ""


def _autotune_bound(measured: Mapping[str, Measured], w: Measured) -> tuple[float, Measured] | None:
    """(the most an autotuning candidate could give the caller, the sibling that bounds its compile), or None."""
    siblings = plan.SIBLINGS.get(w.settings.get("mode"), ())
    same = [m for m in measured.values() if m.started and m.settings.get("mode") in siblings and m.cold_first_s
            and m.base_s is not None
            and all(m.settings.get(k) == w.settings.get(k) for k in ("backend", "dynamic", "scope"))]
    if not same:
        return None
    sib = min(same, key=lambda m: m.cold_first_s)
    return ((sib.eager_first_s or 0.0) + sib.base_s) / sib.cold_first_s, sib


def next_stage(measured: Mapping[str, Measured], waiting: Mapping[str, Measured], search: Search) -> tuple[str, ...]:
    """The candidates not run yet of the earliest stage left, in screening order."""
    stage = plan.stages({k: m.settings for k, m in measured.items()},
                        search.calls is not None or search.traffic)
    first = min(stage[k] for k in waiting)
    return tuple(sorted((k for k in waiting if stage[k] == first), key=lambda k: (plan.rank(waiting[k].settings), k)))


def _cold(m: Measured) -> float:
    return m.cold_first_s if m.cold_first_s is not None else math.inf


COMPILE_SHARE = 0.8  # a setting the race cannot tell from the leader is chosen over it when it compiles in under this


def _near(live: Mapping[str, Measured], k: str, other: str, limit: int) -> tuple[float, float] | bool:
    """Whether the race cannot tell k from `other`: True where they are equal within the zone, (their difference,
    the half-width at the limit) where the process limit would not separate them, False where it can."""
    q, p = payoff(live[k]), payoff(live[other])
    if plan.equal(*((q, p) if q[0] <= p[0] else (p, q))):  # the lower against the higher, as the zone is drawn
        return True
    return plan.futile(q, live[k].processes, p, live[other].processes, limit) or False


def _versus(live: Mapping[str, Measured], k: str, other: str, name: Mapping[str, str], limit: int) -> str | None:
    """k against `other` in words where the race cannot tell them apart (_near); None where it can."""
    q, p, far = payoff(live[k]), payoff(live[other]), _near(live, k, other, limit)
    if far is True:
        return f"equal to {name[other]} within {plan.ZONE:.0%} ({q[0]:.2f}x against {p[0]:.2f}x)"
    if not far:
        return None
    return (f"not separable from {name[other]} by {limit} processes ({q[0]:.2f}x against {p[0]:.2f}x: {far[0]:.0%} "
            f"apart, about ±{far[1]:.0%} at the limit)")


def _cheaper(live: Mapping[str, Measured], chosen: str, tied: list[str], futile: Mapping, limit: int) -> str | None:
    """Among the settings the race cannot tell from the leader, one chosen over the zone's choice for its compile:
    it compiles clearly faster (both measured cold, under COMPILE_SHARE), it is separable from eager itself, and the
    race cannot tell it from any setting measured faster than it either. Of several, the best measured, and among
    those equal to that one within the zone the fastest compile (the zone's own rule); None where there is none."""
    found = [k for k in futile if not _passed_over(live, k, chosen, tied, futile, limit)]
    if not found:
        return None
    best = max(found, key=lambda k: (payoff(live[k])[0], -_cold(live[k]), k))
    near = [k for k in found if k == best or plan.equal(payoff(live[k]), payoff(live[best]))]
    return min(near, key=lambda k: (_cold(live[k]), plan.rank(live[k].settings), k))


def _passed_over(live: Mapping[str, Measured], k: str, chosen: str, tied: list[str], futile: Mapping,
                 limit: int, name: Mapping[str, str] | None = None) -> str | None:
    """Why futile setting k cannot be chosen over the zone's choice for its compile, in words (None: it can)."""
    m, c, q = live[k], live[chosen], payoff(live[k])
    name = name or {}
    if m.cold_first_s is None or c.cold_first_s is None:
        return "a cold compile time not measured"
    if m.cold_first_s >= c.cold_first_s:
        return f"slower to compile ({m.cold_first_s:.1f} s against {c.cold_first_s:.1f} s cold)"
    if m.cold_first_s >= COMPILE_SHARE * c.cold_first_s:
        return (f"its compile not clearly faster ({m.cold_first_s:.1f} s against {c.cold_first_s:.1f} s cold, under "
                f"{1 - COMPILE_SHARE:.0%} less)")
    if q[1] <= 1:
        return f"compiles faster ({m.cold_first_s:.1f} s cold) but is not separable from eager ([{q[1]:.2f}, {q[2]:.2f}])"
    for o in (*tied, *futile):
        if o != k and (o in tied or payoff(live[o])[0] > q[0]) and not _near(live, k, o, limit):
            return (f"compiles faster ({m.cold_first_s:.1f} s cold) but lies below {name.get(o, o)} "
                    f"({q[0]:.2f}x against {payoff(live[o])[0]:.2f}x), separable from it")
    return None


def indifferent(live: Mapping[str, Measured], leader: str, search: Search) -> tuple[str, list[Drop], str] | None:
    """Where every candidate in contention besides the leader is equal to it within the measurement, or could not be
    told apart from it by the process limit: (the one chosen, the others dropped with why, the words of the choice);
    None while a race could still separate them."""
    lead = payoff(live[leader])
    others = [k for k in live if k != leader]
    if not others:
        return None
    equal = [k for k in others if plan.equal(payoff(live[k]), lead)]
    futile = {k: plan.futile(payoff(live[k]), live[k].processes, lead, live[leader].processes, search.max_processes)
              for k in others if k not in equal}
    if any(v is None for v in futile.values()):
        return None
    tied = [leader, *equal]
    chosen = min(tied, key=lambda k: (_cold(live[k]), plan.rank(live[k].settings), k))  # the zone's choice
    limit = search.max_processes
    # one the process limit cannot tell from the leader is as good an answer, as far as the race can know: where it
    # compiles clearly faster it is chosen (the leader's lead is not established, the compile time it costs is)
    apart = _cheaper(live, chosen, tied, futile, limit)
    pick = apart or chosen
    vary = varying(live[k].settings for k in (*tied, *futile)) or None
    name = {k: settings_words(live[k].settings, vary) if vary else settings_words(live[k].settings) for k in live}
    p = payoff(live[pick])
    dropped, why = [], ""
    if apart:
        d, h = futile[apart]
        others = [k for k in tied if k != leader]
        why = (f"{name[apart]} ({p[0]:.2f}x) cannot be told apart from {name[leader]} ({lead[0]:.2f}x), the best "
               f"measured, by {limit} processes ({d:.0%} apart, about ±{h:.0%} at the limit)"
               + (f", nor from {' and '.join(f'{name[k]} ({payoff(live[k])[0]:.2f}x)' for k in others)}"
                  if others else "")
               + f"; chose {name[apart]}: it compiles faster ({live[apart].cold_first_s:.1f} s cold against "
               f"{live[chosen].cold_first_s:.1f} s{'' if chosen == leader else ' for ' + name[chosen]})")
        for k in tied:
            compiles = (f"slower to compile ({live[k].cold_first_s:.1f} s against {live[apart].cold_first_s:.1f} s cold)"
                        if live[k].cold_first_s is not None else
                        f"its cold compile not measured ({name[apart]}'s: {live[apart].cold_first_s:.1f} s)")
            dropped.append(Drop(k, f"{_versus(live, k, apart, name, limit)}, and {compiles}", "futile"))
    elif len(tied) > 1:
        nums = " and ".join(f"{payoff(live[k])[0]:.2f}x" for k in tied)
        names = " and ".join(name[k] for k in tied)
        if _cold(live[chosen]) < math.inf and len({_cold(live[k]) for k in tied}) > 1:
            because = "it compiles fastest" if len(tied) > 2 else "it compiles faster"
            colds = ", ".join(f"{live[k].cold_first_s:.1f} s" if live[k].cold_first_s is not None else "?"
                              for k in [chosen, *(k for k in tied if k != chosen)])
            because += f" ({colds} cold)"
        else:
            because = "the simpler setting"
        why = f"{names} are equal within {plan.ZONE:.0%} ({nums}); chose {name[chosen]}: {because}"
        for k in tied:
            if k != chosen:
                q = payoff(live[k])
                dropped.append(Drop(k, f"in the zone with {name[chosen]} (both within {plan.ZONE:.0%} of the best "
                                       f"measured; {q[0]:.2f}x against {p[0]:.2f}x); the chosen one compiles faster or "
                                       "is the simpler setting", "equal"))
    for k, (d, h) in futile.items():
        if k == apart:
            continue
        near = _versus(live, k, pick, name, limit)
        q = payoff(live[k])
        if near is None:  # the race tells it from the one chosen: below it
            said = f"below {name[pick]} ({q[0]:.2f}x against {p[0]:.2f}x), separable from it"
        elif apart:
            said = f"{near}; {name[pick]} was chosen"
        else:
            said = (f"cannot be told apart from {name[leader]} within {limit} processes: {d:.0%} apart, their "
                    f"intervals would still be about ±{h:.0%} at the limit; {name[pick]} was chosen")
        faster = live[k].cold_first_s is not None and live[pick].cold_first_s is not None and \
            live[k].cold_first_s < live[pick].cold_first_s
        over = _passed_over(live, k, chosen, tied, futile, limit, name) if faster else None
        if over:  # it compiles faster than the one chosen: why that did not make it the choice
            said += f"; it {over}" if over.startswith("compiles") else f"; {over}"
        elif faster:  # as good a choice as the one chosen but measured lower (the best measured of those is chosen)
            said += (f"; it compiles faster ({live[k].cold_first_s:.1f} s cold) but {name[pick]}, as open a choice, "
                     f"measured higher ({p[0]:.2f}x against {q[0]:.2f}x)")
        dropped.append(Drop(k, said, "futile"))
        if not apart:
            why = (why + "; " if why else "") + f"{name[k]} cannot be told apart from {name[leader]} by more processes"
    return pick, dropped, why


def settled(live: Mapping[str, Measured], leader: str, search: Search) -> list[Drop]:
    """While settings are still being screened: the ones equal to the leader within the measurement (or not
    separable from it by the process limit) that also compile slower. The indifference zone would not choose them
    over the leader, so neither they nor their variants are raced further."""
    lead, mine = payoff(live[leader]), live[leader]
    out = []
    for k, m in live.items():
        p = payoff(m)
        if k == leader or _cold(m) <= _cold(mine):
            continue
        futile = plan.futile(p, m.processes, lead, mine.processes, search.max_processes)
        if plan.equal(p, lead) or futile:
            how = (f"equal to the leader, {settings_words(mine.settings)}, within {plan.ZONE:.0%}" if plan.equal(p, lead)
                   else f"not separable from the leader, {settings_words(mine.settings)}, by "
                        f"{search.max_processes} processes")
            out.append(Drop(k, f"{how} ({p[0]:.2f}x against {lead[0]:.2f}x) and slower to compile "
                               f"({m.cold_first_s:.1f} s against {mine.cold_first_s:.1f} s cold): not raced further",
                            "equal"))
    return out
