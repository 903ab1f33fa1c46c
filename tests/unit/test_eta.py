"""lab.eta: stages from a finished job's timeline, the fallback from the same settings to the same model to no history,
a running job's time left in words, a queued job's start on the earliest-free worker, a sweep's end."""
import pytest

from lab import eta


def timeline(compile_s: float, rounds_s: float = 4.0) -> list[dict]:
    """A finished job's timeline as lab.timeline.assemble gives it: claim, child start, build, first calls, rounds."""
    steps = [("claim", 0.2), ("child start", 1.8), ("compiler setup", 0.5), ("model build", 1.0),
             ("library warm-up", 0.3), ("eager first call", 0.2), ("accuracy", 0.1), ("memory", 0.1),
             ("compiled first call", compile_s), ("accuracy", 0.1), ("memory", 0.1), ("compile workers", 0.1),
             ("warm-up", 0.4), ("compile workers", 0.0), ("rounds", rounds_s), ("profiler", 1.0), ("record", 0.2),
             ("store", 0.3)]
    out, at = [], 0.0
    for phase, seconds in steps:
        out.append({"phase": phase, "start": at, "seconds": seconds})
        at += seconds
    return out


def test_stages_add_up_to_the_whole_job_and_the_compile_stage_holds_the_compile():
    t = timeline(compile_s=42.0)
    stages = eta.stage_seconds(t)
    assert list(stages) == list(eta.STAGES)
    assert sum(stages.values()) == pytest.approx(sum(e["seconds"] for e in t))
    assert stages["compiling"] == pytest.approx(42.0 + 0.2)  # its accuracy check and memory call follow it
    assert stages["measuring"] == pytest.approx(4.0)
    assert eta.stage_seconds(None) == {}


def test_published_phases_map_to_their_stage():
    assert eta.stage_of(None) == "starting"
    assert eta.stage_of("compiling") == "compiling"
    assert eta.stage_of("diagnosis clocks") == "measuring"
    assert eta.stage_of("counting kernels") == "finishing"


def test_the_same_settings_first_then_the_same_model_then_no_history():
    same = [{"seconds": 60.0, "timeline": timeline(40.0)}]
    model = [{"seconds": 300.0, "timeline": timeline(250.0)}]
    assert eta.typical(same, model).basis == eta.SAME_SETTINGS and eta.typical(same, model).total == 60.0
    assert eta.typical([], model).basis == eta.SAME_MODEL and eta.typical([], model).total == 300.0
    none = eta.typical([], [])
    assert none.basis is None and none.total is None
    left = eta.running(none, "compiling", 30.0, 25.0)
    assert left.left_s is None and left.words() == "compiling, 25 s so far; no history of similar jobs to estimate from"


def test_a_long_compile_says_its_usual_range_its_time_so_far_and_the_time_left():
    jobs = [{"seconds": 60.0 + c, "timeline": timeline(c)} for c in (40.0, 45.0, 50.0, 60.0)]
    typ = eta.typical(jobs, [])
    left = eta.running(typ, "compiling", elapsed_s=29.0, phase_s=25.0)
    lo, hi = left.usual
    assert 40 < lo < hi < 61
    rest = sum(typ.stage(s) for s in ("warming up", "measuring", "finishing"))
    assert left.left_s == pytest.approx(typ.stage("compiling") - 25.0 + rest)
    words = left.words()
    assert words.startswith("compiling, usually ") and ", 25 s so far; about " in words and words.endswith(" left")
    late = eta.running(typ, "compiling", elapsed_s=120.0, phase_s=100.0)
    assert late.late and "(longer than usual)" in late.words()
    assert late.left_s == pytest.approx(rest)  # past its usual length: what comes after it, at least


def test_rounds_with_a_progress_fraction_go_at_their_own_pace():
    typ = eta.typical([{"seconds": 100.0, "timeline": timeline(40.0, rounds_s=20.0)}], [])
    left = eta.running(typ, "measuring", elapsed_s=70.0, phase_s=10.0, progress=0.25)
    assert left.left_s == pytest.approx(30.0 + typ.stage("finishing"))


def test_without_a_timeline_the_whole_jobs_length_less_its_elapsed_time():
    typ = eta.typical([{"seconds": 100.0, "timeline": None}], [])
    assert eta.running(typ, "building", elapsed_s=30.0).left_s == pytest.approx(70.0)


def test_queued_jobs_start_on_the_earliest_free_worker_that_offers_their_device():
    starts = eta.schedule([(3, "cpu", 60.0), (4, "cpu", 60.0), (5, "cuda", 10.0), (6, "cpu", None), (7, "cpu", 5.0)],
                          [(["cpu"], 20.0), (["cpu"], 0.0)])
    assert (starts[3].start_s, starts[3].end_s) == (0.0, 60.0)  # the idle worker
    assert (starts[4].start_s, starts[4].end_s) == (20.0, 80.0)  # the busy one, once its job is done
    assert 5 not in starts  # no live worker offers cuda: it waits for a worker, not for time
    assert starts[6].start_s == 60.0 and starts[6].at_least  # no history: counted as nothing, a lower bound
    assert not starts[6].starts_at_least  # its end is a lower bound, its start is not: what is ahead has history
    assert starts[7].start_s == 60.0 and starts[7].at_least and starts[7].starts_at_least  # behind it on that worker
    assert eta.done_in([starts[3], starts[4]], [20.0]) == (80.0, False)
    assert eta.done_in([starts[3]], [None]) == (60.0, True)  # a running job with no history
    assert eta.done_in([]) is None
    assert eta.in_words((80.0, False)) == "in about 1 min 20 s" and eta.in_words((60.0, True)) == "in 1 min or more"


def test_durations_read_as_people_say_them():
    assert [eta.duration(s) for s in (4.4, 59.6, 200, 3725)] == ["4 s", "1 min", "3 min 20 s", "1 h 2 min"]
    assert eta.span(40, 60) == "40-60 s" and eta.span(50, 200) == "50 s to 3 min 20 s" and eta.span(3, 3.2) == "3 s"


def test_what_rounds_to_no_time_is_said_in_words_not_as_zero_seconds():
    """A walk of a fresh lab read "usually 0 s, 0 s so far; about 0 s left" and "done in 0 s or more"."""
    assert eta.duration(0.2) == "under 1 s" and eta.duration(0.0) == "under 1 s" and eta.duration(0.6) == "1 s"
    assert eta.span(0.1, 0.4) == "under 1 s"
    assert eta.in_words((0.0, False)) == "now" and eta.in_words((0.3, True)) == eta.UNKNOWN
    left = eta.Left("finishing", (0.1, 0.3), 0.2, 0.1, eta.SAME_SETTINGS)
    assert left.words() == "finishing, usually under 1 s, under 1 s so far; due to end about now"
    starts = eta.schedule([(1, "cpu", None), (2, "cpu", 5.0)], [(["cpu"], None)])  # a worker whose job has no history
    assert starts[1].starts_at_least and eta.in_words((starts[1].start_s, starts[1].starts_at_least)) == eta.UNKNOWN
