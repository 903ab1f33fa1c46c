"""Roofline arithmetic (no torch): where a result sits against its device's measured ceilings.

The floor of a call is max(FLOPs / matmul rate, bytes / copy bandwidth): no version of the call can
run much faster. `roofline_pct` is that floor over the measured time (100% = at the ceiling); the
larger term names the bound. MFU (training) is achieved FLOP/s over the dtype's matmul rate.
"""
from __future__ import annotations

from typing import Mapping

from sqlalchemy import Engine, select

from db.engine import atomic, reading
from db.models import DeviceCeiling


def place(flops: float | None, min_bytes: float | None, ms: float | None, ceiling: Mapping | None,
          training: bool) -> dict:
    """roofline_bound, roofline_pct and mfu for one measured call (all None without a ceiling)."""
    out = {"roofline_bound": None, "roofline_pct": None, "mfu": None}
    if not ceiling or not ms or ms <= 0 or flops is None or min_bytes is None:
        return out
    compute_s = flops / (ceiling["matmul_tflops"] * 1e12) if ceiling.get("matmul_tflops") else 0.0
    memory_s = min_bytes / (ceiling["copy_gbps"] * 1e9) if ceiling.get("copy_gbps") else 0.0
    floor_s = max(compute_s, memory_s)
    if floor_s <= 0:
        return out
    out["roofline_bound"] = "compute" if compute_s >= memory_s else "memory"
    out["roofline_pct"] = 100.0 * floor_s / (ms / 1e3)
    if training and ceiling.get("matmul_tflops"):
        out["mfu"] = flops / (ms / 1e3) / (ceiling["matmul_tflops"] * 1e12)
    return out


def store_ceilings(engine: Engine, device_name: str, hostname: str, torch_version: str,
                   copy_gbps: float, matmul_tflops: Mapping[str, float], driver: str | None = None) -> None:
    with atomic(engine) as s:
        for dtype, tflops in matmul_tflops.items():
            s.add(DeviceCeiling(device_name=device_name, hostname=hostname, dtype=dtype, copy_gbps=copy_gbps,
                                matmul_tflops=tflops, torch_version=torch_version, driver=driver))


def has_ceilings(engine: Engine, device_name: str, hostname: str, torch_version: str | None,
                 driver: str | None = None) -> bool:
    """Whether this host has measured this device with this torch and driver (either may reach other rates)."""
    q = select(DeviceCeiling.id).where(DeviceCeiling.device_name == device_name, DeviceCeiling.hostname == hostname)
    if torch_version:
        q = q.where(DeviceCeiling.torch_version == torch_version)
    if driver:
        q = q.where(DeviceCeiling.driver == driver)
    with reading(engine) as s:
        return s.execute(q.limit(1)).first() is not None


def latest_ceilings(engine: Engine, device_name: str, hostname: str | None = None) -> dict[str, dict]:
    """The newest measured ceilings of a device, by dtype (this host's where it has its own)."""
    with reading(engine) as s:
        rows = s.scalars(select(DeviceCeiling).where(DeviceCeiling.device_name == device_name)
                         .order_by(DeviceCeiling.measured_at)).all()
    out: dict[str, dict] = {}
    for row in rows:  # oldest first; this host's rows win over other hosts' of the same device
        if hostname and row.hostname != hostname and row.dtype in out and out[row.dtype]["hostname"] == hostname:
            continue
        out[row.dtype] = {"copy_gbps": row.copy_gbps, "matmul_tflops": row.matmul_tflops,
                          "hostname": row.hostname, "measured_at": row.measured_at}
    return out
