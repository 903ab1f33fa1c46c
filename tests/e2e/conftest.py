"""On a browser test's failure, what each open page showed (its main area's text, cut short), in the report: CI
keeps no screenshots, and a timeout alone does not say whether the page errored, lagged or drew something else."""
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    browser = item.funcargs.get("browser") if hasattr(item, "funcargs") else None
    if report.when == "call" and report.failed and browser is not None:
        for i, page in enumerate(p for c in browser.contexts for p in c.pages):
            try:
                text = page.locator("body").inner_text(timeout=5_000)
            except Exception as e:  # a closed page, a crashed renderer: say so, do not hide the test's own error
                text = f"(unreadable: {type(e).__name__})"
            report.sections.append((f"page {i}: {page.url}", text[:4000]))
    return report
