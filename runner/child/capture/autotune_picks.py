"""The launch settings inductor's autotuner picked in this process: on a GPU, a kernel with several candidate
settings (a pointwise kernel's block sizes, warps) times them in its first call and keeps the fastest beside its
source in the compile cache (a `.best_config` file). The pick can differ between fresh processes, and with it the
compiled side's time; the record keeps this process's picks so two processes' answers can be told apart by them.
Picks found in the cache (a warm job's) were made by an earlier process and are not this one's."""
from __future__ import annotations

import json
import os
from pathlib import Path

LIMIT = 64  # picks kept per job (a large model's graphs can hold hundreds of kernels)
SETTINGS = ("num_warps", "num_stages")


def picked_since(started_wall: float, cache_dir: str | None = None) -> dict:
    """{"count", "picks": {kernel folder/file: {setting: value}}} of the picks written at or after `started_wall`
    (this process's) under the inductor cache (TORCHINDUCTOR_CACHE_DIR unless given); at most LIMIT kept."""
    root = Path(cache_dir or os.environ.get("TORCHINDUCTOR_CACHE_DIR") or "")
    picks: dict[str, dict] = {}
    count = 0
    if not str(root) or not root.is_dir():
        return {"count": 0, "picks": picks}
    for path in sorted(root.glob("**/*.best_config")):
        try:
            if path.stat().st_mtime < started_wall:
                continue
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        count += 1
        if len(picks) < LIMIT:
            block = {k: v for k, v in data.items() if k.isupper() and isinstance(v, int)}  # XBLOCK, R0_BLOCK, ...
            picks[f"{path.parent.name}/{path.stem[:12]}"] = block | {k: data[k] for k in SETTINGS if k in data}
    return {"count": count, "picks": picks}
