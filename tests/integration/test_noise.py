"""Noise injected into real jobs, run by a real worker (`work --drain`): the jittery fixture sleeps 2 to 10 ms at
random in its calls (seeded: reliably noisy). `noise=first` is noisy only in the first process that builds it, so
its automatic re-run, in a fresh process, is quiet and answers; `noise=always` stays noisy through its re-run and
is greyed, out of the verdict and out of the per-model header. Backend eager: no inductor compile to wait for."""
import json

from sqlalchemy import select

from dashboard.embedded import ENV_SWITCH
from db.answer import report
from db.database import get_engine
from db.engine import reading
from db.models import Job
from tests.conftest import records, submit, work
from tests.dashboard.test_pages import answer_table, every_column, ok, page

COMMON = ("--model", "jittery", "--batch", "4", "--device", "cpu", "--backend", "eager", "--iters", "30")


def test_a_noisy_job_is_rerun_and_only_its_quiet_run_answers(db_url, tmp_path, monkeypatch):
    # reruns 2 for the one that turns quiet: should load on this box make its first re-run noisy too, a second
    # one is there; the always-noisy one has 1, so it ends after one re-run
    first = submit(db_url, *COMMON, "--arg", "noise=first", "--reruns", "2", "--name", "turns quiet")
    always = submit(db_url, *COMMON, "--arg", "noise=always", "--reruns", "1", "--name", "stays noisy")
    work(db_url, tmp_path / "home", "--drain", env={"COMPILE_LAB_TEST_NOISE_MARK": str(tmp_path / "mark")})

    engine = get_engine(db_url)
    with reading(engine) as s:
        jobs = {j.id: (j.status, j.follow_up_of, j.follow_up, j.spec["model_args"]["noise"])
                for j in s.scalars(select(Job)).all()}
    recs = records(db_url)
    assert all(status == "succeeded" for status, *_ in jobs.values())
    assert recs[first[0]]["noisy"] is True and recs[always[0]]["noisy"] is True
    # each noisy first run was re-run automatically, linked to it, with the reason
    reruns = {of: f for _, of, f, _ in jobs.values() if of is not None}
    assert reruns[first[0]]["kind"] == "noisy" and "spread" in reruns[first[0]]["because"]
    assert reruns[always[0]] == {"kind": "noisy", "n": 1, "total": 1, "because": recs[always[0]]["noise_note"]}
    stays = [i for i, (_, _, _, noise) in jobs.items() if noise == "always"]
    assert len(stays) == 2 and all(recs[i]["noisy"] for i in stays)  # its budget (1 re-run) spent, still noisy
    quiet = [i for i, (_, _, _, noise) in jobs.items() if noise == "first" and recs[i]["noisy"] is False]
    assert quiet, "the re-run in a fresh process should be quiet"
    # the host state around its rounds: threads pinned to the worker's CPUs, the load, the other workers
    host = recs[quiet[0]]["host_state"]
    assert host["before_rounds"]["torch_threads"] == host["threads_pinned"] == host["before_rounds"]["cpus_allowed"]
    assert host["busy_workers"] == [] and "loadavg" in host["after_rounds"]

    rows = {r["config"]: r for r in report(engine)}
    answered, greyed = rows["default · noise=first"], rows["default · noise=always"]
    assert answered["noisy"] is False and answered["runs"] == len(quiet) and answered["noisy_runs"] >= 1
    assert answered["speedup"] is not None and f"{answered['noisy_runs']} noisy run(s) left out" in answered["verdict"]
    assert greyed["noisy"] is True and greyed["speedup"] is None and greyed["noisy_runs"] == 2
    assert greyed["verdict"].startswith("no answer: all 2 run(s) were noisy")

    # Results: the header is the quiet configuration's alone; the noisy one is greyed on the speedup plot
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv(ENV_SWITCH, "0")  # no worker process: the page alone
    at = ok(page("results", plot="jittery", chart="Speedup"))  # the Speedup tab draws one chart at a time
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Median speedup"] == metrics["Best speedup"] == f"{answered['speedup']:.2f}×"
    shown = answer_table(at)  # the page's table: the noisy configuration faded
    assert list(shown.loc[shown["faded"], "configuration"]) == ["default · noise=always"]
    every = every_column(at)
    assert list(every.loc[every["noisy"], "config"]) == ["default · noise=always"]
    speedup = json.loads(next(c for c in at.get("plotly_chart") if c.key == "plot_speedup").proto.spec)
    grey = [t for t in speedup["data"] if "greyed" in (t.get("name") or "")]
    assert grey and [d[0] for d in grey[0]["customdata"]] == ["default · noise=always"]  # that configuration's point alone
    assert "spread" in grey[0]["customdata"][0][1]  # and why
    # Queue: the re-run says what it re-runs and why
    at = ok(page("queue"))
    notes = " ".join(str(v) for df in at.dataframe for v in df.value.get("note", []))
    assert f"re-run 1 of 1 of job {always[0]}, because: " in notes
    # Job: the noisy re-run says it is noisy, and what it re-runs
    rerun = next(i for i, (_, of, _, _) in jobs.items() if of == always[0])
    at = ok(page("job", job=str(rerun)))
    assert any(w.value.startswith("Noisy: ") for w in at.warning)
    assert any(f"re-run 1 of 1 of job {always[0]}" in c.value.replace("\\", "") for c in at.caption)  # escaped
