"""Why a job has no tlparse report, in words its page shows (runner.child.capture.tlparse_report): not installed, failed, slow."""
import stat

from runner.child.capture import tlparse_report


def fake(tmp_path, body: str) -> str:
    exe = tmp_path / "tlparse"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_no_tlparse_anywhere_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr(tlparse_report, "executable", lambda: None)
    data, why = tlparse_report.report("V1124 {}\n")
    assert data is None and "not found on the worker" in why and "pip install tlparse" in why


def test_a_tlparse_that_fails_or_hangs_is_named_with_what_it_said(monkeypatch, tmp_path):
    monkeypatch.setenv(tlparse_report.ENV, fake(tmp_path, "echo 'error: bad trace line 3' >&2; exit 3"))
    data, why = tlparse_report.report("V1124 {}\n")
    assert data is None and why == "tlparse made no report (exit code 3: error: bad trace line 3)"
    monkeypatch.setenv(tlparse_report.ENV, fake(tmp_path, "exec sleep 30"))
    data, why = tlparse_report.report("V1124 {}\n", timeout_s=0.5)
    assert data is None and why == "tlparse took longer than 0.5 s and was stopped"
    monkeypatch.setenv(tlparse_report.ENV, str(tmp_path / "gone"))
    assert "could not be run" in tlparse_report.report("V1124 {}\n")[1]
    assert tlparse_report.report("")[1] == "the compile left no trace for tlparse to read"


def test_a_report_that_is_made_says_nothing(monkeypatch, tmp_path):
    # a stand-in writing what tlparse writes: the -o folder with an index
    monkeypatch.setenv(tlparse_report.ENV, fake(tmp_path, 'mkdir -p "$3" && echo "<h2>ok</h2>" > "$3/index.html"'))
    data, why = tlparse_report.report("V1124 {}\n")
    assert why is None and data[:2] == b"PK"
