"""From the clocks' samples to the record's numbers: medians, spreads, the three speedups, host overhead, this
process's paired speedup and its standard error (lab.interval), and the percentiles they rest on. Pure arithmetic
(no torch). Whether the run was disturbed is measured, not read from these numbers (runner.child.disturbance)."""
from __future__ import annotations

from lab.interval import round_ratios, run_center

HOST_BOUND = 0.5  # a side whose GPU idles this share of its latency is host-bound (launches, Python, guards)


def clock_fields(samples: dict, gpu: bool, cudagraphs: bool = False) -> dict:
    """The record's numbers from the three clocks' samples (runner.child.timing). The headline (eager_ms,
    compiled_ms, speedup, percentiles, spreads) is latency; throughput and GPU time beside it under their
    own names; the host overhead (1 - GPU time / latency) and, past HOST_BOUND, why in words; the per-round
    ratios' spread and their median with its standard error (lab.interval.run_center)."""
    out = {}
    for side in ("eager", "compiled"):
        lat = _flat(samples[side])
        out[f"{side}_ms"] = percentile(lat, 50)
        out[f"{side}_p10_ms"], out[f"{side}_p90_ms"] = percentile(lat, 10), percentile(lat, 90)
        out[f"{side}_spread"] = spread(_round_medians(samples[side]))
        out[f"{side}_throughput_ms"] = _median_or_none(_flat(samples.get(f"{side}_throughput", [])))
        gpu_ms = _median_or_none(_flat(samples.get(f"{side}_gpu", []))) if gpu else None
        out[f"{side}_gpu_ms"] = gpu_ms
        out[f"{side}_host_overhead"] = (max(0.0, 1.0 - gpu_ms / out[f"{side}_ms"])
                                        if gpu_ms is not None and out[f"{side}_ms"] > 0 else None)
    out["speedup"] = out["eager_ms"] / out["compiled_ms"]
    out["throughput_speedup"] = _ratio(out["eager_throughput_ms"], out["compiled_throughput_ms"])
    out["gpu_speedup"] = _ratio(out["eager_gpu_ms"], out["compiled_gpu_ms"])
    out["host_note"] = host_note(out["eager_host_overhead"], out["compiled_host_overhead"], cudagraphs)
    out["host_bound"] = None if out["eager_host_overhead"] is None else out["host_note"] is not None
    ratios = round_ratios(samples)
    out["speedup_spread"] = spread(ratios)
    out["round_speedup"], out["round_speedup_se"] = run_center(ratios)
    return out


def host_note(eager_idle: float | None, compiled_idle: float | None, cudagraphs: bool) -> str | None:
    """In words, when either side leaves the GPU idle for HOST_BOUND or more of each call: the caller's
    latency is then set by the host (Python, dispatch, guards, kernel launches), not by the kernels."""
    parts = []
    if eager_idle is not None and eager_idle >= HOST_BOUND:
        parts.append(f"eager leaves the GPU idle {eager_idle:.0%} of each call: launch-bound"
                     + ("" if cudagraphs else "; reduce-overhead's CUDA graphs target this"))
    if compiled_idle is not None and compiled_idle >= HOST_BOUND:
        parts.append(f"compiled leaves the GPU idle {compiled_idle:.0%} of each call: "
                     + ("the host work around the CUDA graph (guards, Python, copies) outweighs its kernels"
                        if cudagraphs else "dynamo's guards, Python and kernel launches outweigh the kernels"))
    return "; ".join(parts) or None


def paired_spread(samples: dict) -> dict:
    """speedup_p10 / speedup_p90 over per-round ratios of latency medians: the same round's two sides, so
    drift between rounds cancels."""
    ratios = round_ratios(samples)  # the answer table's interval pools these same ratios (lab.answer)
    return {"speedup_p10": percentile(ratios, 10) if ratios else None,
            "speedup_p90": percentile(ratios, 90) if ratios else None}


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _flat(rounds: list[list[float]]) -> list[float]:
    return [x for block in rounds for x in block]


def _median_or_none(values: list[float]) -> float | None:
    return percentile(values, 50) if values else None


def _round_medians(rounds: list[list[float]]) -> list[float]:
    return [percentile(block, 50) for block in rounds if block]


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty list, as numpy's default."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def spread(values: list[float]) -> float | None:
    """Interquartile range over median: how far one number of this set can be trusted."""
    if len(values) < 2:
        return None
    mid = percentile(values, 50)
    return (percentile(values, 75) - percentile(values, 25)) / mid if mid > 0 else None
