"""What the dashboard's server does beside the pages (dashboard/app.py): the warm-up before it answers, the Results
downloads streamed from `runner export`, and tlparse's report served page by page."""


def base_path() -> str:
    """The server's `server.baseUrlPath` as a path prefix ("/lab", or "" at the root): Streamlit serves its own routes
    under it, and an app's routes are mounted as given, so the dashboard's own routes and links add it themselves."""
    from streamlit import config

    path = (config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{path}" if path else ""


def plain_text(status: int, message: str, headers: dict | None = None):
    """A short plain-text answer of one of the server's own routes (an error, a refusal), never cached, never
    sniffed into markup (it may quote a process's error line)."""
    from starlette.responses import Response

    return Response(message + "\n", status, media_type="text/plain; charset=utf-8",
                    headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", **(headers or {})})
