"""A job's timeline (lab.timeline): ordered, gaps named, adds up to claim -> stored."""
import pytest

from db import results
from lab import timeline
from lab.timeline import UNACCOUNTED, Phases, assemble


def iv(phase, start, end):
    return {"phase": phase, "start": start, "end": end}


def test_gaps_become_unaccounted_entries_in_order_and_the_sum_is_the_span():
    t0 = 1000.0
    tl = assemble([iv("rounds", t0 + 5, t0 + 8), iv("claim", t0, t0 + 0.5), iv("model build", t0 + 1, t0 + 4)],
                  t0, t0 + 10)
    assert [e["phase"] for e in tl] == ["claim", UNACCOUNTED, "model build", UNACCOUNTED, "rounds", UNACCOUNTED]
    assert [round(e["start"], 6) for e in tl] == [0, 0.5, 1, 4, 5, 8]
    assert [round(e["seconds"], 6) for e in tl] == [0.5, 0.5, 3, 1, 3, 2]
    assert sum(e["seconds"] for e in tl) == pytest.approx(10.0)
    # each entry starts where the one before it ended
    for a, b in zip(tl, tl[1:]):
        assert b["start"] == pytest.approx(a["start"] + a["seconds"])


def test_overlaps_are_clipped_and_outside_the_span_dropped():
    t0 = 0.0
    tl = assemble([iv("a", -1, 2), iv("b", 1, 3), iv("late", 9, 12), iv("gone", 20, 21)], t0, 10)
    assert [(e["phase"], e["start"], e["seconds"]) for e in tl] == [
        ("a", 0, 2), ("b", 2, 1), (UNACCOUNTED, 3, 6), ("late", 9, 1)]
    assert timeline.total_s(tl) == pytest.approx(10)


def test_a_sliver_between_phases_goes_to_the_phase_before_and_nothing_at_all_is_one_unaccounted_entry():
    tl = assemble([iv("a", 0, 1), iv("b", 1 + timeline.MIN_GAP_S / 2, 2)], 0, 2)
    assert [e["phase"] for e in tl] == ["a", "b"]
    assert timeline.total_s(tl) == pytest.approx(2)
    assert assemble([], 5, 7) == [{"phase": UNACCOUNTED, "start": 0, "seconds": 2}]


def test_measured_and_overhead_and_the_sweep_share():
    tl = assemble([iv("claim", 0, 1), iv("eager first call", 1, 2), iv("compiled first call", 2, 5),
                   iv("warm-up", 5, 6), iv("rounds", 6, 8), iv("profiler", 8, 9)], 0, 10)
    assert timeline.measured_s(tl) == pytest.approx(7)
    assert timeline.overhead_s(tl) == pytest.approx(3)
    assert timeline.by_phase(tl)[UNACCOUNTED] == pytest.approx(1)
    assert timeline.sweep_share([tl, tl, None], 20) == pytest.approx(0.7)
    assert timeline.sweep_share([None], 20) is None and timeline.overhead_s(None) is None


def test_carve_splits_a_cost_off_the_end_of_the_last_phase_of_that_name():
    p = Phases()
    p.add("compiled first call", 0, 1)
    p.add("compiled first call", 2, 6)
    p.carve("compiled first call", "trace capture", 1.5)
    p.carve("compiled first call", "too much", 100)  # never more than the phase holds
    tl = assemble(p.intervals, 0, 6)
    assert [(e["phase"], e["start"], e["seconds"]) for e in tl] == [
        ("compiled first call", 0, 1), (UNACCOUNTED, 1, 1), ("too much", 2, 2.5), ("trace capture", 4.5, 1.5)]


def test_a_jobs_timeline_joins_the_workers_steps_and_the_childs_phases():
    steps = Phases()
    steps.add("claim", 0, 0.1)
    steps.add("job setup", 0.1, 0.2)
    steps.marks.update(spawned=0.2, **{"child exited": 5.0})
    steps.add("store", 5.5, 5.6)
    child = [iv("model build", 0.6, 1.0), iv("compiled first call", 1.0, 4.0), iv("record", 4.0, 4.8)]
    tl = timeline.for_job(steps, child, written_at=4.9, t0=0, t_end=5.6)
    assert [e["phase"] for e in tl] == ["claim", "job setup", "child start", "model build", "compiled first call",
                                        "record", UNACCOUNTED, "result write", UNACCOUNTED, "store"]
    assert timeline.by_phase(tl)["child start"] == pytest.approx(0.4)
    assert timeline.by_phase(tl)["result write"] == pytest.approx(0.1)
    assert timeline.total_s(tl) == pytest.approx(5.6)


def test_the_work_of_one_call_is_counted_once_per_model_and_sizes(tmp_path, monkeypatch):
    from runner.child.capture import roofline_work as work

    counts = []

    def count():
        counts.append(1)
        return {"flops": 2.0 * len(counts), "min_bytes": 8.0}

    key = {"model": "simplenet", "batch_size": 8, "dtype": "float32", "task": "inference", "device": "cpu"}
    monkeypatch.delenv(work.CACHE_ENV, raising=False)
    assert work.cached_work(key, count) == ({"flops": 2.0, "min_bytes": 8.0}, False)  # no cache: counted
    monkeypatch.setenv(work.CACHE_ENV, str(tmp_path / "cache"))
    first = work.cached_work(key, count)
    assert first == ({"flops": 4.0, "min_bytes": 8.0}, False)
    assert work.cached_work(dict(key), count) == (first[0], True) and len(counts) == 2  # the same answer, not counted
    assert work.cached_work({**key, "batch_size": 32}, count)[1] is False and len(counts) == 3


def test_a_timeline_is_stored_with_its_result_and_read_back_for_the_sweep(any_db_url):
    """SQLite and PostgreSQL: the second write puts the timeline into the stored result's detail, keeps the rest of
    the detail, and the export and the sweep's share read it."""
    from db import queue
    from db.database import get_engine
    from db.models import JobStatus
    from db.results import export_records
    from lab.sweep import SweepRequest
    from runner import zoo

    engine = get_engine(any_db_url)
    sweep_id, _, _ = queue.submit(engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[8], device="cpu"),
                                  zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    detail = {"measure_s": 3.0, "trace_overhead_s": 0.1}
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                        result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "detail": detail})
    tl = assemble([iv("claim", 0, 0.1), iv("compiled first call", 0.5, 2.5), iv("rounds", 2.5, 3.0)], 0, 3.2)
    assert results.store_timeline(engine, claim.job_id, detail, tl)
    (rec,) = export_records(engine, job_ids=[claim.job_id])
    assert rec["timeline"] == tl
    share = results.sweep_measurement(engine, sweep_id)
    assert share["jobs"] == 1 and share["measured_s"] == pytest.approx(2.5) and share["wall_s"] >= 0


def test_the_timeline_bars_legend_names_the_long_steps_and_groups_the_short_ones():
    """A real job's timeline has 25-30 phases; its legend named every one (27 entries). Now: the measurement, the
    longest lab steps and unaccounted time, the rest under one entry; every phase still named on hover."""
    from dashboard.charts import timeline_bar

    phases = [{"phase": f"step {i}", "start": float(i), "seconds": 0.01 * (i + 1)} for i in range(20)]
    phases += [{"phase": m, "start": 30.0 + k, "seconds": 1.0} for k, m in enumerate(timeline.MEASURED)]
    phases.append({"phase": UNACCOUNTED, "start": 40.0, "seconds": 0.1})
    fig = timeline_bar.bar(phases)
    legend = {t.name for t in fig.data}
    assert len(legend) == len(timeline.MEASURED) + timeline_bar.LEGEND_OVERHEAD + 2  # + unaccounted + the rest
    assert {f"step {i}" for i in range(14, 20)} <= legend and "step 0" not in legend
    assert timeline_bar.OTHER_STEPS in legend
    hovered = {name for t in fig.data for name in (row[3] for row in t.customdata)}
    assert {f"step {i}" for i in range(20)} <= hovered


def test_a_repeats_re_timed_launch_settings_are_measurement_and_named_so():
    """A repeat's re-timing is what a fresh process's first call pays to pick its launch settings: measurement, drawn
    in the measurement's colours and named in the sentence under the bar; not the lab's overhead."""
    from dashboard.charts import timeline_bar

    tl = [{"phase": "child start", "start": 0.0, "seconds": 0.3},
          {"phase": "compiled first call", "start": 0.3, "seconds": 1.2},
          {"phase": timeline.RETIMED, "start": 1.5, "seconds": 1.0},
          {"phase": "rounds", "start": 2.5, "seconds": 1.5}]
    assert timeline.overhead_s(tl) == pytest.approx(0.3)
    sentence = timeline_bar.summary(tl)
    assert "first calls, launch settings re-timed, warm-up, rounds) 3.70 s" in sentence and "overhead 0.30 s" in sentence
    kinds = dict(zip(timeline_bar.frame(tl)["phase"], timeline_bar.frame(tl)["kind"]))
    assert kinds[timeline.RETIMED] == "measurement"
    assert timeline_bar.colors(timeline_bar.frame(tl))[timeline.RETIMED] in timeline_bar.MEASURED_COLORS
