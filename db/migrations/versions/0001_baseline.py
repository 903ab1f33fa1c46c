"""baseline: the schema as db/models.py had it when migrations began (jobs, results with spread and
roofline columns, workers, sweeps, device_ceilings).

It also adopts a database that `create_all` made before migrations existed (tables, no
alembic_version): tables it lacks are created, columns it lacks are added (every later column is
nullable), and what exists is kept with its rows. On an empty database it simply creates everything.

Revision ID: 0001_baseline
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001_baseline"
down_revision = None
branch_labels = None
depends_on = None

# A frozen copy of the schema: later model changes belong in later revisions, never here.
meta = sa.MetaData()

sa.Table(
    "sweeps", meta,
    sa.Column("id", sa.Integer(), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("request", sa.JSON(), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
)
sa.Table(
    "jobs", meta,
    sa.Column("id", sa.Integer(), primary_key=True),
    sa.Column("sweep_id", sa.Integer(), sa.ForeignKey("sweeps.id"), nullable=False, index=True),
    sa.Column("spec", sa.JSON(), nullable=False),
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("error", sa.Text(), nullable=True),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("max_attempts", sa.Integer(), nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("claimed_at", sa.DateTime(), nullable=True),
    sa.Column("finished_at", sa.DateTime(), nullable=True),
    sa.Column("worker_id", sa.String(200), nullable=True),
    sa.Column("lease_token", sa.String(64), nullable=True),
    sa.Column("lease_expires_at", sa.DateTime(), nullable=True),
    sa.Column("phase", sa.String(64), nullable=True),
    sa.Column("progress", sa.Float(), nullable=True),
    sa.Column("log_tail", sa.Text(), nullable=True),
)
_floats = ["eager_first_call_s", "compiled_first_call_s", "compiled_second_call_s", "eager_ms", "compiled_ms",
           "eager_p10_ms", "eager_p90_ms", "compiled_p10_ms", "compiled_p90_ms", "speedup"]
sa.Table(
    "results", meta,
    sa.Column("id", sa.Integer(), primary_key=True),
    sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id"), nullable=False, unique=True),
    *[sa.Column(name, sa.Float(), nullable=True) for name in _floats],
    sa.Column("break_even_calls", sa.Integer(), nullable=True),
    sa.Column("eager_wall_ms", sa.Float(), nullable=True),
    sa.Column("compiled_wall_ms", sa.Float(), nullable=True),
    sa.Column("timing_method", sa.String(64), nullable=True),
    sa.Column("samples_per_side", sa.Integer(), nullable=True),
    sa.Column("eager_spread", sa.Float(), nullable=True),
    sa.Column("compiled_spread", sa.Float(), nullable=True),
    sa.Column("noisy", sa.Boolean(), nullable=True),
    sa.Column("flops", sa.Float(), nullable=True),
    sa.Column("min_bytes", sa.Float(), nullable=True),
    sa.Column("achieved_tflops", sa.Float(), nullable=True),
    sa.Column("achieved_gbps", sa.Float(), nullable=True),
    sa.Column("roofline_bound", sa.String(16), nullable=True),
    sa.Column("roofline_pct", sa.Float(), nullable=True),
    sa.Column("mfu", sa.Float(), nullable=True),
    sa.Column("graph_count", sa.Integer(), nullable=True),
    sa.Column("graph_breaks", sa.Integer(), nullable=True),
    sa.Column("recompiles", sa.Integer(), nullable=True),
    sa.Column("measure_recompiles", sa.Integer(), nullable=True),
    sa.Column("peak_mem_eager_mb", sa.Float(), nullable=True),
    sa.Column("peak_mem_compiled_mb", sa.Float(), nullable=True),
    sa.Column("max_abs_error", sa.Float(), nullable=True),
    sa.Column("rel_error", sa.Float(), nullable=True),
    sa.Column("accuracy_ok", sa.Boolean(), nullable=True),
    sa.Column("torch_version", sa.String(64), nullable=True),
    sa.Column("triton_version", sa.String(64), nullable=True),
    sa.Column("device_name", sa.String(200), nullable=True),
    sa.Column("cuda_version", sa.String(32), nullable=True),
    sa.Column("hostname", sa.String(200), nullable=True),
    sa.Column("samples", sa.JSON(), nullable=False),
    sa.Column("schedule", sa.JSON(), nullable=False),
    sa.Column("detail", sa.JSON(), nullable=False),
)
sa.Table(
    "workers", meta,
    sa.Column("id", sa.String(200), primary_key=True),
    sa.Column("hostname", sa.String(200), nullable=False),
    sa.Column("pid", sa.Integer(), nullable=False),
    sa.Column("gpu", sa.String(64), nullable=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("current_job_id", sa.Integer(), nullable=True),
    sa.Column("capabilities", sa.JSON(), nullable=False),
    sa.Column("started_at", sa.DateTime(), nullable=False),
    sa.Column("heartbeat_at", sa.DateTime(), nullable=False),
)
sa.Table(
    "device_ceilings", meta,
    sa.Column("id", sa.Integer(), primary_key=True),
    sa.Column("device_name", sa.String(200), nullable=False, index=True),
    sa.Column("hostname", sa.String(200), nullable=False),
    sa.Column("dtype", sa.String(16), nullable=False),
    sa.Column("copy_gbps", sa.Float(), nullable=False),
    sa.Column("matmul_tflops", sa.Float(), nullable=False),
    sa.Column("torch_version", sa.String(64), nullable=False),
    sa.Column("measured_at", sa.DateTime(), nullable=False),
)


def upgrade() -> None:
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    existing = set(inspector.get_table_names())
    for table in meta.sorted_tables:  # parents before children (foreign keys)
        if table.name not in existing:
            table.create(bind)  # with its indexes
            continue
        have = {c["name"] for c in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name not in have:  # a pre-migration database older than this column
                if not column.nullable:
                    raise RuntimeError(f"cannot adopt table {table.name}: it lacks required column {column.name}")
                op.add_column(table.name, sa.Column(column.name, column.type, nullable=True))


def downgrade() -> None:
    for table in reversed(meta.sorted_tables):
        table.drop(op.get_bind())
