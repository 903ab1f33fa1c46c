"""A sweep's team record on Queue: submitter, tags and note (each change recorded), archive, delete (asks first), pin
as its model's baseline, history. What people typed is escaped or drawn in a data frame."""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard.data import sweeps
from dashboard.data.jobs import whoami
from dashboard.markup import md
from dashboard.state import auth
from lab.checks import SpecError
from lab.team import MAX_NOTE, check_tags
from lab.wording import count

CONFIRM = "record_delete_confirm"
DELETED = "record_deleted"  # what was just deleted: said once, after the rerun that drops it from the picker
ASK = "record_delete_ask"  # per sweep: what its delete also removes, as shown in the second ask (sweeps.AlsoRemoved)
CHANGED = "record_delete_changed"  # per sweep: the second ask's list changed since it was shown


def actor(who) -> str:
    """Who a change is recorded as: the signed-in person, else (sign-in off) the server's user at its host."""
    return who.id if who is not None else whoami()


@st.fragment
def panel(engine) -> None:
    summaries = sweeps.sweeps(engine, limit=500)
    if not summaries:  # the last one was just deleted: say so all the same
        if DELETED in st.session_state:
            st.success(md(st.session_state.pop(DELETED)), icon=":material/delete:")
        return
    with st.expander("A sweep's record: tags, note, baseline, archive, delete", icon=":material/sell:",
                     expanded=DELETED in st.session_state or any(str(k).startswith(ASK) for k in st.session_state)):
        if DELETED in st.session_state:
            st.success(md(st.session_state.pop(DELETED)), icon=":material/delete:")
        labels = {s.id: s.label for s in summaries}
        chosen = st.selectbox("Sweep", list(labels), format_func=lambda i: labels[i], key="record_sweep")
        meta = sweeps.meta(engine, [chosen]).get(chosen)
        if meta is None:
            st.info("That sweep is gone (deleted).")
            return
        model = next((s.request.get("model") for s in summaries if s.id == chosen), None)
        archived = (f" · archived by {md(meta.archived_by or '?')} at {meta.archived_at:%Y-%m-%d %H:%M} UTC"
                    if meta.archived_at else "")
        st.caption(f"Submitted by **{md(meta.submitter or 'unknown')}**{archived}")
        _edit(engine, chosen, meta)
        _actions(engine, chosen, meta, model)
        history = sweeps.events(engine, chosen, limit=50)
        if history:
            st.dataframe(pd.DataFrame([{"when (UTC)": f"{e.at:%Y-%m-%d %H:%M:%S}", "who": e.actor,
                                        "what": e.action, "detail": json.dumps(e.detail, sort_keys=True)}
                                       for e in history]), hide_index=True, width="stretch")


def _edit(engine, sweep_id: int, meta) -> None:
    """The form starts from the stored record (`base`); a save applies only what the person changed from it, so an
    edit made meanwhile by someone else (another browser, the CLI) is kept, not undone. An untouched form shows
    such an edit at once."""
    tags_key, note_key, base_key = f"record_tags_{sweep_id}", f"record_note_{sweep_id}", f"record_base_{sweep_id}"
    stored = (", ".join(meta.tags), meta.note)
    base = st.session_state.get(base_key)
    untouched = base is not None and (st.session_state.get(tags_key), st.session_state.get(note_key)) == base
    if base is None or (untouched and base != stored):
        st.session_state[base_key] = base = stored
        st.session_state[tags_key], st.session_state[note_key] = stored
    with st.form(f"record_form_{sweep_id}", border=False):
        tags = st.text_input("Tags", key=tags_key,
                             help="Words to find the sweep by, commas between them: letters, digits and . _ + : / -")
        note = st.text_area("Note", max_chars=MAX_NOTE, key=note_key, help="Why it ran: plain text")
        saved = st.form_submit_button("Save tags and note", icon=":material/save:")
    if not saved:
        return
    who = auth.acting()
    try:
        wanted, before = check_tags(tags), check_tags(base[0])
        sweeps.edit_tags(engine, sweep_id, actor(who), add=[t for t in wanted if t not in before],
                       remove=[t for t in before if t not in wanted])
        if note != base[1]:
            sweeps.set_note(engine, sweep_id, actor(who), note)
    except SpecError as e:
        st.error(f"{md(e.field.capitalize())}: {md(str(e).split(': ', 1)[-1])}", icon=":material/error:")
        return
    for key in (base_key, tags_key, note_key):  # drawn again from what is stored now
        st.session_state.pop(key, None)
    st.rerun()


def _actions(engine, sweep_id: int, meta, model: str | None) -> None:
    left, mid, right = st.columns(3)
    asked = st.container()  # the delete's second ask, under the buttons
    if left.button("Restore" if meta.archived_at else "Archive", key=f"record_archive_{sweep_id}",
                   icon=":material/unarchive:" if meta.archived_at else ":material/archive:", width="stretch",
                   help="Archived sweeps leave Results, Compare, `report` and `export` unless asked for"):
        sweeps.archive(engine, sweep_id, actor(auth.acting()), restore=meta.archived_at is not None)
        st.rerun()
    pinned = model is not None and (pin := sweeps.baselines(engine).get(model)) is not None and pin.sweep_id == sweep_id
    if model is not None and mid.button("Unpin baseline" if pinned else f"Pin as {md(model)}'s baseline",
                                        key=f"record_pin_{sweep_id}", icon=":material/flag:", width="stretch"):
        who = actor(auth.acting())
        (sweeps.unpin_baseline(engine, model, who) if pinned else sweeps.pin_baseline(engine, model, sweep_id, who))
        st.rerun()
    if st.session_state.get(f"{ASK}_{sweep_id}") is not None:  # the second ask, in the popover's place: an open
        with asked:  # popover is not closed by a rerun, and would cover it
            _ask_again(engine, sweep_id, auth.acting())
        return
    with right.popover("Delete…", icon=":material/delete:", width="stretch"):
        who = auth.acting()
        if who is not None and not who.owns(meta.submitter):
            st.caption(f"Only its submitter ({md(meta.submitter)}) may delete this sweep.")
            return
        st.caption("Removes the sweep with its jobs, results, artifacts and compile-cache bundles; the deletion is "
                   "recorded. Type the sweep's id to confirm; what else it removes (a baseline pinned to it) is "
                   "listed and asked about again.")
        typed = st.text_input("Sweep id", key=f"{CONFIRM}_{sweep_id}")
        if st.button("Delete for good", type="primary", key=f"record_delete_{sweep_id}",
                     disabled=typed.strip() != str(sweep_id)):
            listing = sweeps.also_removed(engine, sweep_id)
            if listing:  # someone's baseline, shared bundles: shown, and asked about again
                st.session_state[f"{ASK}_{sweep_id}"] = listing
                st.rerun()
            _delete(engine, sweep_id, who, listing)


def _ask_again(engine, sweep_id: int, who) -> None:
    """The second ask: what deleting the sweep also removes, drawn as text (names a person typed stay text); only
    what is shown here is confirmed (sweeps.delete_sweep refuses a list that changed, and it is shown again)."""
    listing = st.session_state.get(f"{ASK}_{sweep_id}")
    if listing is None:
        return
    with st.container(border=True):
        if st.session_state.pop(f"{CHANGED}_{sweep_id}", False):
            st.warning("What it also removes changed since it was listed; nothing was deleted. Look again:",
                       icon=":material/warning:")
        st.markdown(f"**Deleting sweep {sweep_id} also removes:**")
        st.text("\n".join(f"• {line}" for line in listing.lines()) or "nothing else now")
        yes, no, _ = st.columns([1, 1, 2])
        if no.button("Keep the sweep", key=f"record_delete_keep_{sweep_id}", icon=":material/undo:"):
            st.session_state.pop(f"{ASK}_{sweep_id}", None)
            st.rerun()
        if yes.button("Delete these too", type="primary", key=f"record_delete_also_{sweep_id}",
                      icon=":material/delete_forever:"):
            _delete(engine, sweep_id, who, listing)


def _delete(engine, sweep_id: int, who, listing: sweeps.AlsoRemoved) -> None:
    """Delete the sweep with what `listing` says also goes; a list that changed meanwhile is asked about again."""
    try:
        counts = sweeps.delete_sweep(engine, sweep_id, actor(who), confirmed=listing)
    except sweeps.ListingChanged as e:
        st.session_state[f"{ASK}_{sweep_id}"], st.session_state[f"{CHANGED}_{sweep_id}"] = e.now, True
        st.rerun()
    except sweeps.TeamError as e:
        st.error(md(str(e)), icon=":material/error:")
        return
    st.session_state.pop(f"{ASK}_{sweep_id}", None)
    st.session_state[DELETED] = f"Sweep {sweep_id} deleted with {count(counts['jobs'], 'job')}" + "".join(
        f"; {line}" for line in listing.lines()) + "."
    st.rerun()
