"""Where the dashboard's database is and how it is opened: the URL (DATABASE_URL, else the SQLite file in data/),
the engine, how a URL is shown (no password), and the error a URL that cannot be opened raises."""
from __future__ import annotations

from db.database import get_engine as open_engine
from db.engine import DatabaseError, absolute_sqlite, describe, resolve_url

__all__ = ["DatabaseError", "absolute_sqlite", "default_url", "describe", "open_engine"]


def default_url() -> str:
    """DATABASE_URL, else sqlite:///data/compile_lab.db."""
    return resolve_url(None)
