"""One model file with a syntax error in a lab's folder: the folder's other files stay offered, and the broken one is
named with its line by the worker's rescan (published for Submit), by `runner models` and on the Submit page."""

from db import queue
from runner import zoo
from runner.cli import main as cli
from runner.worker.model_folders import ModelFolders
from tests.dashboard.test_pages import lab, ok, page  # noqa: F401 (fixtures)
from tests.integration.test_models_folder import MODEL


def folder(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "good.py").write_text(MODEL.format(text="good"))
    (models / "broken.py").write_text("DESCRIPTION = 'x'\n\ndef build(:\n    pass\n")
    return models


def test_a_broken_file_leaves_the_others_offered_and_is_named_with_its_line(tmp_path):
    models = folder(tmp_path)
    entries, problems = zoo.read_folders([models])
    assert "good" in entries and "broken" not in entries and "simplenet" in entries
    assert problems == [f"{models / 'broken.py'}: not valid Python at line 3 (`python -m py_compile` says why)"]
    watched = ModelFolders([models], every_s=0)
    (models / "later.py").write_text(MODEL.format(text="later"))
    watched.seen = ()  # as if the folder had changed since it was last read
    assert {"good", "later"} <= set(watched.changed({})) and watched.problems == problems


def test_runner_models_lists_the_others_and_names_the_broken_file(tmp_path, capsys):
    models = folder(tmp_path)
    assert cli.main(["models", "--models-dir", str(models)]) == 2
    out, err = capsys.readouterr()
    assert "good" in out and "simplenet" in out
    assert err.strip() == f"error: not offered: {models / 'broken.py'}: not valid Python at line 3 " \
                          "(`python -m py_compile` says why)"


def test_submit_names_a_broken_file_a_live_worker_publishes(lab):  # noqa: F811
    infos = zoo.model_infos(zoo.catalog())
    problem = "/lab/models/broken.py: not valid Python at line 3 (`python -m py_compile` says why)"
    queue.register_worker(lab, "host:1:any:test", "host", 1, None, {
        "devices": ["cpu"], "torch_version": "2.13.0", "models": [i.to_dict() for i in infos.values()],
        "model_file_problems": [problem]})
    at = ok(page("submit"))
    shown = [w.value.replace("\\", "") for w in at.warning]
    assert f"Not offered: {problem}" in shown, shown
