"""Traffic replay in the child (lab.traffic says what a stream is): the job's stream of calls, each size run eagerly
and then compiled, in the stream's order, on the host's clock as the caller waits (a synchronous call).

The stream starts from a reset dynamo (torch._dynamo.reset: no graph in its cache, the recompile limit counted
from the stream's first call), as a fresh serving process would; the inductor caches on disk keep what this job
compiled before, as a restarted server's would. Each call records what torch says happened in it:
  compiles     compile attempts that made a graph (torch's compilation metrics; counters' frames "ok" beside them)
  recompiles   those with a recompile reason: the guard that failed, in torch's words
  limit_hit    an attempt refused at config.recompile_limit (torch stops compiling that frame and runs it eagerly)
  fallback     a frame whose guards matched no cached graph and that nothing was compiled for: it ran eagerly
               (dynamo's guard-complete hook reports each cache lookup's hit or miss; torch counts no fallbacks)
and the counters' deltas are kept beside the stream, so what the lab says can be checked against torch's own.
Runs after the job's record is made: resetting dynamo must not change what the measurement read."""
from __future__ import annotations

import torch

from lab.errors import first_line
from lab.traffic import padded, summarize
from runner.child.build import Setup, inputs_for, timed_once
from runner.child.capture import recompiles
from runner.child.capture.introspect import describe_compile_failure, metrics
from runner.child.rounds import Report

LIMIT_WORDS = "recompile limit"  # in the key torch counts a refused recompile under (counters["unimplemented"])


class GuardLog:
    """Counts dynamo's cache lookups that matched no graph, through torch's guard-complete hook (chaining a hook
    already set, such as guard collectives, and handing back its verdict)."""

    def __init__(self):
        self.misses = 0
        self._before = None

    def __enter__(self) -> "GuardLog":
        from torch._C._dynamo.eval_frame import set_guard_complete_hook

        self._before = set_guard_complete_hook(self._hook)
        return self

    def _hook(self, hit: bool) -> bool:
        if not hit:
            self.misses += 1
        return hit if self._before is None else self._before(hit)

    def __exit__(self, *exc) -> None:
        from torch._C._dynamo.eval_frame import set_guard_complete_hook

        set_guard_complete_hook(self._before)


def counted() -> dict:
    """The torch._dynamo counters a stream is checked against, as they stand."""
    from torch._dynamo.utils import counters

    return {"frames_total": int(counters["frames"]["total"]), "frames_ok": int(counters["frames"]["ok"]),
            "unique_graphs": int(counters["stats"]["unique_graphs"]),
            "limit_refusals": sum(int(v) for k, v in counters["unimplemented"].items() if LIMIT_WORDS in k.lower())}


def replay(job: Setup, report: Report) -> dict:
    """The job's stream (spec.traffic): its answer (lab.traffic.summarize), the calls column by column, the torch
    counters' deltas over the stream, and the guard misses the hook saw."""
    spec, stream = job.spec, job.spec.traffic
    sizes, bucket = stream["sizes"], stream.get("bucket")
    torch._dynamo.reset()
    start = counted()
    calls: list[dict] = []
    with GuardLog() as guards:
        for i, size in enumerate(sizes):
            if i % 20 == 0:
                report("traffic", i / len(sizes))
            call = {"size": size, "padded": padded(size, bucket), "eager_s": None, "compiled_s": None, "compiles": 0,
                    "recompiles": 0, "recompile_reason": None, "limit_hit": False, "fallback": False, "error": None}
            calls.append(call)
            try:  # a size too large for memory ends the stream there, not the job
                inputs = inputs_for(job.module, job.entry, spec, size, job.device, job.dtype)
                call["eager_s"], _ = timed_once(job.timer, job.eager_step, inputs)
            except Exception as exc:
                call["error"] = f"eager call failed: {type(exc).__name__}: {first_line(exc, blank='')}"
                break
            n_metrics, misses = len(metrics()), guards.misses
            try:
                if call["padded"] != size:  # the compiled side pays the padding's compute
                    inputs = inputs_for(job.module, job.entry, spec, call["padded"], job.device, job.dtype)
                call["compiled_s"], _ = timed_once(job.timer, job.compiled_step, inputs)
            except Exception as exc:
                call["error"] = describe_compile_failure(exc, spec, metrics()[n_metrics:])
                break
            new = metrics()[n_metrics:]
            reasons = [r["reason"] for r in recompiles.explained(new)]
            call["compiles"] = sum(1 for m in new if not (getattr(m, "fail_type", None)
                                                          or getattr(m, "fail_reason", None)))
            call["recompiles"] = len(reasons)
            call["recompile_reason"] = "; ".join(reasons) or None
            call["limit_hit"] = bool(recompiles.limit_hits(new))
            call["fallback"] = guards.misses - misses > call["compiles"]
            del inputs
    end = counted()
    out = summarize(calls)
    # dynamo's cache held none when the stream began: each compile that made a graph added one entry (torch's
    # unique_graphs counter, beside it, skips a graph inductor's cache handed back: 0 for a dynamic stream on an H100)
    out["graphs"] = out["compiles"]
    out["torch_counters"] = {k: end[k] - start[k] for k in end}
    out["guard_misses"] = guards.misses
    out["error"] = next((c["error"] for c in calls if c["error"]), None)
    out["stream"] = {k: [c[k] for c in calls] for k in ("size", "padded", "eager_s", "compiled_s", "compiles",
                                                        "recompiles", "limit_hit", "fallback")}
    out["reasons"] = [{"call": i, "reason": c["recompile_reason"]} for i, c in enumerate(calls) if c["recompile_reason"]]
    return out
