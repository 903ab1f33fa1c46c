"""Results' raw material stored as numbers and compressed bytes: the per-round samples packed exactly (lab.packing), the
detail compressed. (First version: the revision in the chain; its conversion follows.)

Revision ID: 0018_samples_binary
Revises: 0017_results_answer_index
"""
revision = "0018_samples_binary"
down_revision = "0017_results_answer_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
