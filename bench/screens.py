"""Screenshots of Results for a 12-configuration sweep (3 modes x 2 dynamic x 2 batch sizes, synthetic H100-shaped
numbers with per-round samples; one configuration, default dynamic=false bs 8, has a noisy run only), in headless
chromium at 1400 px: the page as it opens (down to the N-calls chart, at bs 8 where the noisy configuration is),
the answer table and the N-calls chart, the answer's every column (a dialog), the warmup, break-even, speedup
and latency charts (one at a time, as the Speedup tab draws them) and the First call tab; then Compare of two
CPU sweeps whose jobs were stored as default and reduce-overhead (shown as one configuration). How the docs'
"12-configs" and "compare-cpu-folded" screenshots are made:

    python -m bench.screens --port 8620 --out docs/screenshots --home /tmp/ui-screens

Starts `streamlit run dashboard/app.py` on the port (no embedded worker) against a fresh SQLite file under
--home, and stops it when done.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bench.synthetic import fill
from db.database import get_engine

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("COMPILE_LAB_CHROMIUM", "/usr/bin/chromium")
SHAPE = dict(models=("complexnet",), batches=(8, 32), dynamics=(True, False),
             modes=("default", "reduce-overhead", "max-autotune"))


def fresh_lab(home: Path, name: str, n_jobs: int, **shape) -> str:
    """A new SQLite file `name` in an emptied `home`, filled with `n_jobs` synthetic jobs (bench.synthetic.fill); its
    URL. Each lab has its own file name: get_engine keeps one engine per URL, on the removed file."""
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    url = f"sqlite:///{home / name}"
    fill(get_engine(url), n_jobs, **shape)
    return url


def make_lab(home: Path) -> str:
    return fresh_lab(home, "lab.db", 12, seed=2, device="cuda", rounds=20, **SHAPE)


def browser(p):
    """Headless chromium as every screenshot here takes it."""
    return p.chromium.launch(executable_path=CHROMIUM, args=[
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])


def serve(url: str, port: int, home: Path) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": url, "COMPILE_LAB_EMBEDDED_WORKER": "0"}
    log = open(home / "app.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "dashboard/app.py", "--server.port", str(port)],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=2):
                return proc
        except OSError:
            time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGTERM)
    raise SystemExit(f"the app did not serve on port {port}; see {home / 'app.log'}")


def shoot(port: int, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as p:
        chromium = browser(p)
        page = chromium.new_page(viewport={"width": 1400, "height": 5200})
        page.set_default_timeout(90_000)
        charts = page.locator('[data-testid="stPlotlyChart"]')

        def open_chart(chart: str, title: str) -> None:  # the Speedup tab draws one chart at a time (?chart=)
            page.goto(f"http://localhost:{port}/results?chart={chart}")
            charts.filter(has_text=title).first.wait_for()
            page.wait_for_timeout(1500)  # plotly's last layout pass

        def element(title: str, name: str) -> None:
            path = out / name
            charts.filter(has_text=title).first.screenshot(path=str(path))
            saved.append(path)

        open_chart("N+calls", "What to use for N calls")
        # the N-calls chart at bs 8, where the sweep's configuration with noisy runs only is (drawn dotted grey)
        page.locator('[data-testid="stButtonGroup"]').filter(has_text="Batch size").first.get_by_role(
            "radio", name="8", exact=True).click()
        charts.filter(has_text="What to use for N calls · bs 8").first.wait_for()
        page.get_by_text("The answer for", exact=False).first.click()  # the control loses focus: no outline
        page.wait_for_timeout(1500)
        # the page as it opens, from the top down to the N-calls chart's recommendation under it; and the answer
        # table down to that line
        line = page.get_by_text("calls at bs", exact=False).first.bounding_box()
        bottom = line["y"] + line["height"] + 20
        path = out / "results-page-12-configs-synthetic.png"
        page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": 1400, "height": bottom})
        saved.append(path)
        top = page.get_by_text("The answer for", exact=False).first.bounding_box()
        path = out / "results-answer-ncalls-12-configs-synthetic.png"
        page.screenshot(path=str(path), clip={"x": 0, "y": top["y"] - 10, "width": 1400, "height": bottom - top["y"] + 10})
        saved.append(path)
        # every column of the answer: a sortable grid in a dialog, opened by the button under the table
        page.get_by_role("button", name="Every column", exact=False).click()
        dialog = page.get_by_role("dialog")
        dialog.locator('[data-testid="stDataFrame"]').wait_for()
        page.wait_for_timeout(1000)
        path = out / "results-answer-every-column-12-configs-synthetic.png"
        dialog.screenshot(path=str(path))
        saved.append(path)
        page.keyboard.press("Escape")
        for chart, title, name in (("Warmup", "Warmup cost", "warmup"), ("Break-even", "Break-even", "break-even"),
                                   ("Speedup", "Speedup vs batch size", "speedup"), ("Latency", "Steady-state", "latency")):
            open_chart(chart, title)
            element(title, f"results-{name}-12-configs-synthetic.png")
        page.goto(f"http://localhost:{port}/results?view=First+call")
        charts.filter(has_text="where the compiled first call goes").first.wait_for()
        page.wait_for_timeout(1500)
        element("where the compiled first call goes", "results-first-call-12-configs-synthetic.png")
        chromium.close()
    return saved


def make_cpu_lab(home: Path) -> str:
    """Two CPU sweeps of simplenet, each with a job stored as default and one as reduce-overhead (as sweeps submitted
    before the submit fold stored them): Compare shows them as one configuration."""
    return fresh_lab(home, "cpu-lab.db", 6, seed=3, device="cpu", models=("simplenet",), batches=(8,),
                     dynamics=(False,), modes=("default", "reduce-overhead"))


def shoot_compare(port: int, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    path = out / "compare-cpu-folded-synthetic.png"
    with sync_playwright() as p:
        chromium = browser(p)
        page = chromium.new_page(viewport={"width": 1400, "height": 1800})
        page.set_default_timeout(90_000)
        page.goto(f"http://localhost:{port}/compare?a=1&b=2&metric=speedup&metric=compiled_ms")
        page.locator('[data-testid="stVegaLiteChart"]').first.wait_for()
        page.wait_for_timeout(1500)
        page.screenshot(path=str(path), full_page=True)
        chromium.close()
    return [path]


def make_two_sweeps_lab(home: Path) -> str:
    """Two 12-configuration sweeps of the same settings and fill's repeat sweep: Repeats and Compare at 12 rows."""
    return fresh_lab(home, "two-sweeps.db", 36, seed=2, device="cuda", rounds=20, **SHAPE)


def shoot_two_sweeps(port: int, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    saved = []
    with sync_playwright() as p:
        chromium = browser(p)
        page = chromium.new_page(viewport={"width": 1400, "height": 3000})
        page.set_default_timeout(90_000)
        page.goto(f"http://localhost:{port}/results?view=Repeats")
        page.get_by_text("Repeats", exact=False).first.wait_for()
        page.locator('[data-testid="stPlotlyChart"], [data-testid="stDataFrame"]').first.wait_for()
        page.wait_for_timeout(2500)
        path = out / "results-repeats-12-configs-synthetic.png"
        page.screenshot(path=str(path), full_page=True)
        saved.append(path)
        page.goto(f"http://localhost:{port}/compare?a=1&b=2")
        page.locator('[data-testid="stVegaLiteChart"]').first.wait_for()
        page.wait_for_timeout(2000)
        path = out / "compare-12-configs-synthetic.png"
        page.screenshot(path=str(path), full_page=True)
        saved.append(path)
        chromium.close()
    return saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8620)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    ap.add_argument("--home", type=Path, default=Path("/tmp/compile-lab-screens"))
    args = ap.parse_args()
    for make, take in ((make_lab, shoot), (make_cpu_lab, shoot_compare), (make_two_sweeps_lab, shoot_two_sweeps)):
        url = make(args.home)
        proc = serve(url, args.port, args.home)
        try:
            for path in take(args.port, args.out):
                print(path)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)


if __name__ == "__main__":
    main()
