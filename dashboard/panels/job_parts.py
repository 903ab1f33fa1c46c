"""The Job page's parts: a result's headline numbers beside what the compiler did to get them (kernels per call, the
first call's parts, the caches per layer, graph breaks and recompiles with their source lines), and the compiler's
own artifacts, shown and downloadable, with tlparse's report."""
import streamlit as st

from dashboard import markup
from dashboard.data import answers, artifacts, story
from dashboard.markup import md
from dashboard.panels import answer_table
from dashboard.server import tlparse_pages
from dashboard.state import resources
from lab import answer, first_call, host_pace, unpack
from lab.wording import count

SHOWN_CHARS = 400_000  # more than this is offered as a download only: the browser chokes on larger code blocks
LANGUAGES = {"output_code": "python", "fx_graphs": "python", "trace": None}


def _n(value, fmt="{:.4g}", unit="") -> str:
    return fmt.format(value) + unit if value is not None else "–"


def _counted(value, noun: str) -> str:
    return f"– {noun}s" if value is None else count(int(value), noun)


def _ms(value) -> str:
    return "–" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def headline(r: dict) -> None:
    c = st.columns([1, 1.5, 1, 1, 1])
    c[0].metric("Speedup", _n(r["speedup"], "{:.3f}", "×"), help="latency: eager ms / compiled ms (medians)")
    c[1].metric("Eager / compiled (ms)", f"{_ms(r['eager_ms'])} / {_ms(r['compiled_ms'])}")
    delta = (r["compiled_kernels"] - r["eager_kernels"]) if r["eager_kernels"] is not None and \
        r["compiled_kernels"] is not None else None
    c[2].metric("Kernels per call", f"{_n(r['eager_kernels'], '{}')} → {_n(r['compiled_kernels'], '{}')}",
                delta=delta, delta_color="inverse",
                help="eager → compiled, counted by torch.profiler over one call: device kernels on CUDA; on the CPU "
                     "outermost aten ops plus the kernels inductor generated")
    c[3].metric("Host ops per call", f"{_n(r['eager_host_ops'], '{}')} → {_n(r['compiled_host_ops'], '{}')}",
                help="every aten op the host dispatched, nested ones included")
    made = first_call.kind(r.get("first_call_cache"), r.get("cache"), r.get("graph_cache_hit"))
    c[4].metric("Compiled first call", _n(r["compiled_first_call_s"], "{:.3g}", " s"), delta=made, delta_color="off",
                delta_arrow="off", help=f"{made}: {first_call.WORDS[made]}")


def pace(r: dict) -> None:
    """The rounds by the host's own pace, where it moved during them, and the pace around the compile (lab.host_pace):
    numbers and the lab's words."""
    rounds = r.get("host_pace")
    for said in (host_pace.pace_words(rounds), host_pace.words(rounds), host_pace.first_call_words(
            r.get("first_call_pace"), rounds.get("median_us") if isinstance(rounds, dict) else None)):
        if said:
            st.caption(said)  # numbers the lab formats: no text from the row


def compile_disturbed(r: dict) -> None:
    """What met the job's compiled first call that a fresh process of the user's script would not (another process
    on its cores or GPU, a thermal brake, a precompiled header built: runner.child.disturbance.Around), and what the
    answer does with a cold one: the worker's words, as text."""
    said = r.get("first_call_disturbance")
    causes = said.get("causes") if isinstance(said, dict) else None
    words = "; ".join(str(c) for c in causes) if isinstance(causes, list) and causes else "a cause from outside"
    made = first_call.kind(r.get("first_call_cache"), r.get("cache"), r.get("graph_cache_hit"))
    rule = ("A cold first call so disturbed is left out of its configuration's cold figure and that figure's interval "
            "on Results while an undisturbed one is in view (else the figure is this one's, and says so)"
            if made == "cold" else f"It compiled from a {made} cache (a follow-up compiles from its configuration's "
            "first run's): no cold figure rests on it")
    st.warning(f"Its compiled first call met what a fresh process of your script would not: {md(words)}. {rule}. "
               "Its rounds are judged apart: they answer unless another warning here says they were disturbed too.",
               icon=":material/warning:")


def first_calls(r: dict) -> None:
    """The first calls of this job's sweep with its settings (same torch, same device), cold, warm and portable apart
    as the answer table counts them (lab.first_call)."""
    alike = artifacts.first_calls_alike(resources.engine(), r["job_id"])
    lines = story.portable_lines(r)
    if not lines and len(alike) < 2:
        return
    st.subheader("First call: cold, warm, portable")
    if alike:
        # text as the answer table writes its cells (lab.answer.headline_value): the same figures read the same, the
        # cold one with its interval where the answer of these runs gives one
        cold = _cold_cell([j for a in alike for j in a["job_ids"]], told_here=_cold_disturbed(r))
        st.html(markup.table(["compiled from", "first call s", "runs", "jobs"],
                             [[a["cache"], cold if a["cache"] == "cold" and cold else answer.headline_cell(a["first_call_s"]),
                               str(a["runs"]), ", ".join(f"#{j}" for j in a["job_ids"])] for a in alike],
                             kinds=["", "num", "num", ""]))
        st.caption("Medians over this sweep's runs of these settings, each by what its first call compiled from: "
                   + "; ".join(f"{k}: {first_call.WORDS[k]}" for k in (a["cache"] for a in alike)) + ". A cold "
                   "compile's time moves between fresh processes: the cold one is bracketed, as on Results, by every "
                   "process that compiled these settings cold on this device (its 95% interval, once 4 have; before, "
                   "from how many processes it comes).")
    for line in lines:
        st.caption(md(line))  # torch's error text may hold markup characters


def _cold_disturbed(r: dict) -> bool:
    """Whether this job's own compile was cold and disturbed: its page's warning (compile_disturbed) says by what."""
    return (r.get("first_call_disturbed") is True
            and first_call.kind(r.get("first_call_cache"), r.get("cache"), r.get("graph_cache_hit")) == "cold")


def _cold_cell(job_ids: list[int], told_here: bool = False) -> str | None:
    """The cold first call of these runs as the answer table writes it (with its interval, or from how many processes
    it comes), where they are one configuration of the answer; None where they are not. `told_here`: this job's own
    cold compile was disturbed, and its page's warning says by what."""
    engine = resources.engine()
    # the spreads Results' answer reads, kept once per version of the results (answer_table.priors), not read again
    # on every visit of a job
    known = answer_table.priors(answers.data_version(engine), engine)
    rows = answers.report(engine, job_ids=job_ids, priors=known)
    return answer.headline_value(rows[0], "first_call_cold_s", told_here) if len(rows) == 1 else None


def compiler(r: dict) -> None:
    st.subheader("Caches")
    rows = story.cache_rows(r["cache_layers"], r.get("device"))
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    why = story.why_it_paid(r)  # torch's bypass reasons in it are text, never markup
    st.caption(md(why) if why else "This result has no per-layer cache counts (measured before they were recorded).")
    if r.get("cache") == "warm" and why and why.startswith("A warm job, yet"):
        st.caption(md(story.warm_miss_line(artifacts.warm_nearest(resources.engine(), r["job_id"]), r)))
    picks = story.picks_line(r)
    if picks:
        st.caption(md(picks))  # kernel names and settings from the worker's record: text, never markup
    graphs = r["cudagraphs"]
    if graphs:  # reduce-overhead, max-autotune or the cudagraphs backend, on CUDA (runner/cudagraphs.py)
        st.subheader("CUDA graphs")
        if graphs.get("skipped"):
            st.warning("CUDA graphs were skipped: this job ran without them.", icon=":material/warning:")
            for reason in graphs.get("skip_reasons") or []:
                st.code(reason, language=None, wrap_lines=True)
        st.markdown(f"Re-recordings during the timed rounds: {_n(graphs.get('rerecords_in_rounds'), '{}')} · "
                    f"graph pool: {_n(graphs.get('pool_mb'), '{:.1f}', ' MB')}")
    st.subheader("Graph breaks and recompiles")
    st.markdown(", ".join(_counted(r[k], noun) for k, noun in (("graph_count", "graph"), ("graph_breaks", "graph break"),
                                                               ("recompiles", "recompile"))))
    for b in r["graph_break_reasons"] or []:
        where = f"{b['file']}:{b['line']}: {b.get('source', '')}" if b.get("file") else ""
        st.code(f"{b.get('reason', '')}\n{where}".strip(), language=None, wrap_lines=True)
    for hit in r["recompile_limit_hits"] or []:
        st.warning(f"Frame {hit.get('compile_id')} hit dynamo's recompile limit and runs eagerly for new inputs "
                   "from then on: part of this speedup is eager's.", icon=":material/warning:")
        st.code(_where(hit) + f"\nlast guard failure: {hit.get('last_reason')}", language=None, wrap_lines=True)
    for rc in r["recompile_reasons"] or []:
        st.code(f"recompile {rc.get('compile_id')}: {rc.get('reason')}\n{_where(rc)}".strip(), language=None,
                wrap_lines=True)


def _where(entry: dict) -> str:
    """'in forward at model.py:12: def forward(self, x):' where torch gave the code's location."""
    if not entry.get("file"):
        return ""
    return f"in {entry.get('function')} at {entry['file']}:{entry.get('line')}: {entry.get('source', '')}"


def artifact_view(job_id: int, listed: list[dict]) -> None:
    st.subheader("What the compiler wrote")
    if not listed:
        st.info("No artifacts for this job (the backend generates no code, or it ran before artifacts were kept).")
        return
    by_name = {a["name"]: a for a in listed if a["name"] != "tlparse"}
    name = st.segmented_control("Artifact", list(by_name), default="output_code" if "output_code" in by_name
                                else next(iter(by_name), None), key="artifact")
    if name is None:
        return
    a = by_name[name]
    try:
        text = artifacts.text(resources.engine(), job_id, name)
    except (unpack.UnpackError, artifacts.ArtifactError) as e:  # a damaged or oversized row: said, the page goes on
        st.error(md(e), icon=":material/broken_image:")
        return
    st.caption(f"{_n(a['bytes'], '{:,}')} bytes as written, {_n(a['stored_bytes'], '{:,}')} stored (gzip)"
               + (" · cut at the size cap" if a["truncated"] else "")
               + f" · also `python -m runner artifact {job_id} {name}`")
    st.download_button(f"Download {name}", text, file_name=f"job{job_id}-{name}.{'log' if name == 'trace' else 'py'}",
                       icon=":material/download:", on_click="ignore")  # a download reruns nothing
    if len(text) > SHOWN_CHARS:
        st.caption(f"The first {SHOWN_CHARS:,} characters; download for the rest.")
    st.code(text[:SHOWN_CHARS], language=LANGUAGES.get(name), line_numbers=True, height=600)


def tlparse_view(job_id: int, listed: list[dict], why_none: str | None = None, first_run: int | None = None) -> None:
    """tlparse's report, from the job's own artifact, served by the app's report route (dashboard.server.tlparse_pages): tlparse
    writes failure text into its pages as HTML, so each page is sandboxed there, never drawn into this page's
    origin. Its links work inside the frame; a page picked here opens there too, or in a tab of its own. Without
    one, why (the worker's words, `why_none`), or that a follow-up's report is its first run's."""
    if not any(a["name"] == "tlparse" for a in listed):
        if why_none:
            st.info(md(f"No tlparse report for this job: {why_none}."), icon=":material/info:")
        elif first_run is not None:
            st.caption(f"A follow-up keeps no compiler artifacts: its first run, job #{first_run}, has the tlparse "
                       "report.")
        return
    st.subheader("tlparse report")
    what = f"job {job_id}'s tlparse report"
    try:
        data = artifacts.data(resources.engine(), job_id, "tlparse")
        pages = artifacts.report_pages(data, what)
    except (unpack.UnpackError, artifacts.ArtifactError) as e:  # a damaged row or zip: said, the page goes on
        st.error(md(f"The tlparse report cannot be shown: {e}"), icon=":material/broken_image:")
        return
    c1, c2, c3 = st.columns([3, 1, 1.3], vertical_alignment="bottom")
    chosen = c1.selectbox("Page", pages, key="tlparse_page")
    c2.link_button("Open in a tab", tlparse_pages.url(job_id, chosen or "index.html"), icon=":material/open_in_new:",
                   width="stretch")
    c3.download_button("Download report (zip)", data, file_name=f"job{job_id}-tlparse.zip", icon=":material/download:",
                       width="stretch", on_click="ignore")
    if chosen:
        try:  # the route refuses what passes the bounds too; said here instead of an empty frame
            artifacts.report_file(data, chosen, what)
        except (unpack.UnpackError, KeyError) as e:
            st.error(md(f"The tlparse report cannot be shown: {e}"), icon=":material/broken_image:")
            return
        st.iframe(tlparse_pages.url(job_id, chosen), height=700, alt="tlparse report")
