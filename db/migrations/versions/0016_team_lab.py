"""A team's lab: a sweep's note and whether it is archived (by whom, when), its tags, a model's pinned baseline, and
the record of what people did to the lab's sweeps (lab_events: tags and notes edited, archives, deletions, pins).

Revision ID: 0016_team_lab
Revises: 0015_results_layout
"""
import sqlalchemy as sa
from alembic import op

revision = "0016_team_lab"
down_revision = "0015_results_layout"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a database made by create_all before migrations existed already has what its models had: add what is missing
    inspector = sa.inspect(op.get_bind())
    tables = set(inspector.get_table_names())
    have = {c["name"] for c in inspector.get_columns("sweeps")}
    missing = [c for c in (sa.Column("note", sa.Text(), nullable=False, server_default=""),
                           sa.Column("archived_at", sa.DateTime(), nullable=True),
                           sa.Column("archived_by", sa.String(200), nullable=True)) if c.name not in have]
    if missing:
        with op.batch_alter_table("sweeps") as batch:
            for column in missing:
                batch.add_column(column)
    if "sweep_tags" not in tables:
        op.create_table(
            "sweep_tags",
            sa.Column("sweep_id", sa.Integer(), sa.ForeignKey("sweeps.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("tag", sa.String(64), primary_key=True),
        )
        op.create_index("ix_sweep_tags_tag", "sweep_tags", ["tag"])
    if "baselines" not in tables:
        op.create_table(
            "baselines",
            sa.Column("model", sa.String(200), primary_key=True),
            sa.Column("sweep_id", sa.Integer(), sa.ForeignKey("sweeps.id", ondelete="CASCADE"), nullable=False),
            sa.Column("config", sa.String(64), nullable=True),
            sa.Column("pinned_by", sa.String(200), nullable=False),
            sa.Column("pinned_at", sa.DateTime(), nullable=False),
        )
    if "lab_events" not in tables:
        op.create_table(
            "lab_events",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("at", sa.DateTime(), nullable=False),
            sa.Column("actor", sa.String(200), nullable=False),
            sa.Column("action", sa.String(32), nullable=False),
            sa.Column("sweep_id", sa.Integer(), nullable=True),
            sa.Column("detail", sa.JSON(), nullable=False),
        )
        op.create_index("ix_lab_events_at", "lab_events", ["at"])
        op.create_index("ix_lab_events_sweep_id", "lab_events", ["sweep_id"])


def downgrade() -> None:
    op.drop_table("lab_events")
    op.drop_table("baselines")
    op.drop_table("sweep_tags")
    with op.batch_alter_table("sweeps") as batch:
        batch.drop_column("archived_by")
        batch.drop_column("archived_at")
        batch.drop_column("note")
