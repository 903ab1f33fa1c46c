"""tlparse's report made by the worker after the job (runner.worker.reports): what it waits for, and the worker's
heartbeat kept fresh while tlparse runs (no job's lease renews it then)."""
import gzip
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
