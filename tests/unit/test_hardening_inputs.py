"""What a typo, a careless admin or a newer worker can feed the lab, through the real CLI in fresh
interpreters, lab.spec and the dashboard's AppTest: refused with one line naming the field, exit code
2, no traceback, nothing stored, and no password on any screen."""
import logging

import pytest
from streamlit.testing.v1 import AppTest

from db import queue
from db.database import get_engine
from lab.checks import SpecError, integer
from lab.sweep import SweepRequest
from runner import zoo
from tests.conftest import FIXTURE_MODELS, ROOT, run_cli

BAD_URL = "postgresql://lab:S3cret@db.example:notaport/lab"


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_an_unparseable_urls_password_is_hidden_on_stderr_and_in_the_sidebar(monkeypatch):
    done = run_cli("status", "--db", BAD_URL)
    assert done.returncode == 2 and "S3cret" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "lab:***@db.example:notaport" in done.stderr

    monkeypatch.setenv("DATABASE_URL", BAD_URL)
    monkeypatch.setenv("COMPILE_LAB_EMBEDDED_WORKER", "0")
    at = AppTest.from_file(str(ROOT / "dashboard" / "main.py"), default_timeout=60).run()
    shown = [e.value for kind in ("error", "code", "caption", "markdown", "exception") for e in getattr(at, kind)]
    shown += [e.value for kind in ("error", "code", "caption", "markdown") for e in getattr(at.sidebar, kind)]
    assert any("cannot parse" in t for t in shown) and not any("S3cret" in str(t) for t in shown)


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_a_worker_row_with_an_unknown_field_is_harmless_and_logged_once(db_url, engine, caplog, monkeypatch):
    models = [{**info.to_dict(), "licence": "MIT", "params": [{**p.__dict__, "unit": "px"} for p in info.params]}
              for info in zoo.model_infos(zoo.catalog([FIXTURE_MODELS])).values()]
    queue.register_worker(engine, "newer:1:any:x", "newer", 1, None,
                          {"devices": ["cpu"], "device_name": None, "torch_version": "9.9", "models": models})
    with caplog.at_level(logging.WARNING, logger="compile_lab.spec"):
        assert "tiny" in queue.published_catalog(engine) and "tiny" in queue.published_catalog(engine)
    assert sorted(r.getMessage().split(" (")[0] for r in caplog.records) == [  # once each, not per model or read
        "ignoring a field of ModelInfo unknown here: licence", "ignoring a field of ParamInfo unknown here: unit"]
    done = run_cli("submit", "--db", db_url, "--model", "tiny", "--batch", "2", "--device", "cpu")
    assert done.returncode == 0, done.stderr

    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("COMPILE_LAB_EMBEDDED_WORKER", "0")
    at = AppTest.from_file(str(ROOT / "dashboard" / "main.py"), default_timeout=60).run()
    assert not at.exception and "tiny" in at.selectbox[0].options


BAD_SUBMITS = [
    (["--name", "a\x01b"], "--name: contains the control character U+0001"),
    (["--name", "sweep\udcff"], "--name: contains a byte that is not UTF-8"),  # invalid UTF-8 in argv
    (["--name", "   "], "--name: is blank"),
    (["--name", "x" * 201], "--name: is 201 characters long; at most 200"),
    (["--batch", "１２"], "--batch: expected an integer, got '１２'"),
    (["--batch", "1_0"], "--batch: expected an integer"),
    (["--iters", "²"], "--iters: expected an integer"),
    (["--arg", "width=²"], "--arg width: expected an integer"),
]


@pytest.mark.parametrize("extra,message", BAD_SUBMITS, ids=[m.split(":")[0] + str(i) for i, (_, m) in
                                                             enumerate(BAD_SUBMITS)])
@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_bad_submissions_are_refused_with_one_line_and_nothing_stored(db_url, extra, message):
    args = ["--model", "tiny", "--batch", "2", "--device", "cpu", *extra]
    done = run_cli("submit", "--db", db_url, "--models-dir", str(FIXTURE_MODELS), *args)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {message}") and done.stderr.count("\n") == 1, done.stderr
    assert queue.status_counts(get_engine(db_url)) == {}


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_a_nul_in_a_sweep_name_is_refused_before_any_database(any_db_url):
    with pytest.raises(SpecError, match="name: contains the control character U\\+0000"):
        SweepRequest.from_dict({"model": "tiny", "batch_sizes": [2], "name": "a\0b"})
    done = run_cli("submit", "--db", any_db_url, "--models-dir", str(FIXTURE_MODELS), "--model", "tiny",
                   "--batch", "2", "--device", "cpu", "--name", "a\tb\u2028c")
    assert done.returncode == 2 and "control character U+0009" in done.stderr and "Traceback" not in done.stderr


def test_integers_are_ascii_digits_only():
    assert integer(" 12 ", "x") == 12 and integer("-3", "x") == -3
    for text in ("１２", "٣", "1_000", "²", "12\n3"):
        with pytest.raises(SpecError):
            integer(text, "x")


@pytest.mark.parametrize("argv,message", [
    (["cancel", "99999999999999999999999"], "is not a job or sweep id"),
    (["export", "--format", "json", "-o", "/proc/compile-lab/x"], "error: No such file or directory: /proc/compile-lab/x"),
    (["work", "--home", "/proc/compile-lab", "--once"], "error: No such file or directory: /proc/compile-lab"),
    (["work", "--gpu", "1;id", "--once"], "error: --gpu: '1;id' is not a GPU index"),
    (["work", "--gpu", "１", "--once"], "error: --gpu: '１' is not a GPU index"),
    (["calibrate", "--gpu", "0,1;x"], "error: --gpu: '0,1;x' is not a GPU index"),
], ids=["cancel-huge-id", "export-missing-folder", "work-unwritable-home", "gpu-shell", "gpu-fullwidth",
        "calibrate-gpu"])
@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_cli_faults_exit_2_without_a_traceback(db_url, argv, message):
    done = run_cli(*argv[:1], "--db", db_url, *argv[1:])
    assert done.returncode == 2 and "Traceback" not in done.stderr and message in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(("error:", "python -m runner"))


@pytest.mark.slow  # waits out a connect timeout
def test_a_postgresql_server_that_never_answers_fails_in_bounded_time(monkeypatch):
    """It accepts the connection and says nothing: the engine gives up after CONNECT_TIMEOUT_S with the reason,
    so a page, a worker or the dashboard's start does not hang on it."""
    import socket
    import threading
    import time

    from sqlalchemy.exc import OperationalError

    from db import engine as db_engine

    monkeypatch.setattr(db_engine, "CONNECT_TIMEOUT_S", 1)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        held = []
        threading.Thread(target=lambda: held.append(silent.accept()), daemon=True).start()
        engine = db_engine.make_engine(f"postgresql+psycopg://lab:lab@127.0.0.1:{silent.getsockname()[1]}/lab")
        start = time.monotonic()
        with pytest.raises(OperationalError, match="timeout"):
            with engine.connect():
                pass
        assert time.monotonic() - start < 8
