"""The Results figures' data (no streamlit): roofline points, cache layers, breakdowns, clocks, notes."""
import json

import numpy as np
import pandas as pd
import pytest

from dashboard.charts import diagnosis, speed_charts, styling
from dashboard.data import frame, plot_data, roofline_points, series_labels
from db import views
from db.device_ceilings import newest_ceilings, store_ceilings
from runner import zoo

CATALOG = zoo.model_infos(zoo.catalog())  # the real zoo's metadata (read with ast: no torch)




def test_roofline_points_lines_and_missing_ceilings(engine):
    store_ceilings(engine, "NVIDIA H100 80GB HBM3", "old-host", "2.12", 2000.0, {"float32": 40.0})
    store_ceilings(engine, "NVIDIA H100 80GB HBM3", "vm", "2.13", 2952.2, {"float32": 51.24, "bfloat16": 782.97})
    shown = pd.DataFrame([
        # complexnet bs32 on an H100: 35.8 TFLOP/s, 70% of the fp32 matmul ceiling
        {"model": "complexnet", "flops": 1.056e11, "min_bytes": 7.09e7, "achieved_tflops": 35.8, "achieved_gbps": 24.0,
         "roofline_pct": 70.0, "roofline_bound": "compute", "mfu": None, "compiled_ms": 2.95, "noisy": False},
        {"model": "complexnet", "flops": 1.056e11, "min_bytes": 7.09e7, "achieved_tflops": 35.0, "achieved_gbps": 23.0,
         "roofline_pct": 68.0, "roofline_bound": "compute", "mfu": None, "compiled_ms": 3.0, "disturbed": True},
        # sincos: elementwise only, 0 counted FLOPs, at the copy ceiling
        {"model": "sincos", "flops": 0.0, "min_bytes": 1.2e9, "achieved_tflops": 0.0, "achieved_gbps": 3056.0,
         "roofline_pct": 104.0, "roofline_bound": "memory", "mfu": None, "compiled_ms": 0.393, "noisy": False},
        {"model": "simplenet", "task": "training", "flops": 3e7, "min_bytes": 3.3e6, "achieved_tflops": 0.5,
         "achieved_gbps": 50.0, "roofline_pct": 2.0, "roofline_bound": "memory", "mfu": 0.01, "compiled_ms": 0.06,
         "noisy": False},
        {"model": "simplenet", "device": "cpu", "device_name": "AMD EPYC", "flops": 3e7, "min_bytes": 1.1e6,
         "achieved_tflops": 0.1, "achieved_gbps": 4.0, "roofline_pct": None, "roofline_bound": None, "mfu": None,
         "compiled_ms": 0.3, "noisy": False},
        {"model": "mlp", "status": "failed", "flops": None, "min_bytes": None},
    ])
    defaults = {"status": "succeeded", "variant": "", "task": "inference", "device": "cuda",
                "device_name": "NVIDIA H100 80GB HBM3", "dtype": "float32", "batch_size": 32, "backend": "inductor",
                "mode": "default", "dynamic": "none", "fullgraph": "false", "scope": "model", "cache": "cold"}
    shown = shown.assign(**{k: shown[k].fillna(v) if k in shown else v for k, v in defaults.items()})
    pts = roofline_points.points(shown).set_index(["model", "task"])
    # the point is the quiet run's alone (as on every plot: lab.noise), the noisy one counted beside it
    assert len(pts) == 4 and pts.loc[("complexnet", "inference"), "runs"] == 1
    assert pts.loc[("complexnet", "inference"), "noisy_runs"] == 1
    assert pts.loc[("complexnet", "inference"), "achieved_tflops"] == 35.8 and not pts["only_noisy"].any()
    assert pts.loc[("complexnet", "inference"), "ai"] == pytest.approx(1.056e11 / 7.09e7)
    assert not pts.loc[("sincos", "inference"), "on_plot"] and pts["on_plot"].sum() == 3
    pts = pts.reset_index()
    ceilings = newest_ceilings(engine, pts["device_name"].unique())
    assert {(c["dtype"], c["hostname"]) for c in ceilings} == {("float32", "vm"), ("bfloat16", "vm")}  # newest
    in_view = roofline_points.ceilings_in_view(ceilings, pts)
    assert in_view[["device_name", "dtype"]].values.tolist() == [["NVIDIA H100 80GB HBM3", "float32"]]
    line = roofline_points.lines(in_view, pts)
    ridge = 51.24 * 1e3 / 2952.2  # FLOP/byte where bandwidth meets compute
    assert line["ai"].tolist()[1] == pytest.approx(ridge) and line["tflops"].max() == pytest.approx(51.24)
    left = line.iloc[0]
    assert left["tflops"] == pytest.approx(2952.2 * left["ai"] / 1e3) and left["ai"] <= pts["ai"][pts["on_plot"]].min()
    assert line["ai"].max() >= pts["ai"].max()
    missing = roofline_points.missing_ceilings(ceilings, pts)
    assert missing.values.tolist() == [["cpu", "AMD EPYC", "float32"]]
    assert roofline_points.off_plot(pts) == ("sincos on NVIDIA H100 80GB HBM3 (1 configuration): 3,056 GB/s, "
                                      "at best 104% of the roofline.")
    fig = diagnosis.roofline(pts, line, "model")
    assert [t.name for t in fig.data if t.mode == "lines"] == ["NVIDIA H100 80GB HBM3 · float32: 51.2 TFLOP/s, 2,952 GB/s"]
    hollow = [t for t in fig.data if t.mode == "markers" and (t.marker.symbol or "").endswith("-open") and t.x[0] is not None]
    assert len(hollow) == 1 and hollow[0].name == "complexnet"
    simplenet = [row for t in fig.data if t.name == "simplenet" and t.x[0] is not None for row in t.customdata]
    assert sum("MFU 1.0%" in str(row[3]) for row in simplenet) == 1  # the training job's
    assert {t.name for t in fig.data if t.x[0] is None} == {  # legend entries; two devices: a symbol each
        "complexnet", "simplenet", "circle: AMD EPYC", "diamond: NVIDIA H100 80GB HBM3",
        "hollow: a disturbed run left out"}
    # every point and the ceiling inside the frame, a quarter decade from its edges (log axes: ranges in decades)
    (x_lo, x_hi), (y_lo, y_hi) = fig.layout.xaxis.range, fig.layout.yaxis.range
    drawn = [(x, y) for t in fig.data if t.x[0] is not None for x, y in zip(t.x, t.y)]
    assert len(drawn) >= 6 and max(y for _, y in drawn) == pytest.approx(51.24)
    assert all(x_lo + 0.2 < np.log10(x) < x_hi - 0.2 and y_lo + 0.2 < np.log10(y) < y_hi - 0.2 for x, y in drawn)


def test_the_roofline_draws_a_configuration_with_noisy_runs_only_in_its_colour_ringed_and_folds_modes_off_cuda():
    """A configuration whose only run was noisy keeps its colour, hollow and ringed (the answer's numbers are theirs);
    on the CPU a job stored as reduce-overhead is the default configuration's point."""
    row = {"status": "succeeded", "model": "simplenet", "variant": "", "task": "inference", "device": "cpu",
           "device_name": "AMD EPYC", "dtype": "float32", "batch_size": 8, "backend": "inductor", "mode": "default",
           "dynamic": "none", "fullgraph": "false", "scope": "model", "cache": "cold", "flops": 3e7, "min_bytes": 1e6,
           "achieved_tflops": 0.1, "achieved_gbps": 4.0, "roofline_pct": None, "roofline_bound": None, "mfu": None,
           "compiled_ms": 0.3, "disturbed": False}
    shown = pd.DataFrame([row, {**row, "mode": "reduce-overhead", "achieved_tflops": 0.2},
                          {**row, "batch_size": 32, "disturbed": True, "achieved_tflops": 0.4}])
    pts = roofline_points.points(shown).set_index("batch_size")
    assert len(pts) == 2 and pts.loc[8, "mode"] == "default" and pts.loc[8, "runs"] == 2
    assert pts.loc[32, "only_noisy"] and pts.loc[32, "noisy_runs"] == 0 and not pts.loc[8, "only_noisy"]
    fig = diagnosis.roofline(pts.reset_index(), pd.DataFrame(columns=["device_name", "dtype", "ai", "tflops"]),
                             "model")
    points = [t for t in fig.data if t.x[0] is not None and t.customdata is not None]
    (hollow,) = [t for t in points if (t.marker.symbol or "").endswith("-open")]
    (solid,) = [t for t in points if not (t.marker.symbol or "").endswith("-open")]
    assert list(hollow.y) == [0.4] and "every run disturbed" in hollow.customdata[0][6]
    assert hollow.marker.color == solid.marker.color != styling.NOISY_GREY  # simplenet's colour, not grey
    (ring,) = [t for t in fig.data if t.x[0] is not None and t.customdata is None]
    assert list(ring.y) == [0.4] and ring.marker.symbol == styling.NOISY_MARKER["symbol"]
    assert styling.NOISY_LEGEND in {t.name for t in fig.data}


def test_a_disturbed_first_run_whose_follow_ups_answer_is_not_drawn_as_every_run_disturbed():
    """Process repeats and re-runs count no FLOPs (the first run counts the configuration's work): the point is the
    runs that answer, not the disturbed first run they replaced. On the CPU their rates follow from their compiled ms;
    on a GPU (rates on its GPU clock, which follow-ups do not keep) the point stays the first run's, said so."""
    row = {"status": "succeeded", "model": "simplenet", "variant": "", "task": "inference", "device": "cpu",
           "device_name": "AMD EPYC", "dtype": "float32", "batch_size": 8, "backend": "inductor", "mode": "default",
           "dynamic": "none", "fullgraph": "false", "scope": "model", "cache": "cold", "flops": 3e7, "min_bytes": 1e6,
           "achieved_tflops": 3e7 / 0.4e-3 / 1e12, "achieved_gbps": 1e6 / 0.4e-3 / 1e9, "roofline_pct": 20.0,
           "roofline_bound": "memory", "mfu": None, "compiled_ms": 0.4, "disturbed": True}
    repeat = {**row, "flops": None, "min_bytes": None, "achieved_tflops": None, "achieved_gbps": None,
              "roofline_pct": None, "roofline_bound": None, "disturbed": False}
    cpu = [row, {**repeat, "compiled_ms": 0.3}, {**repeat, "compiled_ms": 0.2}]
    gpu = [{**r, "device": "cuda", "device_name": "H200"} for r in cpu]
    pts = roofline_points.points(pd.DataFrame(cpu + gpu)).set_index("device")
    assert not pts["only_noisy"].any() and (pts["noisy_runs"] == 1).all()
    host = pts.loc["cpu"]
    assert host["runs"] == 2 and host["compiled_ms"] == pytest.approx(0.25)
    assert host["achieved_tflops"] == pytest.approx((0.1 + 0.15) / 2)  # the answering runs' median rate (3e7 / ms)
    assert host["roofline_pct"] == pytest.approx((20.0 * 0.4 / 0.3 + 20.0 * 0.4 / 0.2) / 2)  # as 1 / ms
    assert host["roofline_bound"] == "memory"
    assert not host["rates_disturbed"]
    device = pts.loc["cuda"]
    assert device["runs"] == 1 and device["achieved_tflops"] == pytest.approx(row["achieved_tflops"])
    assert device["rates_disturbed"] and device["compiled_ms"] == pytest.approx(0.25)  # the answer's time, as elsewhere
    fig = diagnosis.roofline(pts.reset_index(), pd.DataFrame(columns=["device_name", "dtype", "ai", "tflops"]),
                             "device")
    hover = {t.name: t.customdata[0][6] for t in fig.data if t.x[0] is not None and t.customdata is not None}
    assert "its rates read on its disturbed first run" in hover["cuda"] and "left out" not in hover["cuda"]
    assert "rates" not in hover["cpu"] and "1 disturbed, left out" in hover["cpu"]
    assert styling.NOISY_LEGEND not in {t.name for t in fig.data}


def test_a_follow_up_takes_its_own_sweeps_work_and_ceilings():
    """Two sweeps of one configuration: the first stored before the device's ceilings were measured (no % of
    roofline), the second after. The second's process repeat takes the second's first run's work and ceilings, and a
    run that counted its own FLOPs keeps them."""
    row = {"status": "succeeded", "model": "simplenet", "variant": "", "task": "inference", "device": "cpu",
           "device_name": "AMD EPYC", "dtype": "float32", "batch_size": 8, "backend": "inductor", "mode": "default",
           "dynamic": "none", "fullgraph": "false", "scope": "model", "cache": "cold", "flops": 3e7, "min_bytes": 1e6,
           "achieved_tflops": 3e7 / 0.4e-3 / 1e12, "achieved_gbps": 2.5, "roofline_pct": None,
           "roofline_bound": None, "mfu": None, "compiled_ms": 0.4, "disturbed": False, "sweep_id": 1}
    second = {**row, "sweep_id": 2, "compiled_ms": 0.8, "achieved_tflops": 3e7 / 0.8e-3 / 1e12, "roofline_pct": 10.0,
              "roofline_bound": "memory"}
    repeat = {**second, "flops": None, "min_bytes": None, "achieved_tflops": None, "achieved_gbps": None,
              "roofline_pct": None, "roofline_bound": None}
    done = roofline_points._with_work(pd.DataFrame([row, second, repeat]).assign(_config=0))
    assert done.loc[2, "roofline_pct"] == pytest.approx(10.0) and done.loc[2, "roofline_bound"] == "memory"
    assert pd.isna(done.loc[0, "roofline_pct"]) and done.loc[0, "flops"] == 3e7
    (pt,) = roofline_points.points(pd.DataFrame([row, second, repeat])).to_dict("records")
    assert pt["runs"] == 3 and pt["roofline_pct"] == pytest.approx(10.0)  # the median of the two that have one


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_warm_job_that_found_no_cached_graph_is_not_labelled_plain_warm(synthetic):
    """cache=warm asks for the worker's cache; the first job of its kind finds its graph missing and
    compiles it anyway. Its configuration's label says how many runs found the graph cached (the series stays
    one configuration, so repeats are not split), and the breakdown does not hatch a miss as a warm hit."""
    sincos = synthetic[synthetic["model"] == "sincos"].copy()
    warm = sincos[(sincos["cache"] == "warm") & (sincos["status"] == "succeeded")]
    assert len(warm) and set(warm["cache_state"]) == {"warm"}  # synthetic warm jobs all hit
    before = series_labels.label_series(sincos)
    configs = before.loc[warm.index, "config"]
    all_missed, some_missed = configs.unique()[:2]
    miss = json.dumps({"inductor_fx_local_cache_hit_count": 0, "inductor_fx_local_cache_miss_count": 1})
    sincos.loc[configs.index[configs == all_missed], ["cache_hits", "graph_cache_hit"]] = [miss, False]
    partly = configs.index[configs == some_missed]
    sincos.loc[partly[:1], ["cache_hits", "graph_cache_hit"]] = [miss, False]  # recorded as a run records both
    sincos = frame._finish(sincos.drop(columns=["cache_state"]))
    view = series_labels.label_series(sincos)
    assert view["config"].nunique() == before["config"].nunique()  # labels change, series do not split
    assert view.loc[configs.index[configs == all_missed], "config"].str.endswith(
        "warm cache: graph not cached yet").all()
    assert view.loc[partly, "config"].str.endswith(f"warm cache: graph cached in {len(partly) - 1} of {len(partly)} "
                                                   "runs").all()
    assert view.loc[warm.index.difference(configs.index[configs.isin([all_missed, some_missed])]),
                    "config"].str.contains("warm cache: graph cached", regex=False).all()  # all hits say so too
    # the warmup plot keeps a miss and a hit apart (lab.first_call: the miss compiled from nothing, cold): a median
    # over both is a first call no run had
    hit = sincos.loc[warm.index.difference(partly).difference(configs.index[configs == all_missed])[0]]
    hits = sincos.loc[warm.index[(configs == configs[hit.name]).to_numpy()
                                 & (sincos.loc[warm.index, "batch_size"] == hit["batch_size"]).to_numpy()]]
    again = hit.copy()  # the same configuration and batch size once more, a miss this time
    again[["job_id", "cache_hits", "compiled_first_call_s"]] = [sincos["job_id"].max() + 1, miss,
                                                                hit["compiled_first_call_s"] * 5]
    both = series_labels.label_series(frame._finish(pd.concat([sincos, again.to_frame().T], ignore_index=True)
                                              .drop(columns=["cache_state", "graph_cache_hit"], errors="ignore")
                                              .infer_objects()))
    calls = plot_data.first_calls(both)
    row = calls[calls["config"].isin(both.loc[both["job_id"] == again["job_id"], "config"])
                & (calls["batch_size"] == hit["batch_size"])]
    assert len(row) == 1 and row["cold_runs"].item() == 1 and row["warm_runs"].item() == len(hits)
    assert row["first_call_cold_s"].item() == hit["compiled_first_call_s"] * 5
    assert row["first_call_warm_s"].item() == pytest.approx(hits["compiled_first_call_s"].median())
    got = plot_data.breakdown_frame(view)
    hatched = diagnosis.warmup_breakdown(got, plot_data.failures(view))
    shapes = [shape for t in hatched.data if t.marker and t.marker.pattern and t.marker.pattern.shape is not None
              for shape, series in zip(t.marker.pattern.shape, t.y) if "not cached" in str(series)]
    assert shapes and set(shapes) == {""}


def test_a_backend_that_never_asks_the_graph_cache_is_not_called_a_miss():
    """aot_eager, eager, cudagraphs: every inductor counter is 0, which says nothing about the cache."""
    zeros = json.dumps({"inductor_fx_local_cache_hit_count": 0, "inductor_fx_local_cache_miss_count": 0})
    assert frame._graph_hit(zeros) is None
    assert frame._graph_hit(json.dumps({"inductor_fx_local_cache_hit_count": 0,
                                         "inductor_fx_local_cache_miss_count": 2})) is False


def test_breakdown_frame_takes_one_real_job_per_series(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "sincos"])
    got = plot_data.breakdown_frame(view)
    comp = got[got["bar"] == "compiled"]
    ok = view[view["status"] == "succeeded"]
    assert set(comp["series"]) == set(ok["series"])
    for series, parts in comp.groupby("series"):
        job = ok[ok["job_id"] == parts["job_id"].iloc[0]].iloc[0]
        assert job["series"] == series and set(parts["part"]) <= set(plot_data.BREAKDOWN_PARTS)
        assert parts["seconds"].sum() == pytest.approx(job["compiled_first_call_s"])  # the parts add up
        firsts = ok.loc[ok["series"] == series, "compiled_first_call_s"].sort_values().tolist()
        assert job["compiled_first_call_s"] == firsts[(len(firsts) - 1) // 2]  # the median run
    eager = got[got["bar"] == "eager"].set_index("series")["seconds"]
    assert eager.to_dict() == pytest.approx(ok.groupby("series")["eager_first_call_s"].median().to_dict())
    warm = comp[comp["cache"] == "warm"]
    assert len(warm) and (warm["cache_hits"] == "(1 cache hit, 0 misses)").all()
    fig = diagnosis.warmup_breakdown(got, plot_data.failures(view))
    assert {t.name for t in fig.data} >= {"dynamo tracing", "codegen + kernel compile", "eager first call",
                                          "hatched: warm compile cache"}
    # a bar's end: the drawn job's total, and where the row's median lies between two runs (the answer table's
    # "cold s" / "warm s"), that median beside it
    ends = {y: t for tr in fig.data if tr.text is not None and tr.name != "eager first call"
            for y, t in zip(tr.y, tr.text) if t}
    for series, parts in comp.groupby("series"):
        firsts = ok.loc[ok["series"] == series, "compiled_first_call_s"]
        job = ok.loc[ok["job_id"] == parts["job_id"].iloc[0], "compiled_first_call_s"].iloc[0]
        if len(firsts) % 2 == 0 and abs(firsts.median() / job - 1) > 0.005:  # the table's median is no run's own
            assert ends[series] == (f"{styling.seconds_text(parts['seconds'].sum())} (job {parts['job_id'].iloc[0]}; "
                                    f"median of {len(firsts)} runs {styling.seconds_text(firsts.median())})")
        else:  # one run, or an odd count: the drawn run is the median
            assert "median" not in ends[series], ends[series]
    assert any("median of" in t for t in ends.values()), ends  # the synthetic runs' first calls differ


def test_breakdown_without_a_recorded_breakdown_and_a_failed_only_series():
    view = pd.DataFrame([{"status": "succeeded", "job_id": 1, "series": "inductor/default", "config": "inductor/default",
                          "batch_size": 8, "cache": "cold", "cache_hits": None, "compile_breakdown_s": None,
                          "compiled_first_call_s": 4.0, "eager_first_call_s": 0.01}])
    got = plot_data.breakdown_frame(view)
    assert got[["part", "seconds"]].values.tolist() == [[plot_data.NO_BREAKDOWN, 4.0], ["eager first call", 0.01]]
    fails = pd.DataFrame([{"job_id": 2, "status": "failed", "error": "compile failed: graph break", "batch_size": 8,
                           "config": "inductor/default · fullgraph=true", "series": "inductor/default · fullgraph=true"}])
    fig = diagnosis.warmup_breakdown(got, fails)
    assert "inductor/default · fullgraph=true" in fig.layout.yaxis.categoryarray
    assert any(a.text.startswith("✕ failed: compile failed") for a in fig.layout.annotations)


def test_gpu_time_inside_latency_host_bound_and_noisy_rings(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "simplenet"])
    agg, fails = plot_data.summarize(view)
    agg = plot_data.with_noise(agg, view)
    host = plot_data.gpu_latency_frame(agg)
    assert set(host["what"]) == set(diagnosis.HOST_COLORS) and len(host) == 4 * len(agg)
    assert (host["overhead_ms"] == host["latency_ms"] - host["gpu_ms"]).all() and (host["overhead_ms"] > 0).all()
    assert diagnosis.gpu_in_latency(host, fails, sorted(agg["series"])).data
    cpu = agg.assign(eager_gpu_ms=float("nan"), compiled_gpu_ms=float("nan"))
    assert plot_data.gpu_latency_frame(cpu).empty  # CPU jobs have no GPU clock: nothing to draw
    noisy = agg[agg["noisy_runs"] > 0]
    assert len(noisy), "the synthetic data holds disturbed runs beside undisturbed ones"
    fig = speed_charts.mark_noisy(speed_charts.speedup(agg, fails), agg)
    rings = [t for t in fig.data if t.name and t.name.startswith("⚠ disturbed")]
    assert len(rings) == 1 and len(rings[0].x) == len(noisy.dropna(subset=["speedup"]))
    bound = agg[agg["host_bound_runs"] > 0]
    assert len(bound), "synthetic simplenet is host-bound on CUDA"
    diamonds = [t for t in fig.data if t.name and t.name.startswith("◇ host-bound")]
    assert sum(len(t.x) for t in diamonds) == len(bound.dropna(subset=["speedup"]))
    assert "launch-bound" in diamonds[0].customdata[0][3]


def test_each_clock_draws_its_own_numbers(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "mlp"])
    agg, fails = plot_data.summarize(view)
    for clock, cols in plot_data.CLOCKS.items():
        timed = plot_data.on_clock(agg, clock)
        assert (timed["speedup"] == agg[cols["speedup"]]).all() and (timed["compiled_ms"] == agg[cols["compiled_ms"]]).all()
        fig = speed_charts.speedup(timed, fails, clock)
        ys = sorted(y for t in fig.data if t.mode.startswith("lines+markers") for y in t.y)
        assert ys == pytest.approx(sorted(agg[cols["speedup"]].dropna()))
    # latency is the headline: GPU time leaves the host out, so on this host-bound model it reads higher
    assert (agg["gpu_speedup"] != agg["speedup"]).all()
    assert "GPU time" in speed_charts.speedup(plot_data.on_clock(agg, "gpu"), fails, "gpu").layout.title.text


def test_failure_notes_on_a_log_batch_axis_sit_at_their_batch(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == plot_data.failures(synthetic)["model"].iloc[0]])
    agg, fails = plot_data.summarize(view)
    fig = speed_charts.speedup(agg, fails)
    assert fig.layout.xaxis.type == "log"  # batch 1..128
    notes = [a for a in fig.layout.annotations if a.text.startswith("✕")]
    # plotly reads x on a log axis as log10(x): a raw 128 would stretch the range to 1e128
    assert sorted(a.x for a in notes) == pytest.approx(sorted(np.log10(fails["batch_size"].unique().astype(float))))


def test_cpu_results_stored_as_reduce_overhead_are_drawn_under_default(engine):
    from bench.synthetic import fill

    fill(engine, 6, seed=2, device="cpu", models=("complexnet",), batches=(8, 32), dynamics=(None,),
         modes=("default", "reduce-overhead", "max-autotune-no-cudagraphs"))
    df = frame.load_frame(engine, fields=views.FRAME_FIELDS + views.VIEW_FIELDS)[0]
    view = series_labels.label_series(df)
    assert set(view["config"]) == {"default", "max-autotune"}  # two compiles, not four configurations
    assert series_labels.folded_notes(view) == [
        "2 jobs stored as max-autotune-no-cudagraphs are shown under max-autotune: on cpu they are the same compile, "
        "since CUDA graphs need CUDA.",
        "2 jobs stored as reduce-overhead are shown under default: on cpu they are the same compile, since CUDA graphs "
        "need CUDA."]
    assert "cpu" in view.attrs["common"] and "inductor" in view.attrs["common"]


def test_break_even_hides_when_it_has_nothing_to_say_and_bars_carry_their_values(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "complexnet"])
    agg, fails = plot_data.summarize(view)
    fig = speed_charts.break_even(agg, fails)
    paid = agg.dropna(subset=["break_even_calls"])
    bars = [t for t in fig.data if t.type == "bar"]
    assert all(t.orientation == "h" for t in bars) and fig.layout.yaxis.type == "category"
    assert sorted(x for t in bars for x in t.x) == sorted(paid["break_even_calls"])
    assert {f"{n:,.0f} calls" for n in paid["break_even_calls"]} == {s for t in bars for s in t.text}
    assert speed_charts.break_even_note(agg) == ""
    never = agg.assign(break_even_calls=float("nan"), speedup=0.8)
    assert speed_charts.break_even(never, fails) is None and "never pays off" in speed_charts.break_even_note(never)
    one = paid.iloc[:1]
    assert speed_charts.break_even(one, fails) is None
    assert speed_charts.break_even_note(one) == (f"Break-even: one configuration in view ({one['series'].iloc[0]}), paying off "
                                           f"after {one['break_even_calls'].iloc[0]:,.0f} calls.")
    warm = speed_charts.warmup(plot_data.first_calls(view), fails)
    assert all(t.orientation == "h" and all(t.text) for t in warm.data if t.type == "bar")
    assert warm.layout.height >= 170 + 58 * agg["series"].nunique()  # a row per series, three bars a row


def test_point_values_never_collide():
    agg = pd.DataFrame({"config": ["a", "b", "c"], "baseline": ["eager"] * 3, "batch_size": [8, 8, 8],
                        "speedup": [1.50, 1.51, 1.10], "runs": [1, 1, 1], "eager_ms": [1.0] * 3,
                        "compiled_ms": [0.7] * 3})
    fig = speed_charts.speedup(agg, agg.iloc[0:0].assign(job_id=[], status=[], error=[]))
    shown = sorted(t for tr in fig.data if tr.text is not None for t in tr.text if t)
    assert shown == ["1.10×", "1.51×"]  # 1.50 sits on 1.51: its value is in the hover only


def test_whiskers_at_one_batch_size_are_set_apart_and_a_very_wide_one_runs_past_the_top():
    """Three configurations at bs 8 and 128 with the answer's intervals: set apart in one order at each batch size (a
    log axis: by a factor), their values still kept from colliding by the batch size they stand for; one interval
    reaching 9x against points near 1.5x runs past the axis (REACH) and says so, not pressing every point flat."""
    agg = pd.DataFrame({"config": ["a", "b", "c"] * 2, "baseline": ["eager"] * 6, "batch_size": [8] * 3 + [128] * 3,
                        "speedup": [1.50, 1.51, 1.10, 1.4, 1.3, 1.2], "runs": [2] * 6, "eager_ms": [1.0] * 6,
                        "compiled_ms": [0.7] * 6, "speedup_ci_low": [1.4, 1.45, 1.0, 1.3, 1.2, 1.1],
                        "speedup_ci_high": [1.6, 9.0, 1.2, 1.5, 1.4, 1.3]})
    fails = agg.iloc[0:0].assign(job_id=[], status=[], error=[])
    fig = speed_charts.speedup(agg, fails)
    xs = {t.name: list(t.x) for t in fig.data if t.error_y and t.error_y.array is not None}
    assert xs["a"][0] < 8 == xs["b"][0] < xs["c"][0] and xs["a"][1] < 128 == xs["b"][1] < xs["c"][1]
    assert xs["c"][1] / 128 == pytest.approx(xs["c"][0] / 8) and 1 < xs["c"][0] / 8 < 1.2  # log axis: one factor
    values = [a for a in fig.layout.annotations if a.text.endswith("×") and not a.text.startswith(("↑", "1.0×"))]
    shown = sorted(a.text for a in values)  # beside each group, in its line's colour, clear of the whiskers in it
    assert "1.50×" not in shown and "1.51×" in shown  # 1.50 sits on 1.51 at bs 8, set apart or not
    edge = {round(a.x, 6) for a in values if a.xanchor == "right"}  # the first batch size's: left of its leftmost
    assert edge == {round(np.log10(xs["a"][0]), 6)} and not [tr for tr in fig.data if tr.text is not None and any(tr.text)]
    top = fig.layout.yaxis.range[1]
    assert top == pytest.approx(speed_charts.REACH * 1.51 * 1.1) and top < 9.0
    assert [a.text for a in fig.layout.annotations if a.text.startswith("↑")] == [
        "↑ 1 interval runs past the top: hover its point for its ends"]
    narrow = speed_charts.speedup(agg.assign(speedup_ci_high=agg["speedup_ci_high"].clip(upper=1.7)), fails)
    assert narrow.layout.yaxis.range[1] == pytest.approx(1.7 * 1.1)  # every whisker in view
    assert not [a for a in narrow.layout.annotations if a.text.startswith("↑")]
    alone = speed_charts.speedup(agg.drop(columns=["speedup_ci_low", "speedup_ci_high"]), fails)
    assert sorted({x for t in alone.data if t.mode and "lines" in t.mode for x in t.x}) == [8, 128]  # no whiskers: at it


def test_a_ring_sits_on_its_point_where_a_configuration_in_view_has_no_speedup():
    """The rings (mark_noisy) and the points take one placing: a configuration without a latency speedup still holds
    its slot, so the others' offsets are the same in both (a review found the rings beside their points)."""
    agg = pd.DataFrame({"config": ["a", "b", "c"] * 2, "baseline": ["eager"] * 6, "batch_size": [8] * 3 + [128] * 3,
                        "speedup": [1.50, np.nan, 1.10, 1.4, np.nan, 1.2], "runs": [2] * 6, "eager_ms": [1.0] * 6,
                        "compiled_ms": [0.7] * 6, "speedup_ci_low": [1.4, np.nan, 1.0, 1.3, np.nan, 1.1],
                        "speedup_ci_high": [1.6, np.nan, 1.2, 1.5, np.nan, 1.3],
                        "noisy_runs": [1, 0, 0, 1, 0, 0], "noise_note": ["x"] * 6, "max_spread": [0.0] * 6})
    fails = agg.iloc[0:0].assign(job_id=[], status=[], error=[])
    fig = speed_charts.mark_noisy(speed_charts.speedup(agg, fails), speed_charts.placed(agg, fails), x="at")
    (line,) = [t for t in fig.data if t.name == "a" and "lines" in (t.mode or "")]
    (ring,) = [t for t in fig.data if (t.legendgroup or "") == "noisy"]
    assert list(ring.x) == pytest.approx(list(line.x)) and list(ring.y) == pytest.approx(list(line.y))


def test_the_preloaded_imports_are_their_own_segment_of_the_first_call():
    """A forked CUDA child's first call plus what its parent preloaded for it (runner.child.preload): the First call tab
    draws the added imports as a named segment, and the parts still add up to compiled_first_call_s."""
    from runner.child.preload import COMPILE_PART

    parts = {"dynamo tracing": 1.0, "codegen + kernel compile": 2.0, "other (run, guards)": 0.5, COMPILE_PART: 0.7}
    view = pd.DataFrame([{"status": "succeeded", "job_id": 1, "series": "inductor/default", "config": "inductor/default",
                          "batch_size": 8, "cache": "cold", "cache_hits": None, "compile_breakdown_s": json.dumps(parts),
                          "compiled_first_call_s": 4.2, "eager_first_call_s": 0.01, "error": None}])
    got = plot_data.breakdown_frame(view)
    comp = got[got["bar"] == "compiled"]
    assert comp.set_index("part")["seconds"].to_dict() == parts and comp["seconds"].sum() == pytest.approx(4.2)
    fig = diagnosis.warmup_breakdown(got, plot_data.failures(view))
    (seg,) = [t for t in fig.data if t.name == COMPILE_PART]
    assert seg.marker.color == diagnosis.PART_COLORS[COMPILE_PART]
