"""Three clocks per result: latency as the caller sees it (the headline), throughput, and GPU time; and
`noise_note`, why a result is noisy.

Results stored before this revision get timing_protocol 1. On the CPU their numbers already are latency
(perf_counter around each synchronous call) and stay where they are. On CUDA their only clock was kernel
time behind a host head start: those numbers move to the GPU-time columns (and samples to eager_gpu /
compiled_gpu), where they mean what they meant, and the headline columns (latency, speedup, percentiles,
break-even) become null: such a result reads "GPU time only" and is never drawn or compared as latency.
The old side measurement (eager_wall_ms / compiled_wall_ms: one call per round right after spun, flushed
calls) scattered and sat above what a steady caller pays: its columns go; its samples stay in `samples`.

Revision ID: 0004_three_clocks
Revises: 0003_jobs_status_finished_at
"""
import sqlalchemy as sa
from alembic import op

revision = "0004_three_clocks"
down_revision = "0003_jobs_status_finished_at"
branch_labels = None
depends_on = None

NEW = [("eager_throughput_ms", sa.Float()), ("compiled_throughput_ms", sa.Float()),
       ("throughput_speedup", sa.Float()), ("eager_gpu_ms", sa.Float()), ("compiled_gpu_ms", sa.Float()),
       ("gpu_speedup", sa.Float()), ("eager_host_overhead", sa.Float()), ("compiled_host_overhead", sa.Float()),
       ("host_bound", sa.Boolean()), ("host_note", sa.Text()), ("timing_protocol", sa.Integer()),
       ("noise_note", sa.Text())]
HEADLINE = ("eager_ms", "compiled_ms", "eager_p10_ms", "eager_p90_ms", "compiled_p10_ms", "compiled_p90_ms",
            "speedup", "break_even_calls")
SAMPLE_KEYS = {"eager": "eager_gpu", "compiled": "compiled_gpu"}
DETAIL_KEYS = {"speedup_p10": "gpu_speedup_p10", "speedup_p90": "gpu_speedup_p90"}


def upgrade() -> None:
    # a database made by create_all from these models before it was migrated (0001 adopts it) has some already
    have = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("results")}
    with op.batch_alter_table("results") as batch:
        for name, type_ in NEW:
            if name not in have:
                batch.add_column(sa.Column(name, type_, nullable=True))
    results = sa.table("results", sa.column("id", sa.Integer()), sa.column("timing_method", sa.String()),
                       sa.column("samples", sa.JSON()), sa.column("detail", sa.JSON()),
                       *(sa.column(n, t) for n, t in NEW),
                       *(sa.column(n, sa.Float()) for n in HEADLINE if n != "break_even_calls"),
                       sa.column("break_even_calls", sa.Integer()))
    bind = op.get_bind()
    # the rows written before this revision (an adopted database's rows may carry a protocol already)
    old = results.c.timing_protocol.is_(None)
    cuda = sa.and_(old, results.c.timing_method.like("cuda%"))
    bind.execute(results.update().where(cuda).values(
        eager_gpu_ms=results.c.eager_ms, compiled_gpu_ms=results.c.compiled_ms, gpu_speedup=results.c.speedup,
        **{n: None for n in HEADLINE}))
    for row_id, samples, detail in bind.execute(sa.select(results.c.id, results.c.samples, results.c.detail)
                                                .where(cuda)).all():
        if isinstance(samples, dict) and isinstance(detail, dict):  # else malformed (SQLite text): left as it is
            bind.execute(results.update().where(results.c.id == row_id).values(
                samples=_renamed(samples, SAMPLE_KEYS), detail=_renamed(detail, DETAIL_KEYS)))
    bind.execute(results.update().where(old).values(timing_protocol=1))
    gone = [n for n in ("eager_wall_ms", "compiled_wall_ms") if n in have]
    if gone:
        with op.batch_alter_table("results") as batch:
            for name in gone:
                batch.drop_column(name)


def _renamed(value: dict, keys: dict) -> dict:
    return {keys.get(k, k): v for k, v in value.items()}


def downgrade() -> None:
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("eager_wall_ms", sa.Float(), nullable=True))
        batch.add_column(sa.Column("compiled_wall_ms", sa.Float(), nullable=True))
        for name, _ in reversed(NEW):
            batch.drop_column(name)
