"""Opening a database: one engine per URL per process, its schema brought to the newest migration first
(db.migrate). Above db.engine (connections, transactions) and db.migrate (the schema), so neither imports
the other's caller."""
from __future__ import annotations

from sqlalchemy import Engine

from db.engine import DatabaseError, describe, first_line, make_engine, resolve_url

_engines: dict[str, Engine] = {}


def get_engine(url: str | None = None) -> Engine:
    """One engine per URL per process, with its schema at the newest migration."""
    from db import migrate  # alembic loads only when a database is opened

    url = resolve_url(url)
    if url not in _engines:
        engine = make_engine(url)
        try:
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


