"""The browser connection of a real `streamlit run dashboard/app.py`: a raw WebSocket handshake (as a
browser sends it) is accepted from the app's own page and refused for a foreign Host name (DNS
rebinding: evil.example resolved to 127.0.0.1) or a foreign Origin."""
import base64
import os
import random
import signal
import socket
import subprocess
import sys
import warnings
from contextlib import contextmanager

import pytest

from tests.conftest import ROOT, wait_until
from tests.e2e.test_browser import healthy


def free_port_in(lo: int = 8700, hi: int = 8800) -> int:
    """A port of lo..hi-1 free now, looked for from a random one: two test processes starting apps at once would
    otherwise both take the first free one (running_app tries again if it was taken meanwhile)."""
    first = random.randrange(lo, hi)
    for port in [*range(first, hi), *range(lo, first)]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    pytest.skip("no free port in 8700-8799")


@contextmanager
def running_app(tmp_path, db_url: str, env: dict | None = None, *args: str):
    """`streamlit run dashboard/app.py` on a free port (no embedded worker), with `env` and extra flags (`{port}`
    in one is the port); yields the port, stops the app."""
    env = {**os.environ, "DATABASE_URL": db_url, "COMPILE_LAB_EMBEDDED_WORKER": "0", **(env or {})}
    for _ in range(5):  # a port another test process took between our look and the app's bind: another one
        port = free_port_in()
        with open(tmp_path / "app.log", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "dashboard/app.py", "--server.port",
                                     str(port), *(a.replace("{port}", str(port)) for a in args)], cwd=ROOT, env=env,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        base = next((f"/{b.strip('/')}" for a, b in zip(args, args[1:]) if a == "--server.baseUrlPath"), "")
        wait_until(lambda p=proc, n=port, b=base: healthy(f"http://localhost:{n}{b}") or p.poll() is not None, 60,
                   "the app to serve")
        if proc.poll() is None or "is not available" not in (tmp_path / "app.log").read_text():
            break
    try:
        assert proc.poll() is None, (tmp_path / "app.log").read_text()[-3000:]
        yield port
    finally:
        stop(proc, tmp_path / "app.log")


def stop(proc: subprocess.Popen, log) -> None:
    """SIGTERM, as a service manager stops the app. Where it has not exited in 30 s (once in a CI run: uvicorn waits
    for open connections to close, and a browser page is still open), its threads' stacks go to its log (the app
    registers SIGUSR1 for that) and into a warning, and a second SIGTERM is uvicorn's forced exit (a second Ctrl-C)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
        return
    except subprocess.TimeoutExpired:
        if proc.poll() is not None:  # it ended just as the wait did
            return
    os.kill(proc.pid, signal.SIGUSR1)  # the app alone: SIGUSR1 ends a process that does not handle it
    wait_until(lambda: "most recent call first" in log.read_text(errors="replace"), 10, "the app's threads' stacks")
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(30)
    stacks = log.read_text(errors="replace")
    threads = stacks[stacks.find("Thread 0x"):][:6000]
    warnings.warn(f"the app took a second SIGTERM to exit; its threads then:\n{threads}", stacklevel=3)


@pytest.fixture
def server(tmp_path):
    with running_app(tmp_path, f"sqlite:///{tmp_path / 'lab.db'}") as port:
        yield port


def handshake(port: int, host: str, origin: str) -> str:
    """The status line the server answers a WebSocket upgrade with."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request.encode())
        return s.recv(4096).decode(errors="replace").split("\r\n", 1)[0]


def test_websocket_refuses_a_foreign_host_or_origin(server):
    port = server
    assert " 101 " in handshake(port, f"localhost:{port}", f"http://localhost:{port}")  # the app's own page
    assert " 101 " in handshake(port, f"127.0.0.1:{port}", f"http://127.0.0.1:{port}")
    for host, origin in [(f"evil.example:{port}", f"http://evil.example:{port}"),  # DNS rebinding
                         (f"localhost:{port}", "http://evil.example"),  # another site's page
                         (f"lab.localhost.evil.example:{port}", f"http://lab.localhost.evil.example:{port}")]:
        status = handshake(port, host, origin)
        assert " 101 " not in status, (host, origin, status)
