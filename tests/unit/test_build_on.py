"""Where a job's weights are made (runner.child.build.build_on): on the device it runs on, else on the host with the
device's refusal named, so the record says why a model build took a host's time."""
import pytest
import torch

from runner.child.build import build_on
from runner.zoo import load_module, resolve


def _mlp():
    return load_module(resolve("mlp"), "inference")


def test_weights_are_made_on_the_device_the_job_runs_on():
    model, where = build_on(torch.device("meta"), _mlp(), {"dim": 8, "hidden": 16})
    assert where == "on the device"
    assert {p.device.type for p in model.parameters()} == {"meta"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a torch that refuses CUDA tensors")
def test_a_device_that_refuses_the_build_gets_a_host_model_and_the_record_says_why():
    model, where = build_on(torch.device("cuda"), _mlp(), {"dim": 8, "hidden": 16})
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert where.startswith("on the host: building on the device raised ") and len(where) <= 300


def test_weights_the_models_own_code_puts_on_the_host_are_said_to_be_there():
    class HostOnly:
        @staticmethod
        def build():
            return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4, device="cpu"))

    model, where = build_on(torch.device("meta"), HostOnly, {})
    assert where == "on cpu too: the model's own code put weights there"
    assert {p.device.type for p in model.parameters()} == {"meta", "cpu"}
