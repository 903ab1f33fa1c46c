"""lab.labels: one labeller for the answer table, `runner report` and the Results plots."""
from lab import labels

FIELDS = ("task", "device", "backend", "mode", "dynamic", "fullgraph", "model_args")


def config(**kw) -> dict:
    return {"task": "inference", "device": "cpu", "backend": "inductor", "mode": "default", "dynamic": None,
            "fullgraph": False, "model_args": '{"image_size": 96}', **kw}


def test_labels_name_the_mode_then_only_what_differs_and_the_rest_is_common():
    configs = [config(mode=m, dynamic=d) for m in ("default", "reduce-overhead", "max-autotune") for d in (True, False)]
    names = labels.labels(configs, FIELDS)
    assert names[:2] == ["default · dynamic=true", "default · dynamic=false"] and len(set(names)) == 6
    assert labels.common(configs, FIELDS) == "inference · cpu · inductor · fullgraph=false · image_size=96"
    assert labels.labels([config(), config(backend="aot_eager")], FIELDS) == ["inductor/default", "aot_eager/default"]
    assert labels.labels([config()], FIELDS) == ["default"]  # nothing differs: the mode still names it


def test_a_missing_value_differs_only_when_asked():
    """A failed job with no recorded environment is not a second torch version on the plots' labels."""
    configs = [{**config(), "torch_version": "2.13.0"}, {**config(mode="max-autotune"), "torch_version": None}]
    fields = (*FIELDS, "torch_version")
    assert labels.varying(configs, fields, missing_differs=False) == ["mode"]
    assert labels.varying(configs, fields) == ["mode", "torch_version"]
    assert labels.part("torch_version", "2.13.0") == "torch 2.13.0" and labels.part("model_args", "{}") == "default size"
