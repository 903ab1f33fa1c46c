"""The launch settings inductor's autotuner picked in this process: on a GPU, a kernel with several candidate
settings (a pointwise kernel's block sizes, warps) times them in its first call and keeps the fastest beside its
source in the compile cache (a `.best_config` file). The pick can differ between fresh processes, and with it the
compiled side's time; the record keeps this process's picks so two processes' answers can be told apart by them.
Picks already in the cache before its first calls (a warm job's, a portable bundle's) are not this process's. Only
the runtime picks: max-autotune's choice of matrix-multiply templates is made while compiling and not listed."""
from __future__ import annotations

import json
import os

LIMIT = 64  # picks kept per job (a large model's graphs can hold hundreds of kernels)
SETTINGS = ("num_warps", "num_stages")


def _root(cache_dir: str | None) -> str | None:
    root = cache_dir or os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    return root if root and os.path.isdir(root) else None  # unset: torch's default, which this process shares


def _files(root: str | None) -> dict[str, int]:
    """{path: mtime_ns} of the picks under `root` (a folder removed meanwhile is skipped)."""
    found: dict[str, int] = {}
    if root is None:
        return found
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".best_config"):
                path = os.path.join(folder, name)
                try:
                    found[path] = os.stat(path).st_mtime_ns
                except OSError:
                    pass
    return found


def before(cache_dir: str | None = None) -> dict[str, int]:
    """The picks in the cache now: taken before the first calls, they are not this process's."""
    try:
        return _files(_root(cache_dir))
    except Exception:  # noqa: BLE001 - reading the cache must never fail the job
        return {}


def picked(earlier: dict[str, int], cache_dir: str | None = None) -> dict:
    """{"count", "picks": {kernel folder/file: {setting: value}}} of the picks written since `earlier` (new files, or
    rewritten ones); at most LIMIT kept. Never raises: a cache it cannot read gives {"count": 0, ..., "error"}."""
    out: dict = {"count": 0, "picks": {}}
    try:
        for path, mtime in sorted(_files(_root(cache_dir)).items()):
            if earlier.get(path) == mtime:
                continue
            try:
                with open(path) as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict):
                continue
            out["count"] += 1
            if len(out["picks"]) < LIMIT:
                block = {k: v for k, v in data.items() if k.isupper() and isinstance(v, int)}  # XBLOCK, R0_BLOCK
                stem = os.path.basename(path).removesuffix(".best_config")
                name = f"{os.path.basename(os.path.dirname(path))}/{stem[:12]}"
                out["picks"][name] = block | {k: data[k] for k in SETTINGS if k in data}
    except Exception as e:  # noqa: BLE001 - reading the cache must never fail the job
        out["error"] = f"{type(e).__name__}: {e}"[:200]
    return out


def runtime_autotune_us() -> int | None:
    """The microseconds this process has spent timing kernels' candidate launch settings at run time so far (torch
    counts them as runtime_triton_autotune_time_us: those already in its compilation metrics, and those it holds until
    its next compile; a flush moves them from one to the other). The difference around a call is that call's. None
    where this torch keeps no such count (not the same as none spent). Compiling the candidates is not in it."""
    try:
        from torch._dynamo.utils import get_compilation_metrics, get_runtime_metrics_context

        flushed = sum(getattr(m, "runtime_triton_autotune_time_us", None) or 0 for m in get_compilation_metrics())
        pending = (getattr(get_runtime_metrics_context(), "_metrics", None) or {}).get(
            "runtime_triton_autotune_time_us") or 0
        return int(flushed) + int(pending)
    except Exception:  # noqa: BLE001 - an older torch, or a count it keeps elsewhere: nothing known, nothing taken off
        return None
