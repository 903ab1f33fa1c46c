"""Results at a dozen configurations: short labels with the rest in a caption, warmup and break-even as one row per
configuration, and a break-even chart that steps aside with a line when nothing pays off."""
import base64
import json

import numpy as np
import pytest

from bench.screens import SHAPE
from bench.synthetic import fill
from dashboard.markup import md
from db import queue
from db.models import JobStatus
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.dashboard.test_pages import answer_table, every_column, lab, ok, page, texts  # noqa: F401  (lab: a fixture)


def spec(at, key: str) -> dict:
    """A plotly chart's figure as the browser gets it, numeric arrays decoded (plotly sends them as base64)."""
    return _decoded(json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec))


def _decoded(value):
    if isinstance(value, dict):
        if set(value) >= {"dtype", "bdata"}:
            values = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
            shape = value.get("shape")
            return values.reshape([int(n) for n in str(shape).split(",")]).tolist() if shape else values.tolist()
        return {k: _decoded(v) for k, v in value.items()}
    return [_decoded(v) for v in value] if isinstance(value, list) else value


def slower_on_the_cpu(engine) -> None:
    """Two CPU configurations of simplenet bs 8, each one run, compiled slower per call than eager (0.8x)."""
    catalog = {"simplenet": ModelInfo("simplenet", "d")}
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", dynamics=[True, False]), catalog)
    for _ in range(2):
        claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": 1.0, "compiled_ms": 1.25, "speedup": 0.8, "eager_first_call_s": 0.01,
            "compiled_first_call_s": 4.0, "compiled_second_call_s": 0.002, "device_name": "cpu"})


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_twelve_configurations_read_as_rows_with_short_labels(lab):  # noqa: F811 (the fixture)
    fill(lab, 12, seed=2, device="cuda", rounds=20, **SHAPE)
    at = ok(page("results", chart="Warmup"))  # the Speedup tab draws one chart at a time, named in the link
    assert any(t.startswith("Every configuration here: inference · cuda · float32") and "inductor" in t
               for t in texts(at.caption))
    rows = spec(at, "plot_warmup")["layout"]["yaxis"]["categoryarray"]
    assert len(rows) == 12 and "max-autotune · dynamic=true · bs 32" in rows and not any("inductor" in r for r in rows)
    assert spec(ok(page("results", chart="Break-even")), "plot_break_even")["layout"]["yaxis"]["categoryarray"] == rows
    answer = answer_table(at)
    assert set(answer["configuration"]) == {r.rsplit(" · bs ", 1)[0] for r in rows}  # the table and the plots agree
    (body,) = [h.value for h in at.html if "<table>" in h.value]  # verdicts' notes drawn quieter (lab.verdict.Said)
    assert "<span class=note> (" in body and any(v.endswith(")") for v in answer["verdict"])
    # and the break-even bars are the answer's counts, not a second estimate of them
    bars = {y: x for t in spec(ok(page("results", chart="Break-even")), "plot_break_even")["data"]
            if t.get("type") == "bar" for y, x in zip(t["y"], t["x"]) if x is not None}  # the greyed row: a trace
    # of its own (charts.grey_rows), its count its own runs' (no answer to take it from)
    every = every_column(at)
    answered = {f"{r.config} · bs {r.batch_size}": r.break_even_calls
                for r in every.itertuples() if not r.noisy and r.break_even_calls == r.break_even_calls}
    assert len(answered) >= 10 and {k: bars[k] for k in answered} == answered
    # with the answer's range as a whisker: its intervals' ends (lab.break_even.break_even_range)
    ends = {y: (x - minus, x + plus) for t in spec(ok(page("results", chart="Break-even")), "plot_break_even")["data"]
            if t.get("type") == "bar" and t.get("error_x")
            for y, x, plus, minus in zip(t["y"], t["x"], t["error_x"]["array"], t["error_x"]["arrayminus"])
            if x is not None and plus == plus}
    ranged = {f"{r.config} · bs {r.batch_size}": (r.break_even_low, r.break_even_high) for r in every.itertuples()
              if not r.noisy and r.break_even_low == r.break_even_low and r.break_even_high == r.break_even_high}
    assert len(ranged) >= 5 and all(lo <= answered[k] <= hi for k, (lo, hi) in ranged.items())
    assert {k: tuple(round(v) for v in ends[k]) for k in ranged} == {k: (round(lo), round(hi)) for k, (lo, hi) in ranged.items()}
    # the Speedup chart's points are the answer's numbers, each with its 95% interval as a whisker
    lines = [t for t in spec(ok(page("results", chart="Speedup")), "plot_speedup")["data"]
             if t.get("mode", "").startswith("lines") and t.get("error_y")]
    points = {(t["name"], custom[0]): (y, y + plus, y - minus) for t in lines  # the batch size: the hover's first
              for custom, y, plus, minus in zip(t["customdata"], t["y"], t["error_y"]["array"], t["error_y"]["arrayminus"])}
    stated = {(r.config, r.batch_size): (r.speedup, r.speedup_ci_high, r.speedup_ci_low) for r in every.itertuples()}
    assert len(points) >= 10 and all(p == pytest.approx(stated[k], rel=1e-9) for k, p in points.items()), points
    # set apart at each batch size, so one's whisker does not hide another's, and never far from it (12% of the axis)
    drawn = {b: sorted(x for t in lines for x, c in zip(t["x"], t["customdata"]) if c[0] == b) for b in (8, 32)}
    assert all(len(set(xs)) == len(xs) == 6 for xs in drawn.values()), drawn
    assert all(abs(x - b) <= 0.07 * (32 - 8) for b, xs in drawn.items() for x in xs), drawn
    assert all("batch_size=%{customdata[0]}" in t["hovertemplate"] and "%{x}" not in t["hovertemplate"] for t in lines)
    hovers = {t["hovertemplate"] for t in spec(ok(page("results", chart="Break-even")), "plot_break_even")["data"]
              if t.get("type") == "bar" and "hovertemplate" in t}  # the bars' own (the greyed row's overlay has none)
    assert hovers and all(h.startswith("%{y}<br>%{text}<br>") and "%{x}" not in h for h in hovers), hovers  # as written, rounded
    # a count whose answer is not separable from eager (its interval reaches 1x) may never pay off: its bar says so
    texts_by_row = {y: t for tr in spec(ok(page("results", chart="Break-even")), "plot_break_even")["data"]
                    if tr.get("type") == "bar" for y, t in zip(tr["y"], tr.get("text") or [])}
    open_ended = {f"{r.config} · bs {r.batch_size}" for r in every.itertuples()
                  if r.break_even_calls == r.break_even_calls and r.speedup_ci_low <= 1}
    assert open_ended and all(texts_by_row[k].endswith("may never: its interval reaches 1×") for k in open_ended)
    assert not any("may never" in t for k, t in texts_by_row.items() if k not in open_ended)


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_break_even_steps_aside_when_compiling_never_pays_off(lab):  # noqa: F811 (the fixture)
    slower_on_the_cpu(lab)
    at = ok(page("results", chart="Break-even"))
    assert not at.get("plotly_chart")  # no empty chart: a line says why
    assert any("compiling never pays off here" in t for t in texts(at.caption))
    assert [c.key for c in ok(page("results", chart="Warmup")).get("plotly_chart")] == ["plot_warmup"]


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_n_calls_for_a_slower_configuration_and_the_n_in_the_link(lab):  # noqa: F811 (the fixture)
    slower_on_the_cpu(lab)
    at = ok(page("results", chart="N calls", calls_n="100000"))  # a copied link's N
    assert at.number_input(key="calls_n").value == 100_000
    (said,) = [t for t in texts(at.markdown) if t.startswith("For 100,000 calls at bs 8")]
    assert "stay eager" in said and "no number of calls repays its first call" in said and "not repaid yet" not in said
    data = spec(at, "plot_ncalls")["data"]
    assert max(x for t in data for x in (t.get("x") or []) if x is not None) >= 100_000
    ok(at.number_input(key="calls_n").set_value(5000).run())
    assert at.query_params["calls_n"] == "5000"  # typed N goes into the link
    for bad in ("1e309", "abc", "0"):  # a link's N that is no N opens the default
        assert ok(page("results", chart="N calls", calls_n=bad)).number_input(key="calls_n").value == 1000


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_cpu_only_data_offers_no_gpu_clock_on_results_or_compare(lab):  # noqa: F811 (the fixture)
    catalog = {"simplenet": ModelInfo("simplenet", "d")}
    for mode in ("default", "max-autotune"):
        queue.submit(lab, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", modes=[mode],
                                       process_repeats=1), catalog)
        claim = queue.claim_next(lab, "w", ["cpu"], ["simplenet"], 60)
        queue.finish(lab, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": 1.0, "compiled_ms": 0.8, "speedup": 1.25, "throughput_speedup": 1.2, "eager_first_call_s": 0.01,
            "compiled_first_call_s": 4.0, "device_name": "cpu"})
    at = ok(page("results", chart="Speedup", clock="GPU time"))  # a link made on a GPU lab's data
    clock = at.segmented_control(key="clock")
    assert clock.options == ["latency", "throughput"] and clock.value == "latency"
    assert "(GPU time)" not in at.get("plotly_chart")[0].proto.spec
    at = ok(page("compare", a="1", b="2"))
    metrics = at.button_group(key="metric")
    assert "speedup" in metrics.options and "gpu_speedup" not in metrics.options and "compiled_gpu_ms" not in metrics.options
    assert "gpu_speedup" not in set(at.dataframe[2].value["metric"])


@pytest.mark.slow  # draws every chart of Results, a page run each
def test_a_configuration_with_noisy_runs_only_is_marked_in_its_own_colour_on_every_plot(lab):  # noqa: F811
    """The 12-configuration sweep has one configuration whose only run was disturbed from outside: the answer keeps
    its numbers, faded and flagged; every plot of Results draws it as the answer counts it, in its own colour and
    marked (hollow on its line, hatched bars), none as a clean result, none dropped; the N-calls chart never takes
    it for the lowest line or recommends it while undisturbed ones are there, and a caption says which and why."""
    from dashboard.charts.ncalls import NOISY_COLOR
    from dashboard.charts.styling import NOISY_GREY, NOISY_PATTERN

    fill(lab, 12, seed=2, device="cuda", rounds=20, **SHAPE)
    at = ok(page("results", chart="Speedup"))  # one chart at a time (?chart=), the answer table above each
    answer = every_column(at)
    (row,) = answer[answer["noisy"]].to_dict(orient="records")  # default · dynamic=false at bs 8
    shown = answer_table(at)  # the page's table: that row alone faded, with its runs' numbers
    (faded,) = shown[shown["faded"]].to_dict(orient="records")
    assert (faded["configuration"], faded["bs"]) == (row["config"], str(row["batch_size"]))
    assert faded["eager ms"] == f"{row['eager_ms']:.4g}" and "every run was disturbed" in faded["verdict"]
    config, series = row["config"], f"{row['config']} · bs {row['batch_size']}"
    bs = row["batch_size"]
    assert any(t.startswith("⚠ noisy, marked on every plot") and md(series) in t for t in texts(at.caption))

    for key, chart in (("plot_speedup", "Speedup"), ("plot_latency", "Latency")):
        data = spec(ok(page("results", chart=chart)), key)["data"]  # its point on its configuration's line, hollow
        (own,) = [t for t in data if t.get("name") == config and t.get("mode", "").startswith("lines")]
        # Speedup's points are set apart at each batch size (their whiskers): the hover's batch size finds it there
        at_bs = [c[0] for c in own["customdata"]].index(bs) if key == "plot_speedup" else own["x"].index(bs)
        assert own["marker"]["symbol"][at_bs] == "circle-open" and own["line"]["color"] != NOISY_GREY, key
        (ring,) = [t for t in data if t.get("legendgroup") == "only-noisy"]
        assert ring["x"] == [own["x"][at_bs]] and ring["name"].startswith("⚠ noisy")  # ringed where it is drawn

    for key, chart in (("plot_warmup", "Warmup"), ("plot_break_even", "Break-even")):  # rows of bars: hatched in
        fig = spec(ok(page("results", chart=chart)), key)  # their own colour, the tick label marked
        ticks = dict(zip(fig["layout"]["yaxis"]["tickvals"], fig["layout"]["yaxis"]["ticktext"]))
        assert "⚠ noisy · " + series in ticks[series] and all("⚠" not in t for s, t in ticks.items() if s != series)
        bars = [(t, x) for t in fig["data"] for y, x in zip(t.get("y") or [], t.get("x") or []) if y == series
                and x is not None]
        colours = {t["name"]: t["marker"]["color"] for t in fig["data"] if t.get("type") == "bar"
                   and (t["marker"].get("pattern") or {}).get("shape") != NOISY_PATTERN["shape"]}
        assert bars and all(t["marker"]["pattern"]["shape"] == NOISY_PATTERN["shape"] and t.get("showlegend") is False
                            and t["marker"]["color"] == colours[t["name"]] for t, _ in bars), key
        assert any(t["name"].startswith("⚠ noisy") for t in fig["data"] if t.get("type") == "bar")  # its legend
    break_even = spec(ok(page("results", chart="Break-even")), "plot_break_even")["data"]
    # marked, and where its interval reaches 1x (as this one's does) that too, after the mark
    marked = " calls · ⚠ noisy" + (" · may never: its interval reaches 1×" if row["speedup_ci_low"] <= 1 else "")
    assert any(text.endswith(marked) for t in break_even for text in (t.get("text") or []))

    at = ok(page("results", chart="N calls"))
    ok(at.button_group(key="calls_bs").set_value(bs).run())  # the N-calls chart at its batch size
    data = spec(at, "plot_ncalls")["data"]
    (line,) = [t for t in data if t.get("name") == f"⚠ noisy · {config}"]
    assert line["line"]["color"] == NOISY_COLOR and line["line"]["dash"] == "dot"
    lowest = [t["name"] for t in data if t.get("legendgroup") == "lowest" and t.get("name", "").startswith("lowest: ")]
    assert lowest and not any(config in name for name in lowest)
    assert any(t.startswith("⚠ noisy, dotted grey and never recommended") for t in texts(at.caption))
    for n in (1, 1_000, 10**6, 10**9):  # whatever N is typed, it is never the recommendation
        ok(at.number_input(key="calls_n").set_value(n).run())
        line = next(t for t in texts(at.markdown) if t.startswith(f"For {n:,} call"))
        assert md(config) not in line.split(";")[0], line

    at = ok(page("results", view="First call"))  # where the first call goes, and GPU time inside latency
    for key in ("plot_breakdown", "plot_host"):
        fig = spec(at, key)
        ticks = dict(zip(fig["layout"]["yaxis"]["tickvals"], fig["layout"]["yaxis"]["ticktext"]))
        assert "⚠ noisy · " + series in ticks[series], key
        assert any((t["marker"].get("pattern") or {}).get("shape") == NOISY_PATTERN["shape"]
                   for t in fig["data"] if series in (t.get("y") or [])), key
