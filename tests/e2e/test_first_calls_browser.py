"""One first-call truth, and charts that draw what the answer says, in a real browser against a real app server. The
runs are stored through the queue as a worker stores them (claim, finish: process repeats and re-runs are queued by
the finishing runs), with a CPU box's figures: a process repeat compiles from its first run's cache, so its first
call is warm.
(a) A cold/warm sweep: its Warmup chart, its answer table and its job page print the same cold and warm figures, and a
    second sweep of the same settings (slower first calls) appears in none of them.
(b) A sweep whose every run was disturbed: the answer speaks, and its charts draw its two configurations apart in
    their own colours (two legend entries), the latency chart with numbers on its y axis, the header and the N-calls
    chart with the answer's numbers."""
import os
import re
import urllib.parse
from pathlib import Path

import pytest

from db.database import get_engine
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app
from tests.first_call_runs import run_sweep

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")

COLD, WARM = "compiled first call: cold (an empty cache)", "compiled first call: warm (a cache that held it)"


def plots(page) -> dict[str, dict]:
    """Each plotly chart on the page by its title: its traces as plotly drew them (name, x, y, marker: its full data,
    where numbers sent packed are decoded), the legend's entries and the y axis' tick labels as shown."""
    return page.evaluate("""() => Object.fromEntries(Array.from(document.querySelectorAll('.js-plotly-plot')).map(
        g => [g.layout.title.text, {traces: g._fullData.map(t => ({name: t.name, x: Array.from(t.x || []),
            y: Array.from(t.y || []), type: t.type, legend: t.showlegend !== false,
            symbol: t.marker ? t.marker.symbol : null, color: t.marker ? t.marker.color : null,
            pattern: t.marker && t.marker.pattern ? t.marker.pattern.shape : null})),
            legend: Array.from(g.querySelectorAll('.legend .traces .legendtext')).map(e => e.textContent),
            yticks: Array.from(g.querySelectorAll('.yaxislayer-above .ytick text')).map(e => e.textContent)}]))""")


def tables(page) -> list[list[list[str]]]:
    """The page's tables of text (dashboard.markup.table): rows of cells, the header first."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('.cl-table table')).map(t =>
        Array.from(t.rows).map(r => Array.from(r.cells).map(c => c.textContent)))""")


def answer_cells(page) -> dict[str, dict]:
    """The answer table's rows by configuration: header -> cell. Read once it is drawn: Results sends the open chart
    first, and a Speedup chart is drawn before the answer table above it."""
    page.locator(".cl-table th").filter(has_text=re.compile(r"^configuration$")).first.wait_for()
    (head, *rows), *_ = tables(page)
    return {r[head.index("configuration")]: dict(zip(head, r)) for r in rows}


def g4(x: float) -> str:
    return f"{x:.4g}"  # as the answer table writes a number (lab.answer.headline_cell)


def wait_for_chart(page, title: str, shot: Path | None = None) -> dict:
    """The chart of this title once drawn (plots), its picture in `shot`."""
    chart = page.locator('[data-testid="stPlotlyChart"]').filter(has_text=title)
    chart.locator(".legend").first.wait_for(state="attached")
    # plotly draws the legend first, then the axes (their tick labels are read), then the traces: wait for a trace
    chart.locator(".cartesianlayer g.trace").first.wait_for(state="attached")
    if shot is not None:
        chart.screenshot(path=str(shot))
    drawn = plots(page)
    found = [v for k, v in drawn.items() if re.sub(r"<[^>]+>", "", str(k)).startswith(title)]
    assert found, list(drawn)
    return found[0]


def test_the_warmup_chart_the_answer_and_the_job_page_show_the_same_cold_and_warm_first_calls(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    first_s = {False: (15.72, 2.44), True: (14.75, 3.39)}  # sweep 12 of a new user's first hour
    mine = run_sweep(engine, first_s, {False: 1.31, True: 1.12}, name="coldwarm")
    other = run_sweep(engine, {False: (31.0, 6.5), True: (29.0, 7.5)}, {False: 1.3, True: 1.1}, name="again")
    assert sorted(r["made"] for r in mine.values()) == ["cold", "cold", "warm", "warm"]  # two processes each
    with running_app(tmp_path, url) as port:
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.set_default_timeout(60_000)
        page.goto(f"http://localhost:{port}/results?" + urllib.parse.urlencode({"sweep": "#1 coldwarm", "chart": "Warmup"}))
        chart = wait_for_chart(page, "Warmup cost", tmp_path / "warmup-cold-warm.png")
        answer = answer_cells(page)
        assert len(answer) == 2, answer
        for dyn, (cold, warm) in first_s.items():
            (config,) = [c for c in answer if c.endswith(f"dynamic={str(dyn).lower()}")]  # as the chart names it
            # two processes of it compiled cold on this device (this sweep's and the other's): too few for an interval
            assert (answer[config]["first call cold s"], answer[config]["warm s"]) == (f"{g4(cold)} (one process)",
                                                                                       g4(warm))
            drawn = {t["name"]: x for t in chart["traces"] if t["name"].startswith("compiled first call")
                     for y, x in zip(t["y"], t["x"]) if y == config and x is not None}
            assert {k: g4(v) for k, v in drawn.items()} == {COLD: g4(cold), WARM: g4(warm)}, chart["traces"]

        first = next(j for j, r in mine.items() if r["made"] == "cold" and r["dynamic"] is False)
        repeat = next(j for j, r in mine.items() if r["made"] == "warm" and r["dynamic"] is False)
        for job, made in ((first, "cold"), (repeat, "warm")):
            page.goto(f"http://localhost:{port}/job?job={job}")
            page.get_by_role("heading", name="First call: cold, warm, portable").wait_for()
            page.locator(".cl-table").filter(has_text="compiled from").wait_for()
            metric = page.locator('[data-testid="stMetric"]').filter(has_text="Compiled first call")
            assert metric.inner_text().split("\n")[-1] == made  # the job's own kind, under its first call
            (head, *rows), = [t for t in tables(page) if t[0][0] == "compiled from"]
            shown = {r[0]: dict(zip(head, r)) for r in rows}
            assert {k: (v["first call s"], v["runs"], v["jobs"]) for k, v in shown.items()} == {
                "cold": (f"{g4(first_s[False][0])} (one process)", "1", f"#{first}"),
                "warm": (g4(first_s[False][1]), "1", f"#{repeat}")}
            assert not any(f"#{j}" in page.locator('[data-testid="stMain"]').inner_text() for j in other)
            page.get_by_role("heading", name="Timeline").scroll_into_view_if_needed()
            page.screenshot(path=str(tmp_path / f"job-{made}.png"), clip={"x": 300, "y": 0, "width": 1100, "height": 820})


def test_an_all_disturbed_sweep_draws_its_configurations_apart(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    done = run_sweep(engine, {False: (15.0, 2.5), True: (16.0, 3.0)}, {False: 2.87, True: 1.4}, disturbed=True)
    assert len(done) >= 4 and all(r["disturbed"] for r in done.values())
    with running_app(tmp_path, url) as port:
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.set_default_timeout(60_000)
        base = f"http://localhost:{port}/results?model=simplenet"
        page.goto(f"{base}&chart=Speedup")
        speed = wait_for_chart(page, "Speedup vs batch size", tmp_path / "speedup-disturbed.png")
        answer = answer_cells(page)
        names = {dyn: next(c for c in answer if c.endswith(f"dynamic={dyn}")) for dyn in ("false", "true")}
        verdict = answer[names["false"]]["verdict"]
        assert verdict.startswith("2.87x") and "every run was disturbed" in verdict, verdict
        # the header speaks as the answer does
        median = page.locator('[data-testid="stMetric"]').filter(has_text="Median speedup").inner_text()
        assert re.search(r"\d\.\d\d×", median) and "every run disturbed" in median, median
        assert set(names.values()) <= set(speed["legend"]), speed["legend"]
        lines = {t["name"]: t for t in speed["traces"] if t["name"] in names.values()}
        assert len(lines) == 2 and len({str(t["color"]) for t in lines.values()}) == 2, lines  # each its colour
        assert all(t["symbol"] == ["circle-open"] for t in lines.values()), lines  # marked: hollow

        page.goto(f"{base}&chart=Latency")
        latency = wait_for_chart(page, "Steady-state latency", tmp_path / "latency-disturbed.png")
        assert set(names.values()) <= set(latency["legend"]), latency["legend"]
        assert any(re.search(r"\d", t) for t in latency["yticks"]), latency["yticks"]  # numbers on the y axis

        page.goto(f"{base}&chart=Warmup")
        warm = wait_for_chart(page, "Warmup cost", tmp_path / "warmup-disturbed.png")
        colours = {str(t["color"]) for t in warm["traces"] if t["type"] == "bar" and any(x is not None for x in t["x"])}
        assert len(colours) >= 3, colours  # the calls keep their colours, hatched, not all one grey

        page.goto(f"{base}&chart=N+calls")
        calls = wait_for_chart(page, "What to use for N calls", tmp_path / "ncalls-disturbed.png")
        assert any(t["name"].startswith("lowest: ") for t in calls["traces"])
        main = page.locator('[data-testid="stMain"]')
        main.get_by_text(re.compile(r"^For 1,000 calls at bs 8")).wait_for()
        assert "noisy or failed runs only" not in main.inner_text()
