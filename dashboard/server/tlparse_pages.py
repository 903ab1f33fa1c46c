"""tlparse's report of a job, served file by file at /tlparse/<job id>/<file>, each file sandboxed by its own response
header (no script, no origin, nothing loaded): a failure message in a report can hold any HTML.
docs/dashboard-internals.md says what the sandbox holds."""
from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from streamlit.web.server.starlette.starlette_websocket import is_host_allowed

from dashboard.server import base_path, plain_text

PREFIX = "/tlparse"
ARTIFACT = "tlparse"
HEADERS = {
    # `sandbox` alone: every restriction a frame's sandbox attribute can set, an opaque origin and no script first
    "Content-Security-Policy": "sandbox; default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",  # a .txt page stays text, whatever it holds
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
HTML = (".html", ".htm")


def url(job_id: int, name: str = "index.html") -> str:
    """Where the browser finds one file of a job's report (the app's own host and port, under its base path)."""
    return f"{base_path()}{PREFIX}/{job_id}/{quote(name)}"


def _text(status: int, message: str) -> Response:
    return plain_text(status, message, HEADERS)


def serve(request: Request) -> Response:
    """One file of the report, looked up by its exact name in the job's zip (nothing on disk is read)."""
    from dashboard.data import artifacts
    from dashboard.data.connection import DatabaseError, open_engine
    from dashboard.state import auth  # here, not above: dashboard/app.py imports this module before its warm-up
    from lab import unpack

    if not is_host_allowed(request.headers.get("host")):  # the WebSocket's rule: no DNS rebinding onto this route
        return _text(403, "This host name is not among the server's allowed hosts.")
    refused = auth.refusal(request)  # with sign-in on, a report is for signed-in people only, as the pages are
    if refused:
        return _text(401, refused)
    job_id, name = request.path_params["job_id"], request.path_params["name"] or "index.html"
    try:
        data = artifacts.data(open_engine(), job_id, ARTIFACT)
        body = artifacts.report_file(data, name, f"job {job_id}'s tlparse report")
    except artifacts.DamagedArtifact as e:
        return _text(422, str(e))
    except artifacts.ArtifactError:
        return _text(404, f"Job {job_id} has no tlparse report.")
    except KeyError:
        return _text(404, f"Job {job_id}'s tlparse report has no file {name!r}.")
    except unpack.UnpackError as e:  # a damaged or oversized report: refused, with the limit it passed
        return _text(422, str(e))
    except DatabaseError as e:
        return _text(503, f"Cannot open the database: {e}")
    kind = "text/html" if name.lower().endswith(HTML) else "text/plain"
    return Response(body, headers=HEADERS, media_type=f"{kind}; charset=utf-8")


def routes() -> list[Route]:
    """The report's route, under the server's base path (read when the app is built: its options are set by then)."""
    return [Route(base_path() + PREFIX + "/{job_id:int}/{name:path}", serve, methods=["GET"])]
