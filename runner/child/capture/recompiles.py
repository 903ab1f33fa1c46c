"""Recompiles explained: each recompile's guard failure beside the function it recompiled and that function's
source line, and the frames that hit dynamo's recompile limit and run eagerly from then on, from torch's
compilation metrics (one per compile attempt, in order)."""
from __future__ import annotations

import linecache

LIMIT = "recompile limit exceeded"  # in the fail_reason torch records when a frame hits config.recompile_limit


def _frames(metrics: list) -> dict[str, dict]:
    """{frame id: where its code is}: a failed attempt carries no code names, an earlier one of its frame does."""
    out: dict[str, dict] = {}
    for m in metrics:
        if getattr(m, "co_filename", None):
            frame = str(m.compile_id).split("/")[0]
            line = int(m.co_firstlineno or 0)
            out.setdefault(frame, {"function": m.co_name, "file": m.co_filename, "line": line,
                                   "source": linecache.getline(m.co_filename, line).strip()})
    return out


def explained(metrics: list) -> list[dict]:
    """[{compile_id, reason, function, file, line, source}] for every recompile: the guard that failed
    (torch's words, say "tensor 'x' size mismatch at index 0. expected 8, actual 16") and where the code is.
    An attempt refused at the recompile limit carries a recompile reason too, but compiled nothing: not counted."""
    frames = _frames(metrics)
    return [{"compile_id": str(m.compile_id), "reason": m.recompile_reason,
             **frames.get(str(m.compile_id).split("/")[0], {})} for m in metrics
            if m.recompile_reason and not _hit_limit(m)]


def limit_hits(metrics: list) -> list[dict]:
    """Frames that hit the recompile limit: dynamo stopped compiling them, and new inputs run them eagerly, so
    a speedup measured across them is partly eager's."""
    frames = _frames(metrics)
    return [{"compile_id": str(m.compile_id), "last_reason": m.recompile_reason,
             **frames.get(str(m.compile_id).split("/")[0], {})}
            for m in metrics if _hit_limit(m)]


def _hit_limit(m) -> bool:
    return LIMIT in (getattr(m, "fail_reason", None) or "").lower()
