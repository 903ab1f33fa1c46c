"""Each result's first_call_disturbed: whether another process took the job's cores during its compiled first call
(runner.child.disturbance.Around, read just before and after it). The answer leaves such a cold first call out of the
cold first calls' spread and interval, by this column in SQL (db.reports.spreads) and in hand (lab.answer). Empty for
the rows of before: not measured.

As 0021: on SQLite the results table is rebuilt with the new column before the raw ones, every row kept, and the
answer's index made again with it; PostgreSQL adds the column in place.

Revision ID: 0022_first_call_disturbed
Revises: 0021_host_pace
"""
import sqlalchemy as sa

from db import results_column

revision = "0022_first_call_disturbed"
down_revision = "0021_host_pace"
branch_labels = None
depends_on = None

NEW = "first_call_disturbed"
INDEXED = ("job_id", "graph_cache_hit", "noise_note", "accuracy_ok", "disturbed", "round_speedup", "round_speedup_se",
           "first_call_cache", "speedup_spread", "eager_first_call_s", "compiled_first_call_s", "eager_ms",
           "compiled_ms", "speedup", "graph_breaks", "recompiles", "max_abs_error", "peak_mem_eager_mb",
           "peak_mem_compiled_mb", "torch_version", "device_name", "host_pace_us")  # 0021's


def upgrade() -> None:
    results_column.add(NEW, sa.Boolean(), INDEXED)


def downgrade() -> None:
    results_column.drop(NEW, INDEXED)
