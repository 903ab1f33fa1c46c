"""Results' first plot in a real browser, against a one-chart Streamlit page timed in the same run (target: ≤ 1.2×),
on a box kept loaded; and the database it reads: its size and `runner report`'s time on it, under the same load.

    python -m bench.browser_first_plot [--jobs 100000] [--repeat 5] [--ports 8650 8651] [--cache DIR] [--busy 1]
                                       [--report-runs 5] [--out FILE]

A temp SQLite file is filled with synthetic finished jobs as real ones store them (bench/synthetic.py: per-round
samples as the results table packs them, a detail of a real one's size, process repeats; --cache keeps the fill for
later runs); `--busy N` processes keep a core busy each from then on (another process on the box, as a lab's server
has); `runner report` runs --report-runs times on the file (a fresh process each, bench.report_scale.run: the median
and each, after one that compiles the modules and keeps them, as an installed lab has them), then two servers are started the
way a lab starts one (`streamlit run`, from the project folder, no embedded worker): the app
(dashboard/app.py) and the reference page (bench/one_chart.py: one plotly chart of about the same size, nothing
else). Headless chromium (Playwright, /usr/bin/chromium or COMPILE_LAB_CHROMIUM) opens each page in a fresh
browser context (no cache, a new Streamlit session) and times navigation start -> the first plotly chart drawn
(a `.js-plotly-plot .main-svg` with a size and not hidden; a MutationObserver records performance.now()).

Each repeat restarts both servers, then visits, alternating which page goes first:
  after restart   the first visit to a freshly started server, once it answers its health check (the app has
                  warmed its imports and results table by then; the model's numbers and figures are built for this
                  visit); the reference pays its own imports
  running server  a second visit in a new session: what anyone opening the page of a running lab waits for
The first repeat starts without the results snapshot (a server that has never seen this database): its
Results visit is printed apart as "first ever" and is not in the medians.
Also printed: how long each server took from its command to answering its health check (the app warms the pages'
imports and its results table before it answers: dashboard/app.py), bytes the page received over its WebSocket
until the first chart, and how many elements the page drew before it (both from the median visit). Load average
is printed before and after: compare runs only on a quiet machine.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.report_scale import busy_cores, bytecode_kept, run, warm_file
from bench.said import Said

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("COMPILE_LAB_CHROMIUM", "/usr/bin/chromium")
TARGET = 1.2
REPORT_TARGET_S = 1.5

# Runs before any page script: the time of the first plotly chart that has a size on screen.
FIRST_PLOT_JS = """
(() => {
  const seen = () => {
    if (window.__firstPlot !== undefined) return true;
    // Streamlit draws a chart hidden until it knows its width: a chart counts once it can be seen
    for (const svg of document.querySelectorAll('.js-plotly-plot .main-svg')) {
      const box = svg.getBoundingClientRect();
      if (box.width > 0 && box.height > 0 && getComputedStyle(svg).visibility !== 'hidden') {
        window.__firstPlot = performance.now();
        return true;
      }
    }
    return false;
  };
  new MutationObserver((_, observer) => { if (seen()) observer.disconnect(); })
    .observe(document, {childList: true, subtree: true, attributes: true});
})();
"""
# How many element containers the page holds before the one with the first chart (document order).
ELEMENTS_BEFORE_JS = """
(() => {
  const all = [...document.querySelectorAll('[data-testid="stElementContainer"]')];
  const i = all.findIndex(e => e.querySelector('.js-plotly-plot'));
  return i < 0 ? all.length : i;
})()
"""


class Server:
    """`streamlit run SCRIPT` from the project folder (its .streamlit/config.toml), stopped with its process group."""

    def __init__(self, script: str, port: int, env: dict, log: Path, cwd: Path = ROOT):
        self.script, self.port, self.env, self.log, self.cwd = script, port, env, log, cwd
        self.proc: subprocess.Popen | None = None
        self.ready_s: list[float] = []  # each start: seconds from the command to its health check answering

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    def start(self) -> None:
        began = time.perf_counter()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", self.script, "--server.port", str(self.port),
                 "--server.headless", "true"], cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.script} exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        self.ready_s.append(time.perf_counter() - began)
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{self.script} did not serve on port {self.port} within 120 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None


def visit(browser, url: str, timeout_s: float = 180) -> dict:
    """One visit in a fresh browser context: seconds from navigation start to the first chart drawn, WebSocket
    bytes received by then, and the elements drawn before it."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.add_init_script(FIRST_PLOT_JS)
        received = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: received.append(len(payload))))
        page.goto(url, wait_until="commit")
        page.wait_for_function("window.__firstPlot !== undefined", timeout=timeout_s * 1000, polling=50)
        return {"s": page.evaluate("window.__firstPlot") / 1000, "ws_kb": sum(received) / 1024,
                "before": page.evaluate(ELEMENTS_BEFORE_JS)}
    finally:
        context.close()


def fill_database(path: Path, jobs: int, cache: Path | None = None) -> float:
    """bench.synthetic's realistic jobs in a SQLite file at `path` (kept in `cache` for later runs)."""
    from bench.synthetic import filled

    start = time.perf_counter()
    filled(path, jobs, seed=jobs, cache=cache)
    return time.perf_counter() - start


def report_times(db: Path, runs: int, tmp: Path) -> list[float]:
    """`python -m runner report` on the file, `runs` times, each in a fresh process (its wall time, s), the file
    read once first (a lab's server has it in the page cache)."""
    warm_file(db)
    timed = [run(ROOT, f"sqlite:///{db}", ["report", "--format", "md"], tmp / "report.md", 12.0)[0]
             for _ in range(runs + 1 if runs else 0)]
    return timed[1:]  # the first compiled and kept the modules: not counted


def median_visit(visits: list[dict]) -> dict:
    ordered = sorted(visits, key=lambda v: v["s"])
    return ordered[(len(ordered) - 1) // 2]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--ports", type=int, nargs=2, default=[8650, 8651], help="the app's and the reference's")
    p.add_argument("--reference", default="bench/one_chart.py",
                   help="the reference page (bench/one_chart_in_frame.py: the same chart inside a frame like the app's)")
    p.add_argument("--model", default=None, help="the model Results plots (default: the newest job's)")
    p.add_argument("--out", type=Path, default=None, help="also write the table to this file")
    p.add_argument("--cache", type=Path, default=None, help="keep the 100k fill here for later runs (bench.synthetic)")
    p.add_argument("--busy", type=int, default=1, help="processes keeping a core busy throughout (0: none)")
    p.add_argument("--report-runs", type=int, default=5, help="`runner report` runs on the database (0: none)")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    say = Said()

    say(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory(prefix="browser-first-plot-") as tmp, busy_cores(args.busy):
        tmp = Path(tmp)
        db = tmp / "results.db"
        fill_s = fill_database(db, args.jobs, args.cache)
        say(f"filled {args.jobs:,} synthetic jobs in {fill_s:.1f} s: {db.stat().st_size / 1e9:.3f} GB of SQLite; "
            f"{args.busy} other process(es) keeping a core busy from here on")
        reports = report_times(db, args.report_runs, tmp)
        if reports:
            say(f"runner report: median {statistics.median(reports):.2f} s (target <= {REPORT_TARGET_S} s: "
                f"{'ok' if statistics.median(reports) <= REPORT_TARGET_S else 'MISSED'}); runs "
                + ", ".join(f"{r:.2f}" for r in reports))
        env = bytecode_kept({**os.environ, "DATABASE_URL": f"sqlite:///{db}", "COMPILE_LAB_EMBEDDED_WORKER": "0"},
                            tmp / "pycache")
        app = Server("dashboard/app.py", args.ports[0], env, tmp / "app.log")
        ref = Server(args.reference, args.ports[1], env, tmp / "reference.log")
        results_path = "/results" + (f"?plot={args.model}" if args.model else "")
        pages = {"reference": (ref, ""), "results": (app, results_path)}
        times = {(name, when): [] for name in pages for when in ("restart", "running")}
        first_ever = None
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            try:
                for i in range(args.repeat + 1):  # repeat 0: the app has never seen this database
                    for server in (app, ref):
                        server.stop()
                        server.start()
                    order = ["reference", "results"] if i % 2 else ["results", "reference"]
                    for when in ("restart", "running"):
                        for name in order:
                            server, path = pages[name]
                            got = visit(browser, server.url + path)
                            if i == 0 and name == "results" and when == "restart":
                                first_ever = got
                            elif i > 0:
                                times[name, when].append(got)
                    if i == 0:
                        say(f"repeat 0 (not counted): Results first ever {first_ever['s']:.2f} s")
                    else:
                        say(f"repeat {i}: " + ", ".join(f"{name} {when} {times[name, when][-1]['s']:.2f} s"
                                                         for when in ("restart", "running") for name in order))
            finally:
                browser.close()
                app.stop()
                ref.stop()
    say()
    say(f"{'page':<34} {'after restart s':>16} {'running server s':>17}  {'WS kB':>7} {'elements before':>15}")
    for name, label in (("reference", f"one-chart page ({Path(args.reference).name})"),
                        ("results", f"Results{' ' + args.model if args.model else ''}, {args.jobs:,} jobs")):
        cells = []
        for when in ("restart", "running"):
            vs = [v["s"] for v in times[name, when]]
            cells.append(f"{statistics.median(vs):.2f} ({min(vs):.2f}-{max(vs):.2f})")
        mid = median_visit(times[name, "running"])
        say(f"{label:<34} {cells[0]:>16} {cells[1]:>17}  {mid['ws_kb']:>7.0f} {mid['before']:>15}")
    verdicts = []
    for when in ("restart", "running"):
        ratio = (statistics.median(v["s"] for v in times["results", when])
                 / statistics.median(v["s"] for v in times["reference", when]))
        verdicts.append(ratio <= TARGET)
        say(f"ratio Results / reference, {when:<8}: {ratio:.2f}x  (target <= {TARGET}x: "
            f"{'ok' if ratio <= TARGET else 'MISSED'})")
    say(f"Results' first visit ever (no snapshot, repeat 0): {first_ever['s']:.2f} s")
    # what a restart costs before anyone visits: the app warms the pages' imports and its results table first
    say("server start to ready (median of the counted restarts): "
        f"app {statistics.median(app.ready_s[1:]):.2f} s, reference {statistics.median(ref.ready_s[1:]):.2f} s; "
        f"the app's first start (no snapshot) {app.ready_s[0]:.2f} s")
    say(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    say.write(args.out)
    return 0 if all(verdicts) and (not reports or statistics.median(reports) <= REPORT_TARGET_S) else 1


if __name__ == "__main__":
    sys.exit(main())
