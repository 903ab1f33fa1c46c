"""tlparse's report made by the worker after the job (runner.worker.reports): what it waits for, and the worker's
heartbeat kept fresh while tlparse runs (no job's lease renews it then)."""
import gzip
import os
import socket
import subprocess
import sys
import threading

from runner.child.capture.tlparse_report import PENDING
from runner.worker import reports


def _trace(folder):
    (folder / "artifacts").mkdir()
    (folder / "artifacts" / "trace.gz").write_bytes(gzip.compress(b"V1124 {}\n"))


def test_a_report_is_wanted_where_a_trace_was_kept_and_the_result_waits_for_it(tmp_path):
    assert not reports.wanted(tmp_path, {"detail": {"tlparse_note": PENDING}})  # no trace kept
    _trace(tmp_path)
    assert reports.wanted(tmp_path, {"detail": {"tlparse_note": PENDING}})
    assert reports.wanted(tmp_path, None)  # a failed job: its trace's report, and no result to note it in
    assert not reports.wanted(tmp_path, {"detail": {"tlparse_note": "its sweep kept no compile trace"}})


def test_the_worker_keeps_beating_while_tlparse_runs(tmp_path, monkeypatch):
    _trace(tmp_path)
    beats, heard = [], threading.Event()

    def beat():
        beats.append(1)
        if len(beats) >= 3:
            heard.set()

    monkeypatch.setattr(reports.tlparse_report, "executable", lambda: "tlparse")
    monkeypatch.setattr(reports.tlparse_report, "report", lambda trace: (heard.wait(30), (b"zip", None))[1])
    stored = []
    monkeypatch.setattr(reports, "store", lambda *a: stored.append(a))
    took = reports.make(None, 7, tmp_path, {"detail": {"tlparse_note": PENDING}}, beat=beat, every_s=0.01)
    assert heard.is_set() and took is not None  # tlparse returned only once the worker had beaten 3 times
    assert stored == [(None, 7, b"zip", None)]


def _owing(tmp_path, job_id, monkeypatch, has_result=True):
    """Job `job_id`'s folder with a trace, owed to the worker's home; the folder it came from."""
    monkeypatch.setattr(reports.tlparse_report, "executable", lambda: "tlparse")
    folder = tmp_path / "jobs" / f"{job_id}-1"
    folder.mkdir(parents=True)
    _trace(folder)
    assert reports.owe(tmp_path / "home", job_id, folder, {"detail": {"tlparse_note": PENDING}} if has_result else None)
    return folder


def test_a_report_is_owed_then_made_while_idle_oldest_first_one_at_a_time(tmp_path, monkeypatch):
    home = tmp_path / "home"
    for job_id in (12, 3):
        folder = _owing(tmp_path, job_id, monkeypatch, has_result=job_id == 12)
        assert not (folder / "artifacts" / "trace.gz").exists()  # moved out: the job folder may go
    made = []
    monkeypatch.setattr(reports, "make", lambda engine, job_id, folder, result, beat=None: made.append(
        (job_id, result, gzip.decompress((folder / "artifacts" / "trace.gz").read_bytes()), beat is not None)))
    assert reports.make_owed(None, home, "w1", limit=1) == 1
    assert made == [(3, None, b"V1124 {}\n", True)]  # job 3 failed: no result to note it in
    assert [f.name for f in reports.owed(home)] == ["12"]
    assert reports.make_owed(None, home) == 1 and made[1][:2] == (12, {"detail": {"tlparse_note": PENDING}})
    assert reports.owed(home) == [] and not list((home / reports.OWED).iterdir())  # nothing left behind
    assert reports.make_owed(None, home) == 0


def test_no_report_is_owed_where_none_is_wanted(tmp_path, monkeypatch):
    monkeypatch.setattr(reports.tlparse_report, "executable", lambda: "tlparse")
    folder = tmp_path / "job"
    folder.mkdir()
    assert not reports.owe(tmp_path / "home", 1, folder, {"detail": {"tlparse_note": PENDING}})  # no trace kept
    _trace(folder)
    assert not reports.owe(tmp_path / "home", 1, folder, {"detail": {"tlparse_note": "its sweep kept no trace"}})
    monkeypatch.setattr(reports.tlparse_report, "executable", lambda: None)  # no tlparse: its note said why already
    assert not reports.owe(tmp_path / "home", 1, folder, {"detail": {"tlparse_note": PENDING}})
    assert (folder / "artifacts" / "trace.gz").exists() and reports.owed(tmp_path / "home") == []


def test_a_report_another_worker_took_or_one_unreadable_is_not_made(tmp_path, monkeypatch, caplog):
    home = tmp_path / "home"
    _owing(tmp_path, 5, monkeypatch)
    _owing(tmp_path, 6, monkeypatch)
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        taken = f"5.making-{socket.gethostname()}-{other.pid}"  # a live worker of this home (another process) took it
        (home / reports.OWED / "5").rename(home / reports.OWED / taken)
        (home / reports.OWED / "6" / "owed.json").write_text("{not json")
        made = []
        monkeypatch.setattr(reports, "make", lambda *a, **k: made.append(a))
        assert reports.make_owed(None, home) == 1  # job 6's, taken and dropped
        assert made == [] and "could not be read" in caplog.text
        assert (home / reports.OWED / taken).exists()  # left to the worker that took it
    finally:
        other.communicate(b"", timeout=30)


def test_a_report_whose_maker_was_killed_is_made_by_the_next_worker(tmp_path, monkeypatch):
    """A worker killed while making a report leaves its folder renamed for it: a worker of this home on this host
    takes it again once that process is gone; one begun on another host (a home on a shared disk) is left alone."""
    home = tmp_path / "home"
    for job_id in (5, 6, 7):
        _owing(tmp_path, job_id, monkeypatch)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    here = socket.gethostname()
    (home / reports.OWED / "5").rename(home / reports.OWED / f"5.making-{here}-{gone.pid}")
    (home / reports.OWED / "6").rename(home / reports.OWED / f"6.making-other-host-{gone.pid}")
    # a container's worker killed as pid 1 and restarted as pid 1 (one hostname): its own pid's folder is a dead one's
    (home / reports.OWED / "7").rename(home / reports.OWED / f"7.making-{here}-{os.getpid()}")
    made = []
    monkeypatch.setattr(reports, "make", lambda engine, job_id, folder, result, beat=None: made.append(
        (job_id, (folder / "artifacts" / "trace.gz").exists())))
    assert [f.name.split(".")[0] for f in reports.owed(home)] == ["5", "7"]
    assert reports.make_owed(None, home) == 2 and made == [(5, True), (7, True)]  # each once
    assert sorted(f.name for f in (home / reports.OWED).iterdir()) == [f"6.making-other-host-{gone.pid}"]
