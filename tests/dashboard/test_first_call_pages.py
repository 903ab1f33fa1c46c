"""The first calls on the pages (AppTest, a real SQLite file, runs stored as a worker stores them): the answer table,
the Warmup chart and the job page separate a sweep's first calls into cold and warm the same way (lab.first_call), a
second sweep of the same settings on none of them; a sweep whose every run was disturbed keeps its numbers on the
header, the charts and the N-calls line."""
import numpy as np
import pytest

from tests.dashboard.test_charts_page import spec
from tests.dashboard.test_pages import _Table, answer_table, lab, ok, page, texts  # noqa: F401 (lab: a fixture)
from tests.first_call_runs import run_sweep

FIRST = {False: (15.72, 2.44), True: (14.75, 3.39)}


def _job_table(at) -> dict[str, list[str]]:
    """The job page's first calls (dashboard.panels.job_parts.first_calls) by kind: its row's cells."""
    (body,) = [h.value for h in at.html if "compiled from" in h.value]
    parsed = _Table()
    parsed.feed(body)
    return {r[0]: r[1:] for r in parsed.rows[1:]}


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_answer_the_warmup_chart_and_the_job_page_agree_on_cold_and_warm(lab):  # noqa: F811
    mine = run_sweep(lab, FIRST, {False: 1.31, True: 1.12}, name="coldwarm")
    other = run_sweep(lab, {False: (31.0, 6.5), True: (29.0, 7.5)}, {False: 1.3, True: 1.1}, name="again")
    at = ok(page("results", sweep="#1 coldwarm", chart="Warmup"))
    table = answer_table(at).set_index("configuration")
    bars = {t["name"]: dict(zip(t["y"], t["x"])) for t in spec(at, "plot_warmup")["data"] if t.get("type") == "bar"}
    for dyn, (cold, warm) in FIRST.items():
        (config,) = [c for c in table.index if c.endswith(f"dynamic={str(dyn).lower()}")]
        # two processes of it compiled cold on this device (this sweep's and the other's): too few for an interval
        assert (table.loc[config, "first call cold s"], table.loc[config, "warm s"]) == (f"{cold:.4g} (one process)",
                                                                                          f"{warm:.4g}")
        assert bars["compiled first call: cold (an empty cache)"][config] == cold
        assert bars["compiled first call: warm (a cache that held it)"][config] == warm
    first, repeat = sorted(j for j, r in mine.items() if r["dynamic"] is False)
    for job in (first, repeat):
        shown = _job_table(ok(page("job", job=str(job))))
        assert shown == {"cold": ["15.72 (one process)", "1", f"#{first}"], "warm": ["2.44", "1", f"#{repeat}"]}
        assert not any(f"#{j}" in " ".join(sum(shown.values(), [])) for j in other)  # another sweep's runs: none


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_an_all_disturbed_sweep_keeps_its_numbers_on_the_header_and_the_n_calls_line(lab):  # noqa: F811
    run_sweep(lab, {False: (15.0, 2.5), True: (16.0, 3.0)}, {False: 2.87, True: 1.4}, disturbed=True)
    at = ok(page("results", chart="N calls"))
    median, best = [m.value for m in at.main.metric if m.label.startswith(("Median speedup", "Best speedup"))]
    assert median.endswith("×") and best == "2.87×"
    said = next(t for t in texts(at.markdown) if t.startswith("For 1,000 calls at bs 8"))
    assert "noisy or failed runs only" not in said
    assert any("every run of every configuration here was disturbed" in t for t in texts(at.caption))
    at = ok(page("results", chart="Break-even"))
    assert not any("No configuration in view has a steady state" in t for t in texts(at.caption))


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_first_call_tab_draws_a_cold_run_as_cold_and_its_process_repeat_as_warm(lab):  # noqa: F811
    """Where the compiled first call goes (First call tab): one real run per bar, and that run of the kind the bar
    says (lab.first_call, as the answer table and the Warmup chart separate them): the cold bar is the 15.72 s first
    run, never the 2.44 s process repeat labelled cold."""
    mine = run_sweep(lab, FIRST, {False: 1.31, True: 1.12}, name="coldwarm")
    at = ok(page("results", sweep="#1 coldwarm", view="First call"))
    drawn = {}  # per row: its total, its job, its cache kind and whether it is hatched
    for t in spec(at, "plot_breakdown")["data"]:
        if t.get("type") != "bar" or t.get("offsetgroup") != "compiled" or not t.get("customdata"):
            continue
        for y, data, shape in zip(t["y"], t["customdata"], t["marker"]["pattern"]["shape"]):
            drawn[y] = (data[1], data[2], data[4], shape == "/")
    assert len(drawn) == 2 * len(FIRST)
    for dyn, (cold, warm) in FIRST.items():
        first, repeat = sorted(j for j, r in mine.items() if r["dynamic"] is dyn)
        rows = {y: d for y, d in drawn.items() if f"dynamic={str(dyn).lower()}" in y}
        assert sorted(rows.values()) == [(warm, repeat, "warm", True), (cold, first, "cold", False)]
        assert [y for y, d in rows.items() if d[2] == "cold"][0].endswith("cold first call")
        assert [y for y, d in rows.items() if d[2] == "warm"][0].endswith("warm first call")


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_compare_gives_each_sweeps_cold_first_call_as_the_answer_table_does(lab):  # noqa: F811
    """Compare's first call is the cold runs' (lab.first_call), named so: a plain median over a cold 15.72 s run and
    its warm 2.44 s process repeat gave 9.08 s, a first call no run had and not the answer table's."""
    run_sweep(lab, FIRST, {False: 1.31, True: 1.12}, name="coldwarm")
    again = {False: (31.0, 6.5), True: (29.0, 7.5)}
    run_sweep(lab, again, {False: 1.3, True: 1.1}, name="again")
    at = ok(page("compare", a="1", b="2"))
    metrics = at.button_group(key="metric")
    assert "first_call_cold_s" in metrics.value and "compiled_first_call_s" not in metrics.options
    numbers = at.dataframe[2].value
    cold = numbers[numbers["metric"] == "first_call_cold_s"].set_index("dynamic")
    for dyn in (False, True):
        row = cold.loc[str(dyn).lower()]
        assert (row["A"], row["B"]) == (f"{FIRST[dyn][0]:.4g}", f"{again[dyn][0]:.4g}")
        assert row["Δ%"] == f"{(again[dyn][0] / FIRST[dyn][0] - 1) * 100:+.1f}%"
    table = answer_table(ok(page("results", sweep="#1 coldwarm"))).set_index("configuration")
    # the answer table's own figures
    assert sorted(c.removesuffix(" (one process)") for c in table["first call cold s"]) == sorted(cold["A"])


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_an_all_disturbed_sweeps_cold_and_warm_rows_are_each_marked_on_the_first_call_tab(lab):  # noqa: F811
    """A configuration whose every run was disturbed is marked on every plot: on the First call tab its cold and its
    warm row alike (the rows a configuration's kinds of first call split into)."""
    run_sweep(lab, {False: (15.0, 2.5), True: (16.0, 3.0)}, {False: 2.87, True: 1.4}, disturbed=True)
    axis = spec(ok(page("results", view="First call")), "plot_breakdown")["layout"]["yaxis"]
    rows = dict(zip(axis["tickvals"], axis["ticktext"]))
    assert sorted(r.rsplit(" · ", 1)[1] for r in rows) == ["cold first call"] * 2 + ["warm first call"] * 2
    assert all("⚠ noisy" in text for text in rows.values()), rows


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_configurations_failures_are_marked_on_its_cold_row_not_a_row_of_their_own(lab):  # noqa: F811
    """A configuration drawn as a cold and a warm row: a failed run of it is marked at its cold row's end, and the
    chart has no third, empty row for it."""
    from db import queue
    from db.models import JobStatus
    from lab.sweep import SweepRequest
    from runner import zoo

    run_sweep(lab, FIRST, {False: 1.31, True: 1.12}, name="coldwarm")
    request = SweepRequest(model="simplenet", batch_sizes=(8,), device="cpu", dynamics=(False,), process_repeats=1,
                           name="broken")
    queue.submit(lab, request, zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(lab, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(lab, claim.job_id, claim.token, JobStatus.FAILED, error="RuntimeError: the compile broke")
    at = ok(page("results", view="First call"))
    figure = spec(at, "plot_breakdown")
    rows = figure["layout"]["yaxis"]["categoryarray"]
    assert len(rows) == 2 * len(FIRST) and all(r.endswith(("cold first call", "warm first call")) for r in rows), rows
    (mark,) = [a for a in figure["layout"]["annotations"] if "✕" in a.get("text", "")]
    assert "dynamic=false" in mark["y"] and mark["y"].endswith("cold first call"), mark["y"]


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_configuration_that_compiled_cold_in_four_sweeps_gets_a_cold_interval_and_every_reader_agrees(lab):  # noqa: F811
    """Four sweeps of the same settings, each first run compiling cold: the fourth sweep's answer table brackets its
    cold first call by all four processes (lab.first_call.bounds), the same interval whether the spreads were read
    from the database (db.reports.spreads) or computed over every run in hand (lab.answer.Runs.spreads), and its
    Warmup chart and job page say it alike; a process repeat's warm first call is no cold one."""
    from db import reports
    from lab import first_call
    from lab.answer import Runs

    colds = {False: (15.72, 17.9, 14.1, 16.6), True: (14.75, 13.2, 16.3, 15.0)}
    done = {}
    for i in range(4):
        done |= run_sweep(lab, {dyn: (c[i], 2.44) for dyn, c in colds.items()}, {False: 1.31, True: 1.12}, name=f"s{i}")
    stored = reports.spreads(lab)
    cols, keys = reports.answer_columns(lab)
    assert Runs(cols, keys).spreads().colds == stored.colds  # the two readers of one database
    assert sorted(s.processes for s in stored.colds.values()) == [4, 4]  # warm repeats: none counted
    at = ok(page("results", sweep="#4 s3", chart="Warmup"))
    table = answer_table(at).set_index("configuration")
    (bar,) = [t for t in spec(at, "plot_warmup")["data"] if t.get("name") == "compiled first call: cold (an empty cache)"]
    drawn = dict(zip(bar["y"], zip(bar["x"], bar["error_x"]["array"], bar["error_x"]["arrayminus"])))
    for dyn, c in colds.items():
        (config,) = [x for x in table.index if x.endswith(f"dynamic={str(dyn).lower()}")]
        mine = first_call.separate([1], [c[3]], ["cold"])["cold"]
        (spread,) = [s for s in stored.colds.values() if abs(s.mean - float(np.mean(np.log(c)))) < 1e-12]
        lo, hi, judged = first_call.bounds(mine, spread)
        assert judged == 4 and lo < c[3] < hi
        assert table.loc[config, "first call cold s"] == f"{c[3]:.4g} [{lo:.3g}, {hi:.3g}]"
        assert drawn[config] == pytest.approx((c[3], hi - c[3], c[3] - lo))  # the Warmup chart's bar, bracketed alike
    (config_false,) = [x for x in table.index if x.endswith("dynamic=false")]  # the job page's cell: the same text
    earlier = answer_table(ok(page("results", sweep="#1 s0"))).set_index("configuration")
    assert all("[" in cell for cell in earlier["first call cold s"])  # the first sweep, read today: the same four
    job = min(j for j, r in done.items() if r["dynamic"] is False and r["made"] == "cold")  # the first sweep's
    assert _job_table(ok(page("job", job=str(job))))["cold"][0] == earlier.loc[config_false, "first call cold s"]


def test_a_disturbed_cold_compiles_own_page_points_at_its_warning_and_its_repeats_page_at_the_job(lab):  # noqa: F811
    """The job page's cold cell names where the cause is said: on the disturbed job's own page the warning above it
    (the cell's "its job" would be that very page), on its process repeat's page that job, listed beside the cell."""
    from db import queue
    from db.models import JobStatus
    from lab.sweep import SweepRequest
    from runner import zoo
    from tests.first_call_runs import result

    cause = "other processes used 0.9 of the job's 2 cores during the compile"
    queue.submit(lab, SweepRequest(model="simplenet", batch_sizes=(8,), device="cpu", dynamics=(False,)),
                 zoo.model_infos(zoo.catalog()))
    made = {}
    while (claim := queue.claim_next(lab, "host:1:any:test", ["cpu"], ["simplenet"], 60)) is not None:
        cold = claim.follow_up is None
        rec = result(15.0 if cold else 2.5, "cold" if cold else "warm", 1.3)
        if cold:  # as runner.child.disturbance.Around records a compile another process met
            rec |= {"first_call_disturbed": True, "detail": {"first_call_disturbance": {"causes": [cause]}}}
        queue.finish(lab, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=rec)
        made["cold" if cold else "warm"] = claim.job_id
    own = ok(page("job", job=str(made["cold"])))
    assert any(w.value.startswith("Its compiled first call met") for w in own.warning)
    assert _job_table(own)["cold"][0] == "15 (its compile disturbed: the warning above says by what)"
    other = ok(page("job", job=str(made["warm"])))
    assert not any("compiled first call met" in w.value for w in other.warning)
    assert _job_table(other)["cold"] == ["15 (its compile disturbed: its job says by what)", "1", f"#{made['cold']}"]
