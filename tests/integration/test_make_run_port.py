"""`make run PORT=N` serves the app on port N (the default, 8501, is .streamlit/config.toml's)."""
import os
import signal
import subprocess

from tests.conftest import ROOT, wait_until
from tests.e2e.test_browser import healthy
from tests.e2e.test_server_handshake import free_port_in


def test_make_run_port_serves_the_app_on_that_port(tmp_path):
    port = free_port_in()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'lab.db'}", "COMPILE_LAB_EMBEDDED_WORKER": "0"}
    with open(tmp_path / "make.log", "wb") as log:  # -o: the project is installed already, make need not redo it
        proc = subprocess.Popen(["make", "-o", ".venv/.setup", "run", f"PORT={port}"], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: healthy(f"http://localhost:{port}") or proc.poll() is not None, 60, "the app on PORT")
        assert proc.poll() is None, (tmp_path / "make.log").read_text()[-3000:]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
