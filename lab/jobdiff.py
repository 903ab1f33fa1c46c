"""Two jobs' compiler stories side by side ("what changed between these two compiles?"): graphs, breaks
and their reasons, recompiles and the guards that failed, kernels per call, cache layers, compile phases, from the
export records; the differences marked; and the generated code as a unified diff. What `runner diff A B` prints and
Compare's run view shows. Text in, text out: no torch, no database."""
from __future__ import annotations

import difflib
import json
import re
from typing import Mapping

from lab import first_call

# (label, how to read it from an export record)
STORY = (
    ("torch", lambda r: r.get("torch_version")),
    ("device", lambda r: r.get("device_name")),
    ("mode", lambda r: r.get("mode")),
    ("dynamic", lambda r: r.get("dynamic")),
    ("fullgraph", lambda r: r.get("fullgraph")),
    ("graphs", lambda r: r.get("graph_count")),
    ("graph breaks", lambda r: r.get("graph_breaks")),
    ("break reasons", lambda r: r.get("graph_break_reasons") or []),
    ("recompiles", lambda r: r.get("recompiles")),
    ("guards that failed (recompile reasons)", lambda r: r.get("recompile_reasons") or []),
    ("recompile limit hits", lambda r: r.get("recompile_limit_hits")),
    ("kernels per call, eager", lambda r: r.get("eager_kernels")),
    ("kernels per call, compiled", lambda r: r.get("compiled_kernels")),
    # what the compiled first call compiled from, as the answer counts it (lab.first_call.kind): a process repeat of a
    # cold-cache configuration compiles from its first run's cache, so it is warm whatever its spec asked
    ("first call compiled from", lambda r: first_call.kind(r.get("first_call_cache"), r.get("cache"),
                                                           r.get("graph_cache_hit"))),
    ("first call, compiled (s)", lambda r: _round(r.get("compiled_first_call_s"))),
)
# where each compile's code was written (a cache path that always differs): left out of the diff
_HEADER = re.compile(r"^(# ===== compile \S+): .*$", re.M)
MAX_CODE_LINES = 20_000  # per side: a diff of more is cut (and says so)


def _round(v, digits: int = 3):
    return round(v, digits) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def text(v) -> str:
    """A value as one line of text: lists one item a line joined by ' | ', each item read as a sentence (item())."""
    if v is None:
        return "–"
    if isinstance(v, list):
        return " | ".join(item(x) for x in v) if v else "(none)"
    return item(v)


def item(v) -> str:
    """A reason as a person reads it: "[0/1] the guard that failed (function, file:line: source)", "a break (2 times)";
    another mapping as "key value, ..."."""
    if not isinstance(v, Mapping):
        return str(v)
    said = v.get("reason", v.get("last_reason"))
    if said is None:
        return ", ".join(f"{k} {json.dumps(x, default=str) if isinstance(x, (dict, list)) else x}"
                         for k, x in sorted(v.items()))
    where = f"{v['file']}:{v['line']}" if v.get("file") and v.get("line") is not None else v.get("file") or ""
    where += f": {v['source']}" if where and v.get("source") else ""
    where = ", ".join(p for p in (v.get("function"), where) if p)
    return (f"[{v['compile_id']}] " if v.get("compile_id") else "") + str(said) + (f" ({where})" if where else "") \
        + (f" ({v['count']} times)" if isinstance(v.get("count"), int) and v["count"] > 1 else "")


def story_rows(a: Mapping, b: Mapping) -> list[dict]:
    """[{what, A, B, differs}]: the story's fields, then each compile phase and each cache layer as its own row."""
    rows = [(label, get(a), get(b)) for label, get in STORY]
    phases_a, phases_b = a.get("compile_phases_s") or {}, b.get("compile_phases_s") or {}
    for phase in dict.fromkeys([*phases_a, *phases_b]):
        rows.append((f"compile phase: {phase} (s)", _round(phases_a.get(phase)), _round(phases_b.get(phase))))
    layers_a, layers_b = a.get("cache_layers") or {}, b.get("cache_layers") or {}
    for layer in dict.fromkeys([*layers_a, *layers_b]):
        rows.append((f"cache layer: {layer}", _layer(layers_a.get(layer)), _layer(layers_b.get(layer))))
    return [{"what": label, "A": text(x), "B": text(y), "differs": _differs(label, x, y),
             "items": ([item(v) for v in x or ()], [item(v) for v in y or ()]) if isinstance(x or y, list) else None}
            for label, x, y in rows]


TIME_NOISE = 0.10  # a time (a row in seconds) differs past this fraction: compile times move that much run to run


def _differs(label: str, x, y) -> bool:
    if label.endswith("(s)") and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y)):
        return abs(x - y) > TIME_NOISE * max(abs(x), abs(y))
    return text(x) != text(y)


def _layer(c) -> str | None:
    if not isinstance(c, Mapping):
        return c
    return ", ".join(f"{k} {c[k]}" for k in ("hit", "miss", "bypass") if c.get(k) is not None) or None


def code_diff(code_a: str | None, code_b: str | None, name_a: str = "A", name_b: str = "B") -> str:
    """The generated code's unified diff ('' where the two are the same); a side without code says so."""
    if code_a is None or code_b is None:
        missing = " and ".join(n for n, c in ((name_a, code_a), (name_b, code_b)) if c is None)
        return f"(no output code kept for {missing}: nothing to diff)\n"
    lines_a, lines_b = (_HEADER.sub(r"\1", code).splitlines() for code in (code_a, code_b))
    cut = len(lines_a) > MAX_CODE_LINES or len(lines_b) > MAX_CODE_LINES
    out = "\n".join(difflib.unified_diff(lines_a[:MAX_CODE_LINES], lines_b[:MAX_CODE_LINES], name_a, name_b,
                                         lineterm="", n=2))
    if cut:
        out += f"\n(cut at {MAX_CODE_LINES:,} lines a side)"
    return out + "\n" if out else ""


def lines_text(rows: list[dict], only_differences: bool = False) -> str:
    """The story rows for a terminal, a '*' on each that differs: "name: a -> b" (or "name: a" where the same); a
    list row names each side's items one a line ("A: ...", "B: ...", "A, B: ..." where the two lists agree)."""
    out = []
    for r in rows:
        if only_differences and not r["differs"]:
            continue
        mark = "*" if r["differs"] else " "
        if r.get("items") is None or not any(r["items"]):
            out.append(f"{mark} {r['what']}: {r['A'] if r['A'] == r['B'] else r['A'] + ' -> ' + r['B']}")
            continue
        out.append(f"{mark} {r['what']}:")
        sides = [("A, B", r["items"][0])] if r["A"] == r["B"] else [("A", r["items"][0]), ("B", r["items"][1])]
        out += [f"    {side}: {x}" for side, items in sides for x in items or ["(none)"]]
    return "".join(line + "\n" for line in out)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(out: str) -> str:
    """Text for a terminal: control characters (an escape sequence in a stored reason or in code) shown as \\xNN,
    never acted on."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", out)
