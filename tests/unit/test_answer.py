"""The answer rows (db.answer): the interval, noise kept out, verdicts in words, one row per configuration."""
import random

from db.answer import answer_rows, round_ratios, speedup_interval

BASE = {"status": "succeeded", "model": "simplenet", "task": "inference", "device": "cpu", "dtype": "float32",
        "model_args": {}, "torch_version": "2.13.0", "device_name": "cpu", "batch_size": 8, "backend": "inductor",
        "mode": "default", "dynamic": None, "fullgraph": False, "cache": "cold", "error": None, "eager_ms": 2.0,
        "compiled_ms": 1.0, "speedup": 2.0, "eager_first_call_s": 0.01, "compiled_first_call_s": 5.01,
        "recompiles": 0, "graph_breaks": 0, "peak_mem_eager_mb": 10.0, "peak_mem_compiled_mb": 8.0,
        "accuracy_ok": True, "max_abs_error": 1e-6, "noisy": False, "noise_note": None, "cache_hits": None}


def job(job_id: int, **kw) -> dict:
    return {**BASE, "job_id": job_id, **kw}


def rounds(center: float, sd: float, n: int = 30, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [center + rng.gauss(0, sd) for _ in range(n)]


def test_round_ratios_pair_each_rounds_medians():
    samples = {"eager": [[2.0, 2.2, 9.0], [4.0]], "compiled": [[1.0, 1.1, 1.0], [2.0]]}
    assert round_ratios(samples) == [2.2 / 1.0, 2.0]
    assert round_ratios({}) == []


def test_the_interval_covers_process_to_process_variation():
    """Two processes whose rounds agree within themselves (1.20 and 1.40) but not with each other: the pooled
    interval spans both, where an interval over rounds alone would claim a tight answer."""
    point, low, high = speedup_interval([rounds(1.2, 0.005, seed=1), rounds(1.4, 0.005, seed=2)])
    assert low < 1.22 and high > 1.38 and low <= point <= high
    point, low, high = speedup_interval([rounds(1.2, 0.005, seed=1)])
    assert 1.19 < low < point < high < 1.21  # one process: its rounds only


def test_noisy_runs_are_left_out_of_the_numbers_and_the_verdict():
    records = [job(1, eager_ms=2.0, compiled_ms=1.0), job(2, eager_ms=2.0, compiled_ms=1.0),
               job(3, eager_ms=1.0, compiled_ms=10.0, noisy=True, noise_note="eager's round medians spread 2450%")]
    ratios = {1: rounds(1.42, 0.02, seed=1), 2: rounds(1.42, 0.02, seed=2), 3: rounds(0.09, 0.05, seed=3)}
    (row,) = answer_rows(records, ratios)
    assert row["runs"] == 2 and row["noisy_runs"] == 1 and row["noisy"] is False
    assert 1.38 < row["speedup_ci_low"] < 1.42 < row["speedup_ci_high"] < 1.46
    assert row["compiled_ms"] == 1.0  # not the noisy run's 10 ms
    assert row["break_even_calls"] == 5001  # (5.01 - 0.01) s / 1 ms saved per call, + 1
    assert row["verdict"].startswith(f"{row['speedup']:.2f}x [") and "pays off after 5,001 calls" in row["verdict"]
    assert "1 noisy run(s) left out" in row["verdict"]


def test_verdicts_in_words():
    records = [job(1, mode="default"), job(2, mode="max-autotune"), job(3, mode="reduce-overhead"),
               job(4, batch_size=32, noisy=True, noise_note="compiled's round medians spread 12%"),
               job(5, batch_size=32, mode="max-autotune", status="failed", error="compile failed: boom")]
    records = [{**r, "device": "cuda"} for r in records]  # reduce-overhead is its own compile on CUDA only
    ratios = {1: rounds(1.0, 0.05), 2: rounds(0.8, 0.01), 3: rounds(1.3, 0.01)}
    rows = {(r["batch_size"], r["config"]): r for r in answer_rows(records, ratios)}
    assert rows[8, "default"]["verdict"].startswith("not separable from eager: 0.98x [0.97, 1.01]")
    assert rows[8, "max-autotune"]["verdict"].startswith("slower: 0.80x")
    assert rows[8, "reduce-overhead"]["verdict"].startswith("1.30x [")
    noisy = rows[32, "default"]
    assert noisy["noisy"] is True and noisy["speedup"] is None and "all 1 run(s) were noisy" in noisy["verdict"]
    assert "spread 12%" in noisy["verdict"]
    assert rows[32, "max-autotune"]["verdict"] == "did not succeed (1 run): compile failed: boom"
    # best first within a batch size; labels name only what differs (the mode here)
    assert [r["config"] for r in answer_rows(records, ratios)][:3] == [
        "reduce-overhead", "default", "max-autotune"]


def test_first_calls_cold_and_warm_apart():
    hit = {"inductor_fx_local_cache_hit_count": 1, "inductor_fx_local_cache_miss_count": 0}
    miss = {"inductor_fx_local_cache_hit_count": 0, "inductor_fx_local_cache_miss_count": 1}
    records = [job(1, compiled_first_call_s=8.0), job(2, cache="warm", cache_hits=hit, compiled_first_call_s=1.0),
               job(3, cache="warm", cache_hits=miss, compiled_first_call_s=7.0)]  # a warm miss compiled from cold
    (row,) = answer_rows(records, {})
    assert (row["first_call_cold_s"], row["first_call_warm_s"]) == (7.5, 1.0)
    assert row["speedup_ci_low"] is None and "no interval" in row["verdict"]


def test_plots_leave_noisy_runs_out_and_grey_a_configuration_with_nothing_else():
    """dashboard.stats: a quiet run answers for its configuration; one with noisy runs only is kept, flagged and
    drawn greyed on the speedup plot."""
    import pandas as pd

    from dashboard import charts, stats
    from dashboard.frame import NUMBERS

    def run(job_id, config, speedup, noisy):
        return {**{n: None for n in NUMBERS}, "job_id": job_id, "status": "succeeded", "config": config,
                "baseline": "eager", "batch_size": 8, "error": None, "speedup": speedup, "eager_ms": 1.0,
                "compiled_ms": 1 / speedup,
                "noisy": noisy, "eager_spread": 0.3 if noisy else 0.01, "compiled_spread": 0.01,
                "noise_note": "eager's round medians spread 30%" if noisy else None}
    view = pd.DataFrame([run(1, "A", 1.5, False), run(2, "A", 0.1, True), run(3, "B", 0.7, True)])
    agg = stats.with_noise(stats.medians(view, ["config", "baseline", "batch_size"]), view).set_index("config")
    assert agg.loc["A", "speedup"] == 1.5 and agg.loc["A", "runs"] == 1 and not agg.loc["A", "only_noisy"]
    assert agg.loc["B", "speedup"] == 0.7 and agg.loc["B", "only_noisy"]
    agg = agg.reset_index().assign(series=lambda d: d["config"])
    fig = charts.mark_noisy(charts.speedup(agg, stats.failures(view)), agg)
    (grey,) = [t for t in fig.data if t.legendgroup == "only-noisy"]
    assert list(grey.y) == [0.7] and "spread 30%" in grey.customdata[0][1]


def test_on_the_cpu_reduce_overhead_runs_are_counted_under_default():
    """CUDA graphs need CUDA: on the CPU reduce-overhead is the same compile as default, one row with a note."""
    records = [job(1, mode="default"), job(2, mode="reduce-overhead"), job(3, mode="max-autotune-no-cudagraphs")]
    ratios = {1: rounds(1.4, 0.01, seed=1), 2: rounds(1.4, 0.01, seed=2), 3: rounds(1.1, 0.01, seed=3)}
    rows = {r["config"]: r for r in answer_rows(records, ratios)}
    assert set(rows) == {"default", "max-autotune"}
    assert rows["default"]["runs"] == 2 and rows["default"]["job_ids"] == "1 2"
    assert "reduce-overhead on cpu is default: the same compile, since CUDA graphs need CUDA" in rows["default"]["verdict"]
    assert "max-autotune-no-cudagraphs on cpu is max-autotune" in rows["max-autotune"]["verdict"]
    on_gpu = answer_rows([job(1, device="cuda"), job(2, device="cuda", mode="reduce-overhead")], ratios)
    assert {r["config"] for r in on_gpu} == {"default", "reduce-overhead"}


def test_what_a_configuration_with_noisy_runs_only_measured_is_kept_apart_from_the_answer():
    """db.answer.unanswered: the numbers a noisy-only configuration's runs measured, for a chart that greys it,
    keyed by its row's job ids; its answer row keeps none, and a configuration that answers has no entry."""
    from db.answer import unanswered

    records = [job(1, mode="default"), job(2, mode="max-autotune", compiled_ms=0.5, speedup=4.0, noisy=True,
                                             noise_note="compiled's round medians spread 12%"),
               job(3, mode="max-autotune", status="failed", error="boom", compiled_ms=None, speedup=None)]
    rows = {r["config"]: r for r in answer_rows(records, {1: rounds(2.0, 0.01)})}
    assert rows["max-autotune"]["compiled_ms"] is None and rows["max-autotune"]["noisy"]
    measured = unanswered(records, list(rows.values()))
    assert set(measured) == {"2 3"}  # the row's job ids, failed run included
    assert measured["2 3"]["compiled_ms"] == 0.5 and measured["2 3"]["first_call_cold_s"] == 5.01
    assert unanswered(records, [rows["default"]]) == {}


def test_every_bar_plot_greys_a_configuration_with_noisy_runs_only_and_break_even_does_not_count_it():
    """dashboard.charts: break-even and warmup grey the row (its own trace, no legend entry: the legend keeps the
    colours), mark its tick label; break-even's note and the eager-drift note judge the configurations that answer."""
    import pandas as pd

    from dashboard import charts, stats
    from dashboard.frame import NUMBERS

    def run(job_id, config, bs, speedup, noisy, eager_ms=1.0):
        return {**{n: None for n in NUMBERS}, "job_id": job_id, "status": "succeeded", "config": config,
                "baseline": "eager", "batch_size": bs, "series": f"{config} · bs {bs}", "error": None, "speedup": speedup,
                "eager_ms": eager_ms,
                "compiled_ms": eager_ms / speedup, "break_even_calls": 100.0 * job_id, "eager_first_call_s": 0.01,
                "compiled_first_call_s": 5.0, "compiled_second_call_s": 0.01, "noisy": noisy,
                "eager_spread": 0.3 if noisy else 0.01, "compiled_spread": 0.01,
                "noise_note": "eager's round medians spread 30%" if noisy else None}
    view = pd.DataFrame([run(1, "A", 8, 1.5, False), run(2, "B", 8, 3.0, True, eager_ms=5.0), run(3, "A", 32, 1.2, False),
                         run(4, "B", 32, 1.1, False)])
    agg, fails = stats.summarize(view)
    agg = stats.with_noise(agg, view)
    assert stats.noisy_series(agg) == {"B · bs 8"}
    assert "B · bs 8 (all 1 run: eager's round medians spread 30%)" in stats.noisy_note(agg)
    assert stats.eager_drift(agg) is None  # the noisy run's eager (5 ms) is no drift of the machine
    for fig in (charts.break_even(agg, fails), charts.warmup(agg, fails)):
        grey = [t for t in fig.data if str(t.marker.color) == charts.NOISY_GREY and t.x is not None
                and any(x is not None for x in t.x)]
        assert grey and all(t.showlegend is False and t.marker.pattern.shape == "/" for t in grey)
        assert {y for t in grey for y, x in zip(t.y, t.x) if x is not None} == {"B · bs 8"}
        others = [t for t in fig.data if all(t is not g for g in grey) and t.y is not None and t.x is not None]
        assert all(x is None for t in others for y, x in zip(t.y, t.x) if y == "B · bs 8")
        ticks = dict(zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext))
        assert "⚠ noisy · B · bs 8" in ticks["B · bs 8"] and ticks["A · bs 8"] == "A · bs 8"
    # one configuration that answers and one with noisy runs only: break-even steps aside, and says it left one out
    two = agg[agg["batch_size"] == 8]
    assert charts.break_even(two, fails) is None
    assert charts.break_even_note(two).startswith("Break-even: one configuration in view (A · bs 8)")
    assert "1 configuration with noisy runs only is not counted" in charts.break_even_note(two)


def test_the_plots_and_the_answer_let_the_same_runs_answer():
    """dashboard.stats.answering (the plots, Compare) and db.answer (the table, `runner report`) both ask db.noise:
    quiet runs, spread-noisy ones by the speedup's spread or (stored before it) by the sides', a lone
    host-sensitive run, two host-sensitive runs, a run flagged noisy with nothing else on record."""
    import pandas as pd

    from dashboard import stats
    from db.answer import _answering

    host = dict(noisy=True, speedup_spread=0.01, eager_spread=0.2, compiled_host_overhead=0.4)
    kinds = {"quiet": [dict(noisy=False, eager_spread=0.5)], "paired": [dict(noisy=True, speedup_spread=0.2)],
             "sides": [dict(noisy=True, speedup_spread=None, eager_spread=0.2)], "lone host": [host],
             "two hosts": [host, host], "flag only": [dict(noisy=True)],
             "quiet ratio": [dict(noisy=True, speedup_spread=0.01, eager_spread=0.3)], "mixed": [host, dict(noisy=False)]}
    records = [job(len(rs) * 100 + i, mode=m, **{"eager_spread": None, "compiled_spread": None, "speedup_spread": None,
                                                "eager_host_overhead": None, "compiled_host_overhead": None, **r})
               for m, rs in kinds.items() for i, r in enumerate(rs)]
    records = [{**r, "job_id": i} for i, r in enumerate(records)]
    by_db = {r["job_id"] for m in kinds for r in [r for r in records if r["mode"] == m]
             if r["job_id"] in _answering([x for x in records if x["mode"] == m])}
    frame = pd.DataFrame(records).assign(baseline="eager")
    answers = stats.answering(frame, ["mode", "baseline", "batch_size"])
    by_plots = set(frame.loc[answers[answers].index, "job_id"])
    assert by_plots == by_db
    assert {r["mode"] for r in records if r["job_id"] in by_db} == {"quiet", "two hosts", "mixed"}


def test_a_noisy_configurations_name_stays_text_on_the_plots_that_mark_it():
    """A configuration's label carries values from model files and the form: the grey marks show it as typed."""
    import pandas as pd

    from dashboard import charts, stats
    from dashboard.frame import NUMBERS

    name = "default · n=<b>x</b>"
    view = pd.DataFrame([{**{n: None for n in NUMBERS}, "job_id": 1, "status": "succeeded", "config": name,
                          "baseline": "eager", "batch_size": 8, "series": name, "error": None, "speedup": 2.0,
                          "eager_ms": 1.0, "compiled_ms": 0.5, "eager_first_call_s": 0.01, "compiled_first_call_s": 5.0,
                          "noisy": True, "speedup_spread": 0.3, "eager_spread": 0.01, "compiled_spread": 0.01,
                          "noise_note": "spread <i>30%</i>"}])
    agg, fails = stats.summarize(view)
    agg = stats.with_noise(agg, view)
    for fig in (charts.latency(agg, fails), charts.mark_noisy(charts.speedup(agg, fails), agg)):
        (grey,) = [t for t in fig.data if t.legendgroup == "only-noisy"]
        assert "<b>" not in str(grey.customdata) and "&lt;b&gt;x&lt;/b&gt;" in str(grey.customdata)
        assert "<i>" not in str(grey.customdata)
    ticks = charts.warmup(agg, fails).layout.yaxis.ticktext
    assert len(ticks) == 1 and "&lt;b&gt;x&lt;/b&gt;" in ticks[0] and "<b>" not in ticks[0]
