"""An index on jobs (config, id): a finished run reads its configuration's earlier processes in other sweeps, newest
first and at most db.follow_ups.past_processes' limit, to plan how many processes it runs (lab.history). Without it
that read walks every job; the (sweep_id, config) index cannot serve a configuration across sweeps.

Revision ID: 0019_jobs_config_index
Revises: 0018_samples_binary
"""
import sqlalchemy as sa
from alembic import op

NAME = "ix_jobs_config_id"

revision = "0019_jobs_config_index"
down_revision = "0018_samples_binary"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a database made by create_all from today's models has it already
    if NAME not in {i["name"] for i in sa.inspect(op.get_bind()).get_indexes("jobs")}:
        op.create_index(NAME, "jobs", ["config", "id"])


def downgrade() -> None:
    op.drop_index(NAME, table_name="jobs")
