"""Answer rows against their model's pinned baseline (db.baseline_rows: the numbers `runner report --baseline` prints),
on Results under the answer and on Compare for each sweep; and a sweep's team record in a line. Text only: every cell
escaped (dashboard.markup.table)."""
from __future__ import annotations

import streamlit as st

from dashboard import markup
from dashboard.data import sweeps
from dashboard.markup import md
from lab import answer

COLUMNS = {"config": "configuration", "batch_size": "bs", "compiled_ms": "compiled ms", "baseline": "baseline",
           "vs_baseline_latency_pct": "latency vs baseline %", "vs_baseline_first_call_s": "first call vs baseline s",
           "vs_baseline_break_even_calls": "break-even vs baseline"}
KINDS = {"config": "wide", "baseline": "name"}


def show(engine, rows, model: str | None, title: str | None = None) -> None:
    """The rows' deltas against `model`'s pinned baseline; nothing where the model has none. `rows`: the answer
    rows, or a function that reads them (called only where there is a baseline)."""
    pins = sweeps.baselines(engine) if model else {}
    pin = pins.get(model)
    if pin is None:
        return
    rows = rows() if callable(rows) else rows
    if not rows:
        return
    rows = [r for r in sweeps.with_baseline(engine, rows, pins=pins) if r.get("model") == model]
    st.markdown(f"**{md(title or 'Against the baseline')}**: sweep {pin.sweep_id}"
                + (f", configuration {md(pin.config)}" if pin.config else "")
                + f", pinned by {md(pin.pinned_by)} at {pin.pinned_at:%Y-%m-%d %H:%M} UTC")
    st.html(markup.table(list(COLUMNS.values()), [[answer.headline_cell(r.get(c)) for c in COLUMNS] for r in rows],
                         kinds=[KINDS.get(c, "num") for c in COLUMNS]))
    st.caption("Latency: the caller's, with compile, against the baseline's row of the same shape (batch size, task, "
               "dtype, device); negative is faster. A pinned sweep's row is its fastest configuration at that shape.")


def record_line(engine, sweep_id: int, side: str = "") -> None:
    m = sweeps.meta(engine, [sweep_id]).get(sweep_id)
    if m is None:
        return
    parts = [f"submitted by {md(m.submitter or 'unknown')}"]
    if m.tags:
        parts.append("tags " + ", ".join(md(t) for t in m.tags))
    if m.archived_at:
        parts.append("archived")
    st.caption(f"{md(side)}{' · '.join(parts)}")
    if m.note:
        st.text(m.note)  # as typed: its line breaks and spaces kept, never Markdown
