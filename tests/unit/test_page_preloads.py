"""Results' HTML names its first chart's code and every module that code imports (dashboard.server.page_base), so the
browser fetches it while the page's data are read; modules the HTML loads already are not named twice."""
from dashboard.server import page_base


def write(folder, name: str, imports: list[str]) -> None:
    (folder / name).write_text("".join(f'import{{a}}from"./{i}";' for i in imports) + "export const x=1;")


def test_a_chunk_comes_with_what_it_imports_deepest_first_once_each(tmp_path):
    write(tmp_path, "Metric.AbC_1.js", ["numbro.Zz9.js", "shared.Q1.js"])
    write(tmp_path, "numbro.Zz9.js", ["shared.Q1.js"])
    write(tmp_path, "shared.Q1.js", [])
    write(tmp_path, "Button.Xy-2.js", ["shared.Q1.js", "gone.js"])  # an import the folder lacks is left out
    write(tmp_path, "BaseButton.K.js", [])  # a longer name that ends like one asked for is not it
    files = page_base._chunk_files(tmp_path, ("Metric", "Button", "NoSuchElement"))
    assert files == ["shared.Q1.js", "numbro.Zz9.js", "Metric.AbC_1.js", "Button.Xy-2.js"]


def test_a_name_with_two_builds_is_left_out_rather_than_guessed(tmp_path):
    write(tmp_path, "Metric.A.js", [])
    write(tmp_path, "Metric.B.js", [])
    assert page_base._chunk_files(tmp_path, ("Metric",)) == []


def test_results_html_names_plotly_and_what_it_imports_but_not_what_it_loads_already():
    files = page_base.preloads("results")
    assert files[-1].startswith("PlotlyChart.") and len(files) > 1  # its imports come first
    already = files[0]  # say the entry HTML loads this one itself
    head = page_base.head("/results", f'<script type="module" src="./static/js/{already}">'.encode())
    assert already.encode() not in head and b"PlotlyChart." in head and b"BACKEND_BASE_URL" in head
    assert page_base.head("/queue") == page_base.SCRIPT  # other pages: where the server is, nothing fetched ahead


def test_the_default_pages_own_address_is_sent_to_the_base_with_its_query(monkeypatch):
    """Streamlit serves the default page (Submit) at the base: asked for as /submit, its browser code said "Page not
    found" over it. The server sends that address to the base, query kept; other pages and methods pass through."""
    import asyncio

    passed, sent = [], []

    async def app(scope, receive, send):
        passed.append(scope["path"])

    async def send(message):
        sent.append(message)

    async def call(path: str, query: bytes = b"", method: str = "GET"):
        scope = {"type": "http", "method": method, "path": path, "query_string": query, "headers": []}
        await page_base.PageBase(app)(scope, None, send)

    for base in ("", "/lab"):
        monkeypatch.setattr(page_base, "base_path", lambda b=base: b)
        passed.clear()
        sent.clear()
        asyncio.run(call(f"{base}/{page_base.DEFAULT}", b"preset=mlp"))
        assert sent[0]["status"] == 307 and dict(sent[0]["headers"])[b"location"] == f"{base}/?preset=mlp".encode()
        assert passed == []
        sent.clear()
        asyncio.run(call(f"{base}/{page_base.DEFAULT}"))
        assert dict(sent[0]["headers"])[b"location"] == f"{base}/".encode()
        sent.clear()
        asyncio.run(call(f"{base}/{page_base.DEFAULT}", method="POST"))  # not a page visit: passes
        asyncio.run(call(f"{base}/submitted"))
        assert passed == [f"{base}/{page_base.DEFAULT}", f"{base}/submitted"]
