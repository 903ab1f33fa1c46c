"""The answer table on Results: first for a model, the same rows as `python -m runner report`, and the header's
speedups for that model alone."""
import io
import json

import pandas as pd
import pytest

from bench.synthetic import fill
from dashboard.panels.answer_table import SHOWN, frame, page_columns
from lab.answer import HEADLINE, headline_value
from tests.conftest import run_cli
from tests.dashboard.test_pages import answer_table, every_column, lab, ok, page  # noqa: F401  (lab: a fixture)


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_the_answer_table_is_what_runner_report_prints(lab, db_url):  # noqa: F811 (the fixture)
    fill(lab, 48, seed=3, rounds=20)  # sweep 1: simplenet, 24 configurations; sweep 2: complexnet repeats
    at = ok(page("results", plot="simplenet"))
    assert "The answer for simplenet" in [s.value for s in at.subheader]
    done = run_cli("report", "--db", db_url, "--sweep", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # the page's table: report's headline cells, row for row (the model is in the heading); a row without a number
    # shows a dash; a configuration with no answer is faded
    shown, columns = answer_table(at), page_columns(report)  # columns no row fills are left out
    assert list(shown.columns[:-1]) == [HEADLINE[c] for c in columns] and len(shown) == 24
    assert len(columns) >= 10 and "runs" in columns
    assert shown.drop(columns="faded").values.tolist() == [[headline_value(r, c) for c in columns] for r in report]
    assert shown["faded"].tolist() == [r["noisy"] for r in report]
    # and `report --format md` prints the same cells
    done = run_cli("report", "--db", db_url, "--sweep", "1", "--format", "md")
    md_rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in done.stdout.splitlines()[2:]]
    where = [list(HEADLINE).index(c) for c in columns]  # md has every headline column, the model first
    assert [[row[i] for i in where] for row in md_rows] == shown.drop(columns="faded").values.tolist()
    # every column, behind a button: report's rows, its job_ids off the grid (the dialog's downloads keep them)
    every = every_column(at)
    assert at.dataframe[0].proto.placeholder == "–"  # a row without a number shows a dash, not "None"
    assert len(ok(at.run()).dataframe) == 1  # a rerun (results landing) leaves it open, until it is dismissed
    assert set(every["model"]) == {"simplenet"} and every["speedup_ci_low"].notna().any()
    assert (every["rerun_low"] < every["speedup_ci_low"]).any()  # where a re-run should read, beside it
    pd.testing.assert_frame_equal(every, frame(report))
    assert "job_ids" not in every and all(r["job_ids"] for r in report)
    done = run_cli("report", "--db", db_url, "--sweep", "1", "--format", "csv")
    from_csv = pd.read_csv(io.StringIO(done.stdout), keep_default_na=False, na_values=[""])[SHOWN]  # less job_ids
    pd.testing.assert_frame_equal(every.astype(str), from_csv.astype(every.dtypes.to_dict()).astype(str))
    assert {b.label for b in at.get("download_button")} >= {"CSV", "JSON"}
    # the header's speedups are simplenet's, from its quiet configurations: never a median across models
    metrics = {m.label: m.value for m in at.metric}
    quiet = every.dropna(subset=["speedup"])
    assert metrics["Median speedup · simplenet"] == f"{quiet['speedup'].median():.2f}×"
    assert metrics["Best speedup · simplenet"] == f"{quiet['speedup'].max():.2f}×"
    other = answer_table(ok(page("results", plot="complexnet")))
    assert other["runs"].astype(int).max() >= 3  # repeats pooled: one row each


def test_the_answer_table_shows_what_a_lab_typed_as_text(lab):  # noqa: F811 (the fixture)
    """A lab's own model names come from its workers' model folders: in the page's HTML table they stay text."""
    from dashboard.panels.answer_table import table_html
    hostile = '<img src=x onerror="alert(1)">'
    rows = [{c: None for c in SHOWN} | {"model": hostile, "batch_size": 8, "config": f"default · {hostile}",
                                        "verdict": f"slower ({hostile})", "noisy": False, "runs": 1}]
    body = table_html(rows)
    assert "<img" not in body and body.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") == 2
    assert body.count("<tr") == 2


def test_a_verdicts_notes_are_drawn_quieter_and_its_text_is_the_same():
    """The verdict cell draws what it answers, then its notes (lab.verdict.Said: the parenthetical after the answer)
    in a quieter span; both escaped; read as text, the cell is the verdict whole. A verdict read back as plain text
    (no split) is drawn as it is."""
    import pickle

    from dashboard.panels.answer_table import table_html
    from lab.verdict import Said
    head, notes = "1.42x [1.38, 1.46]", " (3 processes; <b>x</b> & more)"
    said = Said(head + notes, notes_at=len(head))
    assert said == head + notes and said.parts == (head, notes) and pickle.loads(pickle.dumps(said)).parts == (head, notes)
    row = {c: None for c in SHOWN} | {"batch_size": 8, "config": "default", "verdict": said, "noisy": False, "runs": 3}
    body = table_html([row])
    assert "1.42x [1.38, 1.46]<span class=note> (3 processes; &lt;b&gt;x&lt;/b&gt; &amp; more)</span>" in body
    assert "<b>" not in body
    plain = table_html([row | {"verdict": head + notes}])
    assert "<span class=note>" not in plain and "1.42x [1.38, 1.46] (3 processes; &lt;b&gt;" in plain
    none = table_html([row | {"verdict": Said(head)}])  # no notes: no empty span
    assert "<span class=note>" not in none and f">{head}<" in none


def test_the_answer_table_leaves_out_columns_no_row_fills():
    """A column of dashes only (no portable run, no memory measured) is not drawn: the table fits the page instead of
    scrolling sideways with cut labels; the answer's own columns stay, and a column shows once any row has a value."""
    from dashboard.panels.answer_table import PAGE_COLUMNS, table_html
    row = {c: None for c in SHOWN} | {"batch_size": 8, "config": "default", "verdict": "1.20× faster",
                                      "eager_ms": 2.0, "compiled_ms": 1.6, "first_call_cold_s": 9.0,
                                      "noisy": False, "runs": 2}
    assert len(PAGE_COLUMNS) >= 12
    body = table_html([row])
    assert "portable s" not in body and "peak MB eager" not in body and "first call cold s" in body
    assert ">eager ms<" in body and ">runs<" in body
    body = table_html([row, row | {"first_call_portable_s": 2.5}])
    assert "portable s" in body and ">2.5<" in body
