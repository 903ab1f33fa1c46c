"""The devices' measured ceilings (the device_ceilings table): stored by a worker's calibration (runner.worker.ceilings),
read to place a result on its roofline (lab.roofline.place) and to draw the roofline on Results.

`latest_ceilings` answers for one device and host, which is what placing one result needs. A roofline plot needs one
line per device and dtype in view, whatever host calibrated it: `newest_ceilings`, the newest calibration of each,
for all the devices in view at once.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from sqlalchemy import Engine, select

from db.engine import atomic, reading
from db.models import DeviceCeiling


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


def newest_ceilings(engine: Engine, device_names: Iterable[str]) -> list[dict]:
    """One row per (device_name, dtype) among these devices: the newest calibration's copy_gbps and
    matmul_tflops, with the host that measured it and when. Devices never calibrated are absent."""
    names = sorted({n for n in device_names if n})
    if not names:
        return []
    c = DeviceCeiling
    with reading(engine) as s:
        rows = s.execute(select(c.device_name, c.dtype, c.copy_gbps, c.matmul_tflops, c.hostname, c.measured_at)
                         .where(c.device_name.in_(names)).order_by(c.measured_at, c.id)).all()
    newest: dict[tuple, dict] = {}
    for row in rows:  # oldest first: a later calibration replaces an earlier one
        newest[(row.device_name, row.dtype)] = dict(row._mapping)
    return list(newest.values())
