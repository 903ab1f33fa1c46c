"""Results' raw material as numbers and compressed bytes: the per-round samples packed exactly (lab.packing: each float
comes back bit for bit), the detail as compressed JSON, and a copy of the few detail keys SQL reads by name
(lab.record.DETAIL_KEYS) as JSON beside them.

A realistic result held ~40-55 kB of samples as JSON text (every float written out in 17-19 characters) and ~6 kB of
detail: 100k jobs took 6.26 GB of SQLite. Packed, a result's samples take ~2-6 kB (their floats are perf_counter
differences and CUDA event times: integers of nanoseconds, kept as such) and its detail ~2.5 kB.

Every row is converted here, in batches of BATCH rows (the JSON of a batch in memory, not the table's), into new
columns; then the JSON columns go and the new ones take their names. On SQLite the table is rebuilt once at the end
(raw columns last, the samples very last: migration 0015), its indexes with it. The file keeps its size until it is
VACUUMed (SQLite reuses the freed pages for new rows first): `sqlite3 FILE VACUUM` gives the space back, and needs as
much free disk as the database will take. A row whose JSON cannot be read is stored as an empty dict, as a Python
reader of it found nothing usable there before.

Revision ID: 0018_samples_binary
Revises: 0017_results_answer_index
"""
import json

import sqlalchemy as sa
from alembic import op

from lab import packing
from lab.record import detail_keys

revision = "0018_samples_binary"
down_revision = "0017_results_answer_index"
branch_labels = None
depends_on = None

BATCH = 500  # rows read, converted and written at a time
NEW = {"detail": "detail_packed", "samples": "samples_packed"}  # the packed columns' names until the JSON ones go


def _json(value) -> dict:
    """A JSON column's value as read: a dict from PostgreSQL, text (or bytes) from SQLite; {} when not a dict."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _convert(bind, source: dict, target: dict, convert) -> None:
    """For every results row in id order, BATCH at a time: target columns = convert(source columns' values)."""
    results = sa.table("results", sa.column("id", sa.Integer), *(sa.column(c) for c in source.values()),
                       *(sa.column(c, t) for c, t in target.items()))
    last = 0
    while True:
        rows = bind.execute(sa.select(results.c.id, *(results.c[c] for c in source.values()))
                            .where(results.c.id > last).order_by(results.c.id).limit(BATCH)).all()
        if not rows:
            return
        bind.execute(sa.update(results).where(results.c.id == sa.bindparam("row_id"))
                     .values({c: sa.bindparam(c) for c in target}),
                     [{"row_id": r[0], **convert(*r[1:])} for r in rows])
        last = rows[-1][0]


def _pack(detail, samples) -> dict:
    detail, samples = _json(detail), _json(samples)
    return {"detail_keys": detail_keys(detail), "detail_packed": packing.pack_json(detail),
            "samples_packed": packing.pack_samples(samples)}


def _unpack(detail, samples) -> dict:
    return {"detail_json": packing.unpack_json(detail, {}), "samples_json": packing.unpack_samples(samples)}


def _swap(bind, old: list[str], new: dict[str, str], kind) -> None:
    """Drop the `old` columns and give the `new` ones (name -> final name, of type `kind`) their final names, not
    null. On SQLite the table is rebuilt once (they were added last, so the raw columns stay last)."""
    if bind.dialect.name == "sqlite":
        with op.batch_alter_table("results", recreate="always") as batch:
            for name in old:
                batch.drop_column(name)
            for name, final_name in new.items():
                batch.alter_column(name, new_column_name=final_name, existing_type=kind, nullable=False)
        return
    for name in old:
        op.drop_column("results", name)
    for name, final_name in new.items():
        op.alter_column("results", name, new_column_name=final_name, existing_type=kind, nullable=False)


def upgrade() -> None:
    bind = op.get_bind()
    if "detail_keys" in {c["name"] for c in sa.inspect(bind).get_columns("results")}:
        return  # a database made by create_all from today's models (adopted by 0001): packed already
    op.add_column("results", sa.Column("detail_keys", sa.JSON(), nullable=True))
    for name in NEW.values():
        op.add_column("results", sa.Column(name, sa.LargeBinary(), nullable=True))
    _convert(bind, {"detail": "detail", "samples": "samples"},
             {"detail_keys": sa.JSON(), "detail_packed": sa.LargeBinary(), "samples_packed": sa.LargeBinary()}, _pack)
    _swap(bind, ["detail", "samples"], {v: k for k, v in NEW.items()}, sa.LargeBinary())


def downgrade() -> None:
    bind = op.get_bind()
    for name in ("detail_json", "samples_json"):
        op.add_column("results", sa.Column(name, sa.JSON(), nullable=True))
    _convert(bind, {"detail": "detail", "samples": "samples"},
             {"detail_json": sa.JSON(), "samples_json": sa.JSON()}, _unpack)
    _swap(bind, ["detail_keys", "detail", "samples"], {"detail_json": "detail", "samples_json": "samples"}, sa.JSON())
