"""The answer table on Results: first for a model, the same rows as `python -m runner report`, and the header's
speedups for that model alone."""
import io
import json

import pandas as pd

from bench.synthetic import fill
from dashboard.answer import SHOWN, frame
from tests.conftest import run_cli
from tests.dashboard.test_pages import lab, ok, page  # noqa: F401  (lab: a fixture)


def test_the_answer_table_is_what_runner_report_prints(lab, db_url):  # noqa: F811 (the fixture)
    fill(lab, 48, seed=3, rounds=20)  # sweep 1: simplenet, 24 configurations; sweep 2: complexnet repeats
    at = ok(page("results", plot="simplenet"))
    shown = at.dataframe[0].value
    assert "The answer for simplenet" in [s.value for s in at.subheader]
    assert at.dataframe[0].proto.placeholder == "–"  # a row without a number shows a dash, not "None"
    assert len(shown) == 24 and set(shown["model"]) == {"simplenet"} and shown["speedup_ci_low"].notna().any()
    done = run_cli("report", "--db", db_url, "--sweep", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    pd.testing.assert_frame_equal(shown, frame(report))  # report's rows; its job_ids stay off the page
    assert "job_ids" not in shown and all(r["job_ids"] for r in report)
    done = run_cli("report", "--db", db_url, "--sweep", "1", "--format", "csv")
    from_csv = pd.read_csv(io.StringIO(done.stdout), keep_default_na=False, na_values=[""])[SHOWN]  # less job_ids
    pd.testing.assert_frame_equal(shown.astype(str), from_csv.astype(shown.dtypes.to_dict()).astype(str))
    # the header's speedups are simplenet's, from its quiet configurations: never a median across models
    metrics = {m.label: m.value for m in at.metric}
    quiet = shown.dropna(subset=["speedup"])
    assert metrics["Median speedup"] == f"{quiet['speedup'].median():.2f}×"
    assert metrics["Best speedup"] == f"{quiet['speedup'].max():.2f}×"
    other = ok(page("results", plot="complexnet")).dataframe[0].value
    assert set(other["model"]) == {"complexnet"} and other["runs"].max() >= 3  # repeats pooled: one row each
