"""The speedup's own spread: IQR / median of a job's per-round eager/compiled ratios, which decides `noisy` (a drift
that slows both sides of a round alike moves the latency, not the speedup).

Revision ID: 0009_speedup_spread
Revises: 0008_follow_ups
"""
import sqlalchemy as sa
from alembic import op

revision = "0009_speedup_spread"
down_revision = "0008_follow_ups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a database made by create_all from these models before it was migrated (0001 adopts it) has it already
    if "speedup_spread" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("results")}:
        with op.batch_alter_table("results") as batch:
            batch.add_column(sa.Column("speedup_spread", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.drop_column("speedup_spread")
