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
from alembic import op

revision = "0022_first_call_disturbed"
down_revision = "0021_host_pace"
branch_labels = None
depends_on = None

NEW = "first_call_disturbed"
RAW_LAST = ("schedule", "detail_keys", "detail", "samples")  # as 0018 left them
INDEX = "ix_results_answer"
INDEXED = ("job_id", "graph_cache_hit", "noise_note", "accuracy_ok", "disturbed", "round_speedup", "round_speedup_se",
           "first_call_cache", "speedup_spread", "eager_first_call_s", "compiled_first_call_s", "eager_ms",
           "compiled_ms", "speedup", "graph_breaks", "recompiles", "max_abs_error", "peak_mem_eager_mb",
           "peak_mem_compiled_mb", "torch_version", "device_name", "host_pace_us")  # 0021's


def _index(bind, columns: tuple) -> None:
    """The answer's index on SQLite made over `columns`."""
    if INDEX in {i["name"] for i in sa.inspect(bind).get_indexes("results")}:
        op.drop_index(INDEX, table_name="results")
    op.create_index(INDEX, "results", list(columns))


def upgrade() -> None:
    bind = op.get_bind()
    names = [c["name"] for c in sa.inspect(bind).get_columns("results")]
    if NEW in names:  # a database made by create_all from today's models has it already
        return
    if bind.dialect.name != "sqlite":
        op.add_column("results", sa.Column(NEW, sa.Boolean(), nullable=True))
        return
    order = [n for n in names if n not in RAW_LAST] + [NEW] + [n for n in RAW_LAST if n in names]
    # a copy of the table in the new order, then the old one dropped (the whole database, in one transaction)
    with op.batch_alter_table("results", recreate="always", partial_reordering=[tuple(order)]) as batch:
        batch.add_column(sa.Column(NEW, sa.Boolean(), nullable=True))
    _index(bind, INDEXED + (NEW,))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.drop_column("results", NEW)
        return
    op.drop_index(INDEX, table_name="results")  # first: SQLite drops no column an index holds
    with op.batch_alter_table("results", recreate="always") as batch:
        batch.drop_column(NEW)
    _index(bind, INDEXED)
