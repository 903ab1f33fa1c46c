"""Sweeps and their team record for Compare, Queue and Submit: the sweep summaries, each sweep's record (tags,
note, archive, history, submitter), the baselines pinned per model, deleting a sweep with what it also removes, and
the racing search that picks settings (db.advice). Errors a person can act on are TeamError and ListingChanged."""
from __future__ import annotations

from db.advice import State as SearchState
from db.advice import load as search_state
from db.advice import start as start_search
from db.baseline_rows import with_baseline
from db.team import (AlsoRemoved, ListingChanged, TeamError, also_removed, archive, baselines, delete_sweep, edit_tags,
                     events, meta, pin_baseline, set_note, submitters, unpin_baseline)
from db.views import sweeps, sweeps_named

__all__ = ["AlsoRemoved", "ListingChanged", "SearchState", "TeamError", "also_removed", "archive", "baselines",
           "delete_sweep", "edit_tags", "events", "meta", "pin_baseline", "search_state", "set_note", "start_search",
           "submitters", "sweeps", "sweeps_named", "unpin_baseline", "with_baseline"]
