"""The version diff on a page: the same configuration under two torch versions, each metric's A, B and change,
the change cell green where B is better past lab.versions.THRESHOLD_PCT, red where worse, uncoloured within (as
PyTorch's HUD colours its benchmarks). Rows from lab.versions (the same as `runner report --versions`)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from lab import versions

GREEN = "background-color: rgba(44, 160, 44, 0.30)"
RED = "background-color: rgba(214, 39, 40, 0.30)"
NAMES = {"speedup": "speedup", "compiled_ms": "compiled ms", "first_call_s": "cold first call s"}
NOTE = (f"Each configuration under two torch versions (A the older, A → B): Δ is B against A, green where B is "
        f"better by more than {versions.THRESHOLD_PCT:g}% (a higher speedup, a lower latency or first call), red where "
        "worse, uncoloured within. Numbers are the answer table's (medians over quiet runs); ⚠: a side's runs were "
        "all noisy, and its numbers are those noisy runs' (re-run on a quiet machine before believing a change). "
        "Same rows: `python -m runner report --versions`.")


def _num(v) -> str:
    return "–" if v is None or pd.isna(v) else f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def frame(rows: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shown table (text cells) and, cell by cell, its colours."""
    shown, colours = [], []
    for r in rows:
        row = {"model": r["model"], "bs": r["batch_size"], "configuration": r["config"] + (" ⚠" if r["noisy"] else ""),
               "torch A → B": f"{r['torch_a']} → {r['torch_b']}"}
        colour = dict.fromkeys(row, "")
        for name, title in NAMES.items():
            change = r[f"{name}_change_pct"]
            row |= {title: f"{_num(r[f'{name}_a'])} → {_num(r[f'{name}_b'])}",
                    f"{title} Δ": "–" if change is None else f"{change:+.1f}%"}
            verdict = r[f"{name}_verdict"]
            colour |= {title: "",
                       f"{title} Δ": GREEN if verdict == versions.BETTER else RED if verdict == versions.WORSE else ""}
        shown.append(row)
        colours.append(colour)
    return pd.DataFrame(shown), pd.DataFrame(colours)


def show(rows: list[dict], key: str) -> None:
    if not rows:
        return
    shown, colours = frame(rows)
    if shown["model"].nunique() == 1:  # one model: its name is in the page's heading or the sweep's label
        shown, colours = shown.drop(columns="model"), colours.drop(columns="model")
    st.dataframe(shown.style.apply(lambda _: colours, axis=None), hide_index=True, width="stretch", key=key,
                 height=min(460, 38 + 35 * len(shown)))
    st.caption(NOTE)
