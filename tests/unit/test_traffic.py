"""Traffic streams (lab.traffic, issue 29): what a user types becomes the same seeded stream every time, bad input
names its field and stores nothing, padding rounds up, and a stream's answer (totals, break-even, counts) follows
from its calls; the Submit form and the CLI take a stream the same way."""
import json

import pytest

from dashboard.data.submission import FormValues, plan
from db import queue
from db.database import get_engine
from db.results import export_records
from lab import traffic
from lab.checks import SpecError
from lab.spec import ExperimentSpec, ModelInfo, ParamInfo
from lab.sweep import SweepRequest

CATALOG = {"mlp": ModelInfo("mlp", "an MLP"),
           "transformer": ModelInfo("transformer", "a transformer", params=(ParamInfo("seq_len", 128, maximum=1024),),
                                    size_dim="seq_len")}


def test_a_drawn_stream_is_seeded_within_its_range_and_the_same_every_time():
    name, sizes = traffic.draw("uniform:1..512", 200)
    assert name == "uniform 1..512" and len(sizes) == 200 and min(sizes) >= 1 and max(sizes) <= 512
    assert len(set(sizes)) > 100  # a real spread, not one size
    assert traffic.draw("uniform: 1 .. 512", 200)[1] == sizes  # every job of a sweep replays the same calls
    chat = traffic.draw("chat:1..512", 500)[1]
    assert max(chat) <= 512 and sorted(chat)[250] < 200 and max(chat) > 300  # mostly short, a long tail


def test_listed_sizes_replay_in_order_and_a_histogram_draws_its_counts():
    assert traffic.draw("8, 16\n32", None) == ("3 sizes as given", [8, 16, 32])
    assert traffic.draw("8, 16", 5)[1] == [8, 16, 8, 16, 8]
    name, sizes = traffic.draw("128: 30\n512: 10", 400)  # with a number of calls: drawn in its proportions
    assert name == "histogram of 2 sizes" and set(sizes) == {128, 512}
    assert 0.65 < sizes.count(128) / 400 < 0.85
    name, sizes = traffic.draw("128: 40\n512: 3\n64: 0")  # without: its counts, exactly, in a seeded order
    assert name == "histogram of 2 sizes" and (sizes.count(128), sizes.count(512), len(sizes)) == (40, 3, 43)
    assert sizes != sorted(sizes) and traffic.draw("128: 40\n512: 3")[1] == sizes


@pytest.mark.parametrize("text,calls,field", [("", None, "traffic"), ("uniform:9..3", None, "traffic"),
                                              ("8, x", None, "traffic"), ("8: x", None, "traffic"),
                                              ("uniform:1..8", 0.5, "calls"), ("uniform:1..8", 5000, "calls"),
                                              ("0, 8", None, "traffic"), ("8: 0", None, "traffic"),
                                              ("\u00b2", None, "traffic"), ("9" * 5000, None, "traffic"),
                                              ("8: 3000", None, "traffic")])
def test_bad_streams_name_their_field(text, calls, field):
    with pytest.raises(SpecError) as e:
        traffic.draw(text, calls)
    assert e.value.field == field


def test_padding_rounds_up_to_the_bucket():
    assert [traffic.padded(s, 64) for s in (1, 64, 65, 511)] == [64, 64, 128, 512]
    assert traffic.padded(37, None) == 37
    assert traffic.make("1, 65", None, 64) == {"source": "2 sizes as given", "sizes": [1, 65], "bucket": 64}
    with pytest.raises(SpecError) as e:
        traffic.make("1, 65", None, -4)
    assert e.value.field == "bucket"


def test_the_answer_totals_both_sides_finds_break_even_and_counts_events():
    calls = [{"size": 8, "padded": 8, "eager_s": 1.0, "compiled_s": 5.0, "compiles": 1},
             {"size": 9, "padded": 9, "eager_s": 1.0, "compiled_s": 0.2, "compiles": 0},
             {"size": 9, "padded": 9, "eager_s": 1.0, "compiled_s": 0.2, "compiles": 0},
             {"size": 7, "padded": 7, "eager_s": 1.0, "compiled_s": 2.0, "compiles": 1, "recompiles": 1},
             {"size": 6, "padded": 6, "eager_s": 1.0, "compiled_s": 1.0, "compiles": 0, "limit_hit": True,
              "fallback": True}] + [{"size": 9, "padded": 9, "eager_s": 1.0, "compiled_s": 0.2, "compiles": 0}] * 10
    out = traffic.summarize(calls)
    assert out["eager_total_s"] == pytest.approx(15.0) and out["compiled_total_s"] == pytest.approx(10.4)
    assert out["ratio"] == pytest.approx(10.4 / 15)
    # running totals: compiled 5, 5.2, 5.4, 7.4, 8.4, 8.6, ... 9.2, 9.4; eager 1, 2, ... 9, 10: under from call 10 on
    assert out["break_even_call"] == 9
    assert (out["compiles"], out["recompiles"], out["limit_hits"], out["fallback_calls"]) == (2, 1, 1, 1)
    assert (out["distinct_sizes"], out["complete"]) == (4, True)
    never = traffic.summarize([{"size": 8, "padded": 8, "eager_s": 1.0, "compiled_s": 3.0}])
    assert never["break_even_call"] is None and never["ratio"] == pytest.approx(3.0)


def test_a_call_that_failed_ends_the_comparison_there():
    calls = [{"size": 8, "padded": 8, "eager_s": 1.0, "compiled_s": 2.0},
             {"size": 4096, "padded": 4096, "eager_s": None, "compiled_s": None, "error": "eager call failed: OOM"}]
    out = traffic.summarize(calls)
    assert (out["calls"], out["calls_compared"], out["complete"]) == (2, 1, False)
    assert out["eager_total_s"] == pytest.approx(1.0)


def test_a_job_without_a_stream_keeps_the_configuration_key_it_had_before_streams():
    from lab.spec import spec_key

    spec = ExperimentSpec(model="mlp", batch_size=8)
    assert "traffic" not in spec.to_dict() and ExperimentSpec.from_dict(spec.to_dict()) == spec
    before = {k: v for k, v in spec.to_dict().items()}  # what a job stored before this field existed
    assert spec_key(spec.to_dict()) == spec_key(before)
    assert "traffic" in ExperimentSpec(model="mlp", batch_size=8, traffic=traffic.make("8")).to_dict()


def test_the_spec_checks_a_stream_against_the_models_size_range_and_a_schedule():
    stream = traffic.make("uniform:1..512", 50, 64)
    spec = ExperimentSpec(model="transformer", batch_size=2, traffic=stream, device="cpu").check_model(CATALOG)
    assert spec.traffic == stream and ExperimentSpec.from_json(spec.to_json()) == spec
    with pytest.raises(SpecError) as e:  # padded to 1024 + ... fits; 2000 does not
        ExperimentSpec(model="transformer", batch_size=2, traffic=traffic.make("2000", None),
                       device="cpu").check_model(CATALOG)
    assert e.value.field == "traffic" and "seq_len" in str(e.value)
    with pytest.raises(SpecError) as e:
        ExperimentSpec(model="mlp", batch_size=2, traffic=stream, schedule=(8, 16))
    assert e.value.field == "traffic"
    with pytest.raises(SpecError) as e:
        ExperimentSpec(model="mlp", batch_size=2, traffic={"sizes": [8], "speed": 3})
    assert e.value.field == "traffic.speed"


def test_the_form_plans_a_traffic_sweep_and_names_a_bad_field():
    ok = plan(FormValues(model="mlp", device="cpu", traffic="uniform:1..64", calls="30", bucket="16"), CATALOG)
    assert ok.ok and ok.requests[0].traffic["bucket"] == 16 and len(ok.requests[0].traffic["sizes"]) == 30
    for values, field in ((FormValues(model="mlp", device="cpu", traffic="uniform:1..64", calls="many"), "calls"),
                          (FormValues(model="mlp", device="cpu", traffic="8, sixteen"), "traffic"),
                          (FormValues(model="mlp", device="cpu", bucket="16"), "traffic")):
        bad = plan(values, CATALOG)
        assert not bad.ok and bad.error.field == field, (values, bad.error)


def test_a_stored_traffic_job_exports_its_stream_and_nothing_is_half_stored(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path / 'lab.db'}")
    request = SweepRequest(model="mlp", batch_sizes=(8,), device="cpu", traffic=traffic.make("8, 16", 4),
                           process_repeats=1)
    _, job_ids, _ = queue.submit(engine, request, CATALOG)
    (rec,) = export_records(engine, job_ids=job_ids)
    assert rec["traffic"] == {"source": "2 sizes as given", "sizes": [8, 16, 8, 16], "bucket": None}
    assert json.loads(json.dumps(rec["traffic"]))  # plain JSON
    with pytest.raises(SpecError):
        queue.submit(engine, SweepRequest(model="mlp", batch_sizes=(8,), device="cpu",
                                          traffic={"sizes": [8, "x"]}), CATALOG)
    assert len(export_records(engine)) == 1


def test_a_hand_made_traffic_value_never_breaks_an_export(tmp_path):
    from sqlalchemy import update

    from db.engine import atomic
    from db.models import Job

    engine = get_engine(f"sqlite:///{tmp_path / 'lab.db'}")
    _, job_ids, _ = queue.submit(engine, SweepRequest(model="mlp", batch_sizes=(8, 16), device="cpu",
                                                      process_repeats=1), CATALOG)
    for job_id, value in zip(job_ids, ("uniform:1..8", [8, 16])):
        with atomic(engine) as s:
            spec = dict(s.get(Job, job_id).spec)
            s.execute(update(Job).where(Job.id == job_id).values(spec={**spec, "traffic": value}))
    assert [r["traffic"] for r in export_records(engine)] == [None, None]
