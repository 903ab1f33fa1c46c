"""What a job kept beside its numbers, for the Job page, the job diff and the tlparse route: its artifacts (generated
code, FX graphs, the trace, the tlparse report's files) and what its caches say about its first call. A missing or
damaged artifact raises ArtifactError (DamagedArtifact: damaged)."""
from __future__ import annotations

from db.artifacts import ArtifactError, DamagedArtifact, data, output_code, report_file, report_pages, text
from db.caches import first_calls_alike, warm_nearest

__all__ = ["ArtifactError", "DamagedArtifact", "data", "first_calls_alike", "output_code", "report_file",
           "report_pages", "text", "warm_nearest"]
