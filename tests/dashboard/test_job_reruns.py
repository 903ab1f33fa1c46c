"""The job page's note on a disturbed run says what happened to it: re-run (by which job) where the sweep's budget
queued one, not re-run where the sweep allowed none (--reruns 0). Real SQLite, the queue as a worker drives it."""
from db import queue
from db.models import JobStatus
from lab.sweep import SweepRequest
from runner import zoo
from tests.dashboard.test_pages import lab, ok, page, worker  # noqa: F401 (fixtures)

CAUSE = "another process used 0.9 of the worker's cores"


def disturbed_job(engine, reruns: int) -> tuple[int, list[int]]:
    infos = zoo.model_infos(zoo.catalog())
    _, (job_id,), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu",
                                                        reruns=reruns, process_repeats=1), infos)
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
        "eager_ms": 1.0, "compiled_ms": 0.5, "speedup": 2.0, "round_speedup": 2.0, "round_speedup_se": 0.01,
        "device_name": "cpu", "disturbed": True, "noisy": True, "noise_note": CAUSE})
    later = [j["job_id"] for j in queue.jobs_overview(engine) if j["job_id"] != job_id]
    return job_id, later


def disturbed_note(at) -> str:
    [note] = [w.value for w in at.warning if w.value.startswith("Disturbed")]
    return note


def test_a_disturbed_run_of_a_sweep_with_no_reruns_says_it_was_not_re_run(worker):  # noqa: F811
    job_id, later = disturbed_job(worker, reruns=0)
    assert later == []
    note = disturbed_note(ok(page("job", job=str(job_id))))
    assert "was re-run" not in note, note
    assert "not re-run: its sweep allows no re-runs (--reruns 0)" in note, note


def test_a_disturbed_run_that_was_re_run_names_the_re_run(worker):  # noqa: F811
    job_id, later = disturbed_job(worker, reruns=2)
    assert len(later) == 1
    note = disturbed_note(ok(page("job", job=str(job_id))))
    assert f"it was re-run as job #{later[0]}" in note, note
