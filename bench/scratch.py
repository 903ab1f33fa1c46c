"""A fresh PostgreSQL database for a test or a bench run, dropped afterwards: the rows it stores stay out of the
database the server's URL names, and a run never finds another's."""
from __future__ import annotations

import contextlib
import uuid


@contextlib.contextmanager
def scratch_database(base: str, prefix: str = "lab_t"):
    """Yields the URL of a new database on the server `base` names; drops it (WITH FORCE: a worker a test killed
    may still hold a connection) when the block ends."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from db.database import dispose_engine
    from db.engine import resolve_url

    base = resolve_url(base)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        dispose_engine(url)
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
