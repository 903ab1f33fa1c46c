"""A run whose host ran slower in part of its rounds says so on its job page, with each part's speedup (lab.host_pace):
the record the child wrote, through the database, on the page; a run whose host kept its pace says nothing."""
from dashboard.markup import md
from db import queue
from db.models import JobStatus
from lab import host_pace
from lab.sweep import SweepRequest
from runner import zoo
from tests.dashboard.test_pages import lab, ok, page, worker  # noqa: F401 (fixtures)


def _job(engine, pace, first_call_pace=None) -> int:
    _, (job_id,), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu",
                                                        process_repeats=1), zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 0.15, "compiled_ms": 0.21, "speedup": 0.72, "compiled_first_call_s": 2.7,
                         "eager_first_call_s": 0.02,
                         "detail": {"host_pace": pace, "first_call_pace": first_call_pace}})
    return job_id


def test_the_job_page_says_where_the_hosts_pace_moved_and_what_each_part_read(worker):  # noqa: F811
    engine = worker
    rounds = {host_pace.KEY: [25.0] * 40 + [45.0] * 20, "eager": [[0.15]] * 40 + [[0.18]] * 20,
              "compiled": [[0.20]] * 40 + [[0.27]] * 20}
    moved = _job(engine, host_pace.split(rounds), host_pace.around(44.0, 46.0))  # what runner.child.recording stores
    text = " ".join(c.value for c in ok(page("job", job=str(moved))).caption)
    assert "The host's own pace moved during the rounds: a fixed piece of Python took 45 us in 33% of them" in text
    assert "the speedup read 0.67x in the slow rounds, 0.75x in the rest (60 rounds)" in text
    assert "The host's pace: a fixed piece of Python took 25 us before each round (the median of 60" in text
    assert ("around the compiled first call: the same piece of Python took 44 us just before it and 46 us just after "
            "(25 us through the rounds). The host ran slower while it compiled") in text
    steady = _job(engine, host_pace.split({k: v[:40] for k, v in rounds.items()}))
    text = " ".join(c.value for c in ok(page("job", job=str(steady))).caption)
    assert "own pace" not in text and "took 25 us before each round (the median of 40" in text
    assert "compiled first call" not in text  # no probes around its compile: nothing said of them
    older = _job(engine, None)  # stored before the probes were kept
    assert "pace" not in " ".join(c.value for c in ok(page("job", job=str(older))).caption)


def test_a_compile_another_process_disturbed_says_so_on_its_job_page_as_text(worker):  # noqa: F811
    """The child's reading around the compiled first call (runner.child.disturbance.Around), stored with the result,
    is said on the job page in the worker's words, markup shown literally; a quiet compile says nothing."""
    engine = worker
    cause = "other processes used 0.9 of the job's 2 cores during the compile (**chromium** (pid 7) 0.9)"
    _, (job_id,), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu",
                                                        process_repeats=1), zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 0.15, "compiled_ms": 0.21, "speedup": 0.72, "compiled_first_call_s": 9.7,
                         "eager_first_call_s": 0.02, "first_call_cache": "cold", "first_call_disturbed": True,
                         "detail": {"first_call_disturbance": {"causes": [cause], "window_s": 9.7}}})
    (warning,) = [w.value for w in ok(page("job", job=str(job_id))).warning if "compiled first call" in w.value]
    assert warning.startswith(
        f"Its compiled first call met what a fresh process of your script would not: {md(cause)}. ") and "**" not in warning
    assert "left out of its configuration's cold figure" in warning
    quiet = _job(engine, None)
    assert not [w for w in ok(page("job", job=str(quiet))).warning if "compiled first call" in w.value]
