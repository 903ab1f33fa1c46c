"""Compare's run view, continued: two runs' compiler stories side by side (lab.jobdiff, differing rows highlighted)
and their generated code as a unified diff (`runner diff A B`). Data and code blocks only, never markup."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.data.artifacts import output_code
from dashboard.panels import compare_tables as tables
from lab import jobdiff


@st.cache_data(max_entries=8, show_spinner=False)
def _code_diff(_engine, a: int, b: int) -> str:
    return jobdiff.code_diff(output_code(_engine, a), output_code(_engine, b), f"job {a}", f"job {b}")


def show(engine, ra: dict, rb: dict) -> None:
    rows = jobdiff.story_rows(ra, rb)
    st.subheader("Compiler story")
    table = pd.DataFrame(rows, columns=["what", "A", "B", "differs"])
    st.caption(f"{int(table['differs'].sum())} of {len(table)} rows differ (highlighted); "
               f"`python -m runner diff {ra['job_id']} {rb['job_id']}` prints the same.")
    st.dataframe(tables.highlight_rows(table), hide_index=True, width="stretch", height=tables.fit(len(table)),
                 key="compare_story")
    with st.expander("Generated code: unified diff (output_code)", icon=":material/difference:"):
        diff = _code_diff(engine, ra["job_id"], rb["job_id"])
        if diff:
            st.code(diff, language="diff", line_numbers=False)
        else:
            st.caption("The same code on both sides.")
