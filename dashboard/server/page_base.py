"""What a page's HTML says before Streamlit's browser code runs.

Where the server is: opened at its own address (/results, /queue?…), that code takes the server for the page's own
path first: it asks /results/_stcore/health, gets a 404, waits 100 ms and only then asks /_stcore/health, before the
page's first message. A script names the folder above the page instead (window.__streamlit.BACKEND_BASE_URL, which
that code reads), so the first question is the right one.

Plotly's code, on Results: the browser fetches an element's code (plotly's chart: 4.7 MB) only once its message has
come, then evaluates it, and the first chart waited for that. Named in Results' HTML (modulepreload), it is
fetched and compiled while the page's other code loads and its data are read."""
from __future__ import annotations

import functools
import re
from pathlib import Path

from dashboard.server import base_path

# Every page is one path segment under the server's base (st.Page url_path): the server is the folder above it,
# as the browser resolves "." against the page's address (also behind a proxy that strips a prefix of its own).
DEFAULT = "submit"  # the first page's url_path (dashboard/main.py): Streamlit serves it at the base itself
SCRIPT = b'<script>window.__streamlit={BACKEND_BASE_URL:new URL(".",location.href).href}</script>'
HEAD = b"<head>"
# The code of the elements a page draws first, named in its HTML (modulepreload) with every module it imports: fetched
# and compiled while the page's other code loads and its data are read, not once the element's message has come.
# Plotly's chart (4.7 MB) on Results; naming the metrics', button groups', buttons' and HTML blocks' code too made no
# difference the bench could tell from its noise (1.15-1.27x either way, bench/results/browser_first_plot_100k_tooltips.txt).
PRELOADS = {"results": ("PlotlyChart",)}
IMPORTS = re.compile(rb'(?:from|import)\s*"\./([\w.-]+\.js)"')


def _chunk_files(static: Path, names: tuple[str, ...]) -> list[str]:
    """The files of these chunks (Streamlit's build names each NAME.HASH.js) and every module they import
    statically, imported ones first; a name its build does not have one file for is left out."""
    found: list[str] = []

    def visit(file: str) -> None:
        if file in found:
            return
        path = static / file
        if not path.is_file():
            return
        for dep in IMPORTS.findall(path.read_bytes()):
            visit(dep.decode())
        found.append(file)

    for name in names:
        files = [f.name for f in static.glob(f"{name}.*.js") if re.fullmatch(rf"{re.escape(name)}\.[\w-]+\.js", f.name)]
        if len(files) == 1:
            visit(files[0])
    return found


@functools.cache
def preloads(page: str) -> tuple[str, ...]:
    """The files of a page's element code to fetch ahead (PRELOADS); none for other pages."""
    from streamlit import file_util

    return tuple(_chunk_files(Path(file_util.get_static_dir(), "static", "js"), PRELOADS.get(page, ())))


def head(path: str, html: bytes = b"") -> bytes:
    """What goes right after <head> in the HTML of the page at `path`: SCRIPT, and a link for each of its preloads
    that the HTML does not load already (Streamlit's own entry code)."""
    return SCRIPT + b"".join(f'<link rel="modulepreload" crossorigin href="./static/js/{f}">'.encode()
                             for f in preloads(path.rsplit("/", 1)[-1]) if f.encode() not in html)


def is_page(path: str) -> bool:
    """A page's own address: one segment under the server's base, not one of Streamlit's routes or files."""
    base = base_path()
    if not path.startswith(base + "/"):
        return False
    rest = path[len(base) + 1:]
    return bool(rest) and "/" not in rest and "." not in rest and not rest.startswith("_stcore")


class PageBase:
    """ASGI middleware (dashboard/app.py): the HTML of a page's own address carries SCRIPT. Only there: at the
    base itself the browser's first question is already the right one. The default page's own address (DEFAULT)
    is sent to the base, where Streamlit serves that page: asked for by its name, Streamlit's browser code says
    "Page not found" over it."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        base = base_path()
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD") and scope.get("path", "") == f"{base}/{DEFAULT}":
            query = scope.get("query_string", b"").decode("latin-1")
            where = f"{base}/" + (f"?{query}" if query else "")
            await send({"type": "http.response.start", "status": 307,
                        "headers": [(b"location", where.encode("latin-1")), (b"content-length", b"0")]})
            return await send({"type": "http.response.body", "body": b""})
        if scope["type"] != "http" or scope["method"] != "GET" or not is_page(scope.get("path", "")):
            return await self.app(scope, receive, send)
        # the HTML uncompressed (8 kB, once a visit) and held until whole, so that the lines can go in
        scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"accept-encoding"],
                 "extensions": {k: v for k, v in (scope.get("extensions") or {}).items()
                                if k != "http.response.pathsend"}}
        start, parts = None, []

        async def send_with_script(message):
            nonlocal start
            if message["type"] == "http.response.start":
                html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in message["headers"])
                if message["status"] == 200 and html:
                    start = message  # held until the body is whole
                    return
            if start is None or message["type"] != "http.response.body":  # anything else passes as it comes
                return await send(message)
            parts.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body, headers = b"".join(parts), start["headers"]
            if HEAD in body:
                body = body.replace(HEAD, HEAD + head(scope["path"], body), 1)
                headers = [(k, str(len(body)).encode()) if k.lower() == b"content-length" else (k, v)
                           for k, v in headers]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, send_with_script)
