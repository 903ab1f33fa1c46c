"""Results page render time with 1k, 10k and 100k finished jobs in the database (target: < 2 s at 100k).

    python -m bench.results_render [--sizes 1000 10000 100000] [--repeat 3] [--cache DIR]

For each size: a temp SQLite file filled with synthetic jobs as real ones store them (bench/synthetic.py: per-round
samples and a detail of a real job's size, about 2% failed, a third with a shape schedule; --cache keeps each fill
for later runs), then the Results page is run through Streamlit's AppTest, which executes
the whole page script server-side (data load, filters, the open tab's plotly figures and tables, the
downloads' buttons) without a browser. The page opens on its Speedup tab, which draws one chart at a time: the
N-calls chart first; its other charts (speedup, latency, warmup, break-even, recompile timeline) and the other
tabs run only when opened.

  load        db.views.result_rows + frame.results_frame alone: every finished job with the columns
              filters and counts use (db.views.FRAME_FIELDS); a model's plot numbers are read when drawn
  cold        the first render in a server process that has never seen this database: every finished
              job is read, then the plotted model's numbers (its 25k jobs at 100k); the frame is written
              to its snapshot file in the background once the page has run
  restart     the first render after a server restart: the frame comes from the snapshot file, checked
              against the database, and only what finished since is read; the plotted model's answer
              comes from the answers kept beside it (cold removes both)
  (cold and restart are measured --repeat times each, each time in a state a server would find; the
  table shows the median and the verdict is on it; every single time is printed below the table)
  cached      later renders with no new data (median of --repeat): what every visit and rerun costs
  +1 result   the render after one more job finished: the store appends that job, no full reload
  tabs        the slowest first opening of another tab (First call, Repeats, Roofline, Failures, Table) or of
              another chart of the Speedup tab (its first builds every chart of the tab)

A server restart is simulated by clearing Streamlit's resource caches (what the process held), so the
imports of pandas and plotly are not counted (a server pays them once, on its first page of any kind).
Before each cold, restart and +1 result step the garbage of the steps before is collected (gc.collect), so
it is not charged to the step measured; the bulk fill's WAL is checkpointed first (see settle()).
Times are wall-clock seconds on this machine; the browser's own drawing is not included.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one_more_result(engine) -> None:
    from db import queue
    from db.models import JobStatus
    from lab.spec import ModelInfo
    from lab.sweep import SweepRequest

    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[64], device="cuda", name="one more"),
                 {"simplenet": ModelInfo("simplenet", "bench")})
    claim = queue.claim_next(engine, "bench-worker", ["cuda"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 1.0, "compiled_ms": 0.5, "speedup": 2.0, "compiled_first_call_s": 3.0,
                         "eager_first_call_s": 0.01, "break_even_calls": 6000})


def settle(engine) -> None:
    """Leave the database and this process as a lab's server would find them, not as the bulk fill left them:
    the fill's one big transaction sits in a WAL file as large as the database (~180 MB at 100k jobs; a
    lab's small commits are checkpointed as they go), and its garbage would be collected during the first
    measured render (+0.4 s at 100k). Closing the fill's connections checkpoints the WAL."""
    engine.dispose()
    gc.collect()


def _verdict(seconds: float) -> str:
    return "ok" if seconds < 2.0 else "MISSED"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


TABS = ("First call", "Repeats", "Roofline", "Failures", "Table")
CHARTS = ("Speedup", "Latency", "Warmup", "Break-even", "Recompiles")  # the Speedup tab's others (?chart=)
DEFAULT_PLOTS = 1  # the Speedup tab opens on its N-calls chart


def bench(n: int, repeat: int, workdir: Path, cache: Path | None = None) -> dict:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from bench.synthetic import filled
    from dashboard.data import frame, snapshot
    from db import views
    from db.database import get_engine

    url = f"sqlite:///{workdir / f'results-{n}.db'}"
    os.environ["DATABASE_URL"] = url
    fill_s = timed(lambda: filled(workdir / f"results-{n}.db", n, seed=n, cache=cache))
    engine = get_engine(url)
    settle(engine)
    load_s = timed(lambda: frame.results_frame(views.result_rows(engine)))

    def app(view: str | None = None, chart: str | None = None) -> AppTest:
        at = AppTest.from_file(str(ROOT / "dashboard" / "main.py"), default_timeout=300)
        if view:
            at.query_params["view"] = view
        if chart:
            at.query_params["chart"] = chart
        at.switch_page("screens/results.py")
        return at

    def render(at: AppTest, plots: int | None = DEFAULT_PLOTS):
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if plots is not None:
            assert len(at.get("plotly_chart")) == plots, "the Speedup tab opens on one chart"
        return at

    def store():
        from dashboard.state import resources
        return resources._store(url)

    colds = []
    for _ in range(repeat):  # each time a server that has never seen this database
        snapshot.path_for(url).unlink(missing_ok=True)
        snapshot.answers_path(snapshot.path_for(url)).unlink(missing_ok=True)  # and the answers kept beside it
        st.cache_resource.clear()
        gc.collect()
        at = app()
        colds.append(timed(lambda: render(at)))
        assert not store().restored and store().full_loads == 1 and store().answers_computed == 1
        store().saving.join()  # the snapshot is written in the background once the page has run
    cached = [timed(lambda: render(at)) for _ in range(repeat)]
    tabs = {view: timed(lambda: render(app(view), None)) for view in TABS}
    tabs.update({f"chart {chart}": timed(lambda: render(app(chart=chart), None)) for chart in CHARTS})
    one_more_result(engine)
    gc.collect()
    append_s = timed(lambda: render(at))
    assert at.metric[0].value == f"{n + 1:,}", at.metric[0].value
    if store().saving is not None:
        store().saving.join()

    restarts = []
    for _ in range(repeat):  # restart: the snapshot file is all that is left
        st.cache_resource.clear()
        gc.collect()
        at = app()
        restarts.append(timed(lambda: render(at)))
        assert store().restored and store().full_loads == 0, "the restart should start from the snapshot"
        # the first restart opens on the newest job's model (the one more result's), whose answer no page had
        # asked for (the append step's session kept its plotted model): computed once, then read from disk
        assert len(restarts) == 1 or store().answers_computed == 0, "a restart should read the answer from disk"
        assert at.metric[0].value == f"{n + 1:,}", at.metric[0].value
        if store().saving is not None:
            store().saving.join()
    size = snapshot.path_for(url).stat().st_size
    return {"rows": n, "fill": fill_s, "load": load_s, "cold": statistics.median(colds),
            "restart": statistics.median(restarts),
            "colds": colds, "restarts": restarts,
            "cached": statistics.median(cached), "append": append_s, "tabs": max(tabs.values()),
            "slowest_tab": max(tabs, key=tabs.get), "snapshot_mb": size / 1e6}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cache", type=Path, default=None, help="keep each fill here for later runs (bench.synthetic)")
    args = p.parse_args(argv)
    os.environ["COMPILE_LAB_EMBEDDED_WORKER"] = "0"  # no worker process: this measures the page only
    import logging

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        _warm_imports(Path(tmp))
        results = [bench(n, args.repeat, Path(tmp), args.cache) for n in args.sizes]
    print(f"{'rows':>8} {'fill s':>7} {'load s':>7} {'cold s':>7} {'restart s':>9} {'cached s':>9} "
          f"{'+1 result s':>11} {'tabs s':>7}  snapshot   target < 2 s")
    for r in results:
        verdicts = ", ".join(f"{k} {_verdict(r[k])}" for k in ("cold", "restart", "cached", "append", "tabs"))
        print(f"{r['rows']:>8,} {r['fill']:>7.2f} {r['load']:>7.2f} {r['cold']:>7.2f} {r['restart']:>9.2f} "
              f"{r['cached']:>9.2f} {r['append']:>11.2f} {r['tabs']:>7.2f}  {r['snapshot_mb']:>5.1f} MB   {verdicts}"
              f" (slowest tab: {r['slowest_tab']})")
    for r in results:
        print(f"{r['rows']:>8,} rows: cold " + ", ".join(f"{x:.2f}" for x in r["colds"]) + " s; restart "
              + ", ".join(f"{x:.2f}" for x in r["restarts"]) + " s (the table shows the median of each)")
    print(f"cpu: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    keys = ("cold", "restart", "cached", "append", "tabs")
    return 0 if all(r[k] < 2.0 for r in results for k in keys) else 1


def _warm_imports(tmp: Path) -> None:
    """One throwaway render, so that importing plotly and pandas is not charged to the first size."""
    from streamlit.testing.v1 import AppTest

    from bench.synthetic import fill
    from db.database import get_engine

    url = f"sqlite:///{tmp / 'warmup.db'}"
    os.environ["DATABASE_URL"] = url
    fill(get_engine(url), 50)
    at = AppTest.from_file(str(ROOT / "dashboard" / "main.py"), default_timeout=120)
    at.switch_page("screens/results.py")
    at.run()


if __name__ == "__main__":
    sys.exit(main())
