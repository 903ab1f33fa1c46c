"""The Results page's filters: their options, applying them, and a download's name from them."""
from __future__ import annotations

import re

import pandas as pd

from dashboard.data.series_labels import modes_as_run
from lab.axes import COMPILE_AXES

FILTERS = {  # column -> label; every one is a URL query parameter on the Results page
    "sweep": "Sweep", "model": "Model", **{a.field: a.title for a in COMPILE_AXES}, "cache": "Compile cache",
    "device": "Device", "dtype": "dtype", "torch_version": "torch", "device_name": "GPU / CPU", "status": "Status"}
ENV_FILTERS = ("torch_version", "device_name")  # unknown for jobs that never ran: kept under these filters


def filter_options(df: pd.DataFrame, col: str) -> list:
    if col == "sweep":
        order = df.drop_duplicates("sweep_id").sort_values("sweep_id", ascending=False)
        return order["sweep_label"].tolist()
    values = modes_as_run(df) if col == "mode" else df[col]  # off CUDA, reduce-overhead is default (as plotted)
    return sorted({str(v) for v in pd.unique(values.to_numpy()) if not pd.isna(v)})  # no str() per row


def apply_filters(df: pd.DataFrame, selected: dict[str, list]) -> pd.DataFrame:
    """Keep rows whose value is among the chosen ones (empty choice: all). Rows with no environment
    (jobs that failed before measuring on an unknown worker) stay under the environment filters. With no
    filter set, `df` itself (no copy of every row on each rerun)."""
    if not any(selected.values()):
        return df
    mask = pd.Series(True, index=df.index)
    for col, values in selected.items():
        if not values:
            continue
        key = "sweep_label" if col == "sweep" else col
        column = modes_as_run(df) if col == "mode" else df[key]
        hit = column.astype(str).isin([str(v) for v in values])
        if col in ENV_FILTERS:
            hit |= df[key].isna()
        mask &= hit
    return df[mask]


def download_name(selected: dict[str, list], ext: str, kind: str = "") -> str:
    """A download's file name that says what it holds: compile_lab_sweep12_complexnet_default.csv from the
    sweep, model and mode filters (compile_lab_results.csv with none set), so two downloads do not overwrite
    each other under one generic name; `kind` sets apart another table of the same view (answer: the answer's
    rows, compile_lab_answer_complexnet.csv)."""
    word = {"sweep": lambda v: "sweep" + str(v).split()[0].lstrip("#"), "dynamic": lambda v: f"dynamic-{v}"}
    parts = [word.get(col, str)(v) for col in ("sweep", "model", "mode", "dynamic") for v in selected.get(col) or []]
    stem = "_".join(re.sub(r"[^A-Za-z0-9.-]+", "-", p).strip("-") for p in parts)[:80].strip("_-")
    return f"compile_lab_{kind + '_' if kind else ''}{stem or 'results'}.{ext}"
