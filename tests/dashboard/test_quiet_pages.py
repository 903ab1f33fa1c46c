"""A page a person opens while a job on this host is timed waits for the timing to end before it draws, on a small
host (dashboard.state.quiet.wait_for_timing): drawing it meanwhile would take the cores the job is timed on. It
waits only as long as the timing lasts, never past its limit, and not at all on a large host, for a job timed on
another host, or where the lab set the limit to 0."""
import socket
import threading
import time

import pytest

from dashboard.state import quiet
from db import queue
from db.models import JobStatus
from tests.dashboard.test_eta_pages import compiling_for
from tests.dashboard.test_pages import lab, ok, page, texts  # noqa: F401 (lab: a fixture)


def _timed_here(engine):
    claim, _ = compiling_for(engine, [40.0], 5.0, hostname=socket.gethostname())
    queue.heartbeat_job(engine, claim.job_id, claim.token, 60, "measuring", 0.3)
    quiet._last.clear()  # the look shared for a second
    return claim


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_page_opened_while_a_job_here_is_timed_waits_until_the_timing_ends(lab, monkeypatch):  # noqa: F811 (the fixture)
    monkeypatch.setattr(quiet, "SMALL_HOST", 10_000)  # whatever this machine's size
    monkeypatch.setenv(quiet.WAIT_ENV, "20")
    claim = _timed_here(lab)
    ended = threading.Timer(2.0, lambda: queue.heartbeat_job(lab, claim.job_id, claim.token, 60, "counting kernels",
                                                             None))
    ended.start()
    began = time.monotonic()
    at = ok(page("queue"))
    took = time.monotonic() - began
    ended.join()
    waited = at.session_state[quiet.WAITED]
    assert 1.5 <= waited <= 6.0 and took >= waited, (waited, took)  # until the timing ended, far under its limit
    assert not any(t.startswith("Drawing this page once") for t in texts(at.info))  # the line goes once it draws
    # drawn whole, and paused still: on this small host the job's next timed phase, or the next job's compile, is
    # seconds away (quiet.notice)
    assert [t for t in texts(at.info) if t.startswith("Paused refreshing")] == [quiet.sentence(
        [(claim.job_id, "counting kernels")])]
    assert claim.job_id in set(at.dataframe[0].value["job"])
    queue.heartbeat_job(lab, claim.job_id, claim.token, 60, "measuring", 0.5)  # timed again
    quiet._last.clear()
    monkeypatch.setenv(quiet.WAIT_ENV, "3")
    ok(at.run())  # an action on the page already open (a click, a submit, a cancel) is not held
    assert at.session_state[quiet.WAITED] == 0.0
    ok(at.switch_page("screens/results.py").run())  # another page opened: held
    assert at.session_state[quiet.WAITED] >= 2.5


def test_a_job_whose_lease_ran_out_is_timed_by_nobody_and_holds_no_page(lab, monkeypatch):  # noqa: F811
    """A worker killed while its job was timed leaves the job running until another worker requeues it: its lease
    has run out, so no page waits for it, and none pauses."""
    from datetime import timedelta

    from sqlalchemy import update

    from db.engine import atomic
    from db.models import Job, utcnow

    monkeypatch.setattr(quiet, "SMALL_HOST", 10_000)
    monkeypatch.setenv(quiet.WAIT_ENV, "20")
    claim = _timed_here(lab)
    with atomic(lab) as s:
        s.execute(update(Job).where(Job.id == claim.job_id).values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    quiet._last.clear()
    at = ok(page("queue"))
    assert at.session_state[quiet.WAITED] == 0.0 and not any(t.startswith("Paused refreshing") for t in texts(at.info))


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_wait_is_bounded_and_absent_on_a_large_host_or_where_the_lab_turned_it_off(lab, monkeypatch):  # noqa: F811
    claim = _timed_here(lab)
    monkeypatch.setattr(quiet, "SMALL_HOST", 10_000)
    monkeypatch.setenv(quiet.WAIT_ENV, "1.5")
    at = ok(page("queue"))
    assert 1.5 <= at.session_state[quiet.WAITED] <= 4.0  # still timed at its limit: it drew, and says it paused
    assert any(t.startswith(f"Paused refreshing while job {claim.job_id} is timed") for t in texts(at.info))
    monkeypatch.setenv(quiet.WAIT_ENV, "0")  # the lab would rather see its pages at once
    assert ok(page("queue")).session_state[quiet.WAITED] == 0.0
    monkeypatch.setenv(quiet.WAIT_ENV, "20")
    monkeypatch.setattr(quiet, "SMALL_HOST", 0)  # a large host: a page's drawing is no disturbance there
    assert ok(page("queue")).session_state[quiet.WAITED] == 0.0


def _paused_page(job_id: int):
    """A page that paused for job `job_id`'s timing, whose notice then ticks (its first run stands in for the tick)."""
    import streamlit as st

    from dashboard.state import quiet as q
    st.session_state["runs"] = st.session_state.get("runs", 0) + 1
    if st.session_state["runs"] == 1:
        st.session_state[q.KEY] = [(job_id, "measuring")]  # what the live fragment saw as the rounds began
    else:
        q.begin()  # the full run the notice asked for
    q.notice()


@pytest.mark.parametrize("small", [True, False])
def test_a_paused_page_resumes_between_timed_phases_only_on_a_large_host(lab, monkeypatch, small):  # noqa: F811
    """After one's rounds the next job's compile starts within seconds: on a small host a whole page drawn in that
    gap spilled into the cold first call (a CI run: the server and browser took 12.6% of the job's cores, past the
    10% that names a disturbance), so there the page stays paused while any job here runs; on a large host a page's
    drawing is no disturbance and it resumes once the timing ends."""
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(quiet, "SMALL_HOST", 10_000 if small else 0)
    claim = _timed_here(lab)
    queue.heartbeat_job(lab, claim.job_id, claim.token, 60, "counting kernels", None)  # the rounds ended
    quiet._last.clear()
    at = ok(AppTest.from_function(_paused_page, args=(claim.job_id,), default_timeout=30).run())
    said = [t for t in texts(at.info) if t.startswith("Paused refreshing")]
    if small:
        assert at.session_state["runs"] == 1 and said == [
            f"Paused refreshing while job {claim.job_id} is running on this machine (now counting kernels, between "
            "timed phases), so the page does not disturb what is timed next: what it shows is as of the timing's start or "
            "your last action. It resumes by itself when no job runs here."], said
    else:
        assert at.session_state["runs"] == 2 and not said  # the page drew itself live again
    queue.finish(lab, claim.job_id, claim.token, JobStatus.FAILED, "ended")  # no job runs here now
    quiet._last.clear()
    at = ok(AppTest.from_function(_paused_page, args=(claim.job_id,), default_timeout=30).run())
    assert at.session_state["runs"] == 2 and not [t for t in texts(at.info) if t.startswith("Paused refreshing")]


@pytest.mark.parametrize("small", [True, False])
def test_an_action_on_a_paused_page_keeps_it_paused_while_a_job_here_runs_on_a_small_host(lab, monkeypatch, small):  # noqa: F811
    """An action between one job's rounds and the next timed phase draws the page (the person asked for it) and, on a
    small host, leaves it paused: live again, it would refresh through the gap the notice waits out."""
    monkeypatch.setattr(quiet, "SMALL_HOST", 10_000 if small else 0)
    monkeypatch.setenv(quiet.WAIT_ENV, "0")
    claim = _timed_here(lab)
    at = ok(page("queue"))
    assert at.session_state[quiet.KEY] == [(claim.job_id, "measuring")]  # paused for the rounds
    queue.heartbeat_job(lab, claim.job_id, claim.token, 60, "counting kernels", None)
    quiet._last.clear()
    at = ok(at.run())  # an action on the page already open
    said = [t for t in texts(at.info) if t.startswith("Paused refreshing")]
    assert said == ([quiet.sentence([(claim.job_id, "counting kernels")])] if small else []), said
    assert claim.job_id in set(at.dataframe[0].value["job"])  # drawn whole either way
    queue.finish(lab, claim.job_id, claim.token, JobStatus.FAILED, "ended")
    quiet._last.clear()
    at = ok(at.run())
    assert not [t for t in texts(at.info) if t.startswith("Paused refreshing")]  # no job runs here: live
