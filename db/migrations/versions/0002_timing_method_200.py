"""results.timing_method: 64 -> 200 characters.

The CUDA method's description ("cuda: events per call behind a GPU spin (host head start) and an L2
flush") is 74 characters: SQLite never enforced the length, but PostgreSQL refused every CUDA result.

Revision ID: 0002_timing_method_200
Revises: 0001_baseline
"""
import sqlalchemy as sa
from alembic import op

revision = "0002_timing_method_200"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch:  # SQLite: batch mode copies the table; PostgreSQL: ALTER
        batch.alter_column("timing_method", type_=sa.String(200), existing_type=sa.String(64),
                           existing_nullable=True)


def downgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.alter_column("timing_method", type_=sa.String(64), existing_type=sa.String(200),
                           existing_nullable=True)
