"""Results' "Every column" dialog and Compare's views in a real browser, against a one-table Streamlit page timed in
the same run (target: each within 1.5x of the one-table page).

    python -m bench.views_vs_one_table [--repeat 3] [--passes 2] [--port 8660] [--before DIR] [--out FILE]

The lab is a temp SQLite file shaped like real use (bench/synthetic.py `fill`, per-round samples as a real job
stores them): bench/screens.py's 12-configuration complexnet sweep twice (the repeat sweep `fill` ends with is
removed, so these two are the newest: the pair Compare opens on). Servers are started the way a lab starts one
(`streamlit run`, from the project folder, no embedded worker), one at a time (the 2-core box runs one browser and one
server at once): a one-table page the bench writes to a temp file (a title and an st.dataframe of the answer's rows
and the dialog's columns, nothing else), the app (dashboard/app.py) and, with --before, the app of another checkout
(its modules first on PYTHONPATH). Headless chromium (Playwright, /usr/bin/chromium or COMPILE_LAB_CHROMIUM) times,
each visit in a new browser context (an empty HTTP cache, a new Streamlit session):

  one-table page                 navigation start -> its grid drawn
  every column                   on Results (loaded first, not timed): the click on "Every column" -> the dialog's
                                 grid drawn; "again": closed and opened once more (its code is loaded by then)
  compare: open a link           navigation start of /compare?a=1&b=2 -> its tables and chart drawn
  compare: from Results' sidebar in another context, Results loaded (not timed), then the click on Compare in the
                                 sidebar -> its tables and chart drawn; then in that session:
  compare: switch metric         the click on a metric pill (compiled_ms off) -> drawn again
  compare: switch to runs        the click on "runs" -> the two runs' tables and samples chart drawn
  compare: back to sweeps        the click on "sweeps" -> the sweeps' tables and chart drawn again

"Drawn": the script run has finished (stApp's data-test-script-state went to running, then back), no element is
stale, and every grid (st.dataframe: its canvas with a size and its accessible cells) and chart (plotly or Vega-Lite,
with a size, not hidden) there is drawn. A MutationObserver records performance.now() in the page. Each server's
first visits are a warm-up, printed apart (the answer and the comparison computed for the first time, imports); the
medians are a running server's. Each pass restarts every server, in turns, so drift shows in all of them.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

from bench.browser_first_plot import CHROMIUM, Server
from bench.said import Said
from bench.screens import SHAPE

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.5
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

ONE_TABLE = '''"""bench.views_vs_one_table's reference: a title and one st.dataframe of {rows} rows and {cols} columns."""
import numpy as np
import pandas as pd
import streamlit as st

st.set_page_config(page_title="One table", layout="wide")
st.title("One table")
rng = np.random.default_rng(0)
df = pd.DataFrame({{"config": [f"inductor/default · dynamic=true · {{i}}" for i in range({rows})],
                   "verdict": ["faster: 1.23x [1.20, 1.26]"] * {rows},
                   **{{f"number {{i}}": rng.random({rows}) * 100 for i in range({cols} - 2)}}}})
st.dataframe(df, hide_index=True, width="stretch")
'''

# In every page before its scripts: window.__watch(target) records in window.__done the time at which the next script
# run has finished and `target` is drawn; a navigation watches from its start.
WATCH_JS = """
(() => {
  const drawn = (el) => { const b = el.getBoundingClientRect();
    return b.width > 0 && b.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  const grid = (d) => [...d.querySelectorAll('canvas')].some(drawn) && d.querySelector('td') !== null;
  const plot = (c) => [...c.querySelectorAll('.main-svg, canvas.marks, svg.marks')].some(drawn);
  // every grid (st.dataframe) and chart (plotly or Vega-Lite) in `root` drawn, and at least one of them there
  const all = (root) => {
    const grids = [...root.querySelectorAll('[data-testid="stDataFrame"]')];
    const plots = [...root.querySelectorAll('.js-plotly-plot, .vega-embed')];
    return grids.length + plots.length > 0 && grids.every(grid) && plots.every(plot);
  };
  window.__targets = {
    view: () => all(document),
    dialog: () => { const d = document.querySelector('[role="dialog"]'); return d !== null && all(d); },
    plot: () => [...document.querySelectorAll('.js-plotly-plot')].some(plot),
  };
  const inMain = (r) => { const n = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    return n !== null && n.closest('[data-testid="stMain"]') !== null; };
  window.__watch = (target) => {
    window.__done = undefined; window.__sawRun = false; window.__mainRan = false;
    const check = (records) => {
      const app = document.querySelector('[data-testid="stApp"]');
      const state = app && app.getAttribute('data-test-script-state');
      // a short run (a fragment's) may start and end between two callbacks: its start is in the records' old values
      if (state === 'running' || records.some(r => r.attributeName === 'data-test-script-state'
                                                   && r.oldValue === 'running')) window.__sawRun = true;
      // and the sidebar's fragment runs every 5 s: a run counts once the page's main area changed during it
      if (window.__sawRun && records.some(inMain)) window.__mainRan = true;
      if (!window.__sawRun || state === 'running' || document.querySelector('[data-stale="true"]')) return false;
      if (target === 'view' && !window.__mainRan) return false;
      if (!window.__targets[target]()) return false;
      window.__done = performance.now();
      return true;
    };
    const observer = new MutationObserver((records) => { if (check(records)) observer.disconnect(); });
    observer.observe(document, {childList: true, subtree: true, attributes: true, attributeOldValue: true});
    return performance.now();
  };
  const first = new URLSearchParams(location.search).get('__watch');
  if (first) window.__watch(first);
})();
"""


def make_lab(home: Path) -> tuple[str, int]:
    """The lab's URL and its answer's row count (the one-table page draws as many)."""
    from sqlalchemy import text

    from bench.synthetic import fill
    from db.database import get_engine
    from db.reports import report

    url = f"sqlite:///{home / 'lab.db'}"
    engine = get_engine(url)
    fill(engine, 36, seed=2, device="cuda", **SHAPE)
    # fill ends with a repeat sweep: without it the two 12-configuration sweeps are the newest, the pair Compare opens on
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM results WHERE job_id IN (SELECT id FROM jobs WHERE sweep_id = 3)"))
        conn.execute(text("DELETE FROM jobs WHERE sweep_id = 3"))
        conn.execute(text("DELETE FROM sweeps WHERE id = 3"))
    n_rows = len(report(engine))
    engine.dispose()
    return url, n_rows


def load(page, url: str, target: str, timeout_s: float = 60) -> float:
    """Navigate and wait until the first script run has drawn `target`: seconds from navigation start."""
    sep = "&" if "?" in url else "?"
    page.goto(f"{url}{sep}__watch={target}", wait_until="commit")
    page.wait_for_function("window.__done !== undefined", timeout=timeout_s * 1000, polling=50)
    return page.evaluate("window.__done") / 1000


def after(page, act, target: str, timeout_s: float = 60) -> float:
    """Seconds from `act()` (a click) to the script run it starts having drawn `target`."""
    began = page.evaluate(f"window.__watch('{target}')")
    act()
    page.wait_for_function("window.__done !== undefined", timeout=timeout_s * 1000, polling=50)
    return (page.evaluate("window.__done") - began) / 1000


def fresh_page(browser):
    """A page in a new browser context: an empty HTTP cache and a new Streamlit session."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.add_init_script(WATCH_JS)
    page.set_default_timeout(60_000)
    return context, page


def visit_reference(browser, url: str) -> dict:
    context, page = fresh_page(browser)
    try:
        return {"one-table page": load(page, url, "view")}
    finally:
        context.close()


def visit_results(browser, url: str) -> dict:
    context, page = fresh_page(browser)
    try:
        load(page, f"{url}/results", "plot")
        button = page.get_by_role("button", name="Every column", exact=False)
        got = {"every column": after(page, button.click, "dialog")}
        page.keyboard.press("Escape")
        page.get_by_role("dialog").wait_for(state="detached")
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
        got["every column, again"] = after(page, button.click, "dialog")
        return got
    finally:
        context.close()


def choice(page, text: str):
    """The pill or segment that reads `text`."""
    return page.locator('[data-testid="stButtonGroup"] button').filter(has_text=re.compile(f"^{re.escape(text)}$"))


def visit_compare(browser, url: str) -> dict:
    """A link to Compare opened in a new browser; then, in another, Compare reached from Results as a user does (the
    sidebar), its metric, view and view again switched."""
    context, page = fresh_page(browser)
    try:
        got = {"compare: open a link to two sweeps": load(page, f"{url}/compare?a=1&b=2", "view")}
    finally:
        context.close()
    context, page = fresh_page(browser)
    try:
        load(page, f"{url}/results", "plot")
        link = page.locator('[data-testid="stSidebarNav"] a[href$="/compare"]')
        got["compare: from Results' sidebar"] = after(page, link.click, "view")
        got["compare: switch metric"] = after(page, choice(page, "compiled_ms").click, "view")
        got["compare: switch to runs"] = after(page, choice(page, "runs").click, "view")
        got["compare: back to sweeps"] = after(page, choice(page, "sweeps").click, "view")
        return got
    finally:
        context.close()


ROWS = ["one-table page", "every column", "every column, again", "compare: open a link to two sweeps",
        "compare: from Results' sidebar", "compare: switch metric",
        "compare: switch to runs", "compare: back to sweeps"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3, help="visits per page and pass")
    p.add_argument("--passes", type=int, default=2, help="each restarts every server")
    p.add_argument("--port", type=int, default=8660, help="the one-table page's; the apps' are the next ones")
    p.add_argument("--before", type=Path, default=None,
                   help="another checkout (say `git archive HEAD | tar -x -C DIR`): its app is timed too, in turns")
    p.add_argument("--out", type=Path, default=None, help="also write the table to this file")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    say = Said()

    codes = {"this": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    say(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores); "
        + "; ".join(f"{name}: {path}" for name, path in codes.items()))
    times = {(code, name): [] for code in codes for name in ROWS}
    firsts = {(code, name): [] for code in codes for name in ROWS}  # each server's first visits: warm-up
    with tempfile.TemporaryDirectory(prefix="views-vs-one-table-") as tmp:
        tmp = Path(tmp)
        url, n_rows = make_lab(tmp)
        n_cols = 24  # the dialog's: answer_table.SHOWN less the model
        script = tmp / "one_table.py"
        script.write_text(ONE_TABLE.format(rows=n_rows, cols=n_cols))
        say(f"lab: 24 synthetic jobs (two 12-configuration sweeps), {n_rows} answer rows; one-table page: "
            f"{n_rows} rows x {n_cols} columns")
        env = {**os.environ, "DATABASE_URL": url, "COMPILE_LAB_EMBEDDED_WORKER": "0"}
        servers = {"reference": Server(str(script), args.port, env, tmp / "reference.log")}
        for i, (code, path) in enumerate(codes.items()):
            servers[code] = Server("dashboard/app.py", args.port + 1 + i, {**env, "PYTHONPATH": str(path)},
                                   tmp / f"app-{code}.log", cwd=path)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            try:
                for i in range(args.passes):
                    order = list(servers)[i % len(servers):] + list(servers)[:i % len(servers)]
                    for name in order:
                        server = servers[name]
                        code = "this" if name == "reference" else name
                        visits = [visit_reference] if name == "reference" else [visit_results, visit_compare]
                        server.start()  # one server at a time: the box has two cores
                        try:
                            for n in range(args.repeat + 1):
                                for visit in visits:
                                    got = visit(browser, server.url)
                                    for view, s in got.items():
                                        (firsts if n == 0 else times)[code, view].append(s)
                                    say(f"pass {i + 1}, {name}{' (warm-up)' if n == 0 else ''}: "
                                        + ", ".join(f"{view} {s:.2f} s" for view, s in got.items()))
                        finally:
                            server.stop()
            finally:
                browser.close()
    say()
    base = statistics.median(times["this", "one-table page"])
    say(f"medians of {args.passes} x {args.repeat} visits (range), and the ratio to the one-table page; "
        f"target <= {TARGET}x")
    say(f"{'view':<36}" + "".join(f" {code + ' s':>18} {'ratio':>7}" for code in codes))
    missed = False
    for view in ROWS:
        cells = ""
        for code in codes:
            vs = times["this" if view == "one-table page" else code, view]
            ratio = statistics.median(vs) / base
            missed |= code == "this" and view != "one-table page" and ratio > TARGET
            cells += f" {f'{statistics.median(vs):.2f} ({min(vs):.2f}-{max(vs):.2f})':>18} {ratio:>6.2f}x"
        say(f"{view:<36}{cells}")
    for code in codes:
        say(f"{code}: a started server's first visits (warm-up, not in the medians): "
            + ", ".join(f"{view} {'/'.join(f'{s:.2f}' for s in firsts[code, view])} s" for view in ROWS
                        if firsts[code, view]))
    say(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    say.write(args.out)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
