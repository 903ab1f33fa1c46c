"""tlparse's report is made off the job's time (runner.worker.reports): the real worker and child on the CPU, a real
compile of the tiny fixture model; tlparse a stand-in that writes, into its report, what the database held when it
ran. The job's measured record is stored before the report is made, the report still appears as the job's artifact,
and the job's timeline has no tlparse in it."""
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


def test_the_record_is_stored_before_its_report_and_the_report_appears(db_url, tmp_path):
    (job,) = submit(db_url, "--model", "tiny", "--batch", "4", "--device", "cpu", "--iters", "2")
    exe = tmp_path / "tlparse"
    exe.write_text(f"#!{sys.executable}\n" + FAKE.format(db=db_url.removeprefix("sqlite:///")))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    work(db_url, tmp_path / "home", "--drain", env={ENV: str(exe)})
    rec = records(db_url)[job]
    assert rec["status"] == "succeeded", rec["error"]
    assert rec["tlparse_note"] is None  # the report is there: nothing to explain
    assert {"trace", "tlparse"} <= {a["name"] for a in rec["artifacts"]}
    got = run_cli("artifact", str(job), "tlparse", "-o", str(tmp_path / "r.zip"), "--db", db_url)
    assert got.returncode == 0, got.stderr
    with zipfile.ZipFile(tmp_path / "r.zip") as z:
        said = z.read("index.html").decode()
    assert said.startswith("results stored: 1; job succeeded; trace lines: ")  # made after the job was stored
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
