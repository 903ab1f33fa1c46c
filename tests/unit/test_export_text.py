"""The files others open as data (lab.tabular): CSV cells a spreadsheet would run as formulas are quoted, numbers
stay numbers, and JSON is strict (null for a number that is not finite). Through the real CLI in fresh
interpreters, on a real SQLite file and a real PostgreSQL database."""
import csv
import dataclasses
import io
import json
import math

import pytest

from db import queue, reports
from db.database import get_engine
from db.models import JobStatus
from lab import answer, tabular
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.conftest import run_cli

CATALOG = {"tiny": ModelInfo("tiny", "d")}
NAMES = ["=HYPERLINK(\"http://evil\",\"x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "plain"]
RESULT = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "samples": {}, "detail": {},
          "max_abs_error": float("inf"), "eager_first_call_s": 0.5, "compiled_first_call_s": 1.5}


def finished(engine, name: str, result: dict | None = RESULT) -> int:
    """A sweep of one tiny job named `name`, finished with `result` (failed when None)."""
    queue.submit(engine, SweepRequest(model="tiny", batch_sizes=[2], device="cpu", name=name, process_repeats=1), CATALOG)
    claim = queue.claim_next(engine, "w", ["cpu"], ["tiny"], 60)
    status = JobStatus.SUCCEEDED if result is not None else JobStatus.FAILED
    assert queue.finish(engine, claim.job_id, claim.token, status, None if result else "-1 is not a size", result)
    return claim.job_id


def cells(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_cell_quotes_formulas_and_leaves_numbers():
    assert [tabular.csv_cell(v) for v in NAMES] == [
        "'=HYPERLINK(\"http://evil\",\"x\")", "'+1+cmd|' /C calc'!A0", "'-2+3", "'@SUM(A1:A9)", "plain"]
    for number in (-1.5, -3, 0, 2.5e-07, "-3", "-1.5e-07", "+4", ".5"):  # numbers, and text that is one
        assert tabular.csv_cell(number) == number
    assert tabular.csv_cell("\tx") == "'\tx" and tabular.csv_cell("\rx") == "'\rx" and tabular.csv_cell(None) is None


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_export_csv_quotes_formula_sweep_names_and_keeps_negative_numbers(any_db_url, tmp_path):
    engine = get_engine(any_db_url)
    for name in NAMES:
        finished(engine, name, {**RESULT, "rel_error": -0.25})
    out = tmp_path / "out.csv"
    done = run_cli("export", "--db", any_db_url, "--format", "csv", "-o", str(out))
    assert done.returncode == 0, done.stderr
    rows = cells(out.read_text())
    assert [r["sweep"] for r in rows] == ["'" + n if n != "plain" else n for n in NAMES]
    assert {r["rel_error"] for r in rows} == {"-0.25"}  # a real number is left a number


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_report_csv_and_every_answer_row_go_through_the_same_cells(any_db_url):
    engine = get_engine(any_db_url)
    finished(engine, "s", None)  # a failed run: its verdict quotes the job's error
    rows = reports.report(engine)
    rows[0] = dataclasses.replace(rows[0], config="=cmd()")  # what a lab's own model's argument could read as
    (row,) = cells(answer.rows_csv(rows))
    assert row["config"] == "'=cmd()" and row["verdict"].startswith("did not succeed")
    done = run_cli("report", "--db", any_db_url, "--format", "csv")
    assert done.returncode == 0 and not any(c.startswith(tabular.FORMULA_START)
                                            for r in cells(done.stdout) for c in r.values() if c), done.stdout


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_json_exports_are_strict_with_null_for_infinity_and_nan(any_db_url):
    engine = get_engine(any_db_url)
    job_id = finished(engine, "inf", {**RESULT, "rel_error": float("nan")})
    for command in ("export", "report"):
        done = run_cli(command, "--db", any_db_url, "--format", "json")
        assert done.returncode == 0, done.stderr
        assert "Infinity" not in done.stdout and "NaN" not in done.stdout

        def refuse(token):
            raise ValueError(f"{token} is not JSON")
        parsed = json.loads(done.stdout, parse_constant=refuse)  # as a strict parser reads it
        (first,) = parsed
        assert first["max_abs_error"] is None
    (rec,) = [r for r in json.loads(run_cli("export", "--db", any_db_url, "--format", "json").stdout)
              if r["job_id"] == job_id]
    assert rec["rel_error"] is None and rec["speedup"] == 2.0


def test_finite_reaches_nested_values():
    assert tabular.finite({"a": [1.0, math.inf, {"b": -math.inf, "c": math.nan}], "d": "NaN"}) == {
        "a": [1.0, None, {"b": None, "c": None}], "d": "NaN"}


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_export_streams_every_record_in_batches_and_writes_them_as_a_list_would(any_db_url, tmp_path):
    """`export` builds records as the rows stream (db.results.iter_records, BATCH at a time) and writes each as it
    comes: across batch boundaries the files hold exactly what the records as one list give, in job order, with the
    samples only for --raw; --jobs exports the listed jobs; -o leaves no partial file behind."""
    from bench.synthetic import fill
    from db import results

    engine = get_engine(any_db_url)
    fill(engine, 2 * results.BATCH + 30, seed=4, rounds=3)
    records = results.export_records(engine)
    assert [r["job_id"] for r in records] == sorted(r["job_id"] for r in records) and "samples" not in records[0]
    for fmt, text in (("csv", results.records_csv(records)), ("json", results.records_json(records))):
        out = tmp_path / f"all.{fmt}"
        done = run_cli("export", "--db", any_db_url, "--format", fmt, "-o", str(out))
        assert done.returncode == 0, done.stderr
        assert out.read_bytes().decode() == text and not list(tmp_path.glob("*.partial"))
    assert json.loads(results.records_json(records)) == json.loads(tabular.json_text(records))
    raw = results.export_records(engine, include_raw=True)
    assert all(len(r["samples"]["eager"]) == 3 for r in raw if r["status"] == "succeeded")
    picked = [r["job_id"] for r in records][5:900:7]
    ids = tmp_path / "ids.txt"
    ids.write_text(" ".join(map(str, reversed(picked))))
    done = run_cli("export", "--db", any_db_url, "--format", "json", "--jobs", str(ids))
    assert done.returncode == 0, done.stderr
    assert [r["job_id"] for r in json.loads(done.stdout)] == picked
    ids.write_text("12 x")
    done = run_cli("export", "--db", any_db_url, "--format", "csv", "--jobs", str(ids))
    assert done.returncode == 2 and f"--jobs {ids}: line 1, item 2 is not a job id" in done.stderr
