"""ExperimentSpec / SweepRequest validation: every bad field named, unknown keys rejected."""
import pytest

from lab.checks import SpecError
from lab.spec import ExperimentSpec, ModelInfo, ParamInfo
from lab.sweep import SweepRequest, split_sizes

CATALOG = {
    "simplenet": ModelInfo("simplenet", "d"),
    "localopt": ModelInfo("localopt", "d", params=(ParamInfo("image_size", 224, minimum=4),
                                                   ParamInfo("scope", "model", choices=("model", "functions")))),
    "sincos": ModelInfo("sincos", "d", tasks=("inference",)),
}


def field_of(fn):
    with pytest.raises(SpecError) as e:
        fn()
    return e.value.field


def test_defaults_live_on_the_dataclass():
    spec = ExperimentSpec(model="simplenet", batch_size=8)
    assert (spec.task, spec.backend, spec.mode, spec.dynamic, spec.fullgraph, spec.cache) == (
        "inference", "inductor", "default", None, False, "cold")
    req = SweepRequest(model="m", batch_sizes=[1])
    assert req.modes == (ExperimentSpec.mode,) and req.dtype == ExperimentSpec.dtype


@pytest.mark.parametrize("bad, field", [
    ({"batch_size": 0}, "batch_size"), ({"batch_size": -4}, "batch_size"), ({"batch_size": True}, "batch_size"),
    ({"batch_size": "x"}, "batch_size"), ({"mode": "fast"}, "mode"), ({"dynamic": "maybe"}, "dynamic"),
    ({"fullgraph": "yes"}, "fullgraph"), ({"device": "tpu"}, "device"), ({"dtype": "float64"}, "dtype"),
    ({"task": "serve"}, "task"), ({"cache": "hot"}, "cache"), ({"iters": 0}, "iters"),
    ({"timeout_s": -1}, "timeout_s"), ({"schedule": [8, 0]}, "schedule"), ({"schedule": "8,16"}, "schedule"),
    ({"backend": "aot_eager", "mode": "max-autotune"}, "mode"), ({"backend": "cudagraphs"}, "backend"),
])
def test_bad_values_name_their_field(bad, field):
    d = {"model": "simplenet", "batch_size": 8, "device": "cpu", **bad}
    assert field_of(lambda: ExperimentSpec.from_dict(d)) == field


def test_unknown_keys_are_rejected_by_name():
    with pytest.raises(SpecError, match="batchsize"):
        ExperimentSpec.from_dict({"model": "m", "batch_size": 1, "batchsize": 2})
    assert field_of(lambda: SweepRequest.from_dict({"model": "m", "batch_sizes": [1], "mode": "x"})) == "mode"


def test_json_round_trip_is_exact():
    spec = ExperimentSpec(model="simplenet", batch_size=8, dynamic="false", fullgraph="true",
                          schedule=["8", 16], device="cpu")
    assert spec.dynamic is False and spec.fullgraph is True and spec.schedule == (8, 16)
    again = ExperimentSpec.from_json(spec.to_json())
    assert again == spec


def test_from_row_rejects_malformed_json():
    class Row:
        spec = "{not json"

    assert field_of(lambda: ExperimentSpec.from_row(Row())) == "spec"


def test_check_model_fills_defaults_and_validates_params():
    spec = ExperimentSpec(model="localopt", batch_size=2, model_args={"scope": "functions"}).check_model(CATALOG)
    assert spec.model_args == {"image_size": 224, "scope": "functions"}
    assert field_of(lambda: ExperimentSpec(model="nope", batch_size=1).check_model(CATALOG)) == "model"
    assert field_of(lambda: ExperimentSpec(model="localopt", batch_size=1, model_args={"scope": "x"})
                    .check_model(CATALOG)) == "model_args.scope"
    assert field_of(lambda: ExperimentSpec(model="localopt", batch_size=1, model_args={"image_size": 0})
                    .check_model(CATALOG)) == "model_args.image_size"
    assert field_of(lambda: ExperimentSpec(model="localopt", batch_size=1, model_args={"depth": 3})
                    .check_model(CATALOG)) == "model_args.depth"
    assert field_of(lambda: ExperimentSpec(model="sincos", batch_size=1, task="training")
                    .check_model(CATALOG)) == "task"


def test_sweep_expands_every_combination_and_skips_modes_without_inductor():
    req = SweepRequest(model="simplenet", batch_sizes=[8, 16], backends=["inductor", "aot_eager"],
                       modes=["default", "max-autotune"], dynamics=["none", "true"], device="cpu")
    specs, notes = req.expand(CATALOG)
    # inductor: 2 bs x 2 modes x 2 dynamic = 8; aot_eager: only mode default: 2 x 1 x 2 = 4
    assert len(specs) == 12
    assert not any(s.backend == "aot_eager" and s.mode != "default" for s in specs)
    assert notes and "inductor only" in notes[0]
    assert len(set(specs)) == 12


def test_repeat_duplicates_each_combination():
    specs, _ = SweepRequest(model="simplenet", batch_sizes=[8], repeat=3).expand(CATALOG)
    assert len(specs) == 3 and len(set(specs)) == 1
    assert field_of(lambda: SweepRequest(model="simplenet", batch_sizes=[8], repeat=0)) == "repeat"


def test_sweep_lists_validate_each_value():
    assert field_of(lambda: SweepRequest(model="m", batch_sizes=[8, 0]).expand(None)) == "batch_size"
    assert field_of(lambda: SweepRequest(model="m", batch_sizes=[8], modes=["default", "turbo"])) == "modes"
    assert field_of(lambda: SweepRequest(model="m", batch_sizes=[])) == "batch_sizes"


@pytest.mark.parametrize("text, sizes", [("8, 16, 32", ["8", "16", "32"]), ("8 16", ["8", "16"]), ("8,16,", ["8", "16"]),
                                         (" 32 ", ["32"]), ("", []), (" , ", []),
                                         ("8, ,", ["8"]), ("8,16, ,", ["8", "16"])])
def test_size_lists_split_on_commas_and_spaces(text, sizes):
    assert split_sizes(text, "batch_sizes") == sizes


def test_off_cuda_the_modes_that_differ_by_cuda_graphs_alone_fold_into_one_job():
    from lab.axes import fold_note, folded_mode

    assert folded_mode("reduce-overhead", "cpu") == "default" and folded_mode("reduce-overhead", "cuda") == "reduce-overhead"
    assert folded_mode("max-autotune-no-cudagraphs", "cpu") == "max-autotune" and folded_mode("default", "cpu") == "default"
    assert fold_note("default", "cpu") == "" and "CUDA graphs need CUDA" in fold_note("reduce-overhead", "cpu")
    sweep = SweepRequest(model="m", batch_sizes=[8, 16], device="cpu", repeat=2,
                         modes=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
    specs, notes = sweep.expand()
    assert sorted({(s.batch_size, s.mode) for s in specs}) == [(8, "default"), (8, "max-autotune"), (16, "default"),
                                                                (16, "max-autotune")]
    assert len(specs) == 8  # each kept job still repeated
    assert any(n.startswith("reduce-overhead on cpu is default") and "one default job runs for both" in n for n in notes)
    alone, notes = SweepRequest(model="m", batch_sizes=[8], device="cpu", modes=["reduce-overhead"]).expand()
    assert [s.mode for s in alone] == ["default"] and any("its jobs run as default" in n for n in notes)
    on_gpu, notes = SweepRequest(model="m", batch_sizes=[8], device="cuda", modes=["default", "reduce-overhead"]).expand()
    assert [s.mode for s in on_gpu] == ["default", "reduce-overhead"] and not notes
