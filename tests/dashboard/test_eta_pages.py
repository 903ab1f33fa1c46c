"""The Queue and Job pages through AppTest on a real SQLite file: ETAs from the lab's history of similar jobs (a
running compile's usual range, time so far and time left; a queued job's start; the queue's end), the pause of the
live refresh while a job on this host is timed, and status labels drawn without emoji."""
import re
import socket
from datetime import timedelta

import pytest
from sqlalchemy import update

from db import queue
from db.engine import atomic
from db.models import Job, utcnow
from tests.dashboard.test_pages import ok, page, texts
from tests.unit.test_estimates import WORKER, run, sweep


def plain(markdown: str) -> str:
    """Markdown as read: the escapes of dashboard.markup.md taken out."""
    return re.sub(r"\\(.)", r"\1", markdown)


@pytest.fixture
def lab(db_url, engine, monkeypatch):
    from dashboard.state.embedded import ENV_SWITCH
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv(ENV_SWITCH, "0")
    return engine


def register(engine, hostname: str):
    from runner import zoo
    models = [i.to_dict() for i in zoo.model_infos(zoo.catalog()).values()]
    queue.register_worker(engine, WORKER, hostname, 1, None, {"devices": ["cpu"], "torch_version": "2.13.0",
                                                              "models": models})


def compiling_for(engine, history_compiles, so_far_s: float, hostname="host"):
    """Finished jobs of one configuration with these compile times, then a running one compiling for `so_far_s` and
    two queued behind it."""
    register(engine, hostname)
    for c in history_compiles:
        sweep(engine)
        run(engine, 20.0 + c, c)
    ids = [sweep(engine)[0] for _ in range(3)]  # one configuration, three sweeps
    claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
    queue.heartbeat_job(engine, claim.job_id, claim.token, 60, "compiling", None)
    now = utcnow()
    with atomic(engine) as s:
        s.execute(update(Job).where(Job.id == claim.job_id).values(
            phase_at=now - timedelta(seconds=so_far_s), claimed_at=now - timedelta(seconds=so_far_s + 4)))
    return claim, ids


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_queue_shows_a_running_compiles_usual_range_time_so_far_and_the_queues_end(lab):
    claim, ids = compiling_for(lab, [40.0, 45.0, 50.0, 60.0], 25.0)
    at = ok(page("queue"))
    (bar,) = [plain(p.proto.text) for p in at.get("progress") if f"#{claim.job_id}" in p.proto.text]
    assert re.search(r"— \*\*compiling\*\* · \d+ s since its claim · usually 4\d-\d\d s, 2\d s so far; about \d+ s left",
                     bar), bar
    assert list(at.dataframe[0].value.columns[:3]) == ["job", "status", "ETA"]  # in view, not past the table's edge
    table = at.dataframe[0].value.set_index("job")
    assert re.fullmatch(r"~\d+ s left", table.loc[claim.job_id, "ETA"])
    first, second = (table.loc[i, "ETA"] for i in ids[1:])
    assert first.startswith("starts in ") and second.startswith("starts in ")
    start = lambda text: int(re.search(r"in (\d+)", text).group(1)) * (60 if " min" in text else 1)  # noqa: E731
    assert start(second) > start(first)  # behind it on the one worker
    assert any(c.startswith(":material/schedule: Queue: done in about ") and "history of similar jobs" in c
               for c in texts(at.caption))


def test_queue_says_when_each_unfinished_sweep_is_done(lab):
    """The line above the table: per unfinished sweep, when its last job ends (eta.done_in over its jobs), the same
    times as the table's ETA cells: the running job's sweep when it has no time left, the next sweep when the last
    queued job starts on the one worker, the last when the queue is done. A finished sweep is not named; picking a
    sweep names it alone."""
    claim, ids = compiling_for(lab, [40.0, 45.0, 50.0, 60.0], 25.0)
    at = ok(page("queue"))
    (line,) = [c for c in texts(at.caption) if c.startswith(":material/schedule: Queue: done in about ")]
    done = dict(re.findall(r"sweep (\d+) done in about ([\d a-z]+?)(?= ·| \()", line))
    table = at.dataframe[0].value.set_index("job")
    sweep_of = {job: str(table.loc[job, "sweep"]) for job in ids}
    assert sorted(done) == sorted(sweep_of.values())  # the three unfinished sweeps, none of the four finished
    assert done[sweep_of[claim.job_id]] == re.fullmatch(r"~(.+) left", table.loc[claim.job_id, "ETA"]).group(1)
    assert done[sweep_of[ids[1]]] == re.fullmatch(r"starts in (.+)", table.loc[ids[2], "ETA"]).group(1)
    assert line.startswith(f":material/schedule: Queue: done in about {done[sweep_of[ids[2]]]} · ")
    at.multiselect(key="qsweep").set_value([int(sweep_of[ids[1]])]).run()
    (picked,) = [c for c in texts(ok(at).caption) if c.startswith(":material/schedule:")]
    assert re.match(rf":material/schedule: sweep {sweep_of[ids[1]]} done in about [\d a-z]+ \(from the lab's", picked)


def test_the_job_page_says_a_queued_jobs_start_and_a_running_jobs_time_left(lab):
    claim, ids = compiling_for(lab, [40.0, 45.0, 50.0, 60.0], 25.0)
    at = ok(page("job", job=str(claim.job_id)))
    assert any(re.match(r"Running: compiling, usually 4\d-\d\d s, 2\d s so far; about", plain(i)) for i in texts(at.info))
    at = ok(page("job", job=str(ids[2])))
    assert any(i.startswith("Starts in about ") and "; done in about " in i for i in texts(at.info))


def test_no_history_is_said_as_such(lab):
    claim, ids = compiling_for(lab, [], 25.0)
    at = ok(page("queue"))
    table = at.dataframe[0].value.set_index("job")
    assert table.loc[claim.job_id, "ETA"] == "no history"
    assert table.loc[ids[1], "ETA"] == "starts after the jobs ahead, no history"  # ahead: a job with no history
    (bar,) = [plain(p.proto.text) for p in at.get("progress") if f"#{claim.job_id}" in p.proto.text]
    assert " · 2" in bar and "no history of similar jobs to estimate from" in bar


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_job_timed_on_this_host_pauses_the_pages_refresh_and_says_so(lab, monkeypatch):
    claim, _ = compiling_for(lab, [40.0], 5.0, hostname=socket.gethostname())
    from dashboard.state import quiet
    monkeypatch.setenv(quiet.WAIT_ENV, "0.5")  # each timed look waits this long for the timing's end (none comes here)
    at = ok(page("queue"))  # its compile is timed too: a cold first call is a figure the answer gives
    assert any(i.startswith(f"Paused refreshing while job {claim.job_id} is timed on this machine (now compiling)")
               for i in texts(at.info))
    queue.heartbeat_job(lab, claim.job_id, claim.token, 60, "eager first call", None)
    quiet._last.clear()  # the look shared for a second
    assert not [i for i in texts(ok(page("queue")).info) if i.startswith("Paused refreshing")]  # milliseconds: not
    queue.heartbeat_job(lab, claim.job_id, claim.token, 60, "measuring", 0.3)
    quiet._last.clear()
    at = ok(page("queue"))
    assert (f"Paused refreshing while job {claim.job_id} is timed on this machine (now measuring), so the page does "
            "not disturb it: what it shows is as of the timing's start or your last action. It resumes by itself "
            "when the timing ends.") in texts(at.info)
    assert at.dataframe[0].value.set_index("job").loc[claim.job_id, "phase"] == "measuring"  # drawn once, kept
    queue.heartbeat_job(lab, claim.job_id, claim.token, 60, "counting kernels", None)
    quiet._last.clear()
    at = ok(page("queue"))
    assert not [i for i in texts(at.info) if i.startswith("Paused refreshing")]


def test_a_job_timed_on_another_host_pauses_nothing(lab):
    claim, _ = compiling_for(lab, [40.0], 5.0, hostname="another-host")
    queue.heartbeat_job(lab, claim.job_id, claim.token, 60, "measuring", 0.3)
    at = ok(page("queue"))
    assert not [i for i in texts(at.info) if i.startswith("Paused refreshing")]


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_status_labels_use_the_apps_icon_font_not_emoji(lab):
    claim, ids = compiling_for(lab, [40.0], 5.0)
    at = ok(page("queue"))
    labels = [m.label for m in at.main.metric]
    assert labels and all(re.fullmatch(r":material/[a-z_]+: [a-z_]+", x) for x in labels), labels
    assert set(at.dataframe[0].value["status"]) == {"running", "queued", "succeeded"}  # a table cell: plain text
    at = ok(page("job", job=str(claim.job_id)))
    assert any(re.search(r"\*\*#\d+\*\* :material/play_arrow: running", m) for m in texts(at.markdown))


def test_a_sweeps_end_counts_the_process_repeats_still_to_be_queued_and_says_so(lab):
    """A sweep of 3 processes per configuration: its end on the Queue counts the 2 repeats each first run will queue
    (db.estimates.planned_repeats), and the line says how many are still to come."""
    from lab.sweep import SweepRequest
    from runner import zoo

    register(lab, "host")
    sweep(lab, bs=(8, 16))
    run(lab, 10.0, 5.0)
    run(lab, 10.0, 5.0)
    sid = queue.submit(lab, SweepRequest(model="simplenet", batch_sizes=[8, 16], device="cpu", process_repeats=3,
                                         repeat=1), zoo.model_infos(zoo.catalog()))[0]
    at = ok(page("queue"))
    (line,) = [c for c in texts(at.caption) if c.startswith(":material/schedule: Queue: done in about ")]
    assert f"sweep {sid} done in about 1 min (4 process repeats to come)" in plain(line)
    assert "process repeats a sweep's settings plan are counted before they are queued" in line
