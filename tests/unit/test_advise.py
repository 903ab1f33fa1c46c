"""The racing search's decisions (lab.advise) on made-up answers: who is dropped and why, when one is recommended,
when compiling cannot pay off for the caller's calls, and what the budget stops."""
from dataclasses import replace

import pytest

from lab import advice_text
from lab.advise import Measured, Outcome, Round, Search, candidates, decide, for_caller, full_sweep_cost, parse_budget
from lab.checks import SpecError


def m(key, s, lo, hi, processes=1, **kw):
    kw.setdefault("first_s", 20.0)
    return Measured(key=key, settings={"backend": "inductor", "mode": key, "dynamic": None, "scope": "model"},
                    processes=processes, speedup=s, low=lo, high=hi, **kw)


def test_clearly_worse_dropped_and_the_rest_race_on():
    # b overlaps a, 5% apart: narrower intervals (by the limit, about a third as wide) could separate them
    got = decide({"a": m("a", 1.5, 1.45, 1.55), "b": m("b", 1.42, 1.37, 1.47), "c": m("c", 0.9, 0.8, 1.05)},
                 set(), Search(), spent_s=60)
    assert got.outcome is Outcome.CONTINUE and got.leader == "a"
    assert [d.key for d in got.dropped] == ["c"] and "below the leader" in got.dropped[0].why
    assert got.more == ("a", "b")  # the leader first, then who still overlaps it


def test_separable_leader_recommended():
    got = decide({"a": m("a", 1.5, 1.4, 1.6), "b": m("b", 1.1, 1.0, 1.2)}, set(), Search(), spent_s=60)
    assert got.outcome is Outcome.RECOMMEND and got.leader == "a" and got.more == ()


def test_leader_not_separable_from_eager_gets_more_processes_then_dont_compile_at_the_limit():
    one = {"a": m("a", 1.08, 0.95, 1.22)}
    assert decide(one, set(), Search(), 10).outcome is Outcome.CONTINUE
    at_limit = {"a": m("a", 1.05, 0.95, 1.15, processes=6)}
    got = decide(at_limit, set(), Search(max_processes=6), 10)
    assert got.outcome is Outcome.DONT_COMPILE and "not separable from eager" in got.why


def test_few_calls_cannot_pay_off():
    # 1.5x a call on 2 ms calls saves at most ~0.8 ms a call; 10 s of compiling does not come back in 100 calls
    slow_first = dict(eager_first_s=0.01, cold_first_s=10.0, eager_ms=2.0, base_s=99 * 2.0 / 1e3, break_even=15000)
    got = decide({"a": m("a", 1.5, 1.4, 1.6, **slow_first)}, set(), Search(calls=100), 30)
    assert got.outcome is Outcome.DONT_COMPILE
    assert "cannot pay off in 100 calls" in got.dropped[0].why and "15,000" in got.dropped[0].why
    # the same candidate, judged at steady state, is recommended
    assert decide({"a": m("a", 1.5, 1.4, 1.6)}, set(), Search(), 30).outcome is Outcome.RECOMMEND


def test_for_caller_rises_with_speedup_and_tends_to_it():
    many = m("a", 1.5, 1.4, 1.6, eager_first_s=0.0, cold_first_s=1.0, eager_ms=1.0, base_s=1e9)
    assert for_caller(many, 1.5) == pytest.approx(1.5, rel=1e-6)
    few = m("a", 1.5, 1.4, 1.6, eager_first_s=0.0, cold_first_s=1.0, eager_ms=1.0, base_s=1.0)
    assert for_caller(few, 1.4) < for_caller(few, 1.6) < 1


def test_budget_stops_a_round_it_cannot_pay_for():
    race = {"a": m("a", 1.5, 1.45, 1.55), "b": m("b", 1.42, 1.37, 1.47)}
    got = decide(race, set(), Search(budget_s=50), spent_s=40)  # another round: ~2 x 20 s x 0.32
    assert got.outcome is Outcome.BUDGET and got.leader == "a" and "budget" in got.why


def test_failed_candidate_dropped_with_its_error():
    failed = Measured(key="f", settings={}, processes=0, failed=1, error="InductorError: boom")
    got = decide({"a": m("a", 1.5, 1.4, 1.6), "f": failed}, set(), Search(), 10)
    assert got.outcome is Outcome.RECOMMEND and got.dropped[0].why == "did not succeed: InductorError: boom"


def test_candidates_fold_modes_off_cuda_and_skip_blocks_without_them():
    cpu = candidates("cpu", ["default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"],
                     ["false"], ["model", "blocks"], blocks=False)
    assert [c["mode"] for c in cpu] == ["default", "max-autotune"]
    cuda = candidates("cuda", ["default", "reduce-overhead"], ["false", "true"], ["model", "blocks"], blocks=True)
    assert len(cuda) == 8


def test_parse_budget():
    assert parse_budget("10m") == 600 and parse_budget("1h30m") == 5400 and parse_budget("90") == 90
    with pytest.raises(SpecError):
        parse_budget("soon")


def test_full_sweep_cost_prices_missing_repeats_at_the_measured_share():
    ms = {"a": m("a", 1.5, 1.4, 1.6, first_s=20.0, later_s=(5.0,)), "b": m("b", 1.0, 0.9, 1.1, first_s=40.0)}
    assert full_sweep_cost(ms) == pytest.approx(20 + 5 + 40 + 40 * 0.25)


def test_full_sweep_cost_prices_a_setting_not_run_like_its_mode_or_the_other_autotuning_mode():
    """An H200's resnet18: max-autotune compiled in 475 s, default in 14 s; the autotuning settings not run are priced
    like max-autotune, not like a typical first process."""
    ms = {"d": cand("d", "default", s=1.5, lo=1.3, hi=1.7, first_s=18.0),
          "ro": cand("ro", "reduce-overhead", s=1.6, lo=1.3, hi=2.0, first_s=15.0),
          "ma": cand("ma", "max-autotune", s=1.59, lo=1.3, hi=2.0, first_s=479.0),
          "manc": cand("manc", "max-autotune-no-cudagraphs"), "ma_dyn": cand("ma_dyn", "max-autotune", True),
          "d_dyn": cand("d_dyn", "default", True)}
    firsts = 18 + 15 + 479 + 479 + 479 + 18
    assert full_sweep_cost(ms) == pytest.approx(firsts * 1.32)  # each first, and one more at the repeat share


def test_words_recommendation_first_then_dropped_with_round():
    ms = {"a": m("a", 1.5, 1.4, 1.6, cold_first_s=14.0, portable_first_s=2.1, break_even=9800,
                 peak_eager_mb=100.0, peak_compiled_mb=106.0),
          "b": m("b", 0.9, 0.8, 1.0)}
    step = decide(ms, set(), Search(), 40)
    text = advice_text.report(Search(), ms, [Round(1, step, 40.0)], 40.0, "cuda", 0)
    first = text.splitlines()[0]
    assert first.startswith("use mode=a: 1.50x [1.40, 1.60] for the caller; compiling costs 14.0 s cold "
                            "(2.1 s with the portable cache) and pays off after 9,800 calls; peak memory +6%")
    assert "mode=b: dropped after round 1; 0.90x [0.80, 1.00] (1 process): below the leader" in text
    assert "the search spent 40 GPU-seconds" in text
    words = " (between 8,900 and 12,000 at the ends of its speedup's interval)"  # the answer's (lab.verdict.paid_range)
    ranged = {**ms, "a": replace(ms["a"], break_even_range=words)}
    first = advice_text.report(Search(), ranged, [Round(1, step, 40.0)], 40.0, "cuda", 0).splitlines()[0]
    assert f"pays off after 9,800 calls{words}; peak memory" in first
    reaching = {**ms, "a": replace(ms["a"], low=0.98)}  # its interval reaches 1x: the count may never be reached
    first = advice_text.report(Search(), reaching, [Round(1, step, 40.0)], 40.0, "cuda", 0).splitlines()[0]
    assert "pays off after 9,800 calls, but may never: its interval reaches 1x; peak memory" in first


def cand(key, mode, dynamic=False, scope="model", s=None, lo=None, hi=None, processes=1, **kw):
    """A candidate of settings mode/dynamic/scope: measured when s is given, else not run yet."""
    settings = {"backend": "inductor", "mode": mode, "dynamic": dynamic, "scope": scope}
    if s is None:
        return Measured(key=key, settings=settings, processes=0, started=False)
    kw.setdefault("first_s", 20.0)
    return Measured(key=key, settings=settings, processes=processes, speedup=s, low=lo, high=hi, **kw)


def test_equal_candidates_stop_at_the_indifference_zone_and_the_faster_compile_is_chosen():
    race = {"ro": cand("ro", "reduce-overhead", False, s=1.40, lo=1.36, hi=1.44, cold_first_s=9.4),
            "rod": cand("rod", "reduce-overhead", True, s=1.39, lo=1.35, hi=1.43, cold_first_s=8.1)}
    got = decide(race, set(), Search(), 60)
    assert got.outcome is Outcome.RECOMMEND and got.leader == "rod", got  # not the limit: one process each
    assert got.why.startswith("dynamic=False and dynamic=True are equal within 3% (1.40x and 1.39x); chose "
                              "dynamic=True: it compiles faster (8.1 s, 9.4 s cold)"), got.why
    assert [(d.key, d.kind) for d in got.dropped] == [("ro", "equal")]
    head = advice_text.report(Search(), race, [Round(1, got, 60.0)], 60.0, "cuda", 0).splitlines()[0]
    assert head.startswith("use dynamic=True: 1.39x [1.35, 1.43] for the caller; compiling costs 8.1 s cold") and \
        head.endswith("(dynamic=False and dynamic=True are equal within 3% (1.40x and 1.39x); chose dynamic=True: it "
                      "compiles faster (8.1 s, 9.4 s cold))"), head
    # 5% apart with narrow intervals: more processes could separate them, so the race goes on
    apart = {"ro": cand("ro", "reduce-overhead", False, s=1.47, lo=1.44, hi=1.50, cold_first_s=9.4),
             "rod": cand("rod", "reduce-overhead", True, s=1.40, lo=1.37, hi=1.45, cold_first_s=8.1)}
    assert decide(apart, set(), Search(), 60).outcome is Outcome.CONTINUE


def test_a_race_that_cannot_separate_by_the_limit_stops_with_the_best_measured():
    wide = {"a": cand("a", "default", s=1.50, lo=1.20, hi=1.80), "b": cand("b", "reduce-overhead", s=1.44, lo=1.15,
                                                                           hi=1.75)}
    got = decide(wide, set(), Search(), 60)
    assert got.outcome is Outcome.RECOMMEND and got.leader == "a"
    assert got.dropped[0].kind == "futile" and "cannot be told apart" in got.dropped[0].why


def test_a_setting_not_separable_from_the_leader_and_much_faster_to_compile_is_chosen():
    """An H200 search (gpt2, 4 layers): max-autotune 1.36x [1.12, 1.65] after a 79 s cold compile, reduce-overhead
    1.30x [1.15, 1.47] after 8.2 s. Six processes each would not tell them apart: the 4% is not established, the 71 s
    are. The faster compile is chosen and the other is listed with both numbers; where it does not compile clearly
    faster, the best measured stays."""
    race = {"ma": cand("ma", "max-autotune", s=1.36, lo=1.12, hi=1.65, processes=3, cold_first_s=79.0),
            "ro": cand("ro", "reduce-overhead", s=1.30, lo=1.15, hi=1.47, processes=3, cold_first_s=8.2)}
    got = decide(race, set(), Search(), 300)
    assert got.outcome is Outcome.RECOMMEND and got.leader == "ro", got
    assert got.why.startswith("mode=reduce-overhead (1.30x) cannot be told apart from mode=max-autotune (1.36x), the "
                              "best measured, by 6 processes (5% apart") \
        and "; chose mode=reduce-overhead: it compiles faster (8.2 s cold against 79.0 s)" in got.why, got.why
    (drop,) = got.dropped
    assert drop.key == "ma" and drop.kind == "futile", drop
    assert drop.why.startswith("not separable from mode=reduce-overhead by 6 processes (1.36x against 1.30x: 5% apart") \
        and drop.why.endswith("and slower to compile (79.0 s against 8.2 s cold)"), drop.why
    head = advice_text.report(Search(), race, [Round(1, got, 300.0)], 300.0, "cuda", 0).splitlines()[0]
    assert head.startswith("use mode=reduce-overhead: 1.30x [1.15, 1.47] for the caller; compiling costs 8.2 s cold"), \
        head
    # 10% less compile time is not worth a lead the race could not establish either way: the best measured stays;
    # so where the leader's compile time was not measured, or where the faster compile is not separable from eager
    # while the leader is
    for other in ({"cold_first_s": 72.0}, {"cold_first_s": None, "key": "ma"},
                  {"speedup": 1.12, "low": 0.90, "high": 1.39, "key": "ro"}):
        key = other.pop("key", "ro")
        changed = {**race, key: replace(race[key], **other)}
        got = decide(changed, set(), Search(), 300)
        assert got.leader == "ma" and got.dropped[0].key == "ro", (other, got)
        assert "mode=max-autotune was chosen" in got.dropped[0].why, got.dropped[0].why


def test_a_faster_compile_is_not_chosen_over_a_tied_setting_it_is_separable_from():
    """Max-autotune 1.40x and max-autotune-no-cudagraphs 1.37x [1.35, 1.41] are equal within the zone; reduce-overhead
    1.25x [1.20, 1.30] cannot be told from the first but lies clearly below the second: the zone's choice stands.
    Of two that could be chosen, the better measured is, not the one a tenth of a second faster to compile."""
    race = {"L": cand("L", "max-autotune", s=1.40, lo=1.15, hi=1.70, processes=3, cold_first_s=80.0),
            "E": cand("E", "max-autotune-no-cudagraphs", s=1.37, lo=1.35, hi=1.41, processes=3, cold_first_s=60.0),
            "F": cand("F", "reduce-overhead", s=1.25, lo=1.20, hi=1.30, processes=3, cold_first_s=8.0)}
    got = decide(race, set(), Search(), 300)
    assert got.leader == "E" and {d.key: d.kind for d in got.dropped} == {"L": "equal", "F": "futile"}, got
    two = {"L": cand("L", "max-autotune", s=1.40, lo=1.10, hi=1.78, processes=3, cold_first_s=80.0),
           "A": cand("A", "reduce-overhead", s=1.33, lo=1.10, hi=1.61, processes=3, cold_first_s=10.0),
           "B": cand("B", "default", s=1.18, lo=1.00, hi=1.40, processes=3, cold_first_s=9.9)}
    got = decide(two, set(), Search(), 300)
    assert got.leader == "A", got
    b = next(d for d in got.dropped if d.key == "B")
    assert b.why.endswith("mode=reduce-overhead was chosen; it compiles faster (9.9 s cold) but is not separable from "
                          "eager ([1.00, 1.40])"), b.why
    # of two that could be chosen and are equal within the zone, the faster compile (the zone's own rule)
    zone = {"L": cand("L", "max-autotune", s=1.50, lo=1.20, hi=1.85, processes=3, cold_first_s=90.0),
            "c": cand("c", "reduce-overhead", False, s=1.40, lo=1.20, hi=1.62, processes=3, cold_first_s=10.0),
            "d": cand("d", "reduce-overhead", True, s=1.38, lo=1.18, hi=1.60, processes=3, cold_first_s=7.0)}
    assert decide(zone, set(), Search(), 300).leader == "d"
    # one clearly below the chosen one says so, though it compiles faster still
    below = {"MA": cand("MA", "max-autotune", s=1.80, lo=1.45, hi=2.25, processes=3, cold_first_s=75.0),
             "RO": cand("RO", "reduce-overhead", s=1.70, lo=1.67, hi=1.73, processes=3, cold_first_s=12.0),
             "D": cand("D", "default", s=1.60, lo=1.58, hi=1.62, processes=3, cold_first_s=4.0)}
    got = decide(below, set(), Search(), 300)
    d = next(x for x in got.dropped if x.key == "D")
    assert got.leader == "RO" and d.why.startswith("below mode=reduce-overhead (1.60x against 1.70x), separable from "
                                                   "it"), d.why


def test_a_faster_compile_not_separable_from_eager_never_turns_the_answer_into_dont_compile():
    """Max-autotune 1.15x [0.97, 1.36] after 60 s, reduce-overhead 1.05x [0.95, 1.16] after 8 s: the race goes on
    with max-autotune (six processes may separate it from eager), not with a setting whose race against eager is lost."""
    race = {"ma": cand("ma", "max-autotune", s=1.15, lo=0.97, hi=1.36, processes=3, cold_first_s=60.0),
            "ro": cand("ro", "reduce-overhead", s=1.05, lo=0.95, hi=1.16, processes=3, cold_first_s=8.0)}
    got = decide(race, set(), Search(), 300)
    assert got.outcome is Outcome.CONTINUE and got.leader == "ma", got
    assert "is not separable from eager ([0.95, 1.16])" in next(d.why for d in got.dropped if d.key == "ro")


def test_at_steady_state_no_variant_runs_once_its_base_ran_unless_the_base_failed():
    """At one batch size a dynamic or blocks variant cannot run faster than its base: the search says so and runs
    none of them, the leader's included; a variant whose base failed is the way left to compile, so it runs."""
    ms = {"d": cand("d", "default", s=1.1, lo=1.0, hi=1.2), "ro": cand("ro", "reduce-overhead", s=1.6, lo=1.5, hi=1.7),
          "d_dyn": cand("d_dyn", "default", True), "ro_dyn": cand("ro_dyn", "reduce-overhead", True),
          "ro_blk": cand("ro_blk", "reduce-overhead", False, "blocks")}
    got = decide(ms, set(), Search(), 60)
    assert got.outcome is Outcome.RECOMMEND and got.leader == "ro" and got.start == ()
    kinds = {d.key: d.kind for d in got.dropped}
    assert kinds == {"d": "below", "d_dyn": "unrun", "ro_dyn": "unrun", "ro_blk": "unrun"}
    why = next(d.why for d in got.dropped if d.key == "ro_dyn")
    assert why.startswith("not run: at one batch size and steady state it cannot beat its base setting, ") and \
        "mode=reduce-overhead" in why and "(1.60x [1.50, 1.70] when this was decided)" in why, why  # a later line
    # shows the base's interval as it reads then: this one is the figure the decision was made on
    failed = {**ms, "ro": Measured(key="ro", settings=ms["ro"].settings, processes=0, failed=1, error="boom")}
    got = decide(failed, set(), Search(), 60)
    assert got.outcome is Outcome.CONTINUE and got.start == ("ro_blk", "ro_dyn"), got  # the failed base's variants
    assert {d.key: d.kind for d in got.dropped} == {"ro": "failed", "d_dyn": "unrun"}
    # with a traffic stream, whose sizes vary, the variants are judged
    assert set(decide(ms, set(), Search(traffic=True), 60).start) >= {"ro_dyn", "ro_blk"}
    # so are those of a base that recompiled in its rounds at one batch size (shapes change inside the model)
    again = {**ms, "ro": replace(ms["ro"], recompiles=3)}
    assert decide(again, set(), Search(), 60).start == ("ro_blk", "ro_dyn")


def test_few_calls_stop_after_the_scouts_first_process_with_the_evidence():
    few = dict(eager_first_s=0.01, cold_first_s=10.0, eager_ms=2.0, base_s=99 * 2.0 / 1e3)
    ms = {"d": cand("d", "default", s=1.5, lo=1.4, hi=1.6, **few), "ro": cand("ro", "reduce-overhead"),
          "ma": cand("ma", "max-autotune"), "d_dyn": cand("d_dyn", "default", True)}
    got = decide(ms, set(), Search(calls=100), 30)
    assert got.outcome is Outcome.DONT_COMPILE and got.start == ()
    assert {d.key: d.kind for d in got.dropped} == {"d": "cannot_pay", "ro": "unrun", "ma": "unrun", "d_dyn": "unrun"}
    assert "took 10.0 s to compile; eager runs the caller's 100 calls in 0.208 s" in got.why
    # with more calls the compile could pay off: the next stage (the other bases that do not autotune) runs
    many = {k: (replace(v, base_s=9999 * 2.0 / 1e3) if v.started else v) for k, v in ms.items()}
    assert decide(many, set(), Search(calls=10_000), 30).start == ("ro",)


def test_an_autotuning_mode_that_could_not_win_for_the_caller_is_not_run():
    calls = dict(eager_first_s=0.01, eager_ms=2.0, base_s=999 * 2.0 / 1e3)
    ms = {"d": cand("d", "default", s=1.2, lo=1.15, hi=1.25, cold_first_s=1.0, **calls),
          "ro": cand("ro", "reduce-overhead", s=1.5, lo=1.45, hi=1.55, cold_first_s=0.1, **calls),
          "manc": cand("manc", "max-autotune-no-cudagraphs")}
    # max-autotune-no-cudagraphs compiles at least default's 1.0 s: at most 2.01 s / 1.0 s = 2.0x... and 0.2 s
    got = decide(ms, set(), Search(calls=1000), 30)
    assert "manc" in got.start  # 2.0x could still beat the leader's 1.45x
    slow = {**ms, "d": replace(ms["d"], cold_first_s=3.0)}
    got = decide(slow, set(), Search(calls=1000), 30)
    assert {d.key: d.kind for d in got.dropped}.get("manc") == "unrun" and "could reach at most 0.67x" in \
        next(d.why for d in got.dropped if d.key == "manc")


def test_stages_scout_alone_first_where_calls_count():
    from lab.advise_plan import stages

    settings = {"d": {"backend": "inductor", "mode": "default", "dynamic": False, "scope": "model"},
                "ro": {"backend": "inductor", "mode": "reduce-overhead", "dynamic": False, "scope": "model"},
                "ma": {"backend": "inductor", "mode": "max-autotune", "dynamic": False, "scope": "model"},
                "d_dyn": {"backend": "inductor", "mode": "default", "dynamic": True, "scope": "model"}}
    assert stages(settings, calls_count=False) == {"d": 0, "ro": 0, "ma": 1, "d_dyn": 3}
    assert stages(settings, calls_count=True) == {"d": 0, "ro": 1, "ma": 2, "d_dyn": 4}


def test_a_base_equal_to_the_leader_but_slower_to_compile_is_settled_while_variants_wait():
    ms = {"ro": cand("ro", "reduce-overhead", s=1.40, lo=1.30, hi=1.50, cold_first_s=9.0),
          "ma": cand("ma", "max-autotune", s=1.38, lo=1.28, hi=1.48, cold_first_s=95.0),
          "ro_dyn": cand("ro_dyn", "reduce-overhead", True), "ma_dyn": cand("ma_dyn", "max-autotune", True)}
    # a stream of varying sizes: a dynamic variant may beat its static base (no recompile per size), so both run
    got = decide(ms, set(), Search(traffic=True), 120)
    assert got.outcome is Outcome.CONTINUE and got.start == ("ro_dyn", "ma_dyn")
    assert {d.key: d.kind for d in got.dropped} == {"ma": "equal"}
    assert "slower to compile (95.0 s against 9.0 s cold)" in got.dropped[0].why
    # at steady state neither variant runs: ro is recommended, ma settled as the slower compile, and the why says
    # it was not separated from ma (an H200's resnet18 said "separable from every other setting" here)
    got = decide(ms, set(), Search(), 120)
    assert got.outcome is Outcome.RECOMMEND and got.leader == "ro"
    assert got.why == ("separable from eager at 95%; 1 other setting equal to it within the measurement or not "
                       "separable from it, and slower to compile, was left out of the race"), got.why
    assert {d.key: d.kind for d in got.dropped} == {"ma": "equal", "ro_dyn": "unrun", "ma_dyn": "unrun"}


def test_a_recommendation_counts_as_settled_only_those_still_tied_with_the_final_leader():
    """reduce-overhead was settled as equal to default in round 1; max-autotune then led at 2.0x: reduce-overhead,
    1.49x, is no tie of the recommended setting and is not said to be one."""
    ms = {"d": cand("d", "default", s=1.50, lo=1.45, hi=1.55, cold_first_s=10.0),
          "ro": cand("ro", "reduce-overhead", s=1.49, lo=1.44, hi=1.54, cold_first_s=12.0),
          "ma": cand("ma", "max-autotune", s=2.0, lo=1.9, hi=2.1, cold_first_s=200.0)}
    got = decide(ms, {"ro": "equal"}, Search(), 300)
    assert got.outcome is Outcome.RECOMMEND and got.leader == "ma"
    assert got.why == "separable from every other setting and from eager at 95%", got.why
    tied = {**ms, "ro": replace(ms["ro"], speedup=1.98, low=1.88, high=2.08)}  # settled against ma itself
    got = decide(tied, {"ro": "equal"}, Search(), 300)
    assert got.why.startswith("separable from eager at 95%; 1 other setting equal to it"), got.why


def test_the_fourth_mode_of_the_square_is_predicted_and_not_run_where_it_could_not_win():
    # autotuning gained nothing with CUDA graphs (max-autotune 1.41x against reduce-overhead 1.40x): without them it
    # predicts about default's 1.01x, far below the leader
    ms = {"d": cand("d", "default", s=1.0, lo=0.95, hi=1.06, cold_first_s=8.0),
          "ro": cand("ro", "reduce-overhead", s=1.40, lo=1.33, hi=1.47, cold_first_s=9.0),
          "ma": cand("ma", "max-autotune", s=1.41, lo=1.34, hi=1.48, cold_first_s=90.0),
          "manc": cand("manc", "max-autotune-no-cudagraphs")}
    got = decide(ms, set(), Search(), 120)
    why = {d.key: d.why for d in got.dropped}
    assert "manc" in why and "predicts about 1.01x for mode=max-autotune-no-cudagraphs" in why["manc"], got
    # where CUDA graphs hurt (reduce-overhead below default) and autotuning gained, the fourth could win: it runs
    gains = {**ms, "d": replace(ms["d"], speedup=1.5, low=1.42, high=1.58),
             "ro": replace(ms["ro"], speedup=1.2, low=1.14, high=1.26),
             "ma": replace(ms["ma"], speedup=1.3, low=1.24, high=1.36)}
    got = decide(gains, set(), Search(), 120)
    assert got.start == ("manc",), got
    # a predicted tie with the leader that compiles no faster is not worth its cold compile (an H200's mlp bs64:
    # max-autotune 0.95x against reduce-overhead 0.78x applied to default's 0.80x predicts 0.97x, within 3%)
    tie = {"d": cand("d", "default", s=0.80, lo=0.62, hi=1.03, cold_first_s=3.0),
           "ro": cand("ro", "reduce-overhead", s=0.78, lo=0.67, hi=0.90, cold_first_s=2.8),
           "ma": cand("ma", "max-autotune", s=0.95, lo=0.84, hi=1.07, cold_first_s=12.9),
           "manc": cand("manc", "max-autotune-no-cudagraphs")}
    tie["manc_dyn"] = cand("manc_dyn", "max-autotune-no-cudagraphs", True)
    got = decide(tie, set(), Search(), 30)
    # its dynamic variant goes with it (an H200's gpt2 ran it for 150 s where the base was left out)
    assert {d.key: d.kind for d in got.dropped}.get("manc") == "unrun" and got.start == (), got
    assert "which was left out itself" in next(d.why for d in got.dropped if d.key == "manc_dyn")
    assert "predicts about 0.97x for mode=max-autotune-no-cudagraphs, against the leader's 0.95x: within 3%, and it " \
        "would compile no faster (12.9 s against 12.9 s cold)" in next(d.why for d in got.dropped if d.key == "manc")


def test_a_fourth_mode_predicted_above_the_leader_but_not_separable_from_it_is_not_run():
    """An H200's gpt2 (4 layers, bs 8): default 1.40x [1.21, 1.63], reduce-overhead 1.26x, max-autotune 1.35x after
    130 s of autotuning; max-autotune-no-cudagraphs, predicted 1.50x, was run (95 s) and read 1.26x. No process count
    the race allows could have told 1.50x from 1.40x, and it compiles no faster: it would be settled as equal."""
    ms = {"d": cand("d", "default", s=1.40, lo=1.21, hi=1.63, cold_first_s=10.3),
          "ro": cand("ro", "reduce-overhead", s=1.26, lo=1.00, hi=1.59, cold_first_s=10.5),
          "ma": cand("ma", "max-autotune", s=1.35, lo=1.09, hi=1.68, cold_first_s=130.0),
          "manc": cand("manc", "max-autotune-no-cudagraphs")}
    got = decide(ms, {"ro": "equal", "ma": "equal"}, Search(), 180)
    why = next(d.why for d in got.dropped if d.key == "manc")
    assert "predicts about 1.50x for mode=max-autotune-no-cudagraphs, against the leader's 1.40x: a difference of 7% " \
        "the race could not tell apart by 6 processes" in why and \
        "and it would compile no faster (130.0 s against 10.3 s cold)" in why, why
    assert got.outcome is Outcome.RECOMMEND and got.leader == "d", got
    # measured as tightly as an hf model's processes usually are (+-4%), the same 7% is separable: it runs
    tight = {"d": replace(ms["d"], low=1.35, high=1.45), "ro": replace(ms["ro"], low=1.21, high=1.31),
             "ma": replace(ms["ma"], low=1.30, high=1.40), "manc": ms["manc"]}
    assert decide(tight, {"ro": "equal", "ma": "equal"}, Search(), 180).start == ("manc",)


def test_slower_than_eager_everywhere_answers_dont_compile_without_the_fourth_mode_or_the_variants():
    slow = {"d": cand("d", "default", s=0.76, lo=0.68, hi=0.85), "ro": cand("ro", "reduce-overhead", s=0.6, lo=0.5,
                                                                            hi=0.7),
            "ma": cand("ma", "max-autotune", s=0.62, lo=0.55, hi=0.7), "manc": cand("manc", "max-autotune-no-cudagraphs"),
            "d_dyn": cand("d_dyn", "default", True), "ma_dyn": cand("ma_dyn", "max-autotune", True)}
    got = decide(slow, set(), Search(), 60)
    assert got.outcome is Outcome.DONT_COMPILE and got.start == ()
    kinds = {d.key: d.kind for d in got.dropped}
    assert kinds == {"d": "slower", "ro": "slower", "ma": "slower", "manc": "unrun", "d_dyn": "unrun",
                     "ma_dyn": "unrun"}
    assert "against eager" in next(d.why for d in got.dropped if d.key == "manc")


def test_a_leader_too_close_to_eager_for_the_limit_to_settle_stops_now():
    # 2% above eager with an interval of +-10% after 1 process: 6 processes would leave about +-4%
    got = decide({"a": cand("a", "default", s=1.02, lo=0.93, hi=1.12)}, set(), Search(), 10)
    assert got.outcome is Outcome.DONT_COMPILE and "more processes would not settle" in got.why, got
    # 8% above eager: 6 processes could separate it, so it gets another
    assert decide({"a": cand("a", "default", s=1.08, lo=0.98, hi=1.19)}, set(), Search(), 10).more == ("a",)


def test_a_candidate_line_says_how_many_of_its_processes_its_answer_draws_on():
    """The search counts a disturbed process toward its limit, the answer leaves it out: the line says both."""
    settings = {"backend": "inductor", "mode": "default", "dynamic": False, "scope": "model"}
    base = Measured(key="a", settings=settings, processes=3, speedup=1.4, low=1.3, high=1.5, first_s=10.0,
                    later_s=(3.0, 3.0))
    (line,) = advice_text.lines({"a": replace(base, answered=2)}, [])
    assert "(3 processes, 2 in its answer, 1 disturbed and left out)" in line.text()
    (line,) = advice_text.lines({"a": replace(base, answered=3)}, [])
    assert "(3 processes)" in line.text()
    (line,) = advice_text.lines({"a": replace(base, processes=1, answered=1, later_s=())}, [])
    assert "(1 process)" in line.text()


def test_a_budget_spent_before_every_setting_ran_says_what_was_not_run_instead_of_judging_it():
    """default is slower than eager; reduce-overhead never ran: the answer is about what ran, and says the rest did
    not run and why, rather than 'no setting pays off'."""
    ms = {"d": cand("d", "default", s=0.76, lo=0.68, hi=0.85), "ro": cand("ro", "reduce-overhead")}
    got = decide(ms, set(), Search(budget_s=30), spent_s=40)
    assert got.outcome is Outcome.DONT_COMPILE and got.start == ()
    assert got.why.startswith("no setting that ran pays off for the caller; 1 not run: the budget")
    assert {d.key: d.kind for d in got.dropped} == {"d": "slower", "ro": "unrun"}
    assert decide(ms, set(), Search(budget_s=3000), spent_s=40).start == ("ro",)  # with budget left it runs


def test_the_cost_line_names_its_unit_and_waits_for_a_first_process_to_price_the_full_sweep():
    waiting = {k: replace(m(k, None, None, None, processes=0), first_s=None, started=False) for k in ("a", "b")}
    assert advice_text.cost(waiting, 0.0, "cpu") == ("the search spent 0 CPU-seconds; the full sweep of these 2 "
                                                     "settings (2 processes each) is priced once a first process ends")
    ran = {**waiting, "a": m("a", 1.2, 1.1, 1.3, first_s=20.0, later_s=(5.0,))}  # b priced like a: 20 s + 5 s
    assert advice_text.cost(ran, 23.0, "cuda") == ("the search spent 23 GPU-seconds; the full sweep of these 2 "
                                                   "settings (2 processes each) about 50 GPU-seconds (46%)")
