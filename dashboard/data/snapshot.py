"""The Results table on disk (a pickle beside the database, mode 0600), so a restarted dashboard appends what finished
since instead of reading every job; kept only while it matches the layout, schema and database. Where it lives and
why it holds: docs/dashboard-internals.md."""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
import tempfile
import time
from pathlib import Path

import pandas as pd
from sqlalchemy import Engine, select
from sqlalchemy.engine import make_url

from db import views
from db.database import schema_revision
from db.engine import reading
from db.models import Job

FORMAT = 2  # bump when results_frame's columns or types change in a way FRAME_FIELDS does not show
log = logging.getLogger("compile_lab.dashboard")


def path_for(url: str) -> Path | None:
    """Where the snapshot of this database's results lives (None: snapshots are off for it)."""
    setting = os.environ.get("COMPILE_LAB_RESULTS_CACHE", "")
    if setting == "0":
        return None
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            return None
        db = Path(parsed.database)
        return Path(setting) / f"{db.name}-{_digest(str(db.resolve()))}-results.pkl" if setting else \
            db.with_name(db.name + "-results.pkl")
    folder = Path(setting) if setting else Path("data") / "cache"
    return folder / f"results-{_digest(parsed.render_as_string(hide_password=True))}.pkl"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.cache
def _code_digest() -> str:
    """The code that shapes the frame, and the libraries that hold it: a release that changes how a row
    becomes a frame row (labels, types) must not append new-shaped rows to old-shaped ones."""
    import numpy

    from dashboard.data import frame
    from db import results

    h = hashlib.sha256(f"{FORMAT} pandas {pd.__version__} numpy {numpy.__version__}".encode())
    for module in (views, frame, results):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


def key(engine: Engine) -> dict:
    """What a snapshot must have been written under to be used: this code, this schema revision. Read
    it before the rows (dashboard.data.store.ResultStore): a migration in between then makes the snapshot
    stale, never wrong."""
    return {"format": FORMAT, "fields": views.FRAME_FIELDS, "code": _code_digest(), "revision": schema_revision(engine)}


def _anchors(frame: pd.DataFrame) -> list[tuple[int, object]]:
    """The oldest and newest job of the frame with their finish times (which never change)."""
    if frame.empty:
        return []
    ends = frame.loc[[frame["job_id"].idxmin(), frame["job_id"].idxmax()]]
    return [(int(j), None if pd.isna(t) else pd.Timestamp(t).to_pydatetime())
            for j, t in zip(ends["job_id"], ends["finished_at"])]


STALE_TMP_S = 600  # a save takes about a second; a temp file this old was left by a process that died


def save(path: Path, key: dict, frame: pd.DataFrame, version: tuple) -> None:
    """Write atomically (a reader sees the old file or the new one, never half of one). `key`: key(),
    read before the frame's rows were."""
    _write(path, {**key, "version": version, "anchors": _anchors(frame), "frame": frame})


def _remove_stale_temps(path: Path) -> None:
    """A process killed while saving (Ctrl-C, OOM) leaves its temp file: remove the old ones."""
    for tmp in path.parent.glob(path.name + ".*.tmp"):
        try:
            if time.time() - tmp.stat().st_mtime > STALE_TMP_S:
                tmp.unlink()
        except OSError:
            pass


def _write(path: Path, payload) -> None:
    """Pickle `payload` to `path` atomically (a reader sees the old file or the new one), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path: Path):
    """The unpickled file, if this user wrote it and nobody else can write it; None if absent or unreadable."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None
    with f:
        st = os.fstat(f.fileno())  # of the file opened, not of whatever the path names by now
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            log.warning("not loading %s: owned by another user or writable by others", path)
            return None
        try:
            return pickle.load(f)
        except Exception as e:  # truncated, another format, another pandas: read the database instead
            log.warning("ignoring %s: %s", path, e)
            return None


def load(path: Path, engine: Engine) -> tuple[pd.DataFrame, tuple] | None:
    """The snapshot's frame and the data version it was taken at, if it is this database's; else None."""
    payload = _read(path)
    try:
        frame, version, anchors = payload["frame"], tuple(payload["version"]), payload["anchors"]
    except (TypeError, KeyError) as e:
        if payload is not None:
            log.warning("ignoring the results snapshot %s: %s", path, e)
        return None
    if any(payload.get(k) != v for k, v in key(engine).items()) or not _anchors_hold(engine, anchors):
        return None
    return frame, version


# -- the answers of the models' jobs, beside the snapshot ----------------------------------------------------
# lab.answer's rows for one model's jobs in view read every record and every round's ratio,
# and a restarted server's first Results page waited for them before its first chart. They depend only on
# those finished jobs (which never change) and on the code that computes them, so they are kept on disk
# under a digest of both: the jobs' ids with their finish times (a re-run or a reused id changes the
# digest), and db/'s source. The newest ANSWERS_KEPT are kept.
ANSWERS_KEPT = 128


def answers_path(path: Path) -> Path:
    """Where the answers live, beside the results snapshot at `path`."""
    return path.with_name(path.stem + ".answers.pkl")


@functools.cache
def _answer_code_digest() -> str:
    """The code an answer comes from: every module of lab/ (answer, interval, noise, labels, ...) and of db/ (the
    columns it reads), and numpy, which computes it."""
    import numpy

    import lab

    h = hashlib.sha256(f"{FORMAT} numpy {numpy.__version__}".encode())
    for folder in (Path(lab.__file__).parent, Path(views.__file__).parent):
        for source in sorted(folder.glob("*.py")):
            h.update(source.name.encode() + source.read_bytes())
    return h.hexdigest()[:16]


def jobs_digest(jobs: pd.DataFrame) -> str:
    """Names a set of finished jobs (`job_id`, `finished_at`) and the code that answers for them."""
    jobs = jobs.sort_values("job_id")
    # in one unit whatever the frame holds (a frame read anew and one restored may differ): microseconds, as stored
    ends = pd.to_datetime(jobs["finished_at"]).astype("datetime64[us]").astype("int64").to_numpy()
    h = hashlib.sha256(_answer_code_digest().encode())
    h.update(jobs["job_id"].astype("int64").to_numpy().tobytes())
    h.update(ends.tobytes())
    return h.hexdigest()


def load_answers(path: Path) -> dict:
    """The answers kept at `path` (answers_path), by jobs_digest; {} if none can be used."""
    payload = _read(path)
    if not isinstance(payload, dict) or payload.get("code") != _answer_code_digest():
        return {}
    answers = payload.get("answers")
    return answers if isinstance(answers, dict) else {}


def save_answers(path: Path, answers: dict) -> None:
    _write(path, {"code": _answer_code_digest(), "answers": dict(list(answers.items())[-ANSWERS_KEPT:])})


def _anchors_hold(engine: Engine, anchors: list[tuple[int, object]]) -> bool:
    if not anchors:
        return True  # an empty snapshot: the store's count check decides
    ids = [j for j, _ in anchors]
    with reading(engine) as s:
        found = dict(s.execute(select(Job.id, Job.finished_at).where(Job.id.in_(ids))).all())
    return all(j in found and found[j] == t for j, t in anchors)  # naive UTC datetimes on both sides
