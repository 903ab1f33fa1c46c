"""The compiler's story beside each result: kernels and host ops per call (eager and compiled) as result
columns, and an `artifacts` table holding a job's compressed output code, FX graphs and trace.

Revision ID: 0005_compiler_story
Revises: 0004_three_clocks
"""
import sqlalchemy as sa
from alembic import op

revision = "0005_compiler_story"
down_revision = "0004_three_clocks"
branch_labels = None
depends_on = None

NEW = ("eager_kernels", "compiled_kernels", "eager_host_ops", "compiled_host_ops")


def upgrade() -> None:
    # a database made by create_all from these models before it was migrated (0001 adopts it) has them already
    inspector = sa.inspect(op.get_bind())
    have = {c["name"] for c in inspector.get_columns("results")}
    with op.batch_alter_table("results") as batch:
        for name in NEW:
            if name not in have:
                batch.add_column(sa.Column(name, sa.Integer(), nullable=True))
    if "artifacts" not in inspector.get_table_names():
        op.create_table(
            "artifacts",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
            sa.Column("name", sa.String(64), nullable=False),
            sa.Column("bytes", sa.Integer(), nullable=False),
            sa.Column("stored_bytes", sa.Integer(), nullable=False),
            sa.Column("truncated", sa.Boolean(), nullable=False),
            sa.Column("data", sa.LargeBinary(), nullable=False),
            sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.UniqueConstraint("job_id", "name", name="uq_artifacts_job_name"))
        op.create_index("ix_artifacts_job_id", "artifacts", ["job_id"])


def downgrade() -> None:
    op.drop_index("ix_artifacts_job_id", table_name="artifacts")
    op.drop_table("artifacts")
    with op.batch_alter_table("results") as batch:
        for name in reversed(NEW):
            batch.drop_column(name)
