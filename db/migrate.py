"""Schema migrations (Alembic, scripts in db/migrations/): a lab's long-lived database survives upgrades.

`db.database.get_engine` brings every database it opens to the newest revision (head). Several workers
may start at once, so the upgrade runs in one transaction under a lock: PostgreSQL takes a
transaction-scoped advisory lock, SQLite takes its write lock (BEGIN IMMEDIATE). A second starter
waits, then finds the schema at head and does nothing. A database made by `create_all` before
migrations existed has the tables but no alembic_version: the baseline revision adopts it (creates
what is missing, keeps what exists and every row).

    python -m db.migrate current [--db URL]       # the revision a database is at, and head
    python -m db.migrate upgrade [--db URL]       # what every worker and CLI command does on start
    python -m db.migrate revision -m "add jobs.priority" [--autogenerate]   # a new script in versions/
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

from db.engine import WRITE, DatabaseError, describe, is_sqlite, make_engine, resolve_url

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
PG_LOCK_KEY = 0x636C6162  # "clab": the advisory lock every Compile Lab upgrade takes on PostgreSQL
log = logging.getLogger("compile_lab.migrate")


class SchemaError(DatabaseError):
    """The database's schema is at a revision this code does not know (it is newer than this checkout)."""


def alembic_config(script_location: Path | str | None = None, connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location or MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def head(script_location: Path | str | None = None) -> str:
    return ScriptDirectory.from_config(alembic_config(script_location)).get_current_head()


def current(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, script_location: Path | str | None = None) -> str:
    """Bring the database to head (safe when several processes do it at once). Returns the revision."""
    script = ScriptDirectory.from_config(alembic_config(script_location))
    target = script.get_current_head()
    if current(engine) == target:  # the common case: no lock, no write
        return target
    with _locked(engine) as conn:
        found = MigrationContext.configure(conn).get_current_revision()
        known = {s.revision for s in script.walk_revisions()}
        if found is not None and found not in known:
            raise SchemaError(f"database {describe(str(engine.url))} is at schema revision {found}, which this "
                              f"code does not know (its newest is {target}): update Compile Lab on this machine")
        if found != target:
            command.upgrade(alembic_config(script_location, conn), "head")
            log.info("schema of %s upgraded from %s to %s", describe(str(engine.url)), found or "nothing", target)
    return target


@contextmanager
def _locked(engine: Engine) -> Iterator[Connection]:
    """One transaction holding the lock that serialises upgrades; committed when the block ends."""
    if is_sqlite(engine):
        with engine.execution_options(**WRITE).begin() as conn:  # BEGIN IMMEDIATE: the file's write lock
            yield conn
    else:
        with engine.begin() as conn:  # DDL is transactional on PostgreSQL; the lock ends with the commit
            conn.execute(text("SET LOCAL lock_timeout = 0"))  # wait for another process's upgrade, however long
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})
            yield conn


def new_revision(message: str, autogenerate: bool, script_location: Path | str | None = None) -> None:
    """Write a revision script. --autogenerate compares the models with a scratch SQLite database at
    head, so the new script holds exactly what the models gained since the last revision."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/scratch.db")
        upgrade(engine, script_location)
        with engine.connect() as conn:
            command.revision(alembic_config(script_location, conn), message=message, autogenerate=autogenerate)
        engine.dispose()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m db.migrate", description="Compile Lab schema migrations")
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("current", "upgrade"):
        s = sub.add_parser(name)
        s.add_argument("--db", help="database URL (else DATABASE_URL, else sqlite:///data/compile_lab.db)")
    r = sub.add_parser("revision")
    r.add_argument("-m", "--message", required=True)
    r.add_argument("--autogenerate", action="store_true")
    args = p.parse_args(argv)
    try:
        if args.command == "revision":
            new_revision(args.message, args.autogenerate)
            return 0
        url = resolve_url(args.db)
        engine = make_engine(url)
        if args.command == "upgrade":
            upgrade(engine)
        print(f"{describe(url)}: at {current(engine) or 'no revision (empty)'}; head is {head()}")
        return 0
    except DatabaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
