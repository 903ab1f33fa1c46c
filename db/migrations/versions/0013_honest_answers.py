"""Answers across processes: each result's paired speedup and its standard error (lab.interval), whether a measured
cause disturbed its rounds, and what its compiled first call compiled from; each job's configuration key, indexed
with its sweep, so a finished run finds its configuration's other runs without reading the whole sweep.

Results stored before keep their numbers; their paired speedup is computed here from their stored samples.

Revision ID: 0013_honest_answers
Revises: 0012_ceilings_driver
"""
import json

import sqlalchemy as sa
from alembic import op

from lab.interval import round_ratios, run_center
from lab.spec import spec_key

revision = "0013_honest_answers"
down_revision = "0012_ceilings_driver"
branch_labels = None
depends_on = None

RESULT_COLUMNS = (("first_call_cache", sa.String(16)), ("round_speedup", sa.Float()),
                  ("round_speedup_se", sa.Float()), ("disturbed", sa.Boolean()))
CHUNK = 500


def _json(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def upgrade() -> None:
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    # a database made by create_all from these models before it was migrated (0001 adopts it) has them already
    have = {c["name"] for c in inspector.get_columns("results")}
    with op.batch_alter_table("results") as batch:
        for name, kind in RESULT_COLUMNS:
            if name not in have:
                batch.add_column(sa.Column(name, kind, nullable=True))
    if "config" not in {c["name"] for c in inspector.get_columns("jobs")}:
        with op.batch_alter_table("jobs") as batch:
            batch.add_column(sa.Column("config", sa.String(64), nullable=True))
    if "ix_jobs_sweep_config" not in {i["name"] for i in inspector.get_indexes("jobs")}:
        op.create_index("ix_jobs_sweep_config", "jobs", ["sweep_id", "config"])

    jobs = sa.table("jobs", sa.column("id", sa.Integer), sa.column("spec", sa.JSON), sa.column("config", sa.String))
    last = 0
    while True:
        rows = bind.execute(sa.select(jobs.c.id, jobs.c.spec).where(jobs.c.id > last, jobs.c.config.is_(None))
                            .order_by(jobs.c.id).limit(CHUNK)).all()
        if not rows:
            break
        for job_id, spec in rows:
            try:
                key = spec_key(_json(spec))
            except (TypeError, ValueError):  # a corrupt row stays without a key: the worker fails it when claimed
                continue
            bind.execute(sa.update(jobs).where(jobs.c.id == job_id).values(config=key))
        last = rows[-1][0]

    results = sa.table("results", sa.column("id", sa.Integer), sa.column("samples", sa.JSON),
                       sa.column("round_speedup", sa.Float), sa.column("round_speedup_se", sa.Float))
    last = 0
    while True:
        rows = bind.execute(sa.select(results.c.id, results.c.samples)
                            .where(results.c.id > last, results.c.round_speedup.is_(None))
                            .order_by(results.c.id).limit(CHUNK)).all()
        if not rows:
            break
        for result_id, samples in rows:
            try:
                center, se = run_center(round_ratios(_json(samples)))
            except (TypeError, ValueError, AttributeError):  # damaged samples: no paired speedup, as before
                continue
            if center is not None:
                bind.execute(sa.update(results).where(results.c.id == result_id)
                             .values(round_speedup=center, round_speedup_se=se))
        last = rows[-1][0]


def downgrade() -> None:
    op.drop_index("ix_jobs_sweep_config", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("config")
    with op.batch_alter_table("results") as batch:
        for name, _ in RESULT_COLUMNS:
            batch.drop_column(name)
