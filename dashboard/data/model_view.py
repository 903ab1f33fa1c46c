"""What Results' per-model tabs draw from, read through the results store: one model's rows in view with series
labels, their medians and failures (ModelView), the first-call numbers of those rows, and the shape schedules'
calls of the newest jobs that ran one. The figures are built from these values (dashboard.panels.results_figures)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from dashboard.data import answers, plot_data, series_labels
from db.views import FIRST_CALL_FIELDS, VIEW_FIELDS

SCHEDULE_JOBS = 40  # the recompile timeline draws the newest jobs that ran a schedule


@dataclass(frozen=True)
class ModelView:
    """One model's rows in view with series labels (`view`), their medians per configuration and batch size
    (`agg`) and the jobs that did not succeed (`fails`): what every per-model tab draws from."""

    view: pd.DataFrame
    agg: pd.DataFrame
    fails: pd.DataFrame


def build(store, shown: pd.DataFrame, model: str) -> ModelView:
    """`model`'s rows of `shown` with every number its plots draw (read for its jobs only: ResultStore.complete)."""
    rows = store.complete(shown[shown["model"] == model], VIEW_FIELDS)
    view = series_labels.label_series(rows)
    agg, fails = plot_data.summarize(view)
    return ModelView(view=view, agg=plot_data.with_noise(agg, view), fails=fails)


def first_calls(store, view: pd.DataFrame) -> pd.DataFrame:
    """`view` with the first call's breakdown and cache numbers read for its jobs."""
    return store.complete(view, FIRST_CALL_FIELDS)


def scheduled(view: pd.DataFrame) -> pd.DataFrame:
    """The succeeded jobs of `view` that ran a shape schedule."""
    return view[view["has_schedule"].fillna(False).astype(bool) & (view["status"] == "succeeded")]


def schedule_calls(store, view: pd.DataFrame) -> dict[int, list[dict]]:
    """The schedule's calls of the newest SCHEDULE_JOBS jobs of `view` that ran one, by job id ({}: none did)."""
    newest = scheduled(view).sort_values("job_id").tail(SCHEDULE_JOBS)
    return answers.schedule_calls(store.engine, newest["job_id"].tolist()) if len(newest) else {}
