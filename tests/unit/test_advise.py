"""The racing search's decisions (lab.advise) on made-up answers: who is dropped and why, when one is recommended,
when compiling cannot pay off for the caller's calls, and what the budget stops."""
import pytest

from lab import advice_text
from lab.advise import Measured, Outcome, Round, Search, candidates, decide, for_caller, full_sweep_cost, parse_budget
from lab.checks import SpecError


def m(key, s, lo, hi, processes=1, **kw):
    kw.setdefault("first_s", 20.0)
    return Measured(key=key, settings={"backend": "inductor", "mode": key, "dynamic": None, "scope": "model"},
                    processes=processes, speedup=s, low=lo, high=hi, **kw)


def test_clearly_worse_dropped_and_the_rest_race_on():
    got = decide({"a": m("a", 1.5, 1.3, 1.7), "b": m("b", 1.45, 1.25, 1.65), "c": m("c", 0.9, 0.8, 1.05)},
                 set(), Search(), spent_s=60)
    assert got.outcome is Outcome.CONTINUE and got.leader == "a"
    assert [d.key for d in got.dropped] == ["c"] and "below the leader" in got.dropped[0].why
    assert got.more == ("a", "b")  # the leader first, then who still overlaps it


def test_separable_leader_recommended():
    got = decide({"a": m("a", 1.5, 1.4, 1.6), "b": m("b", 1.1, 1.0, 1.2)}, set(), Search(), spent_s=60)
    assert got.outcome is Outcome.RECOMMEND and got.leader == "a" and got.more == ()


def test_leader_not_separable_from_eager_gets_more_processes_then_dont_compile_at_the_limit():
    one = {"a": m("a", 1.05, 0.9, 1.2)}
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
    race = {"a": m("a", 1.5, 1.3, 1.7), "b": m("b", 1.45, 1.25, 1.65)}
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
