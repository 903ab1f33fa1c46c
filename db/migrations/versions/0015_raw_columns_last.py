"""On SQLite, the results table's raw JSON columns go last, the samples very last.

SQLite keeps a row's columns in order, and a value longer than a page continues on overflow pages chained one to
the next: to reach a column stored after a job's samples (~60 kB of them on a GPU, 15 pages), SQLite walks that
chain. Every column added by a migration since the first landed there (the three clocks, the answer's paired
speedup...), so reading them for 100k jobs walked 6 GB: 3 s for one column, where the columns before the samples
took 0.5 s. Rebuilt once here in the models' order, the raw columns last, so a read of numbers stops before them.
A later migration that adds a column to `results` must rebuild it the same way (tests/unit/test_migrations.py
checks the order). PostgreSQL keeps long values out of the row (TOAST): the order costs nothing there.

Revision ID: 0015_raw_columns_last
Revises: 0014_cache_signature
"""
import sqlalchemy as sa
from alembic import op

revision = "0015_raw_columns_last"
down_revision = "0014_cache_signature"
branch_labels = None
depends_on = None

RAW_LAST = ("schedule", "detail", "samples")  # the detail is read for a few fields, the samples only by raw exports


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    names = [c["name"] for c in sa.inspect(bind).get_columns("results")]
    order = [n for n in names if n not in RAW_LAST] + [n for n in RAW_LAST if n in names]
    if names != order:
        # a copy of the table in the new order, then the old one dropped (the whole database, in one transaction)
        with op.batch_alter_table("results", recreate="always", partial_reordering=[tuple(order)]):
            pass


def downgrade() -> None:
    pass  # the order is no part of the schema
