"""A lab's own models folder, given as `make run MODELS=dir` gives it (COMPILE_LAB_MODELS_DIR, no --models-dir): the
worker offers its files, and a file added or edited while the worker runs is offered without a restart; a file that
does not parse mid-edit is left out and named with its line, the folder's other files still offered."""
import os
import signal
import subprocess
import sys

from db import queue
from db.database import get_engine
from tests.conftest import ROOT, wait_until

MODEL = '''DESCRIPTION = "{text}"
PARAMS = {{"width": 8}}


def build(width):
    import torch

    return torch.nn.Linear(width, width)


def example_inputs(batch_size, width):
    import torch

    return (torch.randn(batch_size, width),)
'''


def test_a_model_file_added_or_edited_is_offered_without_a_restart(db_url, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "mine.py").write_text(MODEL.format(text="mine, first"))
    engine = get_engine(db_url)
    log = open(tmp_path / "worker.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "runner", "work", "--db", db_url, "--home", str(tmp_path / "home"),
                             "--no-calibrate", "--spawn", "fresh"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "COMPILE_LAB_MODELS_DIR": str(models)})
    try:
        def offered():
            return queue.published_catalog(engine)

        wait_until(lambda: "mine" in offered(), 120, "the worker to offer the folder's model")
        (models / "added.py").write_text(MODEL.format(text="added later"))
        wait_until(lambda: "added" in offered(), 30, "the added model file to be offered")
        (models / "mine.py").write_text(MODEL.format(text="mine, edited"))
        wait_until(lambda: offered()["mine"].description == "mine, edited", 30, "the edited description")
        (models / "added.py").write_text("DESCRIPTION = 'half-way through an edit\n")  # not valid Python
        (models / "third.py").write_text(MODEL.format(text="third"))
        wait_until(lambda: "third" in offered(), 30, "the folder's other files to stay offered")
        assert "added" not in offered() and "mine" in offered() and proc.poll() is None
        (worker,) = queue.live_workers(engine)  # the broken file named with its line, for the Submit page
        assert worker.capabilities["model_file_problems"] == [
            f"{models / 'added.py'}: not valid Python at line 1 (`python -m py_compile` says why)"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
