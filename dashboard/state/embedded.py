"""The embedded worker: when the app starts and no worker for its database is alive, start one (`runner work`, one per
database under a file lock; stopped with the server). COMPILE_LAB_EMBEDDED_WORKER=0 turns it off; how it is kept
to one: docs/dashboard-internals.md. No streamlit here (the sidebar shows `Status`)."""
from __future__ import annotations

import atexit
import fcntl
import hashlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from dashboard.data.connection import absolute_sqlite, describe
from dashboard.data.jobs import live_workers
from lab.noise import DASHBOARD_PID_ENV, DASHBOARD_PIDS_ENV
from lab.wording import count

ENV_SWITCH = "COMPILE_LAB_EMBEDDED_WORKER"
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the worker runs from the project's root
CHECK_EVERY_S = 5.0  # sessions share one manager; the check costs a query and a lock, so not every rerun
QUICK_EXIT_S = 60.0  # a worker that dies sooner than this counts towards giving up
MAX_QUICK_EXITS = 3


def enabled(environ=os.environ) -> bool:
    return environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def home_for(url: str) -> Path:
    """Where the embedded worker keeps job folders, caches and its log: next to a SQLite file, else data/."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        return Path(parsed.database).resolve().parent
    return Path("data").resolve()


@dataclass(frozen=True)
class Status:
    """What the sidebar says about workers for this database."""

    state: str  # disabled | ours (we started it, it heartbeats) | external | starting | failed
    detail: str
    pid: int | None = None
    log: Path | None = None


DB_ENV = "DATABASE_URL"
ENVIRON_WAIT_S = 5.0  # the longest a new worker's environment may take to be readable
KEY_FILE = ".cache-signing.key"  # the embedded worker's own key when the lab set none
KEY_FILE_ENV = "COMPILE_LAB_CACHE_KEY_FILE"  # the lab's key file (runner.worker.cache_key reads and checks it)
MARK_ENV = "COMPILE_LAB_EMBEDDED_FOR"  # set for the worker this manager starts only: how a pid file's pid is recognised


class EmbeddedWorker:
    """Starts and watches at most one local worker for one database URL (one object per server process)."""

    def __init__(self, url: str, engine: Engine, home: Path | None = None, command: list[str] | None = None):
        self.url = url = absolute_sqlite(url)  # the worker starts in the project's root, not the app's directory
        self.engine = engine
        self.home = Path(home) if home is not None else home_for(url)
        key = self.key = hashlib.sha1(url.encode()).hexdigest()[:12]
        self.lock_path = self.home / f".embedded-worker-{key}.lock"
        self.pid_path = self.home / f".embedded-worker-{key}.pid"
        self.apps_path = self.home / f".embedded-worker-{key}.apps"  # the dashboards that started or adopted it
        self.log_path = self.home / "worker-embedded.log"
        # the URL (which may hold a password) goes in the environment, not on the command line that `ps`
        # shows every user; the worker reads DATABASE_URL when --db is not given
        self.command = command or [sys.executable, "-m", "runner", "work", "--home", str(self.home),
                                   *self._key_args()]
        self.proc: subprocess.Popen | None = None
        self.quick_exits = 0
        self._mutex = threading.Lock()
        self._last: tuple[float, Status] | None = None
        self._atexit = False
        self._named = False  # this server named in apps_path (_adopted)

    def _key_args(self) -> list[str]:
        """The lab's signing key where one is set (the worker reads COMPILE_LAB_CACHE_KEY_FILE itself), else a private
        key of this machine's, kept beside the job folders: the portable cache then works out of the box."""
        if os.environ.get(KEY_FILE_ENV):
            return []
        return ["--cache-key-file", str(private_key_file(self.home / KEY_FILE))]

    def ensure(self, force: bool = False) -> Status:
        """Start a worker if none is alive or starting; say what runs. Cheap to call on every rerun."""
        if not enabled():
            return Status("disabled", f"embedded worker off ({ENV_SWITCH}=0); start one with `python -m runner work`")
        with self._mutex:
            # "starting" is checked again on every call: it lasts seconds, and the sidebar (a 5 s fragment)
            # would otherwise say "probing its device" beside "Workers alive 1" until the next check
            if not force and self._last and self._last[1].state != "starting" and \
                    time.monotonic() - self._last[0] < CHECK_EVERY_S:
                return self._last[1]
            status = self._ensure()
            self._last = (time.monotonic(), status)
            return status

    def _ensure(self) -> Status:
        self.home.mkdir(parents=True, exist_ok=True)
        exited = self._reap()
        with open(self.lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; covers other app processes too
            live = live_workers(self.engine)
            recorded = self._recorded_pid()
            here = socket.gethostname()
            if live:
                ours = [w for w in live if recorded is not None and w.pid == recorded and w.hostname == here]
                if ours:
                    self._adopted()
                    return Status("ours", f"embedded worker pid {recorded} is running", recorded, self.log_path)
                return Status("external", f"{count(len(live), 'worker')} alive; no embedded worker needed")
            if recorded is not None and self._is_our_worker(recorded):
                return Status("starting", f"worker pid {recorded} is starting (probing its device)", recorded,
                              self.log_path)
            if self.quick_exits >= MAX_QUICK_EXITS:
                return Status("failed", f"the embedded worker exited {self.quick_exits} times right after "
                                        f"starting ({exited or 'see the log'}); not restarting it", None,
                              self.log_path)
            pid = self._spawn()
            return Status("starting", f"started worker pid {pid} (probing its device)", pid, self.log_path)

    def _reap(self) -> str | None:
        """Collect our worker if it exited (no zombie), and count quick deaths."""
        if self.proc is None or self.proc.poll() is None:
            return None
        rc, lived = self.proc.returncode, time.monotonic() - self._started
        self.proc = None
        self.quick_exits = self.quick_exits + 1 if lived < QUICK_EXIT_S else 0
        return f"exit code {rc}"

    def _adopted(self) -> None:
        """This server uses a worker another (or an earlier) server started: its children are told this server's pid
        too (lab.noise.dashboard_pids), so a job it disturbs names it. Once per process."""
        if self._named:
            return
        try:
            with open(self.apps_path, "a") as f:
                f.write(f"{os.getpid()}\n")
            self._named = True
        except OSError:
            pass

    def _recorded_pid(self) -> int | None:
        try:
            return int(self.pid_path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _is_our_worker(self, pid: int) -> bool:
        """Alive, not a zombie, and a worker for this database (a pid may have been reused since)."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(") ", 1)[1][0] == "Z":
                    return False
            with open(f"/proc/{pid}/environ", "rb") as f:  # readable for our own processes only
                environ = f.read().split(b"\0")
        except (OSError, IndexError):
            return False
        # DATABASE_URL alone is not enough: every process started from a shell that exported it has it
        return {f"{DB_ENV}={self.url}".encode(), f"{MARK_ENV}={self.key}".encode()} <= set(environ)

    def _spawn(self) -> int:
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== {datetime.now():%Y-%m-%d %H:%M:%S} compile lab app (pid {os.getpid()}): starting "
                      f"the embedded worker for {describe(self.url)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.command, cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1", DB_ENV: self.url,
                                              MARK_ENV: self.key, DASHBOARD_PID_ENV: str(os.getpid()),
                                              DASHBOARD_PIDS_ENV: str(self.apps_path)})
        self.apps_path.write_text(f"{os.getpid()}\n")  # a new worker: the dashboards of an earlier one are not its
        self._named = True
        self._started = time.monotonic()
        # Popen returns once exec began; the kernel sets the new program's environment a moment later. Until then
        # /proc/PID/environ reads empty, and another app process taking the lock next would start a second worker.
        deadline = self._started + ENVIRON_WAIT_S
        while not self._is_our_worker(self.proc.pid) and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        self.pid_path.write_text(f"{self.proc.pid}\n")
        if not self._atexit:
            atexit.register(self.stop)
            _STARTED.append(self)
            self._atexit = True
        return self.proc.pid

    def stop(self) -> None:
        """SIGTERM the worker this process started (only that one): it hands a running job back and exits."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.send_signal(signal.SIGTERM)  # the worker alone: it stops its job and its own helpers
        except (ProcessLookupError, PermissionError):
            return
        try:
            if self._recorded_pid() == proc.pid:
                self.pid_path.unlink()
        except OSError:
            pass


_STARTED: list[EmbeddedWorker] = []  # the managers that started a worker in this process


def stop_started() -> None:
    """Stop every worker this process started: the server's shutdown calls it (dashboard/app.py's lifespan), since
    uvicorn ends a server stopped by SIGTERM or Ctrl-C with that signal again, and atexit never runs then."""
    for worker in _STARTED:
        worker.stop()


def private_key_file(path: Path) -> Path:
    """A key file only this user can read, made with a fresh random key if `path` does not exist yet: a lab of one
    machine gets the portable cache without setting anything up. Never overwritten: the bundles already stored under
    it keep loading. The worker checks it as any key file (runner.worker.cache_key.load)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # mode set at creation: never readable by others
    except FileExistsError:
        return path
    with os.fdopen(fd, "w") as f:
        f.write(f"# this machine's key for compile cache bundles, made by the embedded worker\n{secrets.token_hex(32)}\n")
    return path
