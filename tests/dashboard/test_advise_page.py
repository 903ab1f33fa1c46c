"""Submit's search form (AppTest, a real SQLite file): a started search's live progress is drawn in one place on the
run that starts it and on every run after. A fragment that refreshes itself and moves between runs is drawn twice while
a full run of the page is under way (the old copy stays until the run ends): two "Its results" links, two headlines."""
from tests.dashboard.test_pages import lab, ok, page, worker  # noqa: F401 (lab, worker: fixtures)


def where(node, starts: str, path: tuple = ()) -> tuple | None:
    """The place on the page of the first markdown that starts with these characters."""
    for i, child in getattr(node, "children", {}).items():
        if getattr(child, "type", "") == "markdown" and str(child.value).startswith(starts):
            return (*path, i)
        found = where(child, starts, (*path, i))
        if found:
            return found
    return None


def test_a_started_searchs_progress_keeps_its_place_on_the_next_run(worker):  # noqa: F811
    at = ok(page("submit"))
    ok(at.button(key="a_open").click().run())
    at.selectbox(key="a_model").set_value("simplenet")
    at.text_input(key="a_batch").input("4")
    at.multiselect(key="a_modes").set_value(["default"])
    at.multiselect(key="a_dynamic").set_value(["false"])
    at.multiselect(key="a_scopes").set_value(["model"])
    ok(at.button[[b.label for b in at.button].index("Start the search")].click().run())
    assert [s.value for s in at.success] == ["Search started as sweep #1: 1 setting, one process each to start."]
    started = where(at.main, "**searching")
    assert started is not None
    ok(at.run())  # the next full run: no search started on it, its message gone
    assert not at.success and where(at.main, "**searching") == started


def test_the_search_forms_errors_name_its_fields_and_store_nothing(worker):  # noqa: F811
    at = ok(page("submit"))
    at.selectbox(key="f_model").set_value("mlp").run()
    ok(at.button(key="a_open").click().run())
    assert at.selectbox(key="a_model").value == "mlp"  # the model the sweep form holds, at first
    for key, value, said in (("a_batch", "abc", "Batch size: expected an integer, got 'abc'"),
                             ("a_batch", "0", "Batch size: must be a positive integer"),
                             ("a_budget", "soon", "Budget: expected a duration like 10m, 600s or 1h, got 'soon'")):
        at.text_input(key="a_batch").input("4")
        at.text_input(key="a_budget").input("30m")
        at.text_input(key=key).input(value)
        ok(at.button[[b.label for b in at.button].index("Start the search")].click().run())
        errors = [e.value for e in at.error]
        assert len(errors) == 1, (value, errors)
        error = errors[0]
        assert error.replace("\\", "").startswith(said), error
    assert not at.success and sweeps_stored(worker) == 0


def sweeps_stored(engine) -> int:
    from sqlalchemy import func, select

    from db.engine import reading
    from db.models import Sweep

    with reading(engine) as s:
        return s.scalar(select(func.count(Sweep.id)))
