"""Results: filters (all in the URL), downloads, the counts, the answer for one model, then tabs (N calls, speed,
first call, repeats, roofline, failures, every field). Only the open tab and its chosen chart run, so a visit pays
for what it shows; the view is results_filters', the figures results_figures', the tabs results_tabs'."""
import streamlit as st

from dashboard.data import filters, plot_data
from dashboard.markup import md
from dashboard.panels import advice_panel, answer_table, team_filters
from dashboard.panels import results_figures as figures
from dashboard.panels import results_filters as view
from dashboard.panels import results_tabs as tabs
from dashboard.server import downloads as exports
from dashboard.state import refresh, resources

# the tabs; their labels are the URL's `view` values (renaming one breaks links to it)
TABS = ["Speedup", "First call", "Repeats", "Roofline", "Failures", "Table"]

st.title("Results")
engine = resources.engine()
df = resources.results()
if df.empty:
    st.info("No finished jobs yet. Submit a sweep; its results appear here as jobs finish.")
    st.page_link("screens/submit.py", label="Submit a sweep", icon=":material/send:")
    refresh.drawn(df, {})
    refresh.watch({})
    resources.end_page()

df, metas = team_filters.apply(engine, df, view.frame_key(df))  # tags, submitter, archived (db.team)

# The page's parts are laid out first and filled in the order a visitor waits for them: the open chart is sent
# before the filters, counts, answer table and pickers above it. A browser fetches each kind of element's code
# when the first one arrives, in that order, and draws a chart only once plotly's code has come: sent last, the
# chart waited for every other kind's code, and for their drawing. Widgets drawn after the chart have their
# values read first (the session's, else the URL's): the same values they then show.
filters_row = st.columns([1, 4, 1], vertical_alignment="center")  # the filters, what they keep, the downloads
summary_slot = st.container()
selected = view.chosen_filters(df)
missing = view.link_missing(df, selected)
if missing:  # a link's filter naming a deleted sweep or a typo: said, then the view without it
    named = "; ".join(f"{label}: {md(values)}" for label, values in missing)
    st.warning(f"This link names what is not here ({named}): the page shows every job the rest of the link keeps.",
               icon=":material/warning:")
shown = filters.apply_filters(df, selected)
key = view.view_key(df, selected)
facts = view.view_facts(key, shown)
if shown.empty:
    view.filters_ui(df, filters_row, selected)
    with summary_slot:
        view.summary(facts)
        refresh.drawn(df, selected)
        refresh.watch(selected)
    st.warning("No job matches these filters.")
    resources.end_page()

picker = st.container()
# in a popover: two download links, drawn before the chart on every visit, for a click now and then
downloads = filters_row[2].popover("Download", icon=":material/download:", width="stretch",
                                  help="Every shown row (all pages), every export field, as CSV or as "
                                       "`python -m runner export --format json` records")
answer_slot = st.container()  # the answer for the chosen model, above the tabs
speed_tab, launch_tab, repeat_tab, roofline_tab, fail_tab, table_tab = st.tabs(
    TABS, key="view", bind="query-params", width="stretch")
model = view.model_in_view(facts)
mine = answer_table.model_rows(key, model, shown)
answer_rows = answer_table.rows(key, model, engine, mine)

if speed_tab.open:
    with speed_tab:
        controls = st.container()
        on_gpu = bool(shown["device"].eq("cuda").any())  # the GPU clock only where a job in view has one
        chart, clock = tabs.chart_in_view(on_gpu)
        if model not in facts["plottable"]:
            st.info(f"Nothing to plot for {md(model)}: its jobs in view were all cancelled (they are listed under "
                    "**Failures**).", icon=":material/info:")
        elif chart == "N calls":
            answer_table.calls(answer_rows, figures.folded_notes(key, model, mine), key=key + (model,))
        else:
            tabs.plots(chart, figures.speed_figures(key, shown, model, resources.store(), clock))
        if facts["failed"]:
            st.caption(f"{facts['failed']:,} jobs in view did not succeed: marked on the plots as red ✕ with their count "
                       "(hover for the reasons) and listed under **Failures**.")
        with controls:
            tabs.chart_ui(chart, model in facts["plottable"], on_gpu)

view.filters_ui(df, filters_row, selected)
with summary_slot:
    speed_slots = view.summary(facts)
    team_filters.who_line(metas, shown)
    refresh.drawn(df, selected)
    refresh.watch(selected)  # reruns the page when results land in view, and says so
with picker:  # always drawn (a widget that is not drawn loses its state); idle on the all-model tabs
    view.model_ui(facts, per_model=bool(speed_tab.open or launch_tab.open or repeat_tab.open))


# links, not download buttons: the file streams from `runner export` in a process of its own (dashboard.server.
# downloads)
links = exports.offer(st.session_state.setdefault("export_token", exports.new_token()), resources.url(),
                      shown["job_id"].to_numpy(), {ext: filters.download_name(selected, ext) for ext in ("csv", "json")})
downloads.link_button("CSV", links["csv"], icon=":material/download:", width="stretch")
downloads.link_button("JSON", links["json"], icon=":material/download:", width="stretch")
with answer_slot:  # a search in view: its recommendation above the answer table
    advice_panel.on_results(engine, shown)
answer_table.show(speed_slots, answer_slot, key, model, engine, shown)

if launch_tab.open:
    with launch_tab:
        st.subheader(f"Warmup and launch overhead: {md(model)}")
        tabs.first_call_and_launch(figures.launch_figures(key, shown, model, resources.store()))
if repeat_tab.open:
    with repeat_tab:
        st.subheader(f"Spread across repeats: {md(model)}")
        tabs.repeat_spread(figures.repeat_figures(key, shown, model, resources.store(), answer_rows))
if roofline_tab.open:
    with roofline_tab:
        st.subheader("Roofline: every model in view")
        tabs.roofline_plot(shown, key, engine)
if fail_tab.open:
    with fail_tab:
        tabs.failures_section(plot_data.failures(shown, cancelled=True))
if table_tab.open:
    with table_tab:
        tabs.export_table(shown, engine)
