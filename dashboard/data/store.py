"""Every finished job of one database as a DataFrame, kept current by appending what finished since, and kept
on disk (dashboard.data.snapshot) so a restarted server starts from it."""
from __future__ import annotations

import logging
import threading

import pandas as pd

from dashboard.data import snapshot
from dashboard.data.frame import add_cache_state, complete, load_frame
from db import views


class ResultStore:
    """Every finished job of one database as a DataFrame, kept current by appending what finished since.

    A finished job never changes again (cancel, finish and requeue touch only queued or running jobs;
    re-submit makes a new job), so when the data version moves, only jobs finished since the newest one
    held (less a margin for clocks and commit order) are fetched. If the count then disagrees with the
    snapshot's count, everything is reloaded. One store per database and server process; callers must
    not modify the frame they get (filters make new frames).

    `snapshot_path` (dashboard.data.snapshot): the frame is also kept on disk, so a restarted server starts
    from it and appends, instead of reading every row again. It is rewritten in the background after a
    full load and whenever SAVE_EVERY rows (or a twentieth of the frame) were appended since, once the
    page that asked has been drawn (save_if_due)."""

    MARGIN = pd.Timedelta(hours=1)
    SAVE_EVERY = 1000

    def __init__(self, engine, snapshot_path=None):
        self.engine = engine
        self.snapshot_path = snapshot_path
        self.frame_: pd.DataFrame | None = None
        self.version: tuple | None = None
        self.full_loads = 0  # for tests and the benchmark
        self.restored = False  # started from the snapshot on disk
        self._saved_rows = 0
        self._due: tuple | None = None  # (frame, version, snapshot key) to write to the snapshot
        self._lock = threading.Lock()
        self.saving: threading.Thread | None = None
        self.pages_asked = False  # a page called frame() (warm() then leaves the snapshot to the page)
        self._extra: dict[tuple, pd.DataFrame] = {}  # complete(): fields -> the rows read so far (job_id + fields)
        self._extra_lock = threading.Lock()
        self._generation = 0  # moves when _forget drops rows: a complete() read begun before then is not kept
        self._answers: dict | None = None  # jobs_digest -> an answer (snapshot.load_answers), read when first asked
        self._answers_lock = threading.Lock()
        self._answers_due = False  # an answer was computed since the file was read or written
        self.answers_computed = 0  # for tests and the benchmark
        self._warming = False  # warm() was claimed (claim_warming)

    def frame(self, page: bool = True) -> pd.DataFrame:
        if page:
            self.pages_asked = True
        version = views.data_version(self.engine)
        with self._lock:
            if self.frame_ is None and self.snapshot_path is not None:
                self._restore()
            if version == self.version and self.frame_ is not None:
                return self.frame_
            old = self.frame_
            full = True
            # the snapshot's key is read before the rows: a migration in between makes it stale, not wrong
            key = snapshot.key(self.engine) if self.snapshot_path is not None else None
            if old is not None and not old.empty and old["finished_at"].notna().any():
                since = (old["finished_at"].max() - self.MARGIN).to_pydatetime()
                new, new_version = load_frame(self.engine, finished_since=since)
                # a fetched row replaces the one held for its job id: the database is the truth (a file
                # restored from a backup may have re-run a job; SQLite may reuse the ids of deleted jobs)
                df = pd.concat([old[~old["job_id"].isin(new["job_id"])], new], ignore_index=True)
                full = len(df) != new_version[0]
                if full:
                    df, new_version = self._load_all()
                else:
                    self._forget(_finished_again(old, new))
            else:
                df, new_version = self._load_all()
            self.frame_, self.version = df, new_version
            if full or len(df) - self._saved_rows >= max(self.SAVE_EVERY, len(df) // 20):
                self._due = (df, new_version, key)
            return df

    def claim_warming(self) -> bool:
        """True once per store: for the one caller that runs warm() (the server's warm-up, else the first page)."""
        with self._answers_lock:
            claimed, self._warming = not self._warming, True
        return claimed

    def start_warming(self) -> None:
        """warm() in a background thread, unless it was claimed already."""
        if self.claim_warming():
            threading.Thread(target=self.warm, name="compile-lab-results-warmup", daemon=True).start()

    def warm(self) -> None:
        """Load in the background (the app starts this once per server process), so the first visit to
        Results does not wait for every row; a page that asks meanwhile waits on the lock, not twice.
        If one did, the snapshot is left to it (the app saves after a page has run): pickling here would
        hold the GIL while that page draws."""
        try:
            self.frame(page=False)
        except Exception as e:  # the page will load (and report) it itself
            logging.getLogger("compile_lab.dashboard").warning("warming the results table failed: %s", e)
        if not self.pages_asked:
            self.save_if_due()

    def _load_all(self) -> tuple[pd.DataFrame, tuple]:
        self.full_loads += 1
        self._forget(None)
        return load_frame(self.engine)

    def complete(self, df: pd.DataFrame, fields) -> pd.DataFrame:
        """`complete(df, engine, fields)`, remembering what it read: a finished job's numbers never
        change, so when one more job finishes, only that job is read again, not the 25k of its model."""
        fields = tuple(f for f in fields if f not in df.columns)
        if not fields:
            return df
        with self._extra_lock:
            held, generation = self._extra.get(fields), self._generation
        need = df if held is None else df[~df["job_id"].isin(held["job_id"])]
        if len(need):
            got = complete(need[["job_id"]], self.engine, fields)
            with self._extra_lock:
                keep = self._generation == generation  # else jobs were read again meanwhile: this read may predate them
                base = self._extra.get(fields) if keep else held
                held = got if base is None else pd.concat([base[~base["job_id"].isin(got["job_id"])], got],
                                                          ignore_index=True)
                if keep:
                    self._extra[fields] = held
        out = df.merge(held[held["job_id"].isin(df["job_id"])], on="job_id", how="left", validate="one_to_one")
        out.index = df.index
        return add_cache_state(out) if "cache_hits" in fields else out

    def answer(self, jobs: pd.DataFrame, compute, also: str = ""):
        """`compute()`, the answer for these finished jobs (`job_id`, `finished_at`), kept on disk beside the
        snapshot (snapshot.answers_path) under a digest of the jobs, of the code and of `also` (what else the answer
        reads: the database's spreads between processes, lab.answer.Spreads.digest): a restarted server reads it
        instead of computing it again. Without a snapshot path it is computed every time it is asked."""
        if self.snapshot_path is None:
            return compute()
        digest = snapshot.jobs_digest(jobs) + also
        with self._answers_lock:
            if self._answers is None:
                self._answers = snapshot.load_answers(snapshot.answers_path(self.snapshot_path))
            if digest in self._answers:
                self._answers[digest] = self._answers.pop(digest)  # the newest used are the ones kept
                return self._answers[digest]
        got = compute()
        with self._answers_lock:
            self._answers[digest] = got
            while len(self._answers) > snapshot.ANSWERS_KEPT:  # the oldest used go first, here as on disk
                self._answers.pop(next(iter(self._answers)))
            self._answers_due = True
            self.answers_computed += 1
        return got

    def _forget(self, job_ids) -> None:
        """Drop what complete() holds for these jobs (all jobs: None): they were read again."""
        if job_ids is not None and len(job_ids) == 0:
            return
        with self._extra_lock:
            self._generation += 1
            if job_ids is None:
                self._extra.clear()
            else:
                self._extra = {k: v[~v["job_id"].isin(job_ids)] for k, v in self._extra.items()}

    def _restore(self) -> None:
        got = snapshot.load(self.snapshot_path, self.engine)
        if got is not None:
            self.frame_, self.version = got
            self._saved_rows, self.restored = len(self.frame_), True

    def save_if_due(self) -> None:
        """Write the snapshot if frame() asked for it, in a background thread. Pickling a large frame
        holds the GIL, so the app calls this when a page has finished drawing, not while it
        draws (the frame is never modified, so the thread can read it meanwhile)."""
        with self._lock:
            due, self._due = self._due, None
            with self._answers_lock:
                answers = dict(self._answers) if self._answers_due else None
                self._answers_due = False
            if (due is None and answers is None) or self.snapshot_path is None:
                return
            self.saving = threading.Thread(target=self._save, args=(due, answers), daemon=True,
                                           name="compile-lab-results-snapshot")
            self.saving.start()

    def _save(self, due: tuple | None, answers: dict | None) -> None:
        try:
            if answers is not None:
                snapshot.save_answers(snapshot.answers_path(self.snapshot_path), answers)
            if due is not None:
                df, version, key = due
                snapshot.save(self.snapshot_path, key, df, version)
                self._saved_rows = len(df)
        except Exception as e:  # a read-only folder, a full disk: the store works without it
            logging.getLogger("compile_lab.dashboard").warning("saving the results snapshot failed: %s", e)


def _finished_again(old: pd.DataFrame, new: pd.DataFrame) -> pd.Series:
    """Job ids of `new` that `old` held with another finish time: run again (e.g. a database restored from a
    backup). The append window re-reads an hour of unchanged jobs; those keep what complete() read."""
    held = old.set_index("job_id")["finished_at"]
    again = new[new["job_id"].isin(held.index)]
    same = again["finished_at"].to_numpy() == held.loc[again["job_id"]].to_numpy()
    return again.loc[~same, "job_id"]
