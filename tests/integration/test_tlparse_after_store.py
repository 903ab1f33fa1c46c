"""tlparse's report is made off the job's time (runner.worker.reports): the real worker and child on the CPU, a real
compile of the tiny fixture model; tlparse a stand-in that writes, into its report, what the database held when it
ran. The jobs' measured records are stored before the reports are made (a report waits until the queue is empty), the
reports still appear as the jobs' artifacts, and no job's timeline has tlparse in it."""
import sqlite3
import stat
import sys
import zipfile

from runner.child.capture.tlparse_report import ENV, PENDING
from tests.conftest import records, run_cli, submit, work

FAKE = '''
import sqlite3, sys
from pathlib import Path
trace, out = sys.argv[1], Path(sys.argv[sys.argv.index("-o") + 1])
con = sqlite3.connect({db!r})
stored = con.execute("SELECT count(*) FROM results").fetchone()[0]
status = con.execute("SELECT status FROM jobs").fetchone()[0]
out.mkdir(parents=True, exist_ok=True)
lines = sum(1 for _ in open(trace))
(out / "index.html").write_text(f"results stored: {{stored}}; job {{status}}; trace lines: {{lines}}")
'''


def test_the_records_are_stored_before_the_reports_and_the_reports_appear(db_url, tmp_path):
    """Two first runs queued: the first job's report waits until the queue is empty, so the second job's
    measurement is not held up by it (each report made after both records are stored)."""
    jobs = submit(db_url, "--model", "tiny", "--batch", "4,8", "--device", "cpu", "--iters", "2")
    exe = tmp_path / "tlparse"
    exe.write_text(f"#!{sys.executable}\n" + FAKE.format(db=db_url.removeprefix("sqlite:///")))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    work(db_url, tmp_path / "home", "--drain", env={ENV: str(exe)})
    assert len(jobs) == 2 and not list((tmp_path / "home" / "reports-owed").iterdir())  # all made, none left
    for job in jobs:
        rec = records(db_url)[job]
        assert rec["status"] == "succeeded", rec["error"]
        assert rec["tlparse_note"] is None  # the report is there: nothing to explain
        assert {"trace", "tlparse"} <= {a["name"] for a in rec["artifacts"]}
        got = run_cli("artifact", str(job), "tlparse", "-o", str(tmp_path / f"r{job}.zip"), "--db", db_url)
        assert got.returncode == 0, got.stderr
        with zipfile.ZipFile(tmp_path / f"r{job}.zip") as z:
            said = z.read("index.html").decode()
        assert said.startswith("results stored: 2; job succeeded; trace lines: ")  # made once both were stored
        assert int(said.rsplit(" ", 1)[1]) > 0  # from the job's own trace
        assert not [e for e in rec["timeline"] if "tlparse" in e["phase"]]


def test_a_report_tlparse_cannot_make_says_why_in_the_stored_result(db_url, tmp_path):
    (job,) = submit(db_url, "--model", "tiny", "--batch", "4", "--device", "cpu", "--iters", "2")
    exe = tmp_path / "tlparse"
    exe.write_text("#!/bin/sh\necho 'error: cannot read line 1' >&2\nexit 3\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    work(db_url, tmp_path / "home", "--drain", env={ENV: str(exe)})
    rec = records(db_url)[job]
    assert rec["status"] == "succeeded", rec["error"]
    assert "tlparse" not in {a["name"] for a in rec["artifacts"]}
    assert rec["tlparse_note"] != PENDING and "cannot read line 1" in rec["tlparse_note"]
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as con:  # the timeline stored before it is kept
        assert con.execute("SELECT count(*) FROM results").fetchone()[0] == 1
    assert rec["timeline"]
