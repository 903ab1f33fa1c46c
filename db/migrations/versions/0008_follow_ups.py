"""Follow-up jobs: a job queued because another one's result was noisy (a re-run) or host-sensitive (a repeat in
a separate process) names that job (`follow_up_of`) and why (`follow_up`: kind, n of total, because).

Revision ID: 0008_follow_ups
Revises: 0005_compiler_story
"""
import sqlalchemy as sa
from alembic import op

revision = "0008_follow_ups"
down_revision = "0007_compile_caches"
branch_labels = None
depends_on = None

NEW = (("follow_up_of", sa.Integer()), ("follow_up", sa.JSON()))


def upgrade() -> None:
    # a database made by create_all from these models before it was migrated (0001 adopts it) has them already
    have = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("jobs")}
    with op.batch_alter_table("jobs") as batch:
        for name, type_ in NEW:
            if name not in have:
                batch.add_column(sa.Column(name, type_, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        for name, _ in reversed(NEW):
            batch.drop_column(name)
