"""The job limits on the pages (AppTest, a real SQLite file): the Queue page's re-submit stops at the sweep's 5,000
jobs with the numbers shown as an error, its id field refuses a range past 5,000 ids before spelling it out, and the
Submit page shows the lab's queued-job limit (COMPILE_LAB_MAX_QUEUED) refusing a sweep; nothing is stored."""
import pytest
from sqlalchemy import update

from dashboard.markup import md
from db import admission, queue
from db.engine import atomic
from db.models import Job
from db.results import export_records
from lab.sweep import SweepRequest
from runner import zoo
from tests.dashboard.test_pages import lab, ok, page, texts, worker  # noqa: F401 (lab, worker: fixtures)
from tests.unit.test_admission import counts


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_queue_page_refuses_a_resubmit_past_the_sweeps_limit_and_a_range_past_it(worker):  # noqa: F811
    sweep_id, ids, _ = queue.submit(worker, SweepRequest(model="simplenet", batch_sizes=list(range(1, 2501)),
                                                         device="cpu", process_repeats=1), zoo.model_infos(zoo.catalog()))
    with atomic(worker) as s:
        s.execute(update(Job).values(status="cancelled"))
    at = ok(page("queue"))
    at.text_input[0].input(f"{ids[0]}-{ids[-1]}")
    ok(at.button[1].click().run())  # "Re-submit jobs": 5,000 jobs in the sweep, at its limit
    assert any("Re-submitted 2,500 jobs" in t for t in texts(at.success)) and counts(worker, sweep_id)[1] == 5000
    ok(at.button[1].click().run())  # again: past it
    assert texts(at.error) == ["Job ids: " + md(f"sweep {sweep_id} holds 5,000 jobs; 2,500 more would make 7,500, "
                                                "past its limit of 5,000 jobs per sweep (submit a new sweep for the "
                                                "rest)") + "; nothing was re-submitted"]
    assert counts(worker, sweep_id)[1] == 5000
    at.text_input[0].input("1-10001")
    ok(at.button[1].click().run())
    assert texts(at.error) == ["Job ids: " + md("'1-10001' makes 10,001 job ids; at most 5,000 at once")]
    at.text_input[0].input("1-2500, 3000-5600")
    ok(at.button[0].click().run())  # cancel too: counted over the whole field, before anything is done
    assert texts(at.error) == ["Job ids: " + md("'3000-5600' makes 5,101 job ids; at most 5,000 at once")]
    assert counts(worker, sweep_id) == (1, 5000, 2500)


def test_the_submit_page_shows_the_labs_limit_refusing_a_sweep(worker, monkeypatch):  # noqa: F811
    monkeypatch.setenv(admission.MAX_QUEUED_ENV, "2")
    at = ok(page("submit"))
    at.text_input(key="f_batch").input("8, 16, 32").run()
    ok(at.button(key="f_submit").click().run())
    assert texts(at.error) == [md("the lab has 0 jobs queued; 3 more would make 3, past its limit of 2 queued jobs "
                                  "(COMPILE_LAB_MAX_QUEUED; cancel some, or wait)")]
    assert export_records(worker) == [] and not at.success
