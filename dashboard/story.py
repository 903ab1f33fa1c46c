"""The compiler's story of one job, as plain values for the job's page: the caches per layer and why a warm job
still paid for its first call, and how kernels per call changed. No Streamlit here: the page draws these."""
from __future__ import annotations

LAYERS = {"fxgraph": "FX graph cache (inductor's compiled graphs)",
          "aotautograd": "AOTAutograd cache (the traced joint graph)",
          "triton": "Triton kernels compiled in this process (GPU)"}


def cache_rows(layers: dict | None) -> list[dict]:
    """One row per cache layer: hit, miss, bypass and the bypass reasons torch gave."""
    return [{"cache": LAYERS.get(name, name), "hit": c.get("hit", 0), "miss": c.get("miss", 0),
             "bypass": c.get("bypass", 0), "bypass reason": "; ".join(c.get("bypass_reasons") or [])}
            for name, c in (layers or {}).items() if isinstance(c, dict)]


def why_it_paid(record: dict) -> str | None:
    """Why the compiled first call cost what it did, in a sentence: for a warm job, the layer that missed or was
    bypassed; when every layer hit, what a hit still costs (tracing, guards, loading)."""
    layers = record.get("cache_layers") or {}
    if not layers:
        return None
    first = record.get("compiled_first_call_s")
    paid = f"{first:.3g} s" if first is not None else "its first call"
    missed = [(n, c) for n, c in layers.items() if n != "triton" and isinstance(c, dict)
              and (c.get("miss") or c.get("bypass"))]
    warm = record.get("cache") == "warm"
    if not missed:
        hit = [n for n, c in layers.items() if isinstance(c, dict) and c.get("hit")]
        if not hit:
            return f"No cache was consulted (backend {record.get('backend')}): the first call ({paid}) compiled."
        breakdown = record.get("compile_breakdown_s") or {}
        dynamo = breakdown.get("dynamo tracing")
        return (f"Every graph came from the cache ({', '.join(hit)} hit); the first call ({paid}) still paid "
                "dynamo's tracing and guards" + (f" ({dynamo:.3g} s)" if dynamo is not None else "") +
                " and loading the compiled code.")
    parts = []
    for name, c in missed:
        part = f"{name}: {c.get('miss', 0)} miss, {c.get('bypass', 0)} bypass"
        if c.get("bypass_reasons"):
            part += f" ({'; '.join(c['bypass_reasons'])})"
        parts.append(part)
    if warm:
        return (f"A warm job, yet the first call ({paid}) compiled: " + ", ".join(parts) + ". A miss means this "
                "graph, these settings or this torch version were not in the worker's cache yet; a bypass means "
                "torch would not cache this graph.")
    return f"A cold cache: the first call ({paid}) compiled everything (" + ", ".join(parts) + ")."


def kernels_line(record: dict) -> str | None:
    """'3 → 1 kernels per call (−2)' or None when the job has no counts."""
    e, c = record.get("eager_kernels"), record.get("compiled_kernels")
    if e is None or c is None:
        return None
    return f"{e} → {c} kernels per call ({c - e:+d})"
