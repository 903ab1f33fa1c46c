"""Cold, warm and portable first calls side by side: per configuration and batch size that ran under several
compile caches, the median compiled first call of each kind, as the answer table separates them (lab.first_call: a
process repeat's is warm, a warm run that found no cached graph is cold), and what a colleague's portable cache
saves against a cold start. No Streamlit here."""
from __future__ import annotations

import pandas as pd

from dashboard.data.plot_data import NOISY, first_call_kinds
from dashboard.data.series_labels import label_series, with_cache_state

COLUMNS = {"cold": "cold (s)", "warm": "warm (s)", "portable": "portable (s)"}


def side_by_side(view: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (named without its cache) and batch size that ran under two caches or more, or
    under portable; empty when none did."""
    view = with_cache_state(view)
    ok = view[(view["status"] == "succeeded") & view["compiled_first_call_s"].notna()]
    if ok.empty or not ((ok["cache"] == "portable").any() or ok["cache"].nunique() > 1):
        return pd.DataFrame()
    plain = label_series(ok.drop(columns=[c for c in ("config", "baseline", "series") if c in ok.columns])
                         .assign(cache="any", cache_state="any"))
    ok = ok.assign(configuration=plain["config"].to_numpy())
    # a configuration whose every run was disturbed (lab.noise) is named so, as on every plot
    disturbed = ok["disturbed"].eq(True) if "disturbed" in ok else pd.Series(False, index=ok.index)
    only = disturbed.groupby([ok["configuration"], ok["batch_size"]]).transform("all").astype(bool)
    ok = ok.assign(configuration=ok["configuration"].where(~only, NOISY + " · " + ok["configuration"]))
    ok = ok.assign(first_call=first_call_kinds(ok))
    table = (ok.pivot_table(index=["configuration", "batch_size"], columns="first_call",
                            values="compiled_first_call_s", aggfunc="median")
             .reindex(columns=[c for c in COLUMNS if c in set(ok["first_call"])]))
    runs = ok.groupby(["configuration", "batch_size"])["job_id"].size().rename("runs")
    table = table.join(runs)
    if "cold" in table and "portable" in table:
        table["portable vs cold"] = table["cold"] / table["portable"]
    table = table[table[[c for c in COLUMNS if c in table]].notna().sum(axis=1) >= (1 if "portable" in table else 2)]
    return table.rename(columns=COLUMNS).reset_index()
