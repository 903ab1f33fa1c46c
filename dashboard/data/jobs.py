"""Jobs and workers for the Queue, Job, Submit pages and the sidebar: the queue's rows, counts and statuses, one job's
detail and record, the live workers (with the models and torch versions they publish), and what a person may do to
a job (cancel, re-submit). Errors a person can act on are QueueError."""
from __future__ import annotations

from db.cluster import pending_jobs
from db.follow_ups import reruns_of
from db.models import JobStatus
from db.queue import (QueueError, bundle_signers, live_torch_versions, live_workers, published_catalog, resubmit,
                      status_counts, timed_on_host, waiting_reason, whoami)
from db.results import export_records, sweep_measurement
from db.submitters import cancel_as
from db.views import data_version, job_detail, job_rows, job_statuses, last_cold_compiles

__all__ = ["JobStatus", "QueueError", "STATUSES", "bundle_signers", "cancel_as", "data_version", "export_records",
           "job_detail", "job_rows", "job_statuses", "last_cold_compiles", "live_torch_versions", "live_workers",
           "pending_jobs", "published_catalog", "reruns_of", "resubmit", "status_counts", "sweep_measurement",
           "timed_on_host", "waiting_reason", "whoami"]

STATUSES = [s.value for s in JobStatus]  # every status, in the enum's order (the Queue's filter)
