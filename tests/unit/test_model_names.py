"""Models by name and import path (issue 26), the in-process parts: names told apart, a Hugging Face config's fields
checked as words or numbers (never markup or code), the unknown-model message bounded, the picker's order and text,
the Config fields box, config values cast to each field's type."""
import importlib.util

import pytest

from dashboard.data.model_order import label, ordered
from dashboard.panels.submit_form import config_fields
from lab.checks import SpecError
from lab.spec import ExperimentSpec, ModelInfo, ParamInfo
from runner.zoo.families import family_of, is_import_path

HF = ModelInfo(name="hf:GPT2LMHeadModel", description="", size_dim="seq_len", open_args=True,
               params=(ParamInfo(name="seq_len", default=512),))


def test_names_are_told_apart():
    assert family_of("hf:GPT2LMHeadModel") == "hf" and family_of("timm:resnet50") == "timm"
    assert family_of("mlp") is None and family_of("mypkg.models:make") is None
    assert is_import_path("mypkg.models:make_model") and is_import_path("mypkg.mymodel")
    assert not is_import_path("mlp") and not is_import_path("hf:GPT2LMHeadModel")
    assert not is_import_path("my pkg:x") and not is_import_path("pkg.mod:not-an-identifier")


def test_config_fields_are_numbers_or_words_and_the_size_gets_its_default():
    spec = ExperimentSpec(model=HF.name, batch_size=8, model_args={"n_layer": 4, "activation_function": "gelu_new",
                                                                   "resid_pdrop": "0.1"}, device="cpu")
    checked = spec.check_model({HF.name: HF})
    assert checked.model_args == {"activation_function": "gelu_new", "n_layer": 4, "resid_pdrop": "0.1",
                                  "seq_len": 512}
    for bad in ("<b>x</b>", "a b", "x" * 201, "$(id)"):
        with pytest.raises(SpecError) as e:
            ExperimentSpec(model=HF.name, batch_size=8, model_args={"n_layer": bad}, device="cpu").check_model(
                {HF.name: HF})
        assert e.value.field == "model_args.n_layer"
    with pytest.raises(SpecError):  # a closed model still takes its own parameters only
        ExperimentSpec(model="mlp", batch_size=8, model_args={"n_layer": 4}, device="cpu").check_model(
            {"mlp": ModelInfo(name="mlp", description="")})


def test_an_unknown_model_names_a_bounded_list_of_known_ones():
    catalog = {f"timm:m{i:04d}": ModelInfo(name=f"timm:m{i:04d}", description="") for i in range(1300)}
    with pytest.raises(SpecError) as e:
        ExperimentSpec(model="timm:nope", batch_size=1, device="cpu").check_model(catalog)
    assert "and 1260 more" in str(e.value) and len(str(e.value)) < 1000


def test_the_picker_lists_files_then_the_suites_models_then_the_rest_by_their_own_names():
    names = ["timm:vit_tiny_patch16_224", "hf:BertForMaskedLM", "mlp", "timm:vit_base_patch16_224", "mine"]
    assert ordered(names) == ["mine", "mlp", "hf:BertForMaskedLM", "timm:vit_base_patch16_224",
                              "timm:vit_tiny_patch16_224"]
    assert label("timm:vit_base_patch16_224") == "vit_base_patch16_224 · timm"
    assert label("mypkg.models:make") == "mypkg.models:make" and label("mlp") == "mlp"


def test_the_config_fields_box():
    assert config_fields("n_layer=4\n\n# a note\nactivation_function = gelu_new\n") == (
        {"n_layer": 4, "activation_function": "gelu_new"}, None)
    fields, problem = config_fields("n_layer=4\nnot a pair")
    assert problem == "Config fields, line 2: expected FIELD=VALUE" and fields == {"n_layer": 4}


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers not installed")
def test_config_values_are_cast_to_each_fields_type_and_dropout_is_off():
    from runner.zoo import family_hf

    cls, config = family_hf.config_for("GPT2LMHeadModel", {"n_layer": 2, "scale_attn_weights": "false",
                                                           "layer_norm_epsilon": "1e-6", "seq_len": 64})
    assert cls.__name__ == "GPT2LMHeadModel" and config.n_layer == 2 and config.scale_attn_weights is False
    assert config.layer_norm_epsilon == 1e-6 and config.resid_pdrop == 0.0 and config.use_cache is False
    with pytest.raises(ValueError, match="has no field 'no_such_field'"):
        family_hf.config_for("GPT2LMHeadModel", {"no_such_field": 1})
    with pytest.raises(ValueError, match="expected true or false"):
        family_hf.config_for("GPT2LMHeadModel", {"scale_attn_weights": "maybe"})


@pytest.mark.subprocess  # starts interpreters: the subprocess tier, not the in-process one
@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers not installed")
def test_the_hf_listing_read_from_transformers_sources_is_the_childs_and_imports_nothing(tmp_path):
    """runner.zoo.quick_listing reads transformers' auto mappings as text: the same entries the listing child makes
    by importing them, in a process that then has imported neither torch nor transformers."""
    import json
    import subprocess
    import sys

    from runner.zoo import family_hf, quick_listing
    from tests.conftest import ROOT

    for gpu in (True, False):
        assert quick_listing.listing(["hf"], gpu)["models"] == family_hf.listing(gpu)
    code = ("import json, sys; from runner.zoo import quick_listing as q; n = len(q.listing(['hf'], True)['models']); "
            "print(json.dumps([n, 'torch' in sys.modules, 'transformers' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout) == [len(family_hf.names()), False, False], done.stderr


def test_the_timm_sizes_read_from_sources_are_right_or_left_to_the_child():
    """Each way a default input size can be said (a literal, a helper's default, `**dict(...)` keywords, a helper that
    puts its own size over the caller's, one that sets it in its body, a tag without weights before one with):
    the size timm itself would give, or None (the listing child's then), never another number."""
    from pathlib import Path

    from runner.zoo import quick_listing
    from tests.conftest import TESTS

    got = quick_listing.timm_sizes(Path(TESTS / "fixtures" / "timm_like"))
    # timm: m1 384 (a name, not a literal), m2 384, m3 384 (dict's keyword over its dict), m4 384 (set in the
    # helper's body), m5 384 (the tag with weights is the default), m6 384 (the helper's over the caller's), m7 224
    assert got == {"m1": None, "m2": 384, "m3": 384, "m4": None, "m5": None, "m6": None, "m7": 224}
