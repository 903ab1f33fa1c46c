"""The answer rows (lab.answer): every configuration answered from its processes, disturbed runs left out, verdicts
and wide intervals in words, one row per configuration; the plots let the same runs answer."""
import math
import random

import pytest

from lab.answer import answer_rows, rows_csv
from lab.break_even import break_even_calls
from lab.interval import round_ratios, run_center

BASE = {"status": "succeeded", "model": "simplenet", "task": "inference", "device": "cpu", "dtype": "float32",
        "model_args": {}, "torch_version": "2.13.0", "device_name": "cpu", "batch_size": 8, "backend": "inductor",
        "mode": "default", "dynamic": None, "fullgraph": False, "cache": "cold", "error": None, "eager_ms": 2.0,
        "compiled_ms": 1.0, "speedup": 2.0, "eager_first_call_s": 0.01, "compiled_first_call_s": 5.01,
        "recompiles": 0, "graph_breaks": 0, "peak_mem_eager_mb": 10.0, "peak_mem_compiled_mb": 8.0,
        "accuracy_ok": True, "max_abs_error": 1e-6, "noisy": False, "noise_note": None, "graph_cache_hit": None,
        "disturbed": False, "round_speedup": None, "round_speedup_se": None, "first_call_cache": None,
        "speedup_spread": None}


def rounds(center: float, sd: float, n: int = 30, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [center * math.exp(rng.gauss(0, sd)) for _ in range(n)]


def job(job_id: int, center: float | None = 2.0, sd: float = 0.01, seed: int | None = None, **kw) -> dict:
    """A run whose rounds scatter `sd` (log) around `center`, summarised as the child does (lab.interval)."""
    rs = rounds(center, sd, seed=job_id if seed is None else seed) if center else []
    c, se = run_center(rs)
    return {**BASE, "job_id": job_id, "round_speedup": c, "round_speedup_se": se, **kw}


def test_round_ratios_pair_each_rounds_medians():
    samples = {"eager": [[2.0, 2.2, 9.0], [4.0]], "compiled": [[1.0, 1.1, 1.0], [2.0]]}
    assert round_ratios(samples) == [2.2 / 1.0, 2.0]
    assert round_ratios({}) == []


def test_the_interval_covers_process_to_process_variation():
    """Two processes whose rounds agree within themselves (1.20 and 1.40) but not with each other: the interval
    spans both, where an interval over one process's rounds would claim a tight answer."""
    (row,) = answer_rows([job(1, 1.2, 0.005), job(2, 1.4, 0.005)])
    assert row["speedup_ci_low"] < 1.2 and row["speedup_ci_high"] > 1.4
    assert row["speedup_ci_low"] < row["speedup"] < row["speedup_ci_high"] and row["runs"] == 2
    assert "2 processes" in row["verdict"]


def test_the_answer_says_where_a_re_run_should_read_beside_the_interval_for_the_truth():
    """A re-run has processes of its own: the interval it should land in is sqrt(2) times the interval for the true
    speedup (on a log scale, same degrees of freedom), and the verdict says both."""
    (row,) = answer_rows([job(1, 1.38, 0.005), job(2, 1.60, 0.005)])
    s, lo, hi, rlo, rhi = (row[c] for c in ("speedup", "speedup_ci_low", "speedup_ci_high", "rerun_low", "rerun_high"))
    assert rlo < lo < s < hi < rhi
    assert math.log(rhi / s) == pytest.approx(math.sqrt(2) * math.log(hi / s))
    assert math.log(s / rlo) == pytest.approx(math.log(rhi / s))
    assert f"a re-run reads {rlo:.2f}x to {rhi:.2f}x" in row["verdict"]
    assert "rerun_low" in rows_csv([row]).splitlines()[0]
    (failed,) = answer_rows([{**job(3), "status": "failed", "error": "boom"}])
    assert failed["rerun_low"] is None and "re-run reads" not in failed["verdict"]


def test_one_process_is_widened_by_the_spread_between_processes_the_device_has_shown():
    """A configuration measured in one process cannot see its own process effect: its interval takes the spread
    the device's repeated configurations showed (here about 4%), far wider than its rounds' 0.3%, and says so."""
    gpu = {"device": "cuda", "device_name": "H100"}
    repeated = [job(10 + i, c, 0.005, mode="max-autotune", **gpu) for i, c in enumerate((1.0, 1.05, 0.96))]
    repeated += [job(20 + i, c, 0.005, mode="reduce-overhead", **gpu) for i, c in enumerate((1.5, 1.44, 1.52))]
    alone = job(1, 1.3, 0.005, **gpu)
    rows = {r["config"]: r for r in answer_rows([alone, *repeated])}
    one = rows["default"]
    assert one["runs"] == 1
    assert one["speedup_ci_high"] / one["speedup"] - 1 > 0.04  # its rounds alone would say about 0.3%
    assert "one process" in one["verdict"]
    (tight,) = answer_rows([alone])  # no device history: the default prior (5%, worth little), said in words
    assert tight["speedup_ci_high"] / tight["speedup"] - 1 > 0.10 and "anywhere from" in tight["verdict"]
    assert "the usual spread between fresh processes (5%, none measured on this device yet)" in tight["verdict"]
    assert "this device's spread" in one["verdict"] and "GPU" not in tight["verdict"]


def test_scatter_widens_the_interval_and_never_erases_the_answer():
    """Rounds that scatter 40% in each of three processes: an answer, wide, saying why in words."""
    records = [job(i, 1.3, 0.4, speedup_spread=0.5) for i in (1, 2, 3)]
    (row,) = answer_rows(records)
    assert row["speedup"] is not None and row["runs"] == 3 and row["noisy"] is False
    assert "anywhere from" in row["verdict"] and "the rounds scatter 50%" in row["verdict"]


def test_disturbed_runs_are_left_out_of_the_numbers_and_the_verdict():
    records = [job(1, 2.0, eager_ms=2.0, compiled_ms=1.0), job(2, 2.0, eager_ms=2.0, compiled_ms=1.0),
               job(3, 0.1, eager_ms=1.0, compiled_ms=10.0, disturbed=True, noisy=True,
                   noise_note="other processes used 1.6 of the job's 2 cores during the rounds")]
    (row,) = answer_rows(records)
    assert row["runs"] == 2 and row["noisy_runs"] == 1 and row["noisy"] is False
    assert 1.8 < row["speedup_ci_low"] < row["speedup"] < row["speedup_ci_high"] < 2.2  # two processes, no history
    assert row["compiled_ms"] == 1.0  # not the disturbed run's 10 ms
    # (5.01 - 0.01) s over what a call saves at the headline speedup (2 ms less 2 ms / ~2.0x: ~1 ms), + 1
    paid = break_even_calls(0.01, 5.01, 2.0, 2.0 / row["speedup"])
    assert row["break_even_calls"] == paid and 4900 < paid < 5100
    assert f"pays off after {paid:,} calls" in row["verdict"] and "1 disturbed run left out" in row["verdict"]


def test_a_configuration_disturbed_in_every_run_still_answers_and_says_so():
    cause = "the GPU was slowed by hardware thermal slowdown during the rounds"
    (row,) = answer_rows([job(1, 1.5, disturbed=True, noisy=True, noise_note=cause),
                          job(2, 1.5, disturbed=True, noisy=True, noise_note=cause)])
    assert row["noisy"] is True and row["speedup"] is not None and row["runs"] == 2
    assert f"every run was disturbed, so these are their numbers: {cause}" in row["verdict"]


def test_results_stored_before_causes_were_measured_answer_whatever_their_old_flag():
    """An old run flagged noisy for its scatter (no `disturbed` on record) is not disturbed: it answers."""
    (row,) = answer_rows([job(1, 1.4, noisy=True, noise_note="the speedup's rounds spread 7%", disturbed=None)])
    assert row["speedup"] is not None and row["noisy"] is False and row["runs"] == 1


def test_verdicts_in_words():
    records = [job(1, 1.0, 0.05, mode="default"), job(2, 0.8, mode="max-autotune"),
               job(3, 1.3, mode="reduce-overhead"),
               job(5, batch_size=32, mode="max-autotune", status="failed", error="compile failed: boom")]
    records = [{**r, "device": "cuda", "device_name": "H100"} for r in records]  # reduce-overhead: CUDA only
    for r in records[:3]:  # three processes each, as a sweep runs them by default
        records += [{**r, "job_id": r["job_id"] * 10 + i} for i in (1, 2)]
    rows = {(r["batch_size"], r["config"]): r for r in answer_rows(records)}
    assert rows[8, "default"]["verdict"].startswith("not separable from eager: 1.01x [")
    assert rows[8, "max-autotune"]["verdict"].startswith("slower: 0.80x")
    assert rows[8, "reduce-overhead"]["verdict"].startswith("1.30x [")
    assert rows[32, "max-autotune"]["verdict"] == "did not succeed (1 run): compile failed: boom"
    # best first within a batch size; labels name only what differs (the mode here)
    assert [r["config"] for r in answer_rows(records)][:3] == ["reduce-overhead", "default", "max-autotune"]


def test_first_calls_cold_warm_and_a_repeats_warm_first_call():
    records = [job(1, compiled_first_call_s=8.0), job(2, cache="warm", graph_cache_hit=True, compiled_first_call_s=1.0),
               job(3, cache="warm", graph_cache_hit=False, compiled_first_call_s=7.0),  # a warm miss compiled from cold
               job(4, first_call_cache="warm", graph_cache_hit=True, compiled_first_call_s=1.2)]  # a process repeat
    (row,) = answer_rows(records)
    assert (row["first_call_cold_s"], row["first_call_warm_s"]) == (7.5, 1.1)
    (row,) = answer_rows([job(1, None, speedup=2.0)])  # stored without per-round samples: its speedup, widened
    assert row["speedup"] == 2.0 and row["speedup_ci_low"] < 2.0 < row["speedup_ci_high"]


def test_on_the_cpu_reduce_overhead_runs_are_counted_under_default():
    """CUDA graphs need CUDA: on the CPU reduce-overhead is the same compile as default, one row with a note."""
    records = [job(1, 1.4, mode="default"), job(2, 1.4, mode="reduce-overhead"),
               job(3, 1.1, mode="max-autotune-no-cudagraphs")]
    rows = {r["config"]: r for r in answer_rows(records)}
    assert set(rows) == {"default", "max-autotune"}
    assert rows["default"]["runs"] == 2 and rows["default"]["job_ids"] == "1 2"
    assert "reduce-overhead on cpu is default: the same compile, since CUDA graphs need CUDA" in rows["default"]["verdict"]
    assert "max-autotune-no-cudagraphs on cpu is max-autotune" in rows["max-autotune"]["verdict"]
    on_gpu = answer_rows([job(1, device="cuda"), job(2, device="cuda", mode="reduce-overhead")])
    assert {r["config"] for r in on_gpu} == {"default", "reduce-overhead"}


def _view(*runs):
    import pandas as pd

    from dashboard.data.frame import NUMBERS

    return pd.DataFrame([{**{n: None for n in NUMBERS}, "status": "succeeded", "baseline": "eager", "batch_size": 8,
                          "error": None, "eager_ms": 1.0, "eager_first_call_s": 0.01, "compiled_first_call_s": 5.0,
                          "compiled_second_call_s": 0.01, "eager_spread": 0.01, "compiled_spread": 0.01,
                          "noise_note": None, "disturbed": False, **r} for r in runs])


def test_plots_leave_disturbed_runs_out_and_grey_a_configuration_with_nothing_else():
    """dashboard.data.plot_data: an undisturbed run answers for its configuration; one whose every run was disturbed is
    kept, flagged and drawn greyed on the speedup plot, with the cause."""
    from dashboard.charts import speed_charts
    from dashboard.data import plot_data

    cause = "other processes used 1.2 of the job's 2 cores during the rounds"
    view = _view({"job_id": 1, "config": "A", "speedup": 1.5, "compiled_ms": 1 / 1.5},
                 {"job_id": 2, "config": "A", "speedup": 0.1, "compiled_ms": 10.0, "disturbed": True, "noise_note": cause},
                 {"job_id": 3, "config": "B", "speedup": 0.7, "compiled_ms": 1 / 0.7, "disturbed": True,
                  "noise_note": cause})
    agg = plot_data.with_noise(plot_data.medians(view, ["config", "baseline", "batch_size"]), view).set_index("config")
    assert agg.loc["A", "speedup"] == 1.5 and agg.loc["A", "runs"] == 1 and not agg.loc["A", "only_noisy"]
    assert agg.loc["B", "speedup"] == 0.7 and agg.loc["B", "only_noisy"]
    agg = agg.reset_index().assign(series=lambda d: d["config"])
    fig = speed_charts.mark_noisy(speed_charts.speedup(agg, plot_data.failures(view)), agg)
    (grey,) = [t for t in fig.data if t.legendgroup == "only-noisy"]
    assert list(grey.y) == [0.7] and "1.2 of the job" in grey.customdata[0][1]
    (ring,) = [t for t in fig.data if t.legendgroup == "noisy"]
    assert list(ring.y) == [1.5]


def test_the_plots_and_the_answer_let_the_same_runs_answer():
    """dashboard.data.plot_data.answering (the plots, Compare) and lab.answer (the table, `runner report`) both ask lab.noise:
    undisturbed runs answer; disturbed ones only where every run of their configuration was; an old scatter flag is
    not a cause."""
    import pandas as pd

    from dashboard.data import plot_data

    kinds = {"quiet": [{}], "mixed": [{}, {"disturbed": True}], "all disturbed": [{"disturbed": True}] * 2,
             "old flag": [{"noisy": True, "disturbed": None}]}
    records = [job(0, mode=m, **r) for m, rs in kinds.items() for r in rs]
    records = [{**r, "job_id": i} for i, r in enumerate(records)]
    by_db = {r["config"]: r["runs"] for r in answer_rows(records)}
    frame = pd.DataFrame(records).assign(baseline="eager")
    answers = plot_data.answering(frame, ["mode", "baseline", "batch_size"])
    assert frame.loc[answers[answers].index].groupby("mode").size().to_dict() == by_db
    assert sum(by_db.values()) == len(records) - 1  # the mixed configuration's disturbed run alone is left out


def test_a_noisy_configurations_name_stays_text_on_the_plots_that_mark_it():
    """A configuration's label carries values from model files and the form: the grey marks show it as typed."""
    from dashboard.charts import speed_charts
    from dashboard.data import plot_data

    name = "default · n=<b>x</b>"
    view = _view({"job_id": 1, "config": name, "series": name, "speedup": 2.0, "compiled_ms": 0.5, "disturbed": True,
                  "noise_note": "spread <i>30%</i>"})
    agg, fails = plot_data.summarize(view)
    agg = plot_data.with_noise(agg, view)
    for fig in (speed_charts.latency(agg, fails), speed_charts.mark_noisy(speed_charts.speedup(agg, fails), agg)):
        (grey,) = [t for t in fig.data if t.legendgroup == "only-noisy"]
        assert "<b>" not in str(grey.customdata) and "&lt;b&gt;x&lt;/b&gt;" in str(grey.customdata)
        assert "<i>" not in str(grey.customdata)
    ticks = speed_charts.warmup(agg, fails).layout.yaxis.ticktext
    assert len(ticks) == 1 and "&lt;b&gt;x&lt;/b&gt;" in ticks[0] and "<b>" not in ticks[0]


def test_medians_that_read_another_ratio_than_the_speedup_are_explained_in_the_verdict():
    """A configuration whose compiled calls change from round to round (a fast and a slow graph, say): the ms columns'
    medians read 0.14x where the paired rounds read 0.73x. Both stay; the verdict says why they disagree. Medians
    that agree with the interval add nothing."""
    apart = [job(i, 0.73, 0.02, eager_ms=2.15, compiled_ms=14.98) for i in (1, 2)]
    (row,) = answer_rows(apart)
    assert 0.7 < row["speedup"] < 0.76 and row["eager_ms"] == 2.15 and row["compiled_ms"] == 14.98
    assert "the median calls read 0.14x (2.15 ms eager, 14.98 ms compiled)" in row["verdict"]
    assert "Repeats" in row["verdict"] and row["verdict"].startswith("slower: 0.73x")
    (row,) = answer_rows([job(i, 0.73, 0.02, eager_ms=2.15, compiled_ms=2.95) for i in (1, 2)])
    assert "median calls" not in row["verdict"]


def test_processes_that_disagree_say_which_side_moved_between_them():
    """vit_tiny on an H200: eager's per-process medians moved 3.7-6.5 ms while compiled's held at ~3.5 ms (eager's GPU
    work the same in each; the host's launch speed was not). The verdict that blames the processes' disagreement says
    which side's calls moved, as each process read them; one process, or rounds that scatter, say nothing of it."""
    runs = [job(1, 1.35, 0.005, eager_ms=4.94, compiled_ms=3.67), job(2, 1.82, 0.005, eager_ms=6.53, compiled_ms=3.59),
            job(3, 1.29, 0.005, eager_ms=4.41, compiled_ms=3.41)]
    (row,) = answer_rows(runs)
    # by how much: their highest over their lowest (1.82 / 1.29), as the follow-up's reason says it (lab.noise), a
    # figure a reader can check against the processes' numbers
    assert "its 3 processes disagree by 41%: eager's calls took 4.41-6.53 ms in them, compiled's 3.41-3.67 ms" \
        in row["verdict"], row["verdict"]
    (one,) = answer_rows(runs[:1])
    assert "calls took" not in one["verdict"]
    (held,) = answer_rows([job(1, 1.3, 0.005, eager_ms=4.6, compiled_ms=3.5), job(2, 1.8, 0.005, eager_ms=6.3,
                                                                                  compiled_ms=3.5)])
    assert "eager's calls took 4.6-6.3 ms in them, compiled's 3.5 ms" in held["verdict"]
    scatter = [job(i, 1.4, 0.6, seed=7, eager_ms=e, compiled_ms=3.5, speedup_spread=0.6) for i, e in ((1, 4.9), (2, 4.8))]
    (scattered,) = answer_rows(scatter)
    assert "the rounds scatter" in scattered["verdict"] and "calls took" not in scattered["verdict"]


def test_processes_that_agree_say_so_where_the_devices_spread_widens_them():
    """Two processes that read the same number are not said to disagree: where the device's spread between fresh
    processes (its other configurations') is what widens the interval, the words say that, and how close they read."""
    gpu = {"device": "cuda", "device_name": "H200"}
    spread = [job(1, 1.2, 0.005, **gpu), job(2, 1.7, 0.005, **gpu), job(3, 0.9, 0.005, mode="max-autotune", **gpu),
              job(4, 1.3, 0.005, mode="max-autotune", **gpu)]
    agree = [job(i, 1.4, 0.005, seed=9, mode="reduce-overhead", **gpu) for i in (5, 6)]
    (row,) = [r for r in answer_rows(spread + agree) if r["config"].startswith("reduce-overhead")]
    assert row["speedup_ci_high"] / row["speedup"] - 1 > 0.10
    assert "its 2 processes read within 1% of each other, widened by this device's spread" in row["verdict"]
    assert "disagree" not in row["verdict"]


def test_an_interval_end_near_one_keeps_the_digits_that_say_which_side_of_one_it_is():
    """A first-hour walk read "slower: 0.95x [0.91, 1.00]" in one view and "not separable from eager: 0.95x
    [0.91, 1.00]" in another of the same jobs: the high end was just under 1 in one and just over in the other. An end
    that rounds to 1.00 without being 1 is written with the digits that tell."""
    from lab.verdict import end

    assert [end(v) for v in (0.9996, 1.0003, 1.0, 0.954, 1.004)] == ["0.9996", "1.0003", "1.00", "0.95", "1.004"]
    (row,) = answer_rows([job(1, 0.96, 0.02), job(2, 0.975, 0.02)])
    lo, hi = row["speedup_ci_low"], row["speedup_ci_high"]
    said = row["verdict"]
    assert f"[{end(lo)}, {end(hi)}]" in said or f"from {end(lo)}x to {end(hi)}x" in said
    assert said.startswith("slower") == (hi < 1) and ("1.00]" not in said or hi == 1)
