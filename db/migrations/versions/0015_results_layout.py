"""The results table read without its raw JSON: whether inductor's FX graph cache served a run's compiled graph is a
column of its own (graph_cache_hit, filled from the detail's cache counters), and on SQLite the raw JSON columns go
last, the samples very last. And break_even_calls is 64-bit: on PostgreSQL a configuration that pays off after more
than 2**31 calls could not be stored.

The answer needs that one fact of every warm run, and parsing each run's ~6 kB detail for it cost 1.5 s at 100k jobs.
SQLite keeps a row's columns in order, and a value longer than a page continues on overflow pages chained one to the
next: to reach a column stored after a job's samples (~60 kB of them on a GPU, 15 pages), SQLite walks that chain.
Every column added by a migration since the first landed there (the three clocks, the answer's paired speedup...), so
reading them for 100k jobs walked 6 GB: 2.4 s for the answer's columns, 0.4 s once they come first. The table is
rebuilt once here, the raw columns last, so a read of numbers stops before them. A later migration that adds a column
to `results` must rebuild it the same way (tests/unit/test_migrations.py checks the order). PostgreSQL keeps long
values out of the row (TOAST): the order costs nothing there.

Revision ID: 0015_results_layout
Revises: 0014_cache_signature
"""
import sqlalchemy as sa
from alembic import op

revision = "0015_results_layout"
down_revision = "0014_cache_signature"
branch_labels = None
depends_on = None

RAW_LAST = ("schedule", "detail", "samples")  # the detail is read for a few fields, the samples only by raw exports
NEW = "graph_cache_hit"
BIG = "break_even_calls"  # billions of calls for a configuration that saves a few ns: PostgreSQL's integer refused it


def upgrade() -> None:
    bind = op.get_bind()
    names = [c["name"] for c in sa.inspect(bind).get_columns("results")]
    scalars = [n for n in names if n not in RAW_LAST] + ([NEW] if NEW not in names else [])
    order = scalars + [n for n in RAW_LAST if n in names]
    if bind.dialect.name == "sqlite" and names != order:
        # a copy of the table in the new order, then the old one dropped (the whole database, in one transaction)
        with op.batch_alter_table("results", recreate="always", partial_reordering=[tuple(order)]) as batch:
            if NEW not in names:
                batch.add_column(sa.Column(NEW, sa.Boolean(), nullable=True))
            batch.alter_column(BIG, type_=sa.BigInteger(), existing_type=sa.Integer())
    else:
        if NEW not in names:
            op.add_column("results", sa.Column(NEW, sa.Boolean(), nullable=True))
        if bind.dialect.name != "sqlite":
            op.alter_column("results", BIG, type_=sa.BigInteger(), existing_type=sa.Integer())
    if NEW in names:
        return
    # lab.record.graph_cache_hit, in SQL: a hit if the graph cache served it, a miss if it was asked and did not
    results = sa.table("results", sa.column("detail", sa.JSON), sa.column(NEW, sa.Boolean))
    count = lambda key: results.c.detail[("cache_hits", f"inductor_fx_local_cache_{key}_count")].as_float()  # noqa: E731
    bind.execute(sa.update(results).values({NEW: sa.case((count("hit") > 0, sa.true()), (count("miss") > 0, sa.false()),
                                                         else_=sa.null())}))


def downgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.drop_column(NEW)
        batch.alter_column(BIG, type_=sa.Integer(), existing_type=sa.BigInteger())
