"""The Queue page's parts: the live table of jobs (status, attempts, elapsed time, worker; running jobs with their
phase and progress; why a queued job waits), cancel and re-submit by id, and one job's detail with its timeline."""
import re
from datetime import datetime

import pandas as pd
import streamlit as st

from dashboard.data import estimates, jobs, sweeps
from dashboard.data.jobs import STATUSES, JobStatus, export_records, sweep_measurement
from dashboard.markup import md
from dashboard.panels import eta_view, timeline_panel
from dashboard.state import auth, quiet, resources, url_params
from lab import noise
from lab import sweep as lab_sweep
from lab.spec import job_label
from lab.traffic import words
from lab.wording import count

# Streamlit's own icon font, not emoji: a browser without an emoji font draws those as empty boxes. Markdown and labels
# only: a table cell shows the status as plain text
STATUS_ICONS = {"queued": ":material/hourglass_empty:", "running": ":material/play_arrow:",
                "succeeded": ":material/check_circle:", "failed": ":material/error:", "timed_out": ":material/timer_off:",
                "cancelled": ":material/block:", "crashed": ":material/dangerous:"}


def parse_ids(text: str, most: int | None = None) -> list[int]:
    """'12, 15-18' -> [12, 15, 16, 17, 18]; a ValueError names what is not a job id, or says the ids are more than
    `most` (default lab.sweep.MAX_JOBS: more than a sweep may hold), counted before any range is spelled out."""
    most = lab_sweep.MAX_JOBS if most is None else most
    ids: list[int] = []
    for part in [p for p in re.split(r"[,\s]+", text or "") if p]:
        m = re.fullmatch(r"(\d{1,19})(?:-(\d{1,19}))?", part)
        if not m:
            raise ValueError(f"{part!r} is not a job id or a range like 15-18")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValueError(f"{part!r} is not a range: it ends before it starts")
        if len(ids) + hi - lo + 1 > most:
            raise ValueError(f"{part!r} makes {len(ids) + hi - lo + 1:,} job ids; at most {most:,} at once")
        ids.extend(range(lo, hi + 1))
    if not ids:
        raise ValueError("type one or more job ids, e.g. 12, 15-18")
    return list(dict.fromkeys(ids))


def describe(spec: dict) -> str:
    """A job in the Queue's words: its label (lab.spec.job_label), its model's size arguments, its compile cache (warm
    and cold jobs must not look alike) and its shape schedule."""
    args = spec.get("model_args") or {}
    what = job_label(spec) + "".join(f" {k}={v}" for k, v in args.items())
    what += f" · {spec.get('cache') or 'cold'} cache"
    what += f" · traffic {words(spec['traffic'])}" if isinstance(spec.get("traffic"), dict) and spec["traffic"] else ""
    return what + (f" · schedule {', '.join(map(str, spec['schedule']))}" if spec.get("schedule") else "")


def jobs_table(rows: list[dict], workers: list, by: dict | None = None, est=None) -> pd.DataFrame:
    """The Queue's table; `by`: each sweep's submitter (db.team.submitters); `est`: the queue's estimates
    (dashboard.data.estimates)."""
    out, by = [], by or {}
    for r in rows:
        note = r["error"] or ""
        if r["status"] == "queued":
            note = jobs.waiting_reason(r["spec"], workers) or ("waiting for a free worker" + (
                f" ({r['error']})" if r["error"] else ""))
        if r.get("follow_up"):  # queued because an earlier run was noisy or host-sensitive (lab.noise)
            note = f"↻ {r['follow_up']}" + (f"; {note}" if note else "")
        out.append({"job": r["job_id"], "sweep": r["sweep_id"],
                    "status": r["status"], "ETA": est.row_words(r["job_id"]) if est is not None else "",
                    "↻": r.get("follow_up_short") or "", "what": describe(r["spec"]),
                    "phase": r["phase"] or "", "progress": r["progress"],
                    "attempts": f"{r['attempts']}/{r['max_attempts']}",
                    "elapsed": f"{r['elapsed_s']:.1f} s" if r["elapsed_s"] is not None else "",
                    "note": note, "worker": r["worker"] or "", "submitted by": by.get(r["sweep_id"], "")})
    # the ETA beside the status, in view without scrolling sideways (the table is wider than a window)
    return pd.DataFrame(out, columns=["job", "status", "ETA", "↻", "what", "submitted by", "phase", "progress",
                                      "elapsed", "attempts", "note", "worker", "sweep"])


@quiet.live("2s")
def live_queue(sweep_ids: list[int], statuses: list[str]) -> None:
    engine = resources.engine()
    counts = jobs.status_counts(engine, sweep_ids or None)  # the sweeps picked; every status (the breakdown)
    cols = st.columns(len(STATUSES))
    for col, status in zip(cols, STATUSES):
        col.metric(f"{STATUS_ICONS[status]} {status}", counts.get(status, 0))
    workers = jobs.live_workers(engine)
    rows = jobs.job_rows(engine, sweep_ids=sweep_ids or None, statuses=statuses or None, limit=500)
    est = estimates.queue_estimates(engine, workers)
    eta_view.queue_line(est, sweep_ids)
    running = [r for r in rows if r["status"] == "running"]
    if running:
        st.subheader("Running now")
        took = jobs.last_cold_compiles(engine, [r["job_id"] for r in running if r["phase"] == "compiling"])
        for r in running:
            pct = f" {r['progress']:.0%}" if r["progress"] is not None else ""
            if r["job_id"] in took:  # a compile reports no fraction: what this configuration's last cold one took
                pct = f" (its configuration's last cold compile took {took[r['job_id']]:.3g} s)"
            elapsed = f" · {r['elapsed_s']:.0f} s since its claim" if r["elapsed_s"] is not None else ""
            if r["job_id"] in est.left:  # how long its phase usually takes, how long it has run, the time left
                elapsed += f" · {md(est.left[r['job_id']].words(stage=False))}"
            st.progress(min(max(r["progress"] or 0.0, 0.0), 1.0),
                        text=f"**#{r['job_id']}** {md(describe(r['spec']))} — **{md(r['phase'] or 'starting')}**{pct}"
                             f"{elapsed} · attempt {r['attempts']} on {md(r['worker'])}")
    st.subheader(f"Jobs ({len(rows)}{' newest' if len(rows) == 500 else ''})")
    stuck: dict[str, list[int]] = {}  # queued jobs no live worker can take (the sidebar says when none is alive)
    for r in rows:
        why = jobs.waiting_reason(r["spec"], workers) if r["status"] == "queued" and workers else None
        if why:
            stuck.setdefault(why, []).append(r["job_id"])
    for why, ids in stuck.items():
        st.warning(f"{len(ids)} queued job{'s' if len(ids) > 1 else ''} wait{'' if len(ids) > 1 else 's'}: "
                   f"{md(why)} ({', '.join(f'#{i}' for i in ids[:8])}{' …' if len(ids) > 8 else ''})",
                   icon=":material/hourglass_disabled:")
    if not rows:
        st.info("No jobs match. Submit a sweep on the Submit page.")
    else:
        table = jobs_table(rows, workers, sweeps.submitters(engine, {r["sweep_id"] for r in rows}), est)
        opened = st.container()  # above the table, where the eye is: the picked row's link (the table is tall)
        picked = st.dataframe(table, hide_index=True, width="stretch", height=min(38 + 35 * len(rows), 560),
                     key="queue_rows", on_select="rerun", selection_mode="single-row", column_config={
                         "job": st.column_config.NumberColumn("job", format="%d", width="small"),
                         "sweep": st.column_config.NumberColumn("sweep", format="%d", width="small"),
                         "ETA": st.column_config.TextColumn(
                             "ETA", width="medium", help="From the lab's history of similar jobs (the same settings, else "
                             "the same model): a running job's time left; a queued job's start, after the queue ahead "
                             "on the live workers"),
                         "↻": st.column_config.TextColumn(
                             "↻", width="medium", help="A job queued by itself: a re-run of a noisy job, or a repeat in "
                                                      "a separate process of a host-sensitive one (the note says why)"),
                         "what": st.column_config.TextColumn("what", width="large"),
                         "phase": st.column_config.TextColumn("phase", width="medium"),
                         "progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0,
                                                                     format="percent", width="small"),
                         "note": st.column_config.TextColumn("error / why it waits", width="large")})
        chosen = [int(table["job"].iloc[i]) for i in picked.selection.rows if i < len(table)]
        if chosen:  # a row picked in the table opens its job (no id to type)
            # the job-id field (key "job", the Job page's and this page's detail) follows the pick: a page's bound
            # field keeps the session's value over a link's, so the link alone opened the id typed before
            st.session_state["job"] = str(chosen[0])
            opened.page_link("screens/job.py", label=f"Open job #{chosen[0]}: its numbers, caches, kernels, output code",
                             icon=":material/description:", query_params={"job": chosen[0]})
        else:
            opened.caption("Pick a row (its left edge) to open that job.")
    with st.expander(f"Live workers ({len(workers)})"):
        st.dataframe(pd.DataFrame([{
            "worker": w.id, "state": w.state, "job": w.current_job_id, "devices": ", ".join(w.capabilities.get(
                "devices", [])), "device": w.capabilities.get("device_name") or "CPU",
            "torch": w.capabilities.get("torch_version"), "models": len(w.capabilities.get("models", [])),
            "host": w.hostname, "CPUs": _cpus(w.capabilities.get("cpus")), "threads": w.capabilities.get("threads"),
            "shares cores with": ", ".join(w.capabilities.get("shares_cores_with") or []),
            "heartbeat": w.heartbeat_at} for w in workers]), hide_index=True, width="stretch")
    st.caption(f"Updated {datetime.now():%H:%M:%S}; " + ("refreshing paused while a job on this machine is timed "
               "(the line above says which)." if quiet.paused() or quiet.timed_here() else "refreshes every 2 s."))


def actions_form() -> None:
    """Cancel or re-submit jobs by id; a bad id is reported under the field, nothing half-done. Only a
    click acts: Enter in the ids box must not cancel jobs (it would press the form's first button)."""
    with st.form("queue_actions", enter_to_submit=False):
        st.markdown("**Cancel or re-submit**")
        text = st.text_input("Job ids", placeholder="12, 15-18",
                             help="Cancel: queued or running jobs. Re-submit: finished jobs (a fresh copy each).")
        problem = st.empty()
        c1, c2, _ = st.columns([1, 1, 4])
        cancel = c1.form_submit_button("Cancel jobs", icon=":material/cancel:")
        resubmit = c2.form_submit_button("Re-submit jobs", icon=":material/replay:")
        who = auth.acting()
        st.caption("Sign-in is off: anyone who opens this page may cancel any job." if who is None else
                   f"You may cancel the jobs of sweeps you submitted (recorded as {md(who.id)}"
                   + (f", or as {md(who.email)}, your verified address" if who.email else "")
                   + "); `python -m runner cancel` cancels any job, with the database URL.")
    if not (cancel or resubmit):
        return
    try:
        ids = parse_ids(text)
    except ValueError as e:
        problem.error(f"Job ids: {md(e)}", icon=":material/error:")
        return
    engine = resources.engine()
    if cancel:
        done, errors = [], []
        for job_id in ids:  # each cancel is its own transaction; one finished job does not block the others
            try:
                done.append(f"#{job_id} (was {jobs.cancel_as(engine, job_id, who and who.ids)})")
            except jobs.QueueError as e:
                errors.append(str(e))
        if done:
            st.success("Cancelled " + ", ".join(done))
        if errors:
            problem.error("Job ids: " + md("; ".join(errors)), icon=":material/error:")
    else:
        known = jobs.job_statuses(engine, ids)
        missing = [i for i in ids if i not in known]
        if missing:
            problem.error(f"Job ids: no such job: {', '.join(map(str, missing))}", icon=":material/error:")
            return
        try:
            new = jobs.resubmit(engine, ids)  # all or nothing
        except jobs.QueueError as e:
            problem.error(f"Job ids: {md(e)}; nothing was re-submitted", icon=":material/error:")
        else:
            st.success(f"Re-submitted {count(len(new), 'job')} as #{', #'.join(map(str, new))}")


def job_detail() -> None:
    job_id = url_params.job_id_input("Job detail: job id", placeholder="a job id, to see its spec, error and log tail")
    if job_id is None:
        return
    detail = jobs.job_detail(resources.engine(), int(job_id))
    if detail is None:
        st.warning(f"No job #{job_id}.")
        return
    st.markdown(f"**#{detail['job_id']}** in sweep {detail['sweep_id']}: {STATUS_ICONS.get(detail['status'])} "
                f"{detail['status']}, attempt {detail['attempts']}" + (f" on {md(detail['worker'])}" if detail["worker"] else ""))
    follow_ups(detail)
    if detail["error"]:  # as code, not Markdown: a source line like `heads[np.random.randint(...)](x)` stays intact
        st.markdown(":red[**Error**]")
        st.code(detail["error"], language=None, wrap_lines=True)
    if detail["status"] == JobStatus.SUCCEEDED:
        r = result_summary(detail)
        timeline_panel.show(r["timeline"], sweep_measurement(resources.engine(), detail["sweep_id"]))
    st.page_link("screens/job.py", label=f"Job #{detail['job_id']}: caches, kernels, output code",
                 icon=":material/description:", query_params={"job": detail["job_id"]})
    c1, c2 = st.columns(2)
    c1.json(detail["spec"])
    c2.code(detail["log_tail"] or "(no log yet)", language=None, height=300)


def _cpus(cpus) -> str:
    """A worker's published CPUs as taskset spells them ("0-3,8"); "" when it published none."""
    ok = isinstance(cpus, list) and all(isinstance(c, int) for c in cpus)
    return noise.cpus_text(cpus) if ok else ""


def follow_ups(detail: dict) -> None:
    """Which run this job re-runs and why, and the runs this job's result called for (lab.noise)."""
    if detail.get("follow_up"):
        st.caption(f"↻ {md(detail['follow_up'])}")
    for job_id, status, what in detail.get("follow_ups") or []:
        st.caption(f"↻ Followed by job #{job_id} ({status}): {md(what)}")


def _x(value) -> str:
    return f"{value:.3f}×" if value is not None else "–"


def result_summary(detail: dict) -> dict:
    """A succeeded job's headline numbers, and a link to its sweep on Results; returns its export record."""
    (r,) = export_records(resources.engine(), job_ids=[detail["job_id"]])
    c = st.columns(7)
    c[0].metric("Speedup", _x(r["speedup"]), help="latency: eager ms / compiled ms, one synchronous call as the "
                "caller sees it (medians)" + (f" · ⚠ disturbed: {md(r.get('noise_note') or 'a cause from outside')}"
                                              if r.get("disturbed") is True else ""))
    c[1].metric("Throughput speedup", _x(r["throughput_speedup"]), help="back-to-back calls, one sync per block")
    c[2].metric("GPU speedup", _x(r["gpu_speedup"]), help="kernel time only (CUDA): a diagnosis, not the headline")
    c[3].metric("Eager / compiled, ms", f"{r['eager_ms']:.3g} / {r['compiled_ms']:.3g}"  # fits its seventh of a row
                if r["eager_ms"] is not None and r["compiled_ms"] is not None else "–")
    c[4].metric("Compiled first call", f"{r['compiled_first_call_s']:.3g} s"
                if r["compiled_first_call_s"] is not None else "–")
    c[5].metric("Recompiles", r["recompiles"] if r["recompiles"] is not None else "–")
    c[6].metric("Kernels per call", f"{r['eager_kernels']} → {r['compiled_kernels']}" if r["eager_kernels"] is not None
                and r["compiled_kernels"] is not None else "–", help="eager → compiled, over one profiled call")
    if r["host_note"]:
        st.caption(f"Host-bound: {md(r['host_note'])}.")
    label = detail["sweep_label"]  # the Results sweep filter's label (lab.sweep.sweep_label)
    st.page_link("screens/results.py", label=f"Sweep {md(label)} on Results", icon=":material/monitoring:",
                 query_params={"sweep": [label], "plot": r["model"]})
    return r
