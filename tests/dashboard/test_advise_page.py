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
