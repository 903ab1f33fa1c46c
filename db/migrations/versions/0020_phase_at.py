"""When a running job's current phase began (jobs.phase_at), as its worker's heartbeat first published that phase: a
page says how long the phase has run beside how long it usually takes (lab.eta), "compiling, usually 40-60 s, 25 s so
far". Empty for the rows of before, and for jobs not running.

Revision ID: 0020_phase_at
Revises: 0019_jobs_config_index
"""
import sqlalchemy as sa
from alembic import op

revision = "0020_phase_at"
down_revision = "0019_jobs_config_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a database made by create_all from today's models has it already
    if "phase_at" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("jobs")}:
        op.add_column("jobs", sa.Column("phase_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE jobs DROP COLUMN phase_at")  # in place (SQLite 3.35+): a copied jobs table breaks its keys
