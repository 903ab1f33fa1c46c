"""Opening a database: one engine per URL per process, its schema brought to the newest migration first
(db.migrate). Above db.engine (connections, transactions) and db.migrate (the schema), so neither imports
the other's caller."""
from __future__ import annotations

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from db.engine import DatabaseError, describe, make_engine, resolve_url
from lab.errors import first_line

_engines: dict[str, Engine] = {}

# the newest migration (db/migrations/versions/): a database already there is opened without loading alembic
# (~0.1 s, before a restarted dashboard's first page). tests/unit/test_migrations.py checks it is alembic's head
HEAD = "0022_first_call_disturbed"


def schema_revision(engine: Engine) -> str | None:
    """The migration a database is at, read without alembic (None: none recorded, or several)."""
    try:
        with engine.connect() as conn:
            found = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except DBAPIError:  # no alembic_version table: a new database, or one made before migrations
        return None
    return found[0] if len(found) == 1 else None


def get_engine(url: str | None = None) -> Engine:
    """One engine per URL per process, with its schema at the newest migration."""
    url = resolve_url(url)
    if url not in _engines:
        engine = make_engine(url)
        try:
            if schema_revision(engine) != HEAD:
                from db import migrate  # alembic loads only when a database needs it
                migrate.upgrade(engine)
        except DatabaseError:
            raise
        except Exception as e:
            engine.dispose()
            raise DatabaseError(f"cannot open database {describe(url)}: {first_line(e)}") from None
        _engines[url] = engine
    return _engines[url]


def dispose_engine(url: str | None = None) -> None:
    """Close the pooled connections of a URL's engine and forget it (the next get_engine reopens)."""
    engine = _engines.pop(resolve_url(url), None)
    if engine is not None:
        engine.dispose()


def dispose_engines() -> None:
    """Close every engine's pooled connections (on SQLite the last one to close checkpoints the WAL into the file)."""
    for url in list(_engines):
        dispose_engine(url)
