"""torch's structured compile trace, captured in the child: what TORCH_TRACE writes and tlparse reads (the output
code inductor generated, the FX graphs of each stage, cache hits and bypasses with the reason), without setting
TORCH_TRACE (a preloaded parent forks children after torch has read its environment).

torch emits these records only when its trace logger has a handler, so adding ours turns them on; each costs a
little while compiling (torch counts it as structured_logging_overhead, kept in the detail beside the compile
times). Ours keeps the texts the job's page shows and the trace lines in TORCH_TRACE's own format, so tlparse can
read the `trace` artifact as it is.
"""
from __future__ import annotations

import json
import logging
import re

from lab.artifact_files import MAX_TEXT_BYTES

GRAPHS = ("dynamo_output_graph", "aot_inference_graph", "aot_forward_graph", "aot_backward_graph",
          "inductor_post_grad_graph")
CACHES = {"fx_graph_cache": "fxgraph", "aotautograd_cache": "aotautograd"}  # the artifacts' names -> our layers


class CompileTrace(logging.Handler):
    """Keeps the output code, the graphs and the trace lines (each up to `limit` bytes), and the cache events."""

    def __init__(self, limit: int = MAX_TEXT_BYTES, attach: bool = True):
        super().__init__(logging.DEBUG)
        from torch._logging._internal import TorchLogsFormatter, trace_log

        self.limit = limit
        self.texts: dict[str, list[str]] = {"output_code": [], "fx_graphs": [], "trace": []}
        self.sizes = dict.fromkeys(self.texts, 0)
        self.cache_events: list[dict] = []  # {"layer", "state", "reason"} in the order torch decided them
        self._codes: list[str] = []  # each output code whole (one per compiled graph): kernel_calls counts them
        self._records: list[logging.LogRecord] = []  # trace lines, formatted once the compile is over (artifacts)
        self._records_size = 0
        self.overflow = dict.fromkeys(self.texts, 0)  # bytes not kept past the limit
        self.setFormatter(TorchLogsFormatter(trace=True))
        self._log = trace_log
        # what the records cost, per compile and compile phase (without our handler torch still times its checks)
        self.shares = TraceShares()
        if attach:  # else torch emits no trace record at all (it builds them only for a handler): all stay empty
            trace_log.setLevel(logging.DEBUG)
            trace_log.addHandler(self)

    def close(self) -> None:
        self._log.removeHandler(self)
        self.shares.close()
        super().close()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            meta, payload = getattr(record, "metadata", None) or {}, getattr(record, "payload", None)
            kind = next(iter(meta), "")
            where = _compile_id(meta)
            if kind == "inductor_output_code" and payload:
                path = (meta.get(kind) or {}).get("filename", "")
                self._codes.append(payload)
                self._keep("output_code", f"# ===== compile {where}: {path}\n{payload}\n")
            elif kind in GRAPHS and payload:
                self._keep("fx_graphs", f"# ===== compile {where}: {kind}\n{payload}\n")
            elif kind == "artifact":
                self._cache_event((meta.get("artifact") or {}).get("name", ""), payload)
            self._hold(record, len(payload or "") + 256)
        except Exception:  # a trace record we cannot read must never fail the job
            self.handleError(record)

    def _hold(self, record: logging.LogRecord, size: int) -> None:
        """A trace line kept as its record: formatting it (JSON, the payload's lines) while torch compiles is time
        torch counts in the compile (its structured-logging overhead), so it waits for artifacts(). Past twice the
        limit, only its size is counted."""
        if self._records_size + size > 2 * self.limit:
            self.overflow["trace"] += size
            return
        self._records_size += size
        self._records.append(record)

    @property
    def kernel_calls(self) -> list[int]:
        """Per output code (one per compiled graph), the generated kernels' calls, counted before any cap."""
        return [generated_kernel_calls(code) for code in self._codes]

    def _keep(self, what: str, text: str) -> None:
        n = len(text.encode("utf-8", "replace"))
        if self.sizes[what] + n > self.limit:
            self.overflow[what] += n
            return
        self.sizes[what] += n
        self.texts[what].append(text)

    def _cache_event(self, name: str, payload: str | None) -> None:
        for prefix, layer in CACHES.items():
            if name.startswith(prefix + "_"):
                info = _json(payload)
                self.cache_events.append({"layer": layer, "state": name[len(prefix) + 1:],
                                          "reason": info.get("cache_bypass_reason")})

    def artifacts(self) -> dict[str, str]:
        """{name: text} for lab.artifact_files.write_dir; a text that hit the limit ends saying how much was left out."""
        for record in self._records:  # the trace lines, in torch's own format, now that the compile is over
            self._keep("trace", self.format(record) + "\n")
        self._records = []
        out = {}
        for name, parts in self.texts.items():
            text = "".join(parts)
            if self.overflow[name]:
                text += f"\n# ... {self.overflow[name]} more bytes not kept (limit {self.limit})\n"
            out[name] = text
        return out


class TraceShares:
    """What capturing the trace cost inside each compile phase. torch times each trace record it builds and adds
    the time to its compile's total (structured_logging_overhead); we are told each amount as torch adds it, and file
    it under the innermost compile phase torch's own event stack is in, so the first call's parts can leave it out
    where it was spent. Where this torch lacks either hook, nothing is filed (the parts then hold it, as before)."""

    # torch's event for each part's timer, by the phase name its stack holds (its key where it has none)
    PHASES = {"code_gen": "codegen + kernel compile", "GraphLowering.compile_to_module": "codegen + kernel compile",
              "inductor_compile": "inductor lowering", "compile_fx_inner": "inductor lowering",
              "backend_compile": "aot autograd", "OutputGraph.call_user_compiler": "aot autograd",
              "entire_frame_compile": "dynamo tracing", "_compile.compile_inner": "dynamo tracing"}

    def __init__(self):
        self.by_compile: dict[str, dict[str, float]] = {}  # compile id ("0/0") -> {part: seconds}
        self._internal = self._added = None
        try:
            from torch._dynamo.utils import get_chromium_event_logger
            from torch._logging import _internal
        except ImportError:
            return
        added = getattr(_internal, "add_structured_logging_overhead", None)
        if added is None:
            return
        self._internal, self._added, self._events = _internal, added, get_chromium_event_logger()
        _internal.add_structured_logging_overhead = self._add

    def _add(self, seconds: float) -> None:
        self._added(seconds)  # torch's own account first, unchanged
        if self._internal is None:  # closed, though another's wrapper made later still calls this one
            return
        try:
            import torch._guards

            trace_id = torch._guards.CompileContext.current_trace_id()
            if trace_id is None:  # torch files it under no compile either
                return
            stack = self._events.get_stack()
            part = next((self.PHASES[e] for e in reversed(stack) if e in self.PHASES), "other (run, guards)")
            shares = self.by_compile.setdefault(str(trace_id.compile_id), {})
            shares[part] = shares.get(part, 0.0) + seconds
        except Exception:  # the accounting must never fail a compile
            return

    def of(self, metrics: list) -> dict[str, float]:
        """{part: seconds} summed over the compiles these CompilationMetrics are of."""
        out: dict[str, float] = {}
        for cid in {str(getattr(m, "compile_id", None)) for m in metrics}:
            for part, seconds in self.by_compile.get(cid, {}).items():
                out[part] = out.get(part, 0.0) + seconds
        return out

    def close(self) -> None:
        """Stop filing; torch's own function is put back where this one is still the installed one."""
        if self._internal is not None and self._internal.add_structured_logging_overhead == self._add:
            self._internal.add_structured_logging_overhead = self._added
        self._internal = None


_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.\w+\(", re.M)
_CALL_LINE = re.compile(r"^\s+(\w+)(?:\.run)?\(", re.M)


def generated_kernel_calls(code: str) -> int:
    """Calls to the kernels an inductor output code defines, in its `call` function (one run of the graph): what
    the profiler cannot see on the CPU, where the wrapper calls its C++ kernels directly."""
    kernels = set(_KERNEL_DEF.findall(code))
    body = code.split("def call(", 1)[1] if "def call(" in code else ""
    return sum(1 for name in _CALL_LINE.findall(body) if name in kernels)


def _compile_id(meta: dict) -> str:
    frame, attempt = meta.get("frame_id"), meta.get("frame_compile_id")
    return f"{frame}/{attempt}" if frame is not None else "?"


def _json(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def cache_layers(events: list[dict]) -> dict:
    """{"fxgraph": {"hit", "miss", "bypass", "bypass_reasons"}, "aotautograd": {...}, "triton": {...}}: per layer,
    from torch's counters (read by name: a counter this torch does not have counts 0); bypass reasons from the
    trace. `triton` is inductor's in-process cache of compiled Triton kernels (GPU only: 0 on the CPU)."""
    from torch._dynamo.utils import counters

    names = {"fxgraph": ("inductor", "fxgraph_cache_"), "aotautograd": ("aot_autograd", "autograd_cache_"),
             "triton": ("inductor", "async_compile_cache_")}
    out = {}
    for layer, (group, prefix) in names.items():
        c = counters.get(group, {})
        counts = {state: int(c.get(prefix + state, 0)) for state in ("hit", "miss", "bypass")}
        reasons = sorted({e["reason"] for e in events if e["layer"] == layer and e["reason"]})
        if reasons:
            counts["bypass_reasons"] = reasons
        out[layer] = counts
    return out
