"""Submit's number fields are validated like its text fields: an error under the field, Submit disabled, and
nothing stored that the form did not show."""
from sqlalchemy import select

from db.engine import reading
from db.models import Job
from tests.dashboard.test_pages import lab, ok, page, texts, worker  # noqa: F401  (fixtures)


def unescape(text: str) -> str:
    """Form errors are shown as escaped Markdown (dashboard.markup.md): compare their text."""
    return text.replace("\\", "")


def test_rounds_0_and_timeout_minus_1_show_errors_and_disable_submit(worker):  # noqa: F811 (the fixture)
    at = ok(page("submit"))
    at.number_input(key="f_iters").set_value(0).run()
    assert "Rounds: must be between 1 and 10,000, got 0" in [unescape(e.value) for e in at.error]
    assert at.button(key="f_submit").disabled
    at.number_input(key="f_iters").set_value(3)
    at.number_input(key="f_timeout").set_value(-1).run()
    assert [unescape(e.value) for e in at.error] == ["Timeout (s): must be between 1 and 86,400 seconds, got -1"]
    assert at.button(key="f_submit").disabled
    at.number_input(key="f_timeout").set_value(60)
    at.number_input(key="f_repeat").set_value(0).run()
    assert [unescape(e.value) for e in at.error] == ["Repeat: must be between 1 and 20, got 0"]
    assert at.button(key="f_submit").disabled
    at.number_input(key="f_repeat").set_value(2).run()
    assert not at.error and not at.button(key="f_submit").disabled
    at.button(key="f_submit").click().run()
    with reading(worker) as s:
        specs = [j.spec for j in s.execute(select(Job)).scalars()]
    assert len(specs) == 2 and {(sp["iters"], sp["timeout_s"]) for sp in specs} == {(3, 60)}  # what the form showed


def test_two_wrong_numbers_each_get_their_error_at_once(worker):  # noqa: F811 (the fixture)
    at = ok(page("submit"))
    at.number_input(key="f_iters").set_value(0)
    at.number_input(key="f_timeout").set_value(-1).run()
    assert sorted(unescape(e.value) for e in at.error) == ["Rounds: must be between 1 and 10,000, got 0",
                                                           "Timeout (s): must be between 1 and 86,400 seconds, got -1"]
    assert at.button(key="f_submit").disabled


def test_five_bad_fields_of_every_kind_are_named_in_one_round(worker):  # noqa: F811 (the fixture)
    at = ok(page("submit"))
    at.text_input(key="f_batch").set_value("8,,16")
    at.text_input(key="f_schedule").set_value("32, x")
    at.text_input(key="f_tags").set_value("no spaces!")
    at.number_input(key="f_iters").set_value(0)
    at.number_input(key="f_reruns").set_value(-1).run()
    shown = [unescape(e.value) for e in at.error]
    for label in ("Batch sizes:", "Schedule:", "Tags:", "Rounds:", "Re-runs:"):
        assert sum(t.startswith(label) for t in shown) == 1, (label, shown)
    assert len(shown) == 5, shown
    assert at.button(key="f_submit").disabled


def test_the_count_says_what_follows_the_jobs_it_creates(worker):  # noqa: F811 (the fixture)
    """'2 jobs will be created' and then 6 on Queue read as a miscount: the jobs a sweep queues later (process repeats,
    re-runs of disturbed runs, one more process where they disagree) are said beside the count."""
    at = ok(page("submit"))
    at.text_input(key="f_batch").input("8, 16").run()
    follows = [unescape(c.value) for c in at.caption if "follow as these end" in c.value]
    assert follows == ["At least 2 more follow as these end: each configuration runs in 2 fresh processes; up to 4 "
                       "re-runs replace runs a measured cause disturbed; one more process where a configuration's "
                       "processes disagree (Queue shows each as it is queued)."], follows
    at.number_input(key="f_repeat").set_value(2).run()  # two copies of each: its two processes already
    follows = [unescape(c.value) for c in at.caption if "re-runs replace" in c.value]
    assert follows == ["Up to 4 re-runs replace runs a measured cause disturbed; one more process where a "
                       "configuration's processes disagree (Queue shows each as it is queued)."], follows
    at.number_input(key="f_repeat").set_value(1).run()
    at.number_input(key="f_process_repeats").set_value(1).run()
    at.number_input(key="f_reruns").set_value(0).run()
    assert not [c.value for c in at.caption if "follow as these end" in c.value or "re-runs" in c.value]
