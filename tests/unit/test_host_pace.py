"""The rounds read by the host's own pace (lab.host_pace): a run whose machine ran slower in part of its rounds says
in how many, by how much, and what the speedup read in each part; a steady host, a short run, or a row without the
probes says nothing; the child keeps one probe a headline round (runner.child.rounds)."""
import random

import numpy as np
import pytest

from lab import host_pace


def _samples(paces_and_sides, rng):
    """Rounds of [probe us, eager ms, compiled ms], each side 5 calls scattered 1% about its time."""
    out = {host_pace.KEY: [], "eager": [], "compiled": []}
    for probe, e, c in paces_and_sides:
        out[host_pace.KEY].append(probe * rng.uniform(0.97, 1.03))
        out["eager"].append([e * rng.uniform(0.99, 1.01) for _ in range(5)])
        out["compiled"].append([c * rng.uniform(0.99, 1.01) for _ in range(5)])
    return out


def test_a_host_that_ran_slow_in_a_third_of_the_rounds_is_split_there_with_each_parts_speedup():
    rng = random.Random(1)
    rounds = [(25.0, 0.15, 0.20)] * 40 + [(45.0, 0.18, 0.27)] * 20  # fast 0.75x, slow 0.667x, as on the H200
    rng.shuffle(rounds)
    pace = host_pace.split(_samples(rounds, rng))
    assert pace is not None
    assert (pace["rounds"], pace["slow_rounds"], pace["slow_share"]) == (60, 20, pytest.approx(0.333, abs=1e-3))
    assert pace["fast_us"] == pytest.approx(25, rel=0.03) and pace["slow_us"] == pytest.approx(45, rel=0.03)
    assert pace["slower"] == pytest.approx(1.8, abs=0.07)
    assert pace["fast_speedup"] == pytest.approx(0.75, rel=0.02)
    assert pace["slow_speedup"] == pytest.approx(0.18 / 0.27, rel=0.02)
    said = host_pace.words(pace)
    assert "in 33% of them" in said and "0.67x in the slow rounds, 0.75x in the rest (60 rounds)" in said


def test_a_steady_host_or_a_short_run_has_its_pace_and_no_split_and_a_row_without_probes_says_nothing():
    rng = random.Random(2)
    steady = [(25.0 * rng.lognormvariate(0, 0.05), 0.15, 0.20) for _ in range(200)]
    pace = host_pace.split(_samples(steady, rng))  # its halves lie under APART apart
    assert set(pace) == {"rounds", "median_us"} and pace["median_us"] == pytest.approx(25, rel=0.03)
    assert host_pace.words(pace) is None
    assert "took 25 us before each round (the median of 200; lower is faster)" in host_pace.pace_words(pace)
    short = [(25.0, 0.15, 0.20)] * 12 + [(45.0, 0.18, 0.27)] * 6
    assert set(host_pace.split(_samples(short, rng))) == {"rounds", "median_us"}  # under MIN_ROUNDS
    few_slow = [(25.0, 0.15, 0.20)] * 97 + [(45.0, 0.18, 0.27)] * 3  # 3% slow: under MIN_SHARE, so no split holds
    assert host_pace.words(host_pace.split(_samples(few_slow, rng))) is None
    two = _samples([(25.0, 0.15, 0.20)] * 30 + [(45.0, 0.18, 0.27)] * 30, rng)
    assert host_pace.split({k: v for k, v in two.items() if k != host_pace.KEY}) is None  # stored before probes


@pytest.mark.parametrize("odd", [None, "x", [], {"host_pace_us": "1,2", "eager": [[1.0]], "compiled": [[1.0]]},
                                 {"host_pace_us": [True] * 30, "eager": [[1.0]] * 30, "compiled": [[1.0]] * 30},
                                 {"host_pace_us": [-1.0] * 30, "eager": [[0.0]] * 30, "compiled": [[0.0]] * 30},
                                 {"host_pace_us": [float("nan")] * 30, "eager": [["a"]] * 30, "compiled": [[]] * 30}])
def test_a_hand_made_row_is_no_finding_and_no_crash(odd):
    assert host_pace.split(odd) is None
    assert host_pace.words(odd) is None and host_pace.words({"slow_share": "<b>", "rounds": 3}) is None
    assert host_pace.pace_words(odd) is None and host_pace.pace_words({"median_us": "<b>", "rounds": 3}) is None


def test_the_rounds_keep_one_pace_a_headline_round_and_none_in_block_clocks():
    from runner.child.rounds import host_pace_us, measure_rounds
    from runner.child.timing import CpuTimer

    class Watch:
        def count(self):
            return 0

    timer = CpuTimer()
    timer.plan(call_ms=0.01, issue_ms=0.01)
    sides = {"eager": lambda: sum(range(50)), "compiled": lambda: sum(range(40))}
    samples = measure_rounds(timer, Watch(), sides, 25, lambda *_: None)
    probes = samples[host_pace.KEY]
    assert len(probes) == 25 == len(samples["eager"]) and all(0 < p < 50_000 for p in probes)
    assert 0 < host_pace_us() < 50_000
    blocks = measure_rounds(timer, Watch(), sides, 3, lambda *_: None, clocks=("throughput",))
    assert host_pace.KEY not in blocks  # the diagnosis clocks' rounds: the headline's probes are the run's


def test_processes_at_different_host_paces_say_what_each_pace_read():
    """As the H200's mlp bs 64 read on one lease: the three processes at the host's fastest pace agreed, the six at
    slower paces scattered below them."""
    paces = [21.2, 21.2, 21.9, 31.5, 33.8, 35.0, 39.8, 40.3, 41.7]
    speedups = [0.842, 0.847, 0.830, 0.734, 0.815, 0.783, 0.665, 0.738, 0.661]
    said = host_pace.across(paces, speedups)
    assert said == ("its processes ran at different host paces (a fixed piece of Python before each round took 21-42 "
                    "us, lower is faster): the 3 at 21-22 us read 0.83x-0.85x, the 6 at 32-42 us 0.66x-0.81x")
    assert "the one at 21 us read 0.84x, the one at 40 us 0.66x" in host_pace.across([21.0, 40.0], [0.84, 0.66])
    assert host_pace.across([21.0, 26.0], [0.84, 0.66]) is None  # within APART: one pace
    assert host_pace.across([21.0], [0.84]) is None and host_pace.across([], []) is None
    assert host_pace.across([21.0, float("nan"), -3.0], [0.84, 0.7, 0.7]) is None  # one paced process left


def test_the_answer_names_the_paces_its_processes_ran_at_and_an_answer_without_them_does_not():
    from lab.answer import answer_rows
    from tests.unit.test_answer import job

    runs = [job(1, 0.84, 0.01, host_pace_us=21.2), job(2, 0.83, 0.01, host_pace_us=21.9),
            job(3, 0.67, 0.01, host_pace_us=40.3), job(4, 0.74, 0.01, host_pace_us=31.5)]
    (row,) = answer_rows(runs)
    assert "its processes ran at different host paces (a fixed piece of Python before each round took 21-40 us" in \
        row["verdict"]
    assert "the 2 at 21-22 us read 0.83x-0.84x, the 2 at 32-40 us 0.67x-0.74x" in row["verdict"]
    (older,) = answer_rows([{k: v for k, v in r.items() if k != "host_pace_us"} for r in runs])
    assert "host paces" not in older["verdict"] and older["speedup"] == row["speedup"]  # the number is the same


def test_a_device_pace_is_its_paced_processes_fast_tenth_and_slower_processes_say_they_ran_slower():
    from lab.spreads import device_paces

    paces = device_paces(["a"] * 6 + ["b"] * 4 + ["a"], np.array([21, 22, 40, 41, 21.5, 43, 30, 30, 30, 30, np.nan]))
    assert paces == {"a": pytest.approx(float(np.percentile([21, 22, 40, 41, 21.5, 43], 10)), abs=0.01)}  # b: 4 only
    said = host_pace.slower_than([40.0, 43.0], 21.0)
    assert said == ("its processes all ran slower than this device's host runs when it runs fast (a fixed piece of Python "
                    "took 40-43 us against 21 us in its fastest tenth of processes): a host-bound call's speedup can read "
                    "otherwise there")
    assert host_pace.slower_than([40.0, 26.0], 21.0) is None  # one within APART of the fast pace
    assert host_pace.slower_than([40.0], None) is None and host_pace.slower_than([], 21.0) is None
    assert host_pace.slower_than([float("nan")], 21.0) is None
    assert host_pace.slower_than([40.0, 43.0], 21.0, brief=True) == (
        "all of them slower than this device's host runs when it runs fast (21 us in its fastest tenth of processes): a "
        "host-bound call's speedup can read otherwise there")


def test_the_pace_around_a_compile_is_kept_and_said_beside_the_rounds_pace():
    assert host_pace.around(24.987, 45.2) == {"before_us": 24.99, "after_us": 45.2}
    for odd in ((None, 20.0), (20.0, None), (-1.0, 20.0), (float("nan"), 20.0), (True, 20.0), ("20", 20.0), ()):
        assert host_pace.around(*odd) is None, odd  # a probe missing or not a number: nothing kept
    steady = host_pace.first_call_words(host_pace.around(21.0, 22.0), 21.5)
    assert steady.startswith("The host's pace around the compiled first call: the same piece of Python took 21 us just "
                             "before it and 22 us just after (22 us through the rounds).")
    assert "moved" not in steady and "ran slower" not in steady and "pays another time" in steady
    moved = host_pace.first_call_words(host_pace.around(21.0, 40.0), 21.0)
    assert "The two lie 1.3x apart: the host's pace moved around the compile, or the probe just after it met" in moved
    assert "ran slower" not in moved
    slow = host_pace.first_call_words(host_pace.around(43.0, 45.0), 22.0)
    assert "The host ran slower while it compiled than through the rounds." in slow
    assert "a fixed piece of Python took 43 us just before it and 45 us just after (lower is faster)." in \
        host_pace.first_call_words(host_pace.around(43.0, 45.0))  # no rounds' pace
    for odd in (None, "x", {}, {"before_us": "<b>", "after_us": 3.0}, {"before_us": 3.0}):
        assert host_pace.first_call_words(odd, 22.0) is None, odd


def test_what_a_configuration_read_at_its_devices_fast_pace_is_kept_per_configuration_and_said():
    from lab.interval import Spread, t975
    from lab.spreads import at_fast_pace

    device = ["a"] * 7 + ["b"] * 2
    torch = ["2.11"] * 9
    config = ["k1", "k1", "k1", "k1", "k2", "k2", "k1", "k1", "k1"]
    center = np.array([0.84, 0.83, 0.85, 0.67, 1.5, 1.52, 0.70, 0.9, 0.91])
    pace = np.array([21.0, 22.0, 23.0, 40.0, 21.5, 24.5, np.nan, 30.0, 30.0])
    fast = at_fast_pace(device, torch, config, center, pace, {"a": 21.0})  # a's fast pace: 21 us, so <= 24.15 us
    assert set(fast) == {("a", "2.11", "k1")}  # k2: one process at the pace (24.5 us is past it); b: no fast pace
    k1 = fast["a", "2.11", "k1"]
    logs = np.log([0.84, 0.83, 0.85])
    assert k1.processes == 3 and k1.mean == pytest.approx(logs.mean()) and k1.var == pytest.approx(logs.var(ddof=1))
    half = t975(2) * np.sqrt(logs.var(ddof=1) * (1 + 1 / 3))  # where the next process at that pace reads
    assert host_pace.at_fast_words(k1) == (f"its 3 processes at that pace, over every sweep of it, read "
                                           f"{np.exp(logs.mean()):.2f}x: a process at that pace reads "
                                           f"{np.exp(logs.mean() - half):.2f}x to {np.exp(logs.mean() + half):.2f}x, 95 "
                                           f"times in 100")
    bad = at_fast_pace(device + ["a", "a"], torch + ["2.11"] * 2, config + ["k2", "k2"], np.append(center, [1.0, 1.0]),
                       np.append(pace, [0.0, -5.0]), {"a": 21.0})
    assert set(bad) == {("a", "2.11", "k1")}  # a pace at or below zero is none: k2 gains no process at the fast pace
    assert host_pace.at_fast_words(Spread(2, 0.001, np.log(0.84))) == ("its 2 processes at that pace, over every sweep "
                                                                        "of it, read 0.84x (their geometric mean)")
    for odd in (None, Spread(1, 0.0, 0.0), Spread(3, float("nan"), 0.1), Spread(3, 0.01, None), "x"):
        assert host_pace.at_fast_words(odd) is None, odd
    assert at_fast_pace(device, torch, config, center, pace, {}) == {} and at_fast_pace([], [], [], center[:0],
                                                                                         pace[:0], {"a": 21.0}) == {}
