"""What a hand-edited link or a damaged row does to a page, through Streamlit's AppTest on a real SQLite file:
a job id that is no id (inf, 1e309, 5,000 digits) is said under its field, a 5,000-digit batch size under its
field, and a damaged artifact in its own place, while the rest of the page is drawn as ever."""
import pytest

from db import queue
from db.engine import atomic
from db.models import Artifact, JobStatus
from lab import artifact_files
from tests.dashboard.test_pages import lab, ok, page, submit_some, texts, worker  # noqa: F401  (fixtures)


@pytest.mark.parametrize("name,job", [("job", "inf"), ("job", "1e309"), ("queue", "1e400"), ("job", "9" * 5000),
                                      ("job", "-3"), ("job", "1.5"), ("queue", "9223372036854775808")])
@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_link_naming_no_job_id_says_so_under_the_field(worker, name, job):  # noqa: F811 (the fixture)
    at = ok(page(name, job=job))
    (error,) = [e.value for e in at.error]
    assert error.startswith("Job id: ") and "is not a job id" in error and len(error) < 200
    assert not at.warning or "No job" not in at.warning[0].value  # nothing was looked up under another number


def test_a_link_naming_a_job_still_opens_it(worker):  # noqa: F811 (the fixture)
    (job_id, _) = submit_some(worker, 2)
    at = ok(page("job", job=str(job_id)))
    assert not at.error and any(f"#{job_id}" in m.value for m in at.markdown)
    (sweep,) = [link.proto for link in at.get("page_link") if "its results" in link.proto.label]  # names its sweep
    assert sweep.label.replace("\\", "").startswith("of sweep #1 ") and sweep.page == "results" and \
        sweep.query_string.startswith("sweep=%231+"), sweep
    at = ok(page("queue", job=str(job_id)))
    assert not at.error and any(f"#{job_id}" in m.value for m in at.markdown)


def test_a_5000_digit_batch_size_on_submit_is_an_error_under_the_field(worker):  # noqa: F811 (the fixture)
    at = ok(page("submit"))
    at.text_input(key="f_batch").set_value("8, " + "9" * 5000).run()
    assert not at.exception
    assert any("Batch sizes" in e.value and "too large" in e.value for e in at.error), texts(at.error)
    assert at.button(key="f_submit").disabled
    assert queue.status_counts(worker) == {}


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_damaged_artifact_is_said_in_its_place_and_the_rest_of_the_job_page_is_drawn(worker, tmp_path):  # noqa: F811
    (job_id,) = submit_some(worker, 1)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    artifact_files.write_dir(tmp_path, {"output_code": "def call(args): pass\n", "tlparse": b"PK not a zip"})
    queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED, artifacts=artifact_files.read_dir(tmp_path),
                 log_tail="the child's last words",
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 9.5,
                         "detail": {}})
    with atomic(worker) as s:
        s.query(Artifact).filter(Artifact.name == "output_code").update({"data": b"\x1f\x8b damaged"})
    at = ok(page("job", job=str(job_id)))
    errors = texts(at.error)
    assert len(errors) == 2 and "is damaged" in errors[0] and "tlparse report cannot be shown" in errors[1], errors
    assert {m.label: m.value for m in at.metric}["Speedup"] == "2.000×"  # the rest: the numbers,
    assert any("the child's last words" in c.value for c in at.code)  # and the log tail below the artifacts
