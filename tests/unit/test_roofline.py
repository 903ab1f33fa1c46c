"""Roofline placement arithmetic and the ceilings table."""
import pytest

from db.device_ceilings import has_ceilings, latest_ceilings, store_ceilings
from lab.roofline import place
from runner.child.stats import spread

CEILING = {"copy_gbps": 4000.0, "matmul_tflops": 800.0}


def test_memory_bound_call_at_the_ceiling_is_100_percent():
    # sincos-like: 1.2 GB moved, few flops; 1.2e9 / 4000e9 = 0.3 ms floor
    placed = place(flops=3e8, min_bytes=1.2e9, ms=0.3, ceiling=CEILING, training=False)
    assert placed["roofline_bound"] == "memory"
    assert placed["roofline_pct"] == pytest.approx(100.0)
    assert placed["mfu"] is None


def test_compute_bound_training_step_reports_mfu():
    # 8e11 flops at 800 TFLOP/s = 1 ms floor; measured 2 ms -> 50% of roofline, MFU 0.5
    placed = place(flops=8e11, min_bytes=1e6, ms=2.0, ceiling=CEILING, training=True)
    assert placed["roofline_bound"] == "compute"
    assert placed["roofline_pct"] == pytest.approx(50.0)
    assert placed["mfu"] == pytest.approx(0.5)


def test_without_ceilings_nothing_is_claimed():
    assert place(1e9, 1e9, 1.0, None, False) == {"roofline_bound": None, "roofline_pct": None, "mfu": None}
    assert place(None, 1e9, 1.0, CEILING, False)["roofline_pct"] is None


def test_latest_ceilings_prefer_this_host(engine):
    store_ceilings(engine, "NVIDIA H100", "host-a", "2.11", 3000.0, {"bfloat16": 790.0})
    store_ceilings(engine, "NVIDIA H100", "host-b", "2.11", 2900.0, {"bfloat16": 700.0})
    assert latest_ceilings(engine, "NVIDIA H100", "host-a")["bfloat16"]["copy_gbps"] == 3000.0
    assert latest_ceilings(engine, "NVIDIA H100", "host-b")["bfloat16"]["matmul_tflops"] == 700.0
    assert latest_ceilings(engine, "NVIDIA H100", "host-c")["bfloat16"]["hostname"] in ("host-a", "host-b")
    assert latest_ceilings(engine, "NVIDIA A100") == {}


def test_stored_ceilings_are_kept_per_host_device_and_torch(engine, monkeypatch):
    """A worker on a host whose ceilings are stored (same device, same torch) starts without measuring."""
    from runner.worker import ceilings

    store_ceilings(engine, "NVIDIA H100", "host-a", "2.11", 3000.0, {"bfloat16": 790.0})
    assert has_ceilings(engine, "NVIDIA H100", "host-a", "2.11")
    assert not has_ceilings(engine, "NVIDIA H100", "host-a", "2.13")  # a new torch: measured again
    assert not has_ceilings(engine, "NVIDIA H100", "host-b", "2.11")
    store_ceilings(engine, "NVIDIA H100", "host-a", "2.11", 3000.0, {"bfloat16": 790.0}, driver="580.95")
    assert has_ceilings(engine, "NVIDIA H100", "host-a", "2.11", "580.95")
    assert not has_ceilings(engine, "NVIDIA H100", "host-a", "2.11", "590.10")  # a new driver: measured again
    measured = []
    monkeypatch.setattr(ceilings, "measure", lambda *a: measured.append(a))
    monkeypatch.setattr(ceilings.socket, "gethostname", lambda: "host-a")
    assert ceilings.ensure(engine, "cuda", "NVIDIA H100", {}, None, "2.11") is False and not measured
    assert ceilings.ensure(engine, "cuda", "NVIDIA H100", {}, None, "2.13") is True and len(measured) == 1


def test_spread_is_iqr_over_median():
    assert spread([1.0, 1.0, 1.0, 1.0]) == 0.0
    assert spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)
    assert spread([1.0]) is None
