"""One more scalar column on the results table, as a migration adds it (db/migrations/versions: 0021, 0022) and takes
it away. On SQLite the table is rebuilt with the new column before the raw ones (0015: a column stored after a job's
samples is read by walking their overflow pages), every row kept, and the answer's index (0017, db.models.ANSWER_INDEX)
made again with the column in it, so the answer still reads from the index alone. PostgreSQL adds the column in place.
Each migration passes the index's columns as they were before it: a migration's steps stay what they were when it was
written, whatever later ones add."""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

RAW_LAST = ("schedule", "detail_keys", "detail", "samples")  # as 0018 left them
INDEX = "ix_results_answer"


def _index(bind, columns: tuple) -> None:
    """The answer's index on SQLite made over `columns`."""
    if INDEX in {i["name"] for i in sa.inspect(bind).get_indexes("results")}:
        op.drop_index(INDEX, table_name="results")
    op.create_index(INDEX, "results", list(columns))


def add(name: str, kind: sa.types.TypeEngine, indexed_before: tuple) -> None:
    """The column `name` of type `kind`, in the answer's index after `indexed_before` (SQLite)."""
    bind = op.get_bind()
    names = [c["name"] for c in sa.inspect(bind).get_columns("results")]
    if name in names:  # a database made by create_all from today's models has it already
        return
    if bind.dialect.name != "sqlite":
        op.add_column("results", sa.Column(name, kind, nullable=True))
        return
    order = [n for n in names if n not in RAW_LAST] + [name] + [n for n in RAW_LAST if n in names]
    # a copy of the table in the new order, then the old one dropped (the whole database, in one transaction)
    with op.batch_alter_table("results", recreate="always", partial_reordering=[tuple(order)]) as batch:
        batch.add_column(sa.Column(name, kind, nullable=True))
    _index(bind, indexed_before + (name,))


def drop(name: str, indexed_before: tuple) -> None:
    """add() undone: the column gone, the answer's index as it was (SQLite)."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.drop_column("results", name)
        return
    op.drop_index(INDEX, table_name="results")  # first: SQLite drops no column an index holds
    with op.batch_alter_table("results", recreate="always") as batch:
        batch.drop_column(name)
    _index(bind, indexed_before)
