"""Compile cache bundles carry the storing worker's signature (runner.worker.cache_key); rows from before have none and are
never loaded again.

Revision ID: 0014_cache_signature
Revises: 0013_honest_answers
"""
import sqlalchemy as sa
from alembic import op

revision = "0014_cache_signature"
down_revision = "0013_honest_answers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a database made by create_all from these models before it was migrated (0001 adopts it) has it already
    if "signature" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("compile_caches")}:
        with op.batch_alter_table("compile_caches") as batch:
            batch.add_column(sa.Column("signature", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("compile_caches") as batch:
        batch.drop_column("signature")
