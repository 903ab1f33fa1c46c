"""Results' CSV download of every job at 100k realistic jobs, and another session's page meanwhile (target: the
server's memory bounded, the other session's page time unchanged).

    python -m bench.download_sessions [--jobs 100000] [--visits 5] [--port 8652] [--cache DIR]
                                      [--code DIR --db FILE] [--out FILE] [--cycles N]

The app (`streamlit run dashboard/app.py`, no embedded worker) serves a SQLite file of bench.synthetic's realistic
jobs. In headless chromium, fresh browser contexts (new sessions) open Results and time navigation start -> the first
chart drawn (bench.browser_first_plot.visit): --visits times alone, then one after another while one session downloads
the CSV of every job in view, until the download ends. The download is what a person's click starts: the
Download popover's CSV link, fetched by a second HTTP client that reads the stream to its end; with code whose CSV is
a download button (--code DIR, another checkout, with --db a database at its schema) the button is clicked in the
browser and the download awaited there. Printed: the download's time and size; the peak resident memory of the server
process and of any process it started (sampled every 0.2 s), and the other session's median page time alone and
during the download.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from bench.browser_first_plot import CHROMIUM, FIRST_PLOT_JS, Server, fill_database, visit
from bench.said import Said

ROOT = Path(__file__).resolve().parent.parent


class Memory(threading.Thread):
    """Peak resident memory (MB) of a process and, apart, of the processes under it, sampled until stopped."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.server_mb, self.children_mb, self.done = pid, 0.0, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            self.server_mb = max(self.server_mb, _rss_mb(self.pid))
            self.children_mb = max(self.children_mb, sum(_rss_mb(p) for p in _descendants(self.pid)))


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _descendants(pid: int) -> list[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, frontier = [], [pid]
    while frontier:
        frontier = [p for p, parent in parents.items() if parent in frontier]
        out += frontier
    return out


def fetch(url: str, result: dict, stop: threading.Event | None = None, timeout: float = 600) -> None:
    """The CSV as a second client reads it: to its end (or until `stop`: the client goes away), in 64 kB pieces,
    kept nowhere."""
    start = time.perf_counter()
    size = 0
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            while not (stop and stop.is_set()) and (piece := r.read(1 << 16)):
                size += len(piece)
    except TimeoutError:  # nothing came for `timeout` s: fine once the client is to go away
        if not (stop and stop.is_set()):
            raise
    result.update(seconds=time.perf_counter() - start, bytes=size)


def ratio_interval(alone: list[float], during: list[float], draws: int = 4000, seed: int = 0) -> tuple:
    """median(during) / median(alone) and its 95% bootstrap interval (each side resampled on its own)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a, d = np.asarray(alone), np.asarray(during)
    ratios = (np.median(rng.choice(d, (draws, len(d))), axis=1) / np.median(rng.choice(a, (draws, len(a))), axis=1))
    return float(np.median(d) / np.median(a)), float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def cycles(browser, app, url: str, n: int, visits: int, say) -> None:
    """Alone and during, interleaved: n times, `visits` visits alone, then `visits` while a download runs (started
    for the block, the client gone after it: its export is stopped), so drift over the run (the page cache, the
    host) falls on both sides alike. Prints the ratio of the medians with its bootstrap interval."""
    alone, during, sizes = [], [], []
    context = browser.new_context()
    page = context.new_page()
    page.add_init_script(FIRST_PLOT_JS)
    for k in range(n):
        alone += [visit(browser, url)["s"] for _ in range(visits)]
        page.goto(url)
        page.wait_for_function("window.__firstPlot !== undefined", timeout=180_000, polling=100)
        page.get_by_role("button", name="Download", exact=True).click()
        link = page.get_by_role("link", name="CSV", exact=True)
        link.wait_for()
        got: dict = {}
        stop = threading.Event()
        fetcher = threading.Thread(target=fetch, args=(app.url + link.get_attribute("href"), got, stop, 30), daemon=True)
        fetcher.start()
        block = []
        while len(block) < visits and fetcher.is_alive():
            block.append(visit(browser, url)["s"])
        ended = not fetcher.is_alive()
        stop.set()
        fetcher.join()
        during += block
        sizes.append(got.get("bytes", 0))
        if not block:
            raise SystemExit(f"cycle {k + 1}: the download ended before any visit (with {got}): nothing was measured")
        say(f"cycle {k + 1}: alone {statistics.median(alone[-visits:]):.2f} s, during {statistics.median(block):.2f} s"
            f" ({len(block)} visits; the download {'ended' if ended else 'was stopped'} at {sizes[-1] / 1e6:.0f} MB)")
    context.close()
    mid, low, high = ratio_interval(alone, during)
    say(f"alone: {', '.join(f'{s:.2f}' for s in alone)} s")
    say(f"during: {', '.join(f'{s:.2f}' for s in during)} s")
    say(f"other session's page, median: alone {statistics.median(alone):.2f} s, during a download "
        f"{statistics.median(during):.2f} s; during / alone {mid:.3f} [95%: {low:.3f}, {high:.3f}] "
        f"({len(alone)} and {len(during)} visits, {n} cycles)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--visits", type=int, default=5)
    p.add_argument("--port", type=int, default=8652)
    p.add_argument("--cache", type=Path, default=None, help="keep the fill here for later runs (bench.synthetic)")
    p.add_argument("--code", type=Path, default=ROOT, help="the checkout whose app is served")
    p.add_argument("--db", type=Path, default=None, help="a SQLite file at --code's schema (default: a fill)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--cycles", type=int, default=0, help="alone and during interleaved this many times (--visits "
                   "each), the download stopped after each block: the ratio with its interval")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    say = Said()

    say(f"code: {args.code}; load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory(prefix="download-sessions-") as tmp:
        tmp = Path(tmp)
        db = tmp / "results.db"
        if args.db:
            shutil.copyfile(args.db, db)
        else:
            fill_database(db, args.jobs, args.cache)
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "COMPILE_LAB_EMBEDDED_WORKER": "0",
               "PYTHONPATH": str(args.code)}
        app = Server("dashboard/app.py", args.port, env, tmp / "app.log", cwd=args.code)
        url = f"{app.url}/results"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            try:
                app.start()
                visit(browser, url)  # the first visit ever builds the snapshot and the answer: not counted
                if args.cycles:
                    cycles(browser, app, url, args.cycles, args.visits, say)
                    say.write(args.out)
                    return 0
                alone = [visit(browser, url)["s"] for _ in range(args.visits)]
                say("alone: " + ", ".join(f"{s:.2f}" for s in alone) + " s")
                memory = Memory(app.proc.pid)
                memory.start()
                context = browser.new_context(accept_downloads=True)
                page = context.new_page()
                page.add_init_script(FIRST_PLOT_JS)
                page.goto(url)
                page.wait_for_function("window.__firstPlot !== undefined", timeout=180_000, polling=100)
                page.get_by_role("button", name="Download", exact=True).click()
                link = page.get_by_role("link", name="CSV", exact=True)
                link.or_(page.get_by_role("button", name="CSV", exact=True)).first.wait_for()  # the popover opened
                got: dict = {}
                if link.count():  # a link the server streams: a second client reads it
                    href = link.get_attribute("href")
                    fetcher = threading.Thread(target=fetch, args=(app.url + href, got), daemon=True)
                    start = time.perf_counter()
                    fetcher.start()
                    busy = fetcher.is_alive
                else:  # a download button: the browser asks the server to build the file, then saves it
                    # the event comes once the server has built the file and the browser starts saving it
                    page.on("download", lambda d: got.update(download=d, seconds=time.perf_counter() - start))
                    start = time.perf_counter()
                    page.get_by_role("button", name="CSV", exact=True).click()
                    busy = lambda: "seconds" not in got  # noqa: E731

                during = []  # other sessions' visits for as long as the download runs
                while busy():
                    during.append(visit(browser, url)["s"])
                memory.done.set()
                memory.join()
                if "download" in got:
                    got["bytes"] = Path(got["download"].path()).stat().st_size
                context.close()
                say("during: " + ", ".join(f"{s:.2f}" for s in during) + " s")
            finally:
                browser.close()
                app.stop()
    say()
    say(f"{'download s':>10} {'MB':>7} {'server peak MB':>14} {'its processes MB':>16} {'other session alone s':>22}"
        f" {'during s':>9}  visits during")
    say(f"{got['seconds']:>10.1f} {got['bytes'] / 1e6:>7.0f} {memory.server_mb:>14.0f} {memory.children_mb:>16.0f} "
        f"{statistics.median(alone):>22.2f} {statistics.median(during) if during else math.nan:>9.2f}  {len(during)}")
    say(f"load average after: {os.getloadavg()[0]:.2f}")
    say.write(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
