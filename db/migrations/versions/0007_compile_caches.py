"""A team's warm cache: a `compile_caches` table holding cold jobs' compile cache artifacts (torch's
mega-cache), keyed by torch, triton, device and compile settings, for `portable` jobs on any worker.

Revision ID: 0007_compile_caches
Revises: 0005_compiler_story
"""
import sqlalchemy as sa
from alembic import op

revision = "0007_compile_caches"
down_revision = "0005_compiler_story"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a database made by create_all from these models before it was migrated (0001 adopts it) has it already
    if "compile_caches" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "compile_caches",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("parts", sa.JSON(), nullable=False),
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="SET NULL"), nullable=True),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False))
    op.create_index("ix_compile_caches_key", "compile_caches", ["key"])


def downgrade() -> None:
    op.drop_index("ix_compile_caches_key", table_name="compile_caches")
    op.drop_table("compile_caches")
