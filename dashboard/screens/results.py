"""Results: filters (all in the URL), the plots that answer the seed notes, failures with their reasons,
the table of every export field, and CSV / JSON of what is shown."""
import streamlit as st

from dashboard import charts, state, tables
from db import views

URL_KEYS = {"torch_version": "torch", "device_name": "gpu"}  # shorter query parameter names
SCHEDULE_JOBS = 40  # the recompile timeline draws the newest jobs that ran a schedule
PAGE_ROWS = 500  # st.dataframe sends every row it gets to the browser: the table is paged, downloads are not
FAIL_ROWS = 1000




def filters_ui(df) -> dict:
    cols = st.columns(5)
    selected = {}
    for i, (col, label) in enumerate(tables.FILTERS.items()):
        selected[col] = cols[i % 5].multiselect(label, tables.filter_options(df, col), key=URL_KEYS.get(col, col),
                                                bind="query-params", placeholder="all")
    return selected


def summary(shown) -> None:
    ok = shown["status"] == "succeeded"
    speedups = shown.loc[ok, "speedup"]
    c = st.columns(5)
    c[0].metric("Jobs shown", f"{len(shown):,}")
    c[1].metric("Succeeded", f"{int(ok.sum()):,}")
    c[2].metric("Did not succeed", f"{int((~ok).sum()):,}")
    c[3].metric("Median speedup", f"{speedups.median():.2f}×" if speedups.notna().any() else "–")
    c[4].metric("Best speedup", f"{speedups.max():.2f}×" if speedups.notna().any() else "–")


def plots(view, engine) -> None:
    agg, fails = tables.summarize(view)
    left, right = st.columns(2)
    left.plotly_chart(charts.speedup(agg, fails), key="plot_speedup")
    right.plotly_chart(charts.latency(agg, fails), key="plot_latency")
    left, right = st.columns(2)
    left.plotly_chart(charts.warmup(agg, fails), key="plot_warmup")
    right.plotly_chart(charts.break_even(agg, fails), key="plot_break_even")
    with_schedule = view[view["has_schedule"].fillna(False).astype(bool) & (view["status"] == "succeeded")]
    if not with_schedule.empty:
        newest = with_schedule.sort_values("job_id").tail(SCHEDULE_JOBS)
        sched = charts.schedule_frame(view, views.schedule_calls(engine, newest["job_id"].tolist()))
        st.plotly_chart(charts.recompile_timeline(sched), key="plot_recompiles")
        if len(with_schedule) > SCHEDULE_JOBS:
            st.caption(f"The timeline shows the newest {SCHEDULE_JOBS} of {len(with_schedule)} jobs with a schedule.")
    else:
        st.caption("No job in view ran a shape schedule; submit one with a schedule (e.g. 32, 64) to see recompiles.")


st.title("Results")
engine = state.engine()
df = state.results()
if df.empty:
    st.info("No finished jobs yet. Submit a sweep; its results appear here as jobs finish.")
    st.page_link("screens/submit.py", label="Submit a sweep", icon=":material/send:")
    st.stop()

selected = filters_ui(df)
shown = tables.apply_filters(df, selected)
summary(shown)
if shown.empty:
    st.warning("No job matches these filters.")
    st.stop()

models = sorted(shown["model"].unique())
newest = shown.loc[shown["job_id"].idxmax(), "model"]
model = newest
if len(models) > 1:  # start from the newest job's model; the URL always names the one shown
    state.url_choice("plot", models, newest)
    model = st.segmented_control("Plots for model", models, key="plot") or newest
    state.write_url_choice("plot", model)
view = tables.label_series(shown[shown["model"] == model])
plots(view, engine)

bad = tables.failures(shown)
if not bad.empty:
    st.subheader(f"Did not succeed ({len(bad):,})")
    st.dataframe(bad.drop(columns=[c for c in ("config", "series") if c in bad.columns]).iloc[::-1].head(FAIL_ROWS),
                 hide_index=True, width="stretch", column_config={"error": st.column_config.TextColumn(
                     "reason", width="large"), "job_id": st.column_config.NumberColumn(format="%d")})
    if len(bad) > FAIL_ROWS:
        st.caption(f"The newest {FAIL_ROWS:,} of {len(bad):,}; all of them are in the table below and the downloads.")
    with st.expander("Full reasons (newest 20)", expanded=len(bad) <= 3):
        for row in bad.iloc[::-1].head(20).itertuples():
            st.markdown(f"**#{row.job_id}** {row.model} bs={row.batch_size} {row.backend}/{row.mode} "
                        f"dynamic={row.dynamic} fullgraph={row.fullgraph}: **{row.status}**")
            st.code(row.error, language=None, wrap_lines=True)

st.subheader("Every export field")
pages = max(1, -(-len(shown) // PAGE_ROWS))
if st.session_state.get("page", 1) > pages:  # fewer rows than the page a link or an earlier filter named
    st.session_state["page"] = 1
newest_first = shown.iloc[::-1]
table_slot = st.empty()
foot = st.columns([2, 1, 1, 3], vertical_alignment="center")
with foot[0]:
    page = st.pagination(pages, key="page", bind="query-params") if pages > 1 else 1
    st.caption(f"Rows {(page - 1) * PAGE_ROWS + 1:,}–{min(page * PAGE_ROWS, len(shown)):,} of {len(shown):,}, newest first")
rows = tables.export_columns(newest_first.iloc[(page - 1) * PAGE_ROWS:page * PAGE_ROWS], engine)
table_slot.dataframe(rows, hide_index=True, width="stretch", height=min(420, 38 + 35 * len(rows)), column_config={"job_id": st.column_config.NumberColumn(format="%d"),
                                                "speedup": st.column_config.NumberColumn(format="%.3f×")})
foot[1].download_button("CSV", data=lambda: tables.to_csv(shown, engine), file_name="compile_lab_results.csv",
                        mime="text/csv", on_click="ignore", icon=":material/download:",
                        help="Every shown row (all pages), every export field")
foot[2].download_button("JSON", data=lambda: tables.to_json(shown, engine), file_name="compile_lab_results.json",
                        mime="application/json", on_click="ignore", icon=":material/download:",
                        help="Every shown row as `python -m runner export --format json` records")
