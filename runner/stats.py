"""From the clocks' samples to the record's numbers: medians, spreads, the three speedups, host overhead,
`noisy` and why, break-even. Pure arithmetic (no torch): the dashboard's reasoning and the tests use it too."""
from __future__ import annotations

from db.answer import round_ratios
from db.noise import HOST_SENSITIVE, NOISY_SPREAD, spread_noisy
from runner.timing import percentile, spread

HOST_BOUND = 0.5  # a side whose GPU idles this share of its latency is host-bound (launches, Python, guards)


def clock_fields(samples: dict, gpu: bool, cudagraphs: bool = False) -> dict:
    """The record's numbers from the three clocks' samples (runner.timing). The headline (eager_ms,
    compiled_ms, speedup, percentiles, spreads) is latency; throughput and GPU time beside it under their
    own names; the host overhead (1 - GPU time / latency) and, past HOST_BOUND, why in words; `noisy` and
    why (`noise_note`)."""
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
    out["speedup_spread"] = spread(round_ratios(samples))
    reasons = []
    if spread_noisy(out["speedup_spread"], out["eager_spread"], out["compiled_spread"]):
        sides = ", ".join(f"{side}'s {out[f'{side}_spread']:.0%}" for side in ("eager", "compiled")
                          if out[f"{side}_spread"] is not None)
        reasons.append(f"the speedup's rounds spread {out['speedup_spread'] or 0:.0%} (per-round eager / compiled, "
                       f"IQR / median; past {NOISY_SPREAD:.0%}; round medians spread {sides})")
    idle = {s: out[f"{s}_host_overhead"] for s in ("eager", "compiled") if (out[f"{s}_host_overhead"] or 0) >= HOST_SENSITIVE}
    if idle:
        sides = " and ".join(f"{s}'s {v:.0%}" for s, v in idle.items())
        reasons.append(f"host-sensitive: the host's Python, guards and launches are {sides} of the latency, and the "
                       "host's speed moves from process to process; it is repeated in separate processes "
                       "(--process-repeats) and answers from them together")
    out["noisy"] = bool(reasons)
    out["noise_note"] = "; ".join(reasons) or None
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
    ratios = round_ratios(samples)  # the answer table's interval pools these same ratios (db.answer)
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
