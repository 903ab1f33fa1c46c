"""Every chart on Results over rows whose texts are traps (AppTest, a real SQLite file): a sweep name and a failed
job's error holding HTML. Plotly draws a subset of HTML in titles, legends, ticks, hovers and annotations (bold,
links, styles), so each such text must reach the browser escaped: the figures hold the trap only as `&lt;`...`&gt;`.
(Compare draws with Vega-Lite, which shows text as text: tests/e2e/test_markup_browser.py.)"""
import json

import pytest
from sqlalchemy import select, update

from bench.synthetic import fill
from dashboard.panels.results_tabs import CHARTS, CLOCKED
from db.engine import atomic
from db.models import Job, JobStatus, Result, Sweep
from tests.dashboard.test_pages import lab, ok, page  # noqa: F401 (lab: a fixture)

TRAP = "<i>trap</i> <a href='http://tracker.invalid/x'>link</a>"
RAW = ("<i>trap", "<a href")
TABS = ["First call", "Repeats", "Roofline", "Failures", "Table"]  # Results' other tabs (its module is the page)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def charts(at) -> dict[str, dict]:
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def leaks(figures: dict[str, dict]) -> dict[str, list[str]]:
    out = {}
    for key, fig in figures.items():
        bad = [s for s in strings(fig) if any(r in s for r in RAW)]
        if bad:
            out[key] = bad[:2]
    return out


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_texts_from_rows_reach_every_results_chart_escaped(lab):  # noqa: F811 (the fixture)
    fill(lab, 24, seed=3, device="cuda", rounds=8, processes=2)
    with atomic(lab) as s:
        s.execute(update(Sweep).values(name=f"sweep {TRAP}"))
        failed = s.scalars(select(Job.id).order_by(Job.id.desc()).limit(1)).one()
        s.execute(update(Job).where(Job.id == failed).values(status=JobStatus.FAILED, error=f"boom {TRAP}"))
        s.execute(update(Result).where(Result.job_id == failed).values(speedup=None))
    seen, found, every = set(), {}, []
    views = [{"view": "Speedup", "chart": c, "clock": k} for c in CHARTS
             for k in (("latency", "GPU time") if c in CLOCKED else ("latency",))]
    views += [{"view": v} for v in TABS]
    for query in views:
        figures = charts(ok(page("results", **query)))
        seen |= set(figures)
        every += figures.values()
        found |= {f"{query} {k}": v for k, v in leaks(figures).items()}
    assert {"plot_speedup", "plot_latency", "plot_warmup", "plot_repeats", "plot_roofline"} <= seen, seen
    assert not found, found
    escaped = [s for fig in every for s in strings(fig) if "&lt;i&gt;trap&lt;/i&gt;" in s]
    assert any("sweep &lt;i&gt;" in s for s in escaped) and any("boom &lt;i&gt;" in s for s in escaped), escaped[:3]
