"""The Results page's CSV and JSON of the jobs in view, streamed at /export/<offer>/<csv|json> by `python -m runner
export` in a process of its own, which is paused while any page is drawn. Why a link and not st.download_button, and
how the export yields to pages: docs/dashboard-internals.md."""
from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from streamlit.web.server.starlette.starlette_websocket import is_host_allowed

from dashboard.server import base_path, plain_text
from lab.tabular import EXPORT_PARENT_ENV

PREFIX = "/export"
FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
PROJECT = Path(__file__).resolve().parents[2]  # the project's root: where `-m runner` finds the code
MAX_OFFERS = 64  # sessions whose link still works (the oldest used go first)
MAX_RUNNING = 2
CHUNK = 1 << 16
NICE = 19  # where SCHED_IDLE is refused: the export yields the CPU to the server's pages
QUIET_S = 1.0  # after a page's run its browser still draws what it was sent (beside the server, under `make run`)
MAX_HOLD_S, RUN_S, POLL_S = 5.0, 0.5, 0.05


@dataclass(frozen=True)
class Offer:
    db_url: str
    job_ids: object  # ints: the page's numpy column of the jobs in view, not copied
    names: dict  # format -> file name


_offers: OrderedDict[str, Offer] = OrderedDict()
_lock = threading.Lock()
_running = 0
_drawing, _drawn_at = 0, 0.0  # pages being drawn in this server now; when the last one ended (monotonic)


@contextlib.contextmanager
def drawing():
    """Around one page's run (dashboard/main.py): while any page is drawn, and QUIET_S after, downloads wait."""
    global _drawing, _drawn_at
    with _lock:
        _drawing += 1
    try:
        yield
    finally:
        with _lock:
            _drawing -= 1
            _drawn_at = time.monotonic()


class Serving:
    """ASGI middleware (dashboard/app.py): every HTTP request but a download's own, a new visit's page and scripts
    among them, holds downloads as a page's run does."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("path", "").startswith(base_path() + PREFIX):
            return await self.app(scope, receive, send)
        with drawing():
            return await self.app(scope, receive, send)


def pages_busy() -> bool:
    with _lock:
        return _drawing > 0 or time.monotonic() - _drawn_at < QUIET_S


async def _stopped_while_pages_drawn(export: "_Export") -> None:
    """Until cancelled: the export stopped while pages are drawn (MAX_HOLD_S in a row at most, then RUN_S running),
    running otherwise; running when this ends."""
    stopped_at, running_since = None, float("-inf")
    try:
        while export.proc.returncode is None:
            now, busy = time.monotonic(), pages_busy()
            if stopped_at is None and busy and now - running_since >= RUN_S:
                export.signal(signal.SIGSTOP)
                stopped_at = now
            elif stopped_at is not None and (not busy or now - stopped_at >= MAX_HOLD_S):
                export.signal(signal.SIGCONT)
                stopped_at, running_since = None, now
            await asyncio.sleep(POLL_S)
    except ProcessLookupError:  # it ended
        pass
    finally:
        if stopped_at is not None:
            with contextlib.suppress(ProcessLookupError):
                export.signal(signal.SIGCONT)


def offer(token: str, db_url: str, job_ids, names: dict) -> dict:
    """Register these jobs under a session's `token` (new_token()); returns each format's link."""
    with _lock:
        _offers[token] = Offer(db_url, job_ids, dict(names))
        _offers.move_to_end(token)
        while len(_offers) > MAX_OFFERS:
            _offers.popitem(last=False)
    return {fmt: f"{base_path()}{PREFIX}/{token}/{fmt}" for fmt in names}


def new_token() -> str:
    return secrets.token_urlsafe(18)


async def serve(request: Request) -> Response:
    global _running
    if not is_host_allowed(request.headers.get("host")):  # the WebSocket's rule: no DNS rebinding onto this route
        return plain_text(403, "This host name is not among the server's allowed hosts.")
    from dashboard.state import auth  # here, not above: dashboard/app.py imports this module before its warm-up

    refused = auth.refusal(request)  # the link is a signed-in session's; with sign-in on, so must its request be
    if refused:
        return plain_text(401, refused)
    fmt = request.path_params["fmt"]
    with _lock:
        got = _offers.get(request.path_params["token"])
    if got is None or fmt not in FORMATS or fmt not in got.names:
        return plain_text(404, "This download link has expired: open the Results page again and download from there.")
    with _lock:
        if _running >= MAX_RUNNING:
            return plain_text(429, f"{MAX_RUNNING} downloads are running on this server: try again when one has finished.")
        _running += 1
    export = _Export()
    try:
        await export.start(got, fmt)
        first = await export.proc.stdout.read(CHUNK)
        if not first and await export.proc.wait():  # it said why on stderr (the database down, say): one line
            return plain_text(503, export.error())
        response = _Streamed(export, first, media_type=FORMATS[fmt], headers={
            "Content-Disposition": f'attachment; filename="{got.names[fmt]}"', "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff"})
        export = None  # the response ends it
        return response
    finally:
        if export is not None:
            await export.end()


class _Export:
    """One `runner export` process: started, read, and ended exactly once however its request ends."""

    def __init__(self):
        self.proc = None
        self.pidfd = None  # the process itself, not its number: a reaped pid may be another process's soon
        self.errors = tempfile.TemporaryFile()  # a pipe left unread could fill and stall the export

    async def start(self, got: Offer, fmt: str) -> None:
        # here: dashboard/app.py imports this module before its warm-up
        from dashboard.data.connection import absolute_sqlite

        self.watch(await asyncio.create_subprocess_exec(
            sys.executable, "-m", "runner", "export", "--format", fmt, "--jobs", "-", "--yield-cpu", cwd=PROJECT,
            env={**os.environ, "DATABASE_URL": absolute_sqlite(got.db_url), EXPORT_PARENT_ENV: str(os.getpid())},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self.errors))
        _yield_cpu(self.proc.pid)
        self.proc.stdin.write(" ".join(map(str, got.job_ids)).encode())
        await self.proc.stdin.drain()
        self.proc.stdin.close()

    def watch(self, proc) -> None:
        """This process is the export: signals go to it through a pidfd where Linux has them (5.3+), else by pid
        while asyncio has not seen it end (asyncio may reap it a moment before it says so)."""
        self.proc = proc
        try:
            self.pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def signal(self, sig: int) -> None:
        if self.pidfd is not None:
            signal.pidfd_send_signal(self.pidfd, sig)
        elif self.proc.returncode is None:
            os.kill(self.proc.pid, sig)
        else:
            raise ProcessLookupError(self.proc.pid)

    def error(self) -> str:
        self.errors.seek(0)
        lines = self.errors.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "The export failed."

    async def end(self) -> None:
        """Stop the export if it still runs (the browser went away), reap it, and give its place back."""
        try:
            if self.proc is not None and self.proc.returncode is None:
                try:
                    self.proc.kill()
                except ProcessLookupError:
                    pass
                await self.proc.wait()  # killed: at once; its pipes are closed with it
        finally:
            if self.pidfd is not None:
                os.close(self.pidfd)
                self.pidfd = None
            self.errors.close()
            _release()


def _yield_cpu(pid: int) -> None:
    """The export runs only on CPU time nothing else wants (Linux's SCHED_IDLE: any page's work, even at the lowest
    nice, goes first; with nice 10 it still took a tenth of a contended core), else at the lowest nice."""
    try:
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):  # not Linux, or refused: the nice level instead
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, pid, NICE)
    except OSError:  # gone already, or not allowed here: it runs at the server's priority
        pass


class _Streamed(StreamingResponse):
    """The export's output as it comes; the export is ended when the response is, sent or cancelled (a response
    cancelled before its first byte never starts its body's generator, whose own cleanup would then never run)."""

    def __init__(self, export: _Export, first: bytes, **kw):
        super().__init__(self._body(export.proc, first), **kw)
        self.export = export

    @staticmethod
    async def _body(proc, first: bytes):
        chunk = first
        while chunk:
            yield chunk
            chunk = await proc.stdout.read(CHUNK)
        await proc.wait()

    async def __call__(self, scope, receive, send) -> None:
        pauses = asyncio.ensure_future(_stopped_while_pages_drawn(self.export))
        try:
            await super().__call__(scope, receive, send)
        finally:
            pauses.cancel()
            try:
                await asyncio.gather(pauses, return_exceptions=True)  # whatever it met, the export is ended
            finally:
                await self.export.end()


def _release() -> None:
    global _running
    with _lock:
        _running -= 1


def routes() -> list[Route]:
    """The downloads' route, under the server's base path (dashboard.server.base_path)."""
    return [Route(base_path() + PREFIX + "/{token}/{fmt}", serve, methods=["GET"])]
