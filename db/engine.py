"""Engine factory and the one transaction helper.

URL: `--db URL`, else DATABASE_URL, else a SQLite file in `data/` of the working directory.
SQLite is the embedded default: WAL (readers never block the writer), a busy timeout (a writer waits
for the lock instead of failing), and BEGIN IMMEDIATE for writes (a write transaction takes the lock
up front, so two claimers can never both read the same queued job and then both update it).
PostgreSQL runs the same code; claims use FOR UPDATE SKIP LOCKED there. Opening a database brings
its schema to the newest migration (db.migrate).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from lab.errors import first_line

DEFAULT_SQLITE = "data/compile_lab.db"
BUSY_TIMEOUT_S = 30
CONNECT_TIMEOUT_S = 10  # PostgreSQL: seconds to connect, the handshake included
WRITE = {"compile_lab_write": True}  # execution option: this transaction writes (SQLite: BEGIN IMMEDIATE)


class DatabaseError(RuntimeError):
    """The database URL is unusable (bad scheme, missing driver, unreachable server)."""


class DatabaseGone(DatabaseError):
    """The SQLite file this process opened was deleted or replaced: its writes would go nowhere."""


def file_identity(engine: Engine) -> tuple[int, int] | None:
    """(device, inode) of a SQLite database file, to notice later that it was deleted or replaced;
    None for PostgreSQL and in-memory databases."""
    path = engine.url.database if is_sqlite(engine) else None
    return None if not path or path == ":memory:" else _stat_id(path)


def check_identity(engine: Engine, identity: tuple[int, int] | None) -> None:
    """Raise DatabaseGone if the file behind `engine` is no longer the one `file_identity` saw."""
    if identity is not None and _stat_id(engine.url.database) != identity:
        raise DatabaseGone(f"the database file {engine.url.database} was deleted or replaced while in use; "
                           "stopping rather than writing into a file nobody reads")


def _stat_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def resolve_url(url: str | None = None) -> str:
    url = url or os.environ.get("DATABASE_URL") or f"sqlite:///{DEFAULT_SQLITE}"
    if url.startswith("postgresql://"):  # the team engine, through psycopg 3
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def absolute_sqlite(url: str) -> str:
    """The URL with a relative SQLite path made absolute against this process's working directory, where this
    process's own engine opens it: for a process started elsewhere (the embedded worker and the downloads' export
    start in the project's root; `make run`'s default sqlite:///data/compile_lab.db once sent the worker to a
    database of its own under dashboard/). Other URLs, in-memory and `file:` ones, as they are."""
    parsed = make_url(url)
    path = parsed.database
    if parsed.get_backend_name() != "sqlite" or not path or path == ":memory:" or path.startswith("file:") \
            or os.path.isabs(path):
        return url
    return parsed.set(database=os.path.abspath(path)).render_as_string(hide_password=False)


def describe(url: str) -> str:
    """The URL as shown to people: no password, even when the URL does not parse (a typo in the port
    must not put the password on every visitor's sidebar or in a terminal's scrollback)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # ArgumentError, or ValueError from a port that is not a number
        return _USERINFO.sub(lambda m: m.group(1) + m.group(2) + (":***@" if m.group(3) else "@"), url)


# scheme://user[:password]@ : everything between the first ':' after the user and the last '@' before
# the path is the password (a password may itself hold '@' or ':')
_USERINFO = re.compile(r"^((?:[^:/?#]*://)?)([^:/?#@]*)(:[^/?#]*)?@", re.S)


def make_engine(url: str) -> Engine:
    """An engine for the URL with Compile Lab's connection settings, schema untouched (see get_engine)."""
    try:
        parsed = make_url(url)
    except Exception as e:  # sqlalchemy.exc.ArgumentError and friends
        raise DatabaseError(f"--db/DATABASE_URL: cannot parse {describe(url)!r} "
                            f"({type(e).__name__}: {first_line(e)})") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
                                   json_deserializer=lenient_json)
            _sqlite_setup(engine)
        elif parsed.get_backend_name() == "postgresql":
            # a server that accepts the connection and never answers fails after CONNECT_TIMEOUT_S, with the reason,
            # instead of hanging the page, the worker or the dashboard's start (a URL may set its own)
            timeout = {} if "connect_timeout" in parsed.query else {"connect_timeout": CONNECT_TIMEOUT_S}
            engine = create_engine(url, pool_pre_ping=True, connect_args=timeout)
            _postgresql_setup(engine)
    except (ImportError, OSError, RecursionError, ValueError) as e:  # a driver not installed, a folder we cannot make
        raise DatabaseError(f"cannot open database {describe(url)}: {type(e).__name__}: {first_line(e)}") from None
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise DatabaseError(f"--db/DATABASE_URL: unsupported database {parsed.get_backend_name()!r}; "
                            "use sqlite:///path or postgresql://user@host/db")
    return engine


class MalformedJSON(str):
    """Text in a JSON column that does not parse (only SQLite can hold it)."""


def lenient_json(text: str):
    """SQLite stores JSON as text that anyone can overwrite. A malformed value comes back as the raw
    text (a MalformedJSON) instead of failing every query that reads the row: the worker then fails
    that one job with "stored spec is invalid", and `status` and `export` still work. (PostgreSQL's
    JSON type refuses malformed values on insert.)"""
    try:
        return json.loads(text)
    except ValueError:
        return MalformedJSON(text)


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves, below
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        immediate = conn.get_execution_options().get("compile_lab_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _postgresql_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record):
        # Like SQLite's busy timeout: a write that waits on a row another session holds (a stuck client,
        # a human in psql) fails after BUSY_TIMEOUT_S with an OperationalError, which the worker retries,
        # instead of hanging forever. A SET, not the `options` connect argument, which would replace the
        # user's own (`?options=-csearch_path%3D...` in the URL, PGOPTIONS).
        with dbapi_conn.cursor() as cur:
            cur.execute(f"SET lock_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        dbapi_conn.commit()


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


@contextmanager
def atomic(engine: Engine) -> Iterator[Session]:
    """The one write transaction: commits on success, rolls back and re-raises on any error.

    Keep it short: never hold one open while a job runs."""
    with _write_turn(engine), Session(engine.execution_options(**WRITE), expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


@contextmanager
def _write_turn(engine: Engine) -> Iterator[None]:
    """SQLite: queue for the write lock in the kernel (flock on a file beside the database) instead of
    in SQLite's busy handler, which polls with sleeps growing to 100 ms. With eight workers claiming at
    once those sleeps, not the work, made the slow claims (bench/claims.py). A flock waiter is woken
    the moment the lock is free, and BEGIN IMMEDIATE then finds SQLite's lock free as well; writers
    that do not take the flock (the sqlite3 shell) still meet the busy timeout. (Polling the flock
    every millisecond instead was no better than the busy handler: the kernel's queue is what helps.)
    The wait is unbounded, but a holder is inside one short transaction whose own wait for SQLite is
    bounded by the busy timeout, and a holder that dies releases the flock with its file."""
    path = engine.url.database if is_sqlite(engine) else None
    if not path or path == ":memory:":
        yield
        return
    fd = os.open(f"{path}.writelock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock


@contextmanager
def reading(engine: Engine) -> Iterator[Session]:
    """A read-only session (on SQLite a deferred transaction, so it never takes the write lock)."""
    with Session(engine, expire_on_commit=False) as session:
        yield session
