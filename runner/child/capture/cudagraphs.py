"""CUDA graphs health, for jobs that use them (reduce-overhead, max-autotune, the cudagraphs backend on CUDA):
whether inductor skipped them and torch's reason, how often a graph was re-recorded during the timed rounds
(each one a capture inside what was timed), and the memory of the CUDA graph pool.

Read from torch's own state (the compilation metrics' cudagraph_skip_reason, the inductor counters, the CUDA
graph tree manager), each piece by name and only where present: a torch without one gives None for it, and
nothing here can fail the job. The skip reason is also taken from torch's `cudagraphs` log artifact
("skipping cudagraphs due to mutated inputs"): on torch 2.11 the metrics did not carry it.
"""
from __future__ import annotations

import logging

_SKIPS: list[str] = []


class _SkipHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text.startswith("skipping cudagraphs"):
            _SKIPS.append(text[:400])


def listen() -> None:
    """Collect torch's skip messages from now on (runner.child.capture.introspect turns the artifact on)."""
    logger = logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs")
    if not any(isinstance(h, _SkipHandler) for h in logger.handlers):
        logger.addHandler(_SkipHandler(logging.DEBUG))


def _manager():
    from torch._inductor import cudagraph_trees

    return cudagraph_trees.get_manager(0, create_if_none_exists=False)  # the child sees one GPU, index 0


def rerecords() -> int | None:
    """Re-recordings so far: torch counts them per graph node and function (num_rerecord)."""
    try:
        manager = _manager()
        return None if manager is None else sum(sum(f.values()) for f in manager.num_rerecord.values())
    except Exception:
        return None


def pool_mb() -> float | None:
    """Memory reserved by the CUDA graph trees' pool, from the allocator's snapshot."""
    try:
        import torch

        manager = _manager()
        if manager is None:
            return None
        pool = tuple(manager.cuda_graphs_thread_pool)
        segments = torch.cuda.memory._snapshot()["segments"]
        return sum(s["total_size"] for s in segments if tuple(s.get("segment_pool_id") or ()) == pool) / 2**20
    except Exception:
        return None


def health(metrics: list, rerecords_before: int | None) -> dict:
    """{"skipped", "skip_reasons", "skips", "rerecords_in_rounds", "pool_mb"} after the rounds. Seen on an H100
    (torch 2.11): complexnet bs 32 reduce-overhead, not skipped, 0 re-recordings, a 338 MB pool."""
    from torch._dynamo.utils import counters

    reasons = sorted({r for r in (getattr(m, "cudagraph_skip_reason", None) for m in metrics) if r} | set(_SKIPS))
    after = rerecords()
    return {"skipped": bool(reasons) or bool(counters["inductor"].get("cudagraph_skips")),
            "skip_reasons": reasons, "skips": int(counters["inductor"].get("cudagraph_skips", 0)),
            "rerecords_in_rounds": after - rerecords_before if None not in (after, rerecords_before) else None,
            "pool_mb": pool_mb()}
