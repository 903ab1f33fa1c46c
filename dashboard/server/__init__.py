"""What the dashboard's server does beside the pages (dashboard/app.py): the warm-up before it answers, the Results
downloads streamed from `runner export`, and tlparse's report served page by page."""


def base_path() -> str:
    """The server's `server.baseUrlPath` as a path prefix ("/lab", or "" at the root): Streamlit serves its own routes
    under it, and an app's routes are mounted as given, so the dashboard's own routes and links add it themselves."""
    from streamlit import config

    path = (config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{path}" if path else ""
