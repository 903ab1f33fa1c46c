"""Issue 29, "what changed between these two compiles?": two real jobs of one model compiled under two modes (and
dynamic shapes off and on), run by a real worker; `runner diff A B` lists the rows of their compiler stories that
differ and their generated code's unified diff, and Compare's run view in a real browser shows the same story with
the differences and the code diff."""
import os
import re

import pytest

from db.database import get_engine
from db.results import export_records
from lab import jobdiff
from tests.conftest import run_cli, submit, work
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")


@pytest.fixture(scope="module")
def two_compiles(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("diff")
    url = f"sqlite:///{tmp / 'lab.db'}"
    (a,) = submit(url, "--model", "sincos", "--batch", "8", "--device", "cpu", "--iters", "3", "--mode", "default",
                  "--dynamic", "false")
    (b,) = submit(url, "--model", "sincos", "--batch", "8", "--device", "cpu", "--iters", "3", "--mode",
                  "max-autotune", "--dynamic", "true")
    work(url, tmp / "home", "--drain")
    records = {r["job_id"]: r for r in export_records(get_engine(url), job_ids=[a, b])}
    assert {r["status"] for r in records.values()} == {"succeeded"}, [r["error"] for r in records.values()]
    return {"url": url, "a": a, "b": b, "tmp": tmp, "records": records}


def test_runner_diff_names_what_differs_and_diffs_the_generated_code(two_compiles):
    lab = two_compiles
    done = run_cli("diff", "--db", lab["url"], str(lab["a"]), str(lab["b"]))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    story = jobdiff.story_rows(lab["records"][lab["a"]], lab["records"][lab["b"]])
    differing = {r["what"] for r in story if any(line.startswith(f"* {r['what']}:") for line in out.splitlines())}
    assert "{'" not in out and "* mode: default -> max-autotune" in out.splitlines()
    assert {"mode", "dynamic"} <= differing and "graphs" not in differing  # one graph each
    rows = jobdiff.story_rows(lab["records"][lab["a"]], lab["records"][lab["b"]])
    assert differing == {r["what"] for r in rows if r["differs"]}
    code = out.split("generated code (output_code): ", 1)[1]
    assert code.startswith(f"\n--- job {lab['a']}\n+++ job {lab['b']}\n") and re.search(r"^@@ ", code, re.M)
    every = run_cli("diff", "--db", lab["url"], str(lab["a"]), str(lab["b"]), "--all", "--no-code").stdout
    assert "  graphs: 1" in every.splitlines() and "generated code" not in every
    missing = run_cli("diff", "--db", lab["url"], str(lab["a"]), "999")
    assert missing.returncode == 2 and "no such job: 999" in missing.stderr


def test_compare_shows_the_compiler_story_and_the_code_diff(two_compiles, browser):  # noqa: F811
    lab = two_compiles
    with running_app(lab["tmp"], lab["url"]) as port:
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.set_default_timeout(60_000)
        page.goto(f"http://localhost:{port}/compare?kind=runs&ja={lab['a']}&jb={lab['b']}")
        page.get_by_role("heading", name="Compiler story").wait_for()
        rows = jobdiff.story_rows(lab["records"][lab["a"]], lab["records"][lab["b"]])
        n = sum(r["differs"] for r in rows)
        page.get_by_text(f"{n} of {len(rows)} rows differ (highlighted)").wait_for()
        page.get_by_text("Generated code: unified diff (output_code)").click()
        code = page.locator('[data-testid="stCode"]').last
        code.wait_for()
        text = code.inner_text()
        assert f"--- job {lab['a']}" in text and f"+++ job {lab['b']}" in text and "@@" in text
        page.get_by_role("heading", name="Compiler story").scroll_into_view_if_needed()
        page.screenshot(path=str(lab["tmp"] / "compare-diff.png"), full_page=True)
