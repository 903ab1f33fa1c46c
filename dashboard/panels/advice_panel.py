"""A racing search on the pages: Submit's "Find the best settings" and its progress, and on Results the search in view
(the recommendation, each candidate with why and when it was dropped). Words from lab.advice_text, shown as text."""
from __future__ import annotations

import streamlit as st

from dashboard.data import jobs, sweeps
from dashboard.data.model_order import label as model_label
from dashboard.data.model_order import ordered
from dashboard.data.submission import message
from dashboard.markup import md
from dashboard.state import auth, quiet
from lab import advice_text
from lab.advise import DEFAULT_DYNAMICS, DEFAULT_MODES, DEFAULT_SCOPES, Search, parse_budget, search_request
from lab.axes import BACKENDS, fold_note
from lab.checks import SpecError
from lab.sweep import SweepRequest, sweep_label
from lab.wording import count

STARTED = "advise_sweep"  # the session's last search started here: its sweep id
OPEN = "advise_open"  # the search form was asked for in this session
# this form's words where they are not the sweep form's (dashboard.data.submission.LABELS names the rest)
LABELS = {"batch_sizes": "Batch size", "batch_size": "Batch size", "budget": "Budget", "scopes": "Scope"}
MAX_SHOWN = 3  # Results shows the searches in view only when a few sweeps are (one is the usual case)


def search_form(engine, catalog: dict, devices: set[str]) -> None:
    """A button that opens the form that starts a search (the sweep form's fields stay the page's only ones until it
    is asked for), and the started search's progress below it."""
    if not st.session_state.get(OPEN) and STARTED not in st.session_state:
        if not st.button("Find the best settings", icon=":material/travel_explore:", key="a_open",
                         help="a racing search for this model's best compile settings, instead of a full sweep"):
            return
        st.session_state[OPEN] = True
    with st.container(border=True):
        st.markdown("##### Find the best settings")
        st.caption("A racing search: each mode runs once (its dynamic and scope variants only where calls or traffic "
                   "could reward them: at one batch size they cannot run faster), clearly worse ones are dropped, more "
                   "processes go to those still in contention until one is separable at 95%, those equal within 3% are "
                   "settled by the faster compile (so are those more processes could not tell apart, where one "
                   "compiles clearly faster), "
                   "or the budget is spent. With a number of calls it tries the lightest "
                   "compile first and stops there when compiling cannot pay off. Workers drive it: leaving this page "
                   "stops nothing.")
        with st.form("advise_form"):
            left, mid, right = st.columns(3)
            names = ordered(catalog)  # as the sweep form lists them; at first, the model the sweep form holds
            if "a_model" not in st.session_state and st.session_state.get("f_model") in names:
                st.session_state["a_model"] = st.session_state["f_model"]
            model = left.selectbox("Model", names, key="a_model", format_func=model_label)
            batch = mid.text_input("Batch size", "8", key="a_batch")
            device = right.selectbox("Device", sorted(devices) or ["cpu"], key="a_device")
            backends = left.multiselect("Backends", BACKENDS, ["inductor"], key="a_backends")
            modes = mid.multiselect("Modes", DEFAULT_MODES, list(DEFAULT_MODES), key="a_modes",
                                    help="on a CPU, reduce-overhead is default (CUDA graphs need CUDA): one candidate")
            dynamics = right.multiselect("Dynamic", ["none", "false", "true"], list(DEFAULT_DYNAMICS), key="a_dynamic")
            scopes = left.multiselect("Scope", DEFAULT_SCOPES, list(DEFAULT_SCOPES), key="a_scopes",
                                      help="blocks only where the model names its repeated blocks")
            calls = mid.text_input("Calls", "", key="a_calls", help="how many calls you will make: compiling must "
                                                                   "pay for itself within them (empty: steady state)")
            budget = right.text_input("Budget", "30m", key="a_budget", help="device time the search may spend")
            rounds = left.number_input("Rounds", 1, 10_000, 30, key="a_rounds")
            go = st.form_submit_button("Start the search", type="primary")
        said = st.container()  # drawn on every run: the live progress below keeps one place whether or not a search
        if go:                 # was just started (a fragment that moves between runs can be drawn twice meanwhile)
            with said:
                _start(engine, catalog, model, batch, device, backends, modes, dynamics, scopes, calls, budget,
                       rounds)
        if STARTED in st.session_state:
            _progress(engine)


def _start(engine, catalog, model, batch, device, backends, modes, dynamics, scopes, calls, budget, rounds) -> None:
    who = auth.acting()
    try:
        fields = {"model": model, "batch_sizes": [batch], "device": device, "backends": backends, "modes": modes,
                  "dynamics": dynamics, "scopes": scopes, "iters": int(rounds), "name": f"advise {model}"}
        info = catalog.get(model)
        fields, notes = search_request(fields, blocks=bool(info and info.blocks))
        search = Search(calls=calls.strip() or None, budget_s=parse_budget(budget))
        sweep_id, job_ids, more = sweeps.start_search(engine, SweepRequest.from_dict(fields), search, catalog,
                                                      who.id if who else jobs.whoami())
    except SpecError as e:
        st.error(md(message(e, LABELS)), icon=":material/error:")
        return
    except jobs.QueueError as e:
        st.error(md(str(e)), icon=":material/error:")
        return
    st.session_state[STARTED] = sweep_id
    folded = {fold_note(m, device) for m in modes} - {""}
    for note in (*notes, *more, *folded):
        st.caption(md(note))
    st.success(f"Search started as sweep #{sweep_id}: {count(len(job_ids), 'setting')}, one process each to start.",
               icon=":material/check_circle:")


@quiet.live("2s")
def _progress(engine) -> None:
    sweep_id = st.session_state[STARTED]
    state = sweeps.search_state(engine, sweep_id)
    if state is None:
        st.session_state.pop(STARTED, None)
        return
    show(state)
    label = sweep_label(sweep_id, state.request.get("name"), state.request.get("model"))
    links = st.columns(3)
    links[0].page_link("screens/queue.py", label="Watch it on Queue", icon=":material/list:",
                       query_params={"qsweep": [label]})
    links[1].page_link("screens/results.py", label="Its results", icon=":material/monitoring:",
                       query_params={"sweep": [label]})


def show(state: sweeps.SearchState) -> None:
    """One search: the recommendation line, each candidate, the cost."""
    head = advice_text.headline(state.search, state.measured, state.rounds, state.pending)
    st.markdown(f"**{md(head)}**")
    st.markdown("\n".join(f"- {md(line.text())}" for line in advice_text.lines(state.measured, state.rounds)))
    st.caption(md(advice_text.cost(state.measured, state.spent_s, state.device)))


def on_results(engine, shown) -> None:
    """The searches among the sweeps in view (when a few are), each under its sweep's label."""
    ids = sorted(set(shown["sweep_id"].dropna().astype(int).tolist()))
    if not 1 <= len(ids) <= MAX_SHOWN:
        return
    for sweep_id in ids:
        state = sweeps.search_state(engine, sweep_id)
        if state is None:
            continue
        label = sweep_label(sweep_id, state.request.get("name"), state.request.get("model"))
        st.subheader(f"Search {md(label)}")
        show(state)
