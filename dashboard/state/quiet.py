"""The dashboard does not disturb what the lab measures. While a job on this server's host times what it reports (its
compile, warm-up, rounds or replays: lab.timeline.TIMED_PROGRESS), the server and the browser are other processes on
its cores, which the job would name as its disturbance (runner.child.disturbance) and re-run, or leave its cold first
call out for. So the pages' live refresh pauses:

- `live(every)` replaces `st.fragment(run_every=every)`: on each tick the fragment first asks (one small query, shared
  by every session for a second) whether a job here is timed; if so it tells the browser to stop every live
  fragment's timer (no page rerun: that would cost the server more, at the worst moment), draws itself once more and
  starts `notice()`'s slow tick. A full run while paused draws the fragments without a refresh interval;
- `notice()` (on every page) says so, and ticks every SLOW_S with that one query alone until the timing ends, then
  reruns the page, which refreshes again. On a small host (below) it waits for every job here to end: the next job's
  compile starts 2-4 s after one's rounds, and a whole page drawn in that gap (a second of the server's CPU and one
  of the browser's, in a CI run) spilled into that cold first call past what the job names a disturbance;
- `paused()`: work the server would start by itself (the results snapshot) waits meanwhile;
- `wait_for_timing()`: on a small host (SMALL_HOST CPUs or fewer, where drawing a page, about a core for a second, is
  past the share of a job's cores that its rounds name a disturbance), a page a person opens or acts on while a job
  here is timed says why it waits and sleeps until the timing ends, WAIT_S at most, then draws.

Stopping and starting a fragment's timer from inside a fragment run uses Streamlit's own messages (auto_rerun,
stop_auto_rerun: what st.fragment sends); where this Streamlit lacks them, the page reruns instead.
"""
from __future__ import annotations

import functools
import os
import socket
import threading
import time

import streamlit as st

from dashboard.data import jobs
from dashboard.markup import md
from dashboard.state import resources
from lab import cpu_quota
from lab.timeline import TIMED_PROGRESS

# the paused page's only tick, one query: each costs the server ~0.1 s of CPU on this 2-core box (2.5% of a core).
# Jobs run back to back leave 2-4 s between one's rounds and the next one's compile (the worker publishes both at
# once): a tick this often finds most such gaps, and the page refreshes in them
SLOW_S = 4
FRESH_S = 1.0  # a look is shared by every session for this long
KEY = "quiet_timed"  # session key: the timed jobs the page's last full run saw ([(job id, phase)])
LIVE, NOTICE = "quiet_live_ids", "quiet_notice_id"  # session keys: this page's live fragments, its notice fragment
_last: dict[tuple[str, bool], tuple[float, list]] = {}  # (database URL, timed only) -> (when, jobs)
_lock = threading.Lock()


def timed_here(timed_only: bool = True) -> list[tuple[int, str]]:
    """(job id, phase) of the jobs on this host being timed now (`timed_only`), or running in any phase; [] when the
    database does not answer (the page says that itself)."""
    key = (resources.url(), timed_only)
    with _lock:
        seen = _last.get(key)
        if seen is not None and time.monotonic() - seen[0] < FRESH_S:
            return seen[1]
    try:
        found = jobs.timed_on_host(resources.engine(), socket.gethostname(), TIMED_PROGRESS if timed_only else None)
    except Exception:  # down, locked, not migrated: nothing is paused for it
        found = []
    found = [(job_id, phase or "starting") for job_id, phase in found]
    with _lock:
        _last[key] = (time.monotonic(), found)
    return found


SMALL_HOST = 8  # CPUs (under the cgroup's quota): on more, a page's drawing is under what a job's rounds name a
# disturbance (10% of its cores)
WAIT_ENV = "COMPILE_LAB_PAGE_WAIT_S"  # the longest a page waits for a timing here to end (0: never waits)
WAIT_S, MAX_WAIT_S = 15.0, 120.0
WAITED = "quiet_waited"  # session key: the seconds this session's last full run waited (0 when it did not)
OPENED = "quiet_page"  # session key: the page this session's last full run drew


def wait_s() -> float:
    try:
        limit = float(os.environ.get(WAIT_ENV, WAIT_S))
    except ValueError:
        return WAIT_S
    return min(max(0.0, limit), MAX_WAIT_S) if limit == limit else WAIT_S  # NaN: the default


def wait_for_timing(page: str) -> None:
    """A page a person opens (`page`: its path; a session's first run, or another page than its last run's) while a
    job on this host is timed, on a small host: a line says why it waits, the run sleeps until the timing ends (one
    small shared query every half second) or wait_s() passes, and then the page draws: drawing it now would take the
    job's cores from under it. An action on the page already open (a click, a submit, a cancel) is not held: the
    person asked for it. The live fragments' ticks never come here (they pause: live). The line's place is kept on
    every run, so what follows keeps its place whether the run waited or not."""
    line = st.empty()
    opened = st.session_state.get(OPENED) != page
    st.session_state[OPENED] = page
    timed = [(job_id, phase) for job_id, phase in st.session_state.get(KEY) or () if phase in TIMED_PROGRESS]
    limit = wait_s()
    st.session_state[WAITED] = 0.0
    if not opened or not timed or not limit or cpu_quota.here() > SMALL_HOST:
        return
    line.info(f"Drawing this page once the timing of {_jobs(timed)} on this machine ends (now {md(timed[0][1])}; "
              f"{limit:.0f} s at most): drawing it meanwhile would take the cores it is timed on.",
              icon=":material/hourglass_top:")
    began = time.monotonic()
    while timed and time.monotonic() - began < limit:
        time.sleep(0.5)
        timed = timed_here()
    line.empty()
    st.session_state[KEY] = timed or _look(paused=True)
    st.session_state[WAITED] = round(time.monotonic() - began, 2)


def _look(paused: bool) -> list[tuple[int, str]]:
    """The jobs a page pauses for: those timed here; for a page already paused on a small host, every job running
    here (the next job's compile follows one's rounds within seconds: notice)."""
    if not paused or cpu_quota.here() > SMALL_HOST:
        return timed_here()
    running = timed_here(timed_only=False)  # one query: the timed ones are among them
    return [(job_id, phase) for job_id, phase in running if phase in TIMED_PROGRESS] or running


def begin() -> None:
    """A full run of the page: look once, and draw this run's fragments paused or live accordingly. A page paused
    on a small host stays paused through an action while a job here runs (_look)."""
    st.session_state[KEY] = _look(paused=bool(st.session_state.get(KEY)))
    st.session_state[LIVE] = set()


def _fragment_id() -> str | None:
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState
        return ThreadState.get().fragment_id
    except (ImportError, AttributeError):
        return None


def _timers(stop: list[str], start: str | None, every: float) -> bool:
    """Stop these fragments' timers in the browser, and start (or reset) one's; False where this Streamlit cannot."""
    try:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
        ctx = get_script_run_ctx()
        if ctx is None or start is None:  # no notice to resume the page: it reruns instead
            return False
        if stop:
            msg = ForwardMsg()
            msg.stop_auto_rerun.fragment_ids.extend(stop)
            ctx.enqueue(msg)
        if start is not None:
            msg = ForwardMsg()
            msg.auto_rerun.interval = every
            msg.auto_rerun.fragment_id = start
            ctx.enqueue(msg)
        return True
    except (ImportError, AttributeError, ValueError):
        return False


def paused() -> bool:
    return bool(st.session_state.get(KEY))


def _jobs(timed: list[tuple[int, str]]) -> str:
    """"job 3" / "jobs 3, 4": the timed jobs by their ids (numbers from the database)."""
    ids = ", ".join(f"{int(job_id)}" for job_id, _ in timed)
    return f"job {ids}" if len(timed) == 1 else f"jobs {ids}"


def sentence(timed: list[tuple[int, str]]) -> str:
    which = _jobs(timed) + (" is" if len(timed) == 1 else " are")
    if timed[0][1] not in TIMED_PROGRESS:  # a small host, between one's timed phases or jobs (notice)
        return (f"Paused refreshing while {which} running on this machine (now {md(timed[0][1])}, between timed "
                "phases), so the page does not disturb what is timed next: what it shows is as of the timing's "
                "start or your last action. It resumes by itself when no job runs here.")
    return (f"Paused refreshing while {which} timed on this machine (now {md(timed[0][1])}), so the page does not "
            "disturb it: what it shows is as of the timing's start or your last action. It resumes by itself when "
            "the timing ends.")


def live(every: str):
    """`@quiet.live("2s")` for `@st.fragment(run_every="2s")`, paused while a job here is timed (above)."""
    def wrap(func):
        @functools.wraps(func)
        def checked(*args, **kwargs):
            me = _fragment_id()
            if me is not None:
                st.session_state.setdefault(LIVE, set()).add(me)
            if not paused():
                timed = timed_here()
                if timed:
                    live_ids = sorted(st.session_state.get(LIVE) or ())
                    if not _timers(live_ids, st.session_state.get(NOTICE), 0.5):
                        st.rerun(scope="app")  # the full run draws every fragment without its interval
                    st.session_state[KEY] = timed
            return func(*args, **kwargs)

        @functools.wraps(func)
        def call(*args, **kwargs):
            return st.fragment(checked, run_every=None if paused() else every)(*args, **kwargs)
        return call
    return wrap


def notice() -> None:
    """The paused page's line, and its slow tick (none while the page refreshes itself)."""
    st.fragment(_notice, run_every=SLOW_S if paused() else None)()


def _notice() -> None:
    me = _fragment_id()
    st.session_state[NOTICE] = me
    if not paused():
        return
    timed = _look(paused=True)
    if not timed:
        st.rerun(scope="app")  # the timing ended (a small host: no job runs here): the page draws itself live again
    if me is not None:
        _timers([], me, SLOW_S)  # started at a quick first tick by a fragment that saw the timing begin
    st.info(sentence(timed), icon=":material/pause_circle:")
