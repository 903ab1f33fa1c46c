"""What the CLI says when a command names something that is not there, in-process (runner.cli.main.main) on a real
SQLite file: one line on stderr naming it and exit code 2, not an empty table and 0."""
from db import queue, team
from db.database import get_engine
from lab.sweep import SweepRequest
from runner import zoo
from runner.cli.main import main


def sweep(url, tags=()):
    request = SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", tags=list(tags), process_repeats=1)
    return queue.submit(get_engine(url), request, zoo.model_infos(zoo.catalog()), created_by="ada@lab")[0]


def test_report_and_export_refuse_a_tag_no_sweep_carries(db_url, capsys):
    sweep(db_url, tags=["nightly"])
    for command in ("report", "export"):
        assert main([command, "--db", db_url, "--format", "json", "--tag", "nosuchtag"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == "error: --tag: no sweep carries the tag nosuchtag\n"
    assert main(["report", "--db", db_url, "--tag", "Nightly", "--format", "json"]) == 0  # a known tag: its rows
    capsys.readouterr()


def test_delete_refuses_an_id_that_is_no_sweep(db_url, capsys):
    kept = sweep(db_url)
    assert main(["delete", "--db", db_url, str(kept + 1), "--yes"]) == 2
    assert capsys.readouterr().err == f"error: delete: no such sweep: {kept + 1}\n"
    assert kept in team.meta(get_engine(db_url))
