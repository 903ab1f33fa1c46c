"""Results at a dozen configurations: short labels with the rest in a caption, warmup and break-even as one row per
configuration, and a break-even chart that steps aside with a line when nothing pays off."""
import json

from bench.screens import SHAPE
from bench.synthetic import fill
from db import queue
from db.models import JobStatus
from db.spec import ModelInfo, SweepRequest
from tests.dashboard.test_pages import lab, ok, page, texts  # noqa: F401  (lab: a fixture)


def spec(at, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


def test_twelve_configurations_read_as_rows_with_short_labels(lab):  # noqa: F811 (the fixture)
    fill(lab, 12, seed=2, device="cuda", rounds=20, **SHAPE)
    at = ok(page("results", chart="Warmup"))  # the Speedup tab draws one chart at a time, named in the link
    assert any(t.startswith("Every configuration here: inference · cuda · float32") and "inductor" in t
               for t in texts(at.caption))
    rows = spec(at, "plot_warmup")["layout"]["yaxis"]["categoryarray"]
    assert len(rows) == 12 and "max-autotune · dynamic=true · bs 32" in rows and not any("inductor" in r for r in rows)
    assert spec(ok(page("results", chart="Break-even")), "plot_break_even")["layout"]["yaxis"]["categoryarray"] == rows
    answer = at.dataframe[0].value
    assert set(answer["config"]) == {r.rsplit(" · bs ", 1)[0] for r in rows}  # the table and the plots agree


def test_break_even_steps_aside_when_compiling_never_pays_off(lab):  # noqa: F811 (the fixture)
    catalog = {"simplenet": ModelInfo("simplenet", "d")}
    queue.submit(lab, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", dynamics=[True, False]), catalog)
    for _ in range(2):
        claim = queue.claim_next(lab, "w", ["cpu"], ["simplenet"], 60)
        queue.finish(lab, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": 1.0, "compiled_ms": 1.25, "speedup": 0.8, "eager_first_call_s": 0.01,
            "compiled_first_call_s": 4.0, "compiled_second_call_s": 0.002, "device_name": "cpu"})
    at = ok(page("results", chart="Break-even"))
    assert not at.get("plotly_chart")  # no empty chart: a line says why
    assert any("compiling never pays off here" in t for t in texts(at.caption))
    assert [c.key for c in ok(page("results", chart="Warmup")).get("plotly_chart")] == ["plot_warmup"]
