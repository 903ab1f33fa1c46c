"""`--gpus` parsing and GPU listing (no GPU needed: the listing reads CUDA_VISIBLE_DEVICES or nvidia-smi)."""
import pytest

from runner.worker.gpus import GpuError, parse_gpus


def test_a_list_names_one_worker_per_gpu():
    assert parse_gpus("0,1") == ["0", "1"]
    assert parse_gpus(" 3 , 1 ") == ["3", "1"]
    assert parse_gpus("GPU-8a1b2c3d-0000-1111-2222-333344445555") == ["GPU-8a1b2c3d-0000-1111-2222-333344445555"]


@pytest.mark.parametrize("text, message", [
    ("x", "'x' is not a GPU index or UUID"),
    ("0,,1", "'' is not a GPU index or UUID"),
    ("-1", "'-1' is not a GPU index or UUID"),
    ("0,0", "a GPU is listed twice"),
])
def test_bad_lists_are_refused(text, message):
    with pytest.raises(GpuError, match=message):
        parse_gpus(text)


def test_all_means_the_gpus_this_process_may_use(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert parse_gpus("all") == ["3", "5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(GpuError, match="no GPU visible"):
        parse_gpus("all")


def test_all_without_nvidia_smi_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi here (this CI machine has no GPU either way)
    with pytest.raises(GpuError, match="nvidia-smi is not installed"):
        parse_gpus("all")


def fake_nvidia_smi(tmp_path, output: str, rc: int = 0):
    """A stand-in nvidia-smi (this machine has no GPU): prints what the real one would for --query-gpu=index."""
    (tmp_path / "smi-output").write_text(output)
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!/bin/sh\n/bin/cat {tmp_path / 'smi-output'}\nexit {rc}\n")
    script.chmod(0o755)


def test_all_lists_what_nvidia_smi_reports(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    fake_nvidia_smi(tmp_path, "0\n1\n")
    assert parse_gpus("all") == ["0", "1"]
    fake_nvidia_smi(tmp_path, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n", rc=9)
    with pytest.raises(GpuError, match="no GPU visible .nvidia-smi: NVIDIA-SMI has failed"):
        parse_gpus("all")
