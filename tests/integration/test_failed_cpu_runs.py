"""A CPU job that fails still says which CPU it ran on, as a succeeded one's result does, so the answer counts it
under its configuration (the answer groups by device_name among its keys) instead of a row of its own. Real
workers and children on a real SQLite file (the report's grouping on PostgreSQL too: tests/unit/test_team_record.py)."""
from db import reports
from db.database import get_engine
from tests.conftest import records, submit, work

NAPPER = ["--model", "napper", "--batch", "2", "--device", "cpu", "--backend", "eager", "--iters", "2"]


def test_a_failed_cpu_run_is_counted_under_its_configuration(db_url, tmp_path):
    home, wake = tmp_path / "home", tmp_path / "wake"
    (failed,) = submit(db_url, *NAPPER, "--timeout", "3")  # naps past its timeout: no result
    work(db_url, home, "--once")
    wake.touch()
    (succeeded,) = submit(db_url, *NAPPER)
    work(db_url, home, "--drain", env={"COMPILE_LAB_TEST_WAKE": str(wake)})
    recs = records(db_url)
    assert recs[failed]["status"] == "timed_out" and recs[succeeded]["status"] == "succeeded"
    assert recs[failed]["device_name"] == recs[succeeded]["device_name"] not in (None, "")  # the CPU's model name
    (row,) = reports.report(get_engine(db_url))
    assert (row["runs"], row["failed_runs"], row["job_ids"]) == (1, 1, f"{failed} {succeeded}")
    assert "1 failed" in row["verdict"]
