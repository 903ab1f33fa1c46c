"""The team's record on the pages (AppTest, real SQLite and PostgreSQL databases): the baseline deltas on Results and
Compare are the numbers `runner report --baseline` computes (db.baseline_rows); archived sweeps leave Results and
Compare's pickers until asked for; tags and the submitter narrow them; the Submit form stores tags and a note; the
Queue page says who submitted each sweep, and its record panel edits tags and a note as the server's user (sign-in
off) with the change recorded, and deletes a sweep only once its id is typed, and, when a baseline or shared cache
bundles would go with it, once that list (shown as text) is confirmed as it still stands."""
import pandas as pd
import pytest

from dashboard.markup import md
from dashboard.state.embedded import ENV_SWITCH
from db import queue, reports, team
from db.baseline_rows import with_baseline
from db.database import get_engine
from lab import answer
from runner import zoo
from tests.dashboard.test_pages import _Table, ok, page
from tests.unit.test_team_record import WORKER, run


@pytest.fixture
def lab(any_db_url, monkeypatch):
    engine = get_engine(any_db_url)
    monkeypatch.setenv("DATABASE_URL", any_db_url)
    monkeypatch.setenv(ENV_SWITCH, "0")
    queue.register_worker(engine, WORKER, "host", 1, None, {"devices": ["cpu"]})
    base, _ = run(engine, ms=1.0, first=2.0, tags=["nightly"])
    newer, _ = run(engine, ms=0.8, first=3.5, mode="max-autotune")
    team.pin_baseline(engine, "simplenet", base, "ada@lab")
    return engine, base, newer


def tables(at) -> list[pd.DataFrame]:
    out = []
    for body in [h.value for h in at.html if "<table>" in h.value]:
        parsed = _Table()
        parsed.feed(body)
        header, *rows = parsed.rows
        out.append(pd.DataFrame(rows, columns=header))
    return out


def expected(engine, rows) -> dict:
    """config -> the cells the baseline table should show for the report's rows."""
    return {r["config"]: [answer.headline_cell(r[c]) for c in ("baseline", "vs_baseline_latency_pct",
                                                                "vs_baseline_first_call_s")]
            for r in with_baseline(engine, rows)}


def shown(table: pd.DataFrame) -> dict:
    return {row["configuration"]: [row["baseline"], row["latency vs baseline %"], row["first call vs baseline s"]]
            for _, row in table.iterrows()}


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_results_and_compare_show_the_reports_baseline_deltas(lab):
    engine, base, newer = lab
    at = ok(page("results"))
    (table,) = [t for t in tables(at) if "latency vs baseline %" in t.columns]
    assert shown(table) == expected(engine, reports.report(engine))
    assert "-20" in "".join(table["latency vs baseline %"])
    at = ok(page("compare", kind="sweeps", a=str(base), b=str(newer)))
    deltas = [t for t in tables(at) if "latency vs baseline %" in t.columns]
    assert [shown(t) for t in deltas] == [expected(engine, reports.report(engine, sweep_ids=[i])) for i in (base, newer)]
    captions = " ".join(c.value for c in at.caption)
    assert f"submitted by {md('ada@lab')}" in captions and "nightly" in captions  # as typed, escaped


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_archived_sweeps_leave_results_until_asked_for_and_tags_narrow_it(lab):
    engine, base, newer = lab
    team.archive(engine, newer, "bob@lab")
    at = ok(page("results"))
    (answer_rows,) = [t for t in tables(at) if "verdict" in t.columns]
    assert len(answer_rows) == 1  # the archived sweep's configuration is gone
    at = ok(page("results", archived="true"))
    (answer_rows,) = [t for t in tables(at) if "verdict" in t.columns]
    assert len(answer_rows) == 2
    at = ok(page("results", archived="true", tag="nightly"))
    (answer_rows,) = [t for t in tables(at) if "verdict" in t.columns]
    assert len(answer_rows) == 1


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_queue_pages_record_panel_edits_tags_and_note_and_deletes_after_confirmation(lab):
    engine, base, newer = lab
    at = ok(page("queue"))
    at.selectbox(key="record_sweep").set_value(newer)
    at = ok(at.run())
    at.text_input(key=f"record_tags_{newer}").set_value("regression, A100")
    at.text_area(key=f"record_note_{newer}").set_value("<b>after</b> the upgrade")
    at = ok(at.button(key=f"FormSubmitter:record_form_{newer}-Save tags and note").click().run())
    m = team.meta(engine, [newer])[newer]
    assert (m.tags, m.note) == (("a100", "regression"), "<b>after</b> the upgrade")
    assert {e.action for e in team.events(engine, newer)} == {"tags", "note"}
    assert all(e.actor == queue.whoami() for e in team.events(engine, newer))
    at.text_input(key=f"record_tags_{newer}").set_value("<script>")
    at = ok(at.button(key=f"FormSubmitter:record_form_{newer}-Save tags and note").click().run())
    assert any("is not a tag" in e.value for e in at.error) and team.meta(engine, [newer])[newer].tags == m.tags
    assert at.button(key=f"record_delete_{newer}").disabled  # not before the id is typed
    at.text_input(key=f"record_delete_confirm_{newer}").set_value(str(newer))
    at = ok(at.run())
    at = ok(at.button(key=f"record_delete_{newer}").click().run())
    assert newer in team.meta(engine)  # its kept bundle is listed and asked about first
    at = ok(at.button(key=f"record_delete_also_{newer}").click().run())
    assert newer not in team.meta(engine) and [e.action for e in team.events(engine, newer)][0] == "delete"


def asked(at) -> list[str]:
    """The delete's second ask, as drawn: its list of what else goes (st.text)."""
    return [t.value for t in at.text if t.value.startswith("•")]


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_deleting_a_pinned_sweep_lists_whose_baseline_goes_asks_again_and_refuses_a_list_that_changed(lab):
    engine, base, newer = lab  # base: simplenet's baseline, pinned by ada@lab
    at = ok(page("queue"))
    at.selectbox(key="record_sweep").set_value(base)
    at = ok(at.run())
    at.text_input(key=f"record_delete_confirm_{base}").set_value(str(base))
    at = ok(at.run())
    at = ok(at.button(key=f"record_delete_{base}").click().run())
    pin = team.baselines(engine)["simplenet"]
    shown = [f"• the baseline of simplenet (the whole sweep), pinned by ada@lab at {pin.pinned_at:%Y-%m-%d %H:%M} UTC",
             "• 1 compile cache bundle kept from its jobs (6 bytes), which portable jobs of any sweep load"]
    assert asked(at) == ["\n".join(shown)]  # as text, not markup
    assert any(f"Deleting sweep {base} also removes" in m.value for m in at.markdown) and base in team.meta(engine)
    # asked in the popover's place: an open popover survives a rerun in the browser and would cover the question
    assert not [b for b in at.button if b.key == f"record_delete_{base}"]
    at = ok(at.button(key=f"record_delete_keep_{base}").click().run())  # kept: nothing asked, nothing gone
    assert not asked(at) and base in team.meta(engine) and team.baselines(engine)["simplenet"].sweep_id == base

    at.text_input(key=f"record_delete_confirm_{base}").set_value(str(base))
    at = ok(at.run())
    at = ok(at.button(key=f"record_delete_{base}").click().run())
    team.unpin_baseline(engine, "simplenet", "eve@lab")  # while the list is on screen, <eve> pins it again
    team.pin_baseline(engine, "simplenet", base, "<b>eve</b>@lab")
    at = ok(at.button(key=f"record_delete_also_{base}").click().run())
    assert base in team.meta(engine) and team.baselines(engine)["simplenet"].pinned_by == "<b>eve</b>@lab"
    assert any("changed since it was listed; nothing was deleted" in w.value for w in at.warning)
    (again,) = asked(at)
    assert "pinned by <b>eve</b>@lab" in again  # the new list, shown as typed, as text
    at = ok(at.button(key=f"record_delete_also_{base}").click().run())
    assert base not in team.meta(engine) and team.baselines(engine) == {}
    (event,) = [e for e in team.events(engine, base) if e.action == "delete"]
    assert [b["pinned_by"] for b in event.detail["baselines"]] == ["<b>eve</b>@lab"]
    assert any(md("pinned by <b>eve</b>@lab") in s.value for s in at.success)  # the deletion said, escaped
    at.text_input(key=f"record_delete_confirm_{newer}").set_value(str(newer))  # the last sweep: said all the same
    at = ok(ok(at.run()).button(key=f"record_delete_{newer}").click().run())
    at = ok(at.button(key=f"record_delete_also_{newer}").click().run())
    assert team.meta(engine) == {} and any(md(f"Sweep {newer} deleted with 1 job") in s.value for s in at.success)


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_submit_form_stores_tags_and_a_note_and_refuses_a_bad_tag_by_its_field(lab):
    engine, base, newer = lab
    models = [info.to_dict() for info in zoo.model_infos(zoo.catalog()).values()]
    queue.register_worker(engine, "host:2:any:test", "host", 2, None,
                          {"devices": ["cpu"], "device_name": None, "torch_version": "2.13.0", "models": models})
    at = ok(page("submit"))
    at.text_input(key="f_tags").input("bad tag!").run()
    assert any("Tags" in e.value and "is not a tag" in e.value for e in at.error) and at.button(key="f_submit").disabled
    at.text_input(key="f_tags").input("from-form, nightly").run()
    at.text_area(key="f_note").input("why: the form").run()
    ok(at.button(key="f_submit").click().run())
    (sweep_id,) = set(team.meta(engine)) - {base, newer}
    m = team.meta(engine, [sweep_id])[sweep_id]
    assert (m.tags, m.note, m.submitter) == (("from-form", "nightly"), "why: the form", queue.whoami())
    at = ok(page("queue"))
    table = at.dataframe[0].value
    assert set(table.loc[table["sweep"] == sweep_id, "submitted by"]) == {queue.whoami()}


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_compare_finds_a_sweep_by_its_tag_and_leaves_archived_ones_out_of_its_pickers(lab):
    engine, base, newer = lab
    at = ok(page("compare", kind="sweeps"))
    options = at.selectbox(key="a").options
    assert any("#nightly" in o and "ada@lab" in o for o in options)  # the label ends with submitter and tags
    team.archive(engine, base, "bob@lab")
    at = ok(page("compare", kind="sweeps"))
    assert not any("#nightly" in o for o in at.selectbox(key="a").options)
    at = ok(page("compare", kind="sweeps", archived="true"))
    assert any("#nightly" in o for o in at.selectbox(key="a").options)


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_record_form_keeps_a_colleagues_edit_made_while_it_was_open(lab):
    engine, base, newer = lab
    at = ok(page("queue"))
    at.selectbox(key="record_sweep").set_value(newer)
    at = ok(at.run())
    at.text_area(key=f"record_note_{newer}").set_value("mine")  # typed, not saved yet
    team.edit_tags(engine, newer, "bob@lab", add=["fromcli"])  # meanwhile, from the CLI
    at = ok(at.button(key=f"FormSubmitter:record_form_{newer}-Save tags and note").click().run())
    m = team.meta(engine, [newer])[newer]
    assert (m.tags, m.note) == (("fromcli",), "mine")  # the colleague's tag kept, the note saved
    team.set_note(engine, newer, "bob@lab", "theirs")
    at = ok(at.run())  # an untouched form shows what is stored now
    assert at.text_area(key=f"record_note_{newer}").value == "theirs"
    assert at.text_input(key=f"record_tags_{newer}").value == "fromcli"


def test_results_says_who_submitted_the_sweeps_in_view(lab):
    at = ok(page("results"))
    assert any(c.value == f"Submitted by {md('ada@lab')} (2 sweeps)" for c in at.caption)


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_results_shows_the_tags_and_note_of_the_sweeps_in_view_as_typed(lab):
    engine, base, newer = lab
    team.set_note(engine, newer, "bob@lab", "**not bold** <b>x</b>\nsecond line")
    at = ok(page("results"))
    captions = [c.value for c in at.caption]
    assert f"Sweep {base}: tags nightly" in captions and f"Sweep {newer} · note:" in captions
    assert "**not bold** <b>x</b>\nsecond line" in [t.value for t in at.text]  # st.text: never Markdown
    at = ok(page("results", tag="nightly"))  # the view narrowed to one sweep: only its record
    assert not any(f"Sweep {newer}" in c.value for c in at.caption)
