"""Roofline arithmetic (no torch, no database): where a result sits against its device's measured ceilings.

The floor of a call is max(FLOPs / matmul rate, bytes / copy bandwidth): no version of the call can
run much faster. `roofline_pct` is that floor over the measured time (100% = at the ceiling); the
larger term names the bound. MFU (training) is achieved FLOP/s over the dtype's matmul rate.
"""
from __future__ import annotations

from typing import Mapping


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
