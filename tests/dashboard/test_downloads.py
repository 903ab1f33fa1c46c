"""The Results page's CSV and JSON: links to the server's export route, which streams `runner export` for the jobs
in view from a process of its own (dashboard.server.downloads). The route is driven here as the server drives it (ASGI),
with a real export process on a real SQLite file; the file is what `runner export` writes for those jobs."""
import asyncio
import contextlib
import csv
import io
import json
import os
import platform
import sys
import time

import pytest
from starlette.requests import ClientDisconnect

from dashboard.server import downloads
from db.results import export_records, records_csv, records_json
from lab.tabular import EXPORT_PARENT_ENV
from tests.dashboard.test_pages import lab, ok, page  # noqa: F401  (lab: a fixture)


@pytest.fixture
def results(lab, fill_synthetic):  # noqa: F811 (the fixture)
    return fill_synthetic(120, seed=2)


def links(at) -> dict[str, str]:
    return {b.proto.label: b.proto.url for b in at.get("link_button")}


def get(path: str, host: str = "localhost:8501", leave_after: int | None = None) -> tuple[int, dict, bytes]:
    """One GET through the route as the server runs it: (status, headers, body); `leave_after`: the browser goes
    away once that many pieces of the body have come."""
    (route,) = downloads.routes()
    scope = {"type": "http", "method": "GET", "path": path, "headers": [(b"host", host.encode())],
             "query_string": b"", "asgi": {"version": "3.0", "spec_version": "2.4"}}
    _, child = route.matches(scope)
    scope.update(child)
    sent = []
    gone = asyncio.Event()

    async def receive():
        await gone.wait()  # the browser stays until the body is sent, or it leaves
        return {"type": "http.disconnect"}

    async def send(message):
        if gone.is_set():  # as uvicorn does (ASGI 2.4): a send to a browser that left raises OSError
            raise OSError("the browser went away")
        sent.append(message)
        if leave_after is not None and sum(m["type"] == "http.response.body" for m in sent) >= leave_after:
            gone.set()

    try:
        asyncio.run(route.handle(scope, receive, send))
    except ClientDisconnect:
        assert leave_after is not None  # only a browser that left ends the response so
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_the_downloads_stream_runner_exports_records_of_the_jobs_in_view(results):
    at = ok(page("results", mode="max-autotune"))
    got = links(at)
    assert set(got) == {"CSV", "JSON"} and not at.get("download_button")  # nothing built while the page runs
    assert got["CSV"].startswith(downloads.PREFIX + "/") and got["CSV"].endswith("/csv")
    assert links(ok(at.run())) == got  # the same links on every rerun: the jobs in view move under them
    shown = [r["job_id"] for r in export_records(results) if r["mode"] == "max-autotune"]

    status, headers, body = get(got["CSV"])
    assert status == 200 and headers["content-type"].startswith("text/csv")
    assert headers["content-disposition"] == 'attachment; filename="compile_lab_max-autotune.csv"'
    assert body.decode() == records_csv(export_records(results, job_ids=shown))
    assert [int(r["job_id"]) for r in csv.DictReader(io.StringIO(body.decode()))] == shown
    status, headers, body = get(got["JSON"])
    assert status == 200 and body.decode() == records_json(export_records(results, job_ids=shown)) + "\n"
    assert [r["job_id"] for r in json.loads(body)] == shown


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_link_that_is_gone_or_busy_says_so_and_starts_nothing(results, monkeypatch):
    got = links(ok(page("results")))
    assert get("/export/nobody/csv")[0] == 404
    assert get(got["CSV"].replace("/csv", "/xml"))[0] == 404
    assert get(got["CSV"], host="evil.example:8501")[0] == 403  # no DNS rebinding onto the route
    monkeypatch.setattr(downloads, "_running", downloads.MAX_RUNNING)
    status, _, body = get(got["CSV"])
    assert status == 429 and b"downloads are running" in body


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_an_export_that_fails_says_why_in_one_line(results, monkeypatch):
    got = links(ok(page("results")))
    token = got["CSV"].split("/")[2]
    broken = downloads._offers[token]
    monkeypatch.setitem(downloads._offers, token, downloads.Offer("sqlite:////dev/null/x.db", broken.job_ids,
                                                                  broken.names))
    status, _, body = get(got["CSV"])
    assert status == 503 and body.decode().startswith("error:") and body.count(b"\n") == 1
    assert downloads._running == 0


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_a_relative_sqlite_url_exports_from_the_apps_own_file(results, monkeypatch):
    """`make run`'s default URL, sqlite:///data/compile_lab.db, is relative to the app's directory; the export
    process starts in the project's root, and read a database of its own there (none: a failed download)."""
    from pathlib import Path

    got = links(ok(page("results")))
    token = got["CSV"].split("/")[2]
    offered = downloads._offers[token]
    where = Path(results.url.database)
    monkeypatch.chdir(where.parent)
    monkeypatch.setitem(downloads._offers, token, downloads.Offer(f"sqlite:///{where.name}", offered.job_ids,
                                                                  offered.names))
    assert downloads.PROJECT == Path(downloads.__file__).resolve().parents[2] and (downloads.PROJECT / "runner").is_dir()
    status, _, body = get(got["CSV"])
    shown = [int(r["job_id"]) for r in csv.DictReader(io.StringIO(body.decode()))]
    assert status == 200 and shown and shown == [r["job_id"] for r in export_records(results)]


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_a_browser_that_goes_away_stops_its_export(results, monkeypatch):
    import os
    import time

    started, policies = [], []
    start = downloads._Export.start

    async def recorded(self, got, fmt):
        await start(self, got, fmt)
        started.append(self.proc.pid)
        policies.append(os.sched_getscheduler(self.proc.pid))  # it runs on CPU time no page wants

    monkeypatch.setattr(downloads._Export, "start", recorded)
    monkeypatch.setattr(downloads, "CHUNK", 1024)  # many pieces, so the browser leaves in the middle
    got = links(ok(page("results")))
    status, _, body = get(got["JSON"], leave_after=2)
    assert status == 200 and 0 < len(body) < len(records_json(export_records(results)))
    (pid,) = started
    assert policies == [os.SCHED_IDLE]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and \
            open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    assert downloads._running == 0


READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}  # read(2)'s number, as /proc/PID/syscall gives it
BUSY = "while True:\n    pass"  # an export working through a batch it has not written yet


@pytest.mark.subprocess  # starts interpreters: the subprocess tier, not the in-process one
def test_while_a_page_is_drawn_the_export_is_stopped_and_goes_on_after(monkeypatch):
    """Other sessions come first: while any page runs (dashboard/main.py holds drawing()), a real export process is
    stopped, even mid-batch; once the page is drawn it runs again; a page drawn past MAX_HOLD_S cannot stop a
    download for good; and it is left running when the download ends. Judged by the process's state (T: stopped),
    which a loaded box does not blur."""
    monkeypatch.setattr(downloads, "QUIET_S", 0.1)
    # pages of other tests in this process (their script threads) are not this test's
    monkeypatch.setattr(downloads, "_drawing", 0)
    monkeypatch.setattr(downloads, "_drawn_at", 0.0)

    async def states(pid: int, seconds: float) -> set:
        seen, end = set(), time.monotonic() + seconds
        while time.monotonic() < end:
            seen.add(_state(pid))
            await asyncio.sleep(0.01)
        return seen

    async def until(pid: int, stopped: bool, timeout: float = 3.0) -> bool:
        end = time.monotonic() + timeout
        while (_state(pid) == "T") != stopped and time.monotonic() < end:
            await asyncio.sleep(0.01)
        return (_state(pid) == "T") == stopped

    async def scenario():
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", BUSY)
        export = downloads._Export()
        export.watch(proc)
        pauses = asyncio.ensure_future(downloads._stopped_while_pages_drawn(export))
        try:
            assert "T" not in await states(proc.pid, 0.3)  # alone: nothing stops it
            with downloads.drawing():
                assert await until(proc.pid, stopped=True)
                assert await states(proc.pid, 0.5) == {"T"}  # stopped, and stays so while the page is drawn
            assert await until(proc.pid, stopped=False)  # the page drawn: it goes on
            monkeypatch.setattr(downloads, "MAX_HOLD_S", 0.5)
            with downloads.drawing():  # a page that never ends stops it MAX_HOLD_S at a time, then lets it run
                assert await states(proc.pid, 2.0) > {"T"}
                pauses.cancel()  # the download ends while a page is drawn
                await asyncio.gather(pauses, return_exceptions=True)
                assert await until(proc.pid, stopped=False)  # left running, to be ended by its request
        finally:
            pauses.cancel()
            proc.kill()
            await proc.wait()
            export.errors.close()
            if export.pidfd is not None:
                os.close(export.pidfd)

    asyncio.run(scenario())
    assert downloads._drawing == 0


def test_every_request_but_a_downloads_own_holds_downloads_as_a_page_does(monkeypatch):
    """A new visit's page and scripts come over HTTP before its session runs: the Serving middleware (dashboard/app.py)
    counts them as a page being drawn; the download's own long request does not hold itself."""
    monkeypatch.setattr(downloads, "QUIET_S", 0.1)
    monkeypatch.setattr(downloads, "_drawing", 0)  # pages of other tests in this process are not this test's
    seen = {}

    async def inner(scope, receive, send):
        seen[scope["path"]] = downloads.pages_busy()

    async def scenario():
        served = downloads.Serving(inner)
        await asyncio.sleep(0.15)  # whatever ran before: past its quiet time
        await served({"type": "http", "path": downloads.PREFIX + "/token/csv"}, None, None)
        await served({"type": "http", "path": "/static/js/index.js"}, None, None)
        held_after = downloads.pages_busy()
        await asyncio.sleep(0.15)
        return held_after, downloads.pages_busy()

    assert asyncio.run(scenario()) == (True, False)  # QUIET_S after a request, then free
    assert seen == {downloads.PREFIX + "/token/csv": False, "/static/js/index.js": True}


@pytest.mark.subprocess  # starts interpreters: the subprocess tier, not the in-process one
@pytest.mark.skipif(platform.machine() not in READ_SYSCALL, reason="read(2)'s number is known for x86_64 and aarch64")
def test_a_stopped_export_dies_with_its_server(tmp_path):
    """A download's export may be held stopped; should the server die meanwhile, the export must not stay stopped
    for ever with its database snapshot open: the kernel kills it with its parent (PR_SET_PDEATHSIG)."""
    import signal
    import subprocess
    import time

    server = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys\n"
        "import os\n"
        "export = subprocess.Popen([sys.executable, '-m', 'runner', 'export', '--format', 'csv', '--jobs', '-',"
        " '--yield-cpu', '--db', sys.argv[1]], stdin=subprocess.PIPE,"
        f" env={{**os.environ, {EXPORT_PARENT_ENV!r}: str(os.getpid())}})\n"
        "print(export.pid, flush=True)\n"
        "export.wait()\n"), f"sqlite:///{tmp_path / 'lab.db'}"], stdout=subprocess.PIPE, text=True)
    export = int(server.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _reads_stdin(export):  # past its prctl: it reads the job ids next
            time.sleep(0.05)
        assert _reads_stdin(export)
        os.kill(export, signal.SIGSTOP)
        while time.monotonic() < deadline and _state(export) != "T":  # the signal is delivered, not at once
            time.sleep(0.01)
        assert _state(export) == "T"
        server.kill()
        server.wait()
        while time.monotonic() < deadline and _state(export) not in (None, "Z"):
            time.sleep(0.05)
        assert _state(export) in (None, "Z"), f"the export outlived its server, state {_state(export)}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(export, signal.SIGKILL)
        server.kill()
        server.wait()


def _state(pid: int) -> str | None:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None  # gone


def _reads_stdin(pid: int) -> bool:
    """Whether the process is in a read(2) of its standard input (/proc/PID/syscall: read's number, first argument 0)."""
    try:
        return open(f"/proc/{pid}/syscall").read().split()[:2] == [READ_SYSCALL[platform.machine()], "0x0"]
    except OSError:
        return False
