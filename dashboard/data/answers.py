"""The answer's rows and what reads beside them: lab.answer's rows for chosen jobs or sweeps (the rows `runner report`
prints), the spreads between processes that widen them, the diff between torch versions, each device's newest
measured ceilings, the record fields of one job, and the shape schedules' calls for the recompile timeline."""
from __future__ import annotations

from db.device_ceilings import newest_ceilings
from db.reports import Spreads, report, spreads, version_report
from db.results import RECORD_FIELDS
from db.views import data_version, schedule_calls

__all__ = ["RECORD_FIELDS", "Spreads", "data_version", "newest_ceilings", "report", "schedule_calls", "spreads", "version_report"]
