"""A database outage a test can start and end, for workers in other processes: on PostgreSQL a TCP proxy in front
of the real server that drops every connection and refuses new ones while down; on SQLite the file beside the
database that every writer locks (db.engine._write_turn) replaced by a folder, so every write fails with an
OSError while reads go on. The test itself reaches the database directly (its real URL), never through here."""
from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

from sqlalchemy.engine import make_url


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy what `a` sends to `b` until either end closes, then shut both (one direction of a TCP relay)."""
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

class Outage:
    def __init__(self, db_url: str):
        self.real = db_url
        url = make_url(db_url)
        self.sqlite = url.get_backend_name() == "sqlite"
        if self.sqlite:
            self.url, self.lock = db_url, Path(f"{url.database}.writelock")
        else:
            self.proxy = Proxy((url.host or "localhost", url.port or 5432))
            self.url = url.set(host="127.0.0.1", port=self.proxy.port).render_as_string(hide_password=False)

    def down(self) -> None:
        if self.sqlite:
            self.lock.unlink(missing_ok=True)
            self.lock.mkdir()
        else:
            self.proxy.close()

    def up(self) -> None:
        if self.sqlite:
            if self.lock.is_dir():  # up twice is up
                os.rmdir(self.lock)
        else:
            self.proxy.open()


class Proxy:
    """127.0.0.1:<port> forwarded to the server; close() cuts every connection and the port, open() listens again
    on the same port."""

    def __init__(self, target: tuple[str, int]):
        self.target, self.port, self.conns, self.listener = target, 0, [], None
        self.open()

    def open(self) -> None:
        if self.listener is not None:  # open twice is open
            return
        self.listener = socket.create_server(("127.0.0.1", self.port))  # SO_REUSEADDR: the same port again
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self.conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    def close(self) -> None:
        if self.listener is None:
            return
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in its thread
        self.listener.close()
        self.listener = None
        conns, self.conns = self.conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
                s.close()
