"""The zoo's metadata is read without importing torch; malformed model files are refused by name."""
import pytest

from runner import zoo
from tests.conftest import FIXTURE_MODELS


def test_builtin_catalog_has_the_seed_models():
    names = set(zoo.catalog())
    assert {"simplenet", "mlp", "sincos", "complexnet", "localopt", "convnetmix", "transformer"} <= names
    entries = zoo.catalog()
    assert entries["sincos"].info.tasks == ("inference",)
    assert entries["transformer"].info.size_dim == "seq_len"
    assert entries["convnetmix"].stochastic
    scope = {p.name: p for p in entries["localopt"].info.params}["scope"]
    assert scope.choices == ("model", "functions") and scope.default == "model"


def test_lab_models_dir_adds_models(tmp_path):
    entries = zoo.catalog([FIXTURE_MODELS])
    assert {"boom", "sleepy", "segv", "tiny"} <= set(entries)
    assert entries["tiny"].info.source == str(FIXTURE_MODELS)


@pytest.mark.parametrize("text, message", [
    ("DESCRIPTION = 'x'\ndef build(): pass\n", "example_inputs"),
    ("def build(): pass\ndef example_inputs(b): pass\n", "DESCRIPTION"),
    ("DESCRIPTION = 'x'\nPARAMS = dict(a=1)\ndef build(): pass\ndef example_inputs(b): pass\n", "literal"),
    ("DESCRIPTION = 'x'\nSIZE_DIM = 'seq'\ndef build(): pass\ndef example_inputs(b): pass\n", "SIZE_DIM"),
    ("def build(:\n", "not valid Python"),
])
def test_malformed_model_files_are_refused(tmp_path, text, message):
    (tmp_path / "labnet.py").write_text(text)
    with pytest.raises(zoo.ModelFileError, match=message):
        zoo.catalog([tmp_path])


def test_a_lab_model_cannot_shadow_a_builtin(tmp_path):
    (tmp_path / "simplenet.py").write_text("DESCRIPTION = 'x'\ndef build(): pass\ndef example_inputs(b): pass\n")
    with pytest.raises(zoo.ModelFileError, match="already defined"):
        zoo.catalog([tmp_path])


def test_missing_requirement_hides_the_model(tmp_path):
    (tmp_path / "needy.py").write_text("DESCRIPTION = 'x'\nREQUIRES = ('no_such_module_xyz',)\n"
                                       "def build(): pass\ndef example_inputs(b): pass\n")
    assert "needy" not in zoo.catalog([tmp_path])


def test_a_size_dimension_model_runs_its_rounds_at_the_size_given_not_the_batch():
    """hf:GPT2LMHeadModel bs 8 with seq_len 512 ran its rounds at seq_len 8 before (issue 26's first H100 run)."""
    from lab.spec import ExperimentSpec, ModelInfo
    from runner.child.build import rounds_size
    from runner.zoo import ZooEntry

    seq = ZooEntry(info=ModelInfo(name="hf:GPT2LMHeadModel", description="", size_dim="seq_len"), path=None)
    spec = ExperimentSpec(model="hf:GPT2LMHeadModel", batch_size=8, model_args={"seq_len": 512}, device="cpu")
    assert rounds_size(spec, seq) == 512
    batch = ZooEntry(info=ModelInfo(name="mlp", description=""), path=None)
    assert rounds_size(ExperimentSpec(model="mlp", batch_size=8, device="cpu"), batch) == 8
