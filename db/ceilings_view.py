"""The devices' measured ceilings as the Results page draws them (one query; no torch, no streamlit).

db.roofline.latest_ceilings answers for one device and host, which is what placing one result needs.
A roofline plot needs one line per device and dtype in view, whatever host calibrated it: the newest
calibration of each, for all the devices in view at once.
"""
from __future__ import annotations

from typing import Iterable

from sqlalchemy import Engine, select

from db.engine import reading
from db.models import DeviceCeiling


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
