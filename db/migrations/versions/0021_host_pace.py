"""Each result's host pace (results.host_pace_us): the median of a fixed piece of Python timed before each of its
headline rounds (lab.host_pace), which the answer reads beside its speedup to say where a configuration's processes
ran at different paces of the host. Empty for the rows of before.

On SQLite the results table is rebuilt with the new column before the raw ones (0015: a column stored after a job's
samples is read by walking their overflow pages), every row kept, and the answer's index (0017) is made again with the
column in it, so the answer still reads from the index alone. PostgreSQL adds the column in place.

Revision ID: 0021_host_pace
Revises: 0020_phase_at
"""
import sqlalchemy as sa

from db import results_column

revision = "0021_host_pace"
down_revision = "0020_phase_at"
branch_labels = None
depends_on = None

NEW = "host_pace_us"
INDEXED = ("job_id", "graph_cache_hit", "noise_note", "accuracy_ok", "disturbed", "round_speedup", "round_speedup_se",
           "first_call_cache", "speedup_spread", "eager_first_call_s", "compiled_first_call_s", "eager_ms",
           "compiled_ms", "speedup", "graph_breaks", "recompiles", "max_abs_error", "peak_mem_eager_mb",
           "peak_mem_compiled_mb", "torch_version", "device_name")  # 0017's


def upgrade() -> None:
    results_column.add(NEW, sa.Float(), INDEXED)


def downgrade() -> None:
    results_column.drop(NEW, INDEXED)
