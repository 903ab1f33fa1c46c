"""On SQLite, an index of the results holding the answer's columns beside each job id (ix_results_answer), so that the
answer (`runner report`, Results) reads them from the index alone.

A result row is ~60 kB (its per-round samples and detail, stored last since 0015): each row starts a page of its own,
the answer's twenty narrow columns of 100k jobs sit on 100k pages, and reading them cost 0.71 s; from this index,
~100 bytes a job, 0.50 s. PostgreSQL keeps long values out of the row (TOAST), and a btree entry there has a size limit
(~2.7 kB) that a long noise_note could pass: no index there. The columns are lab.answer.READ's results columns as of
this revision (db.models.ANSWER_INDEXED): a later revision that makes the answer read another results column adds it
here too, or the answer reads every row again (tests/unit/test_views.py checks the plan).

Revision ID: 0017_results_answer_index
Revises: 0016_team_lab
"""
import sqlalchemy as sa
from alembic import op

revision = "0017_results_answer_index"
down_revision = "0016_team_lab"
branch_labels = None
depends_on = None

NAME = "ix_results_answer"
COLUMNS = ("job_id", "graph_cache_hit", "noise_note", "accuracy_ok", "disturbed", "round_speedup", "round_speedup_se",
           "first_call_cache", "speedup_spread", "eager_first_call_s", "compiled_first_call_s", "eager_ms",
           "compiled_ms", "speedup", "graph_breaks", "recompiles", "max_abs_error", "peak_mem_eager_mb",
           "peak_mem_compiled_mb", "torch_version", "device_name")


def upgrade() -> None:
    bind = op.get_bind()
    # a database made by create_all from today's models has it already
    if bind.dialect.name == "sqlite" and NAME not in {i["name"] for i in sa.inspect(bind).get_indexes("results")}:
        op.create_index(NAME, "results", list(COLUMNS))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(NAME, table_name="results")
