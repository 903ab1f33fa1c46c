"""The compiler's story of one job, as plain values for the job's page: the caches per layer and why a warm job
still paid for its first call, and how kernels per call changed. No Streamlit here: the page draws these."""
from __future__ import annotations

from db import caches

LAYERS = {"fxgraph": "FX graph cache (inductor's compiled graphs)",
          "aotautograd": "AOTAutograd cache (the traced joint graph)",
          "triton": "Triton kernels compiled in this process (GPU)"}


def cache_rows(layers: dict | None, device: str | None = None) -> list[dict]:
    """One row per cache layer: hit, miss, bypass and the bypass reasons torch gave. A CPU job compiles no Triton
    kernels: its (empty) Triton row is left out."""
    return [{"cache": LAYERS.get(name, name), "hit": c.get("hit", 0), "miss": c.get("miss", 0),
             "bypass": c.get("bypass", 0), "bypass reason": "; ".join(c.get("bypass_reasons") or [])}
            for name, c in (layers or {}).items() if isinstance(c, dict)
            and not (name == "triton" and device == "cpu" and not any(c.get(k) for k in ("hit", "miss", "bypass")))]


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
    if record.get("cache") == "portable":
        return (f"A portable job, yet the first call ({paid}) compiled: " + ", ".join(parts) + ". What it loaded "
                "is above: no bundle for its key, or one that torch could not use.")
    return f"A cold cache: the first call ({paid}) compiled everything (" + ", ".join(parts) + ")."


def warm_miss_line(near: dict | None, record: dict) -> str:
    """What the worker's warm cache held, against this warm job that compiled anyway (db.caches.warm_nearest)."""
    host = record.get("hostname") or "its host"
    if near is None:
        return f"No earlier warm job of {record.get('model')} had finished on {host}: its warm cache held none of it."
    if not near["differs"]:
        return (f"Job #{near['job_id']} compiled these same settings with the same torch on {host} before, so the "
                "settings were in the warm cache: what missed is elsewhere (the model's code, inductor's config, or "
                "a cache cleared or filled by another home).")
    return (f"The nearest earlier compile on {host}'s warm cache, job #{near['job_id']}, differs in "
            f"{len(near['differs'])} part{'s' if len(near['differs']) > 1 else ''}: "
            + caches.differs_words(near["differs"], "there") + ".")


def kernels_line(record: dict) -> str | None:
    """'3 → 1 kernels per call (−2)' or None when the job has no counts."""
    e, c = record.get("eager_kernels"), record.get("compiled_kernels")
    if e is None or c is None:
        return None
    return f"{e} → {c} kernels per call ({c - e:+d})"


def portable_lines(record: dict) -> list[str]:
    """What a cold or portable job did with the team's compile cache (detail.mega_cache), in sentences: the bundle
    it loaded (key, source job, bytes, what torch took from it, kernel libraries reused) or why none, and what it
    kept for the next portable job. [] for a warm job or one measured before bundles were kept."""
    mega = record.get("mega_cache") or {}
    if not mega:
        return []
    key = str(mega.get("key", "?"))[:12]
    lines = []
    source, loaded = mega.get("source"), mega.get("loaded") or {}
    if source:
        kinds = ", ".join(f"{k} {n}" for k, n in (loaded.get("artifacts") or {}).items()) or "nothing"
        built = loaded.get("kernel_libraries_built")
        lines.append(f"Loaded bundle {key} from job #{source.get('job_id')}: {source.get('bytes', 0):,} bytes, "
                     f"in {loaded.get('load_s', 0):.2g} s. torch's mega-cache: {kinds}; kernel libraries: "
                     f"{loaded.get('kernel_libraries', 0)} restored, "
                     + ("none rebuilt here." if built == 0 else f"{built} rebuilt here." if built else "rebuilt: unknown."))
    if mega.get("note"):
        lines.append(f"Bundle {key}: {mega['note']}.")
    saved = mega.get("saved") or {}
    if saved.get("stored"):
        lines.append(f"Kept its bundle for portable jobs of the same settings: key {key}, {saved.get('bytes', 0):,} "
                     f"bytes ({saved.get('kernel_libraries', 0)} kernel libraries).")
    elif saved:
        lines.append(f"Its bundle was not kept: {saved.get('why_not') or saved.get('error') or 'nothing to keep'}.")
    return lines


def accuracy_lines(record: dict) -> list[str]:
    """What the accuracy check compared, against what, and by how much the worst tensor differed: plain sentences
    (tensor names come from the model: the page shows them as text)."""
    check = record.get("accuracy_check")
    ok = record.get("accuracy_ok")
    if not isinstance(check, dict):
        return []
    verdict = {True: "the compiled result is eager's", False: "the compiled result differs", None: "not judged"}[ok]
    reference = str(check.get("reference") or "")
    against = ("a float64 run of the same call" if reference == "float64"
               else f"no float64 run ({reference.removeprefix('none: ')})")
    n = check.get("tensors")
    lines = [f"Accuracy: {verdict}. Compared {check.get('compared')} ({n} tensor{'' if n == 1 else 's'}) with "
             f"tolerance {check.get('tolerance')}, against {against}."]
    worst = check.get("worst") if isinstance(check.get("worst"), dict) else None
    if worst:
        line = (f"Worst: {worst.get('tensor')}: compiled vs eager, relative error {_g(worst.get('rel_error'))}, "
                f"max |diff| {_g(worst.get('max_abs_error'))}")
        if worst.get("allowed_rmse") is not None:
            line += (f"; root mean square distance from the float64 run: compiled {_g(worst.get('compiled_rmse_vs_float64'))}, "
                     f"eager {_g(worst.get('eager_rmse_vs_float64'))} (compiled may reach "
                     f"{_g(worst.get('allowed_rmse'))}: {check.get('multiplier')}x eager's + tolerance/10)")
        lines.append(line + ".")
    failing = check.get("failing") or []
    if failing:
        lines.append(f"Differ: {', '.join(str(f) for f in failing[:10])}" + (" …" if len(failing) > 10 else ""))
    return lines


def picks_line(record: dict, shown: int = 6) -> str | None:
    """The launch settings this process's autotuner picked in its first call (runner.child.capture.autotune_picks),
    a few of them; None where it picked none (a CPU job, a warm job whose picks were its cache's, an older result)."""
    picks = record.get("autotune_picks")  # a hand-made row may hold anything: anything else is no line, never a crash
    count = picks.get("count") if isinstance(picks, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    each = picks.get("picks") if isinstance(picks.get("picks"), dict) else {}
    listed = "; ".join(f"{name}: " + (", ".join(f"{k} {v}" for k, v in settings.items())
                                      if isinstance(settings, dict) else str(settings))
                       for name, settings in list(each.items())[:shown])
    more = f" (and {count - shown:,} more)" if count > shown else ""
    return (f"This process's autotuner picked the launch settings of {count:,} kernel{'s' if count != 1 else ''} in "
            f"its first call, timing each one's candidates: {listed}{more}. The pick can differ between processes, "
            "and with it the compiled side's time; each process of a configuration picks its own.")


def _g(x) -> str:
    return f"{x:.3g}" if isinstance(x, (int, float)) else "–"
