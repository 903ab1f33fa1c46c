"""A page opened at its own address (/results) finds the server with its first question: no request to
/results/_stcore/health (a 404, then 100 ms before Streamlit's browser code asks the right one), at the root and
under a base path, and the page is drawn. The Results page's HTML carries the script that says where the server is
and fetches plotly's chart code ahead; the root's carries neither (dashboard/server/page_base.py)."""
import os
import re
import urllib.request

import pytest

from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")


def visit(browser, url: str) -> list[str]:  # noqa: F811
    """The paths the page asked for until the Results page's title is drawn."""
    context = browser.new_context()
    try:
        page = context.new_page()
        asked = []
        page.on("request", lambda r: asked.append(urllib.request.urlparse(r.url).path))
        page.goto(url)
        page.get_by_text("No finished jobs yet").wait_for(timeout=60_000)  # connected and drawn: the empty lab's page
        return asked
    finally:
        context.close()


def html(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        body = r.read()
        assert int(r.headers["Content-Length"]) == len(body)
        return body.decode()


def test_a_page_at_its_own_address_asks_the_server_once(tmp_path, browser):  # noqa: F811
    with running_app(tmp_path, f"sqlite:///{tmp_path / 'lab.db'}") as port:
        asked = visit(browser, f"http://localhost:{port}/results?view=Speedup")
        assert "/_stcore/health" in asked and "/results/_stcore/health" not in asked, asked
        results, root = html(f"http://localhost:{port}/results"), html(f"http://localhost:{port}/")
        assert "BACKEND_BASE_URL" in results and "BACKEND_BASE_URL" not in root  # the root already asks the right one
        preload = re.search(r'<link rel="modulepreload" crossorigin href="\./static/js/(PlotlyChart\.[^"]+\.js)">', results)
        assert preload and "PlotlyChart" not in root and "PlotlyChart" not in html(f"http://localhost:{port}/queue")
        assert any(p.endswith("/static/js/" + preload.group(1)) for p in asked)  # asked for before the chart came


def test_under_a_base_path_too(tmp_path, browser):  # noqa: F811
    with running_app(tmp_path, f"sqlite:///{tmp_path / 'lab.db'}", None, "--server.baseUrlPath", "lab") as port:
        asked = visit(browser, f"http://localhost:{port}/lab/results")
        assert "/lab/_stcore/health" in asked and "/lab/results/_stcore/health" not in asked, asked
        # the Submit page by its name: sent to the base, where Streamlit serves it; no "Page not found" over it
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"http://localhost:{port}/lab/submit")
            page.get_by_text("Submit a sweep").wait_for(timeout=60_000)
            assert page.url == f"http://localhost:{port}/lab/"
            page.get_by_text("Workers alive").wait_for(timeout=60_000)  # the frame drawn with the page
            assert page.get_by_text("Page not found").count() == 0
        finally:
            context.close()
