"""Results refreshes itself when results land in view, and says how many and when; results out of view (another
model under a model filter) do not count."""
import pytest

from bench.synthetic import fill
from db import queue
from db.models import JobStatus
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.dashboard.test_pages import lab, ok, page, texts  # noqa: F401  (lab: a fixture)

CATALOG = {m: ModelInfo(m, "d") for m in ("simplenet", "mlp")}


def finish_one(engine, model: str) -> None:
    queue.submit(engine, SweepRequest(model=model, batch_sizes=[8], device="cpu"), CATALOG)
    claim = queue.claim_next(engine, "w", ["cpu"], [model], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 4.3, "compiled_ms": 2.9, "speedup": 1.48, "device_name": "cpu"})


def news(at) -> list[str]:
    return [t for t in texts(at.caption) if "updates itself as results land" in t]


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_new_results_in_view_are_counted_and_others_are_not(lab):  # noqa: F811 (the fixture)
    fill(lab, 24, seed=2, device="cpu", ceilings=False, models=("simplenet",))
    at = ok(page("results", model="simplenet"))
    assert news(at) and not any("new result" in t for t in news(at))
    finish_one(lab, "mlp")  # out of view: the model filter keeps simplenet
    ok(at.run())
    assert not any("new result" in t for t in news(at))
    finish_one(lab, "simplenet")
    finish_one(lab, "simplenet")
    ok(at.run())
    assert any(t.startswith(":material/autorenew: 2 new results, updated ") for t in news(at)), news(at)
    assert [m.value for m in at.metric if m.label == "Jobs shown"] == ["26"]
