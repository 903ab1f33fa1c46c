"""The NVIDIA driver a device's ceilings were measured under: a worker measures them again under a new driver.

Revision ID: 0012_ceilings_driver
Revises: 0009_speedup_spread
"""
import sqlalchemy as sa
from alembic import op

revision = "0012_ceilings_driver"
down_revision = "0009_speedup_spread"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a database made by create_all from these models before it was migrated (0001 adopts it) has it already
    if "driver" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("device_ceilings")}:
        with op.batch_alter_table("device_ceilings") as batch:
            batch.add_column(sa.Column("driver", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("device_ceilings") as batch:
        batch.drop_column("driver")
