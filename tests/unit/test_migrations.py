"""Schema migrations on real SQLite files and real PostgreSQL databases: the models and the migrations
agree, a pre-migration database is adopted with its rows, a later revision upgrades without losing
rows, and a database newer than the code is refused (tests/integration/test_migrations.py: across processes)."""
import json
import shutil
import textwrap
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text

from db import migrate
from db.database import dispose_engine, get_engine
from db.engine import DatabaseError, atomic, make_engine, reading
from db.models import Base, Job, Result, Sweep, utcnow


def add_rows(engine) -> int:
    with atomic(engine) as s:
        sweep = Sweep(name="kept", request={"model": "tiny"})
        s.add(sweep)
        s.flush()
        job = Job(sweep_id=sweep.id, spec={"model": "tiny", "batch_size": 2, "device": "cpu"}, status="succeeded")
        s.add(job)
        s.flush()
        s.add(Result(job_id=job.id, eager_ms=2.0, compiled_ms=1.0, speedup=2.0))
        return job.id


def assert_rows_kept(engine, job_id):
    with reading(engine) as s:
        assert s.get(Sweep, 1).name == "kept"
        assert s.get(Job, job_id).spec["model"] == "tiny"
        assert s.scalar(select(Result.speedup).where(Result.job_id == job_id)) == 2.0


def test_models_and_migrations_agree(any_db_url):
    """Fails when someone changes db/models.py without a revision (python -m db.migrate revision --autogenerate).
    An item the models make on one dialect only (ddl_if: the answer's index, SQLite's) is compared there only."""
    engine = get_engine(any_db_url)

    def here(item, *_):
        only = getattr(getattr(item, "_ddl_if", None), "dialect", None)
        return only in (None, engine.dialect.name)

    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True, "include_object": here}),
                                Base.metadata)
    assert diff == []
    assert migrate.current(engine) == migrate.head()


def test_database_made_before_migrations_is_adopted_with_its_rows(any_db_url):
    raw = make_engine(any_db_url)
    Base.metadata.create_all(raw)  # how the runner core made databases before migrations existed
    job_id = add_rows(raw)
    # an older pre-migration database: without the roofline column and the ceilings table
    with raw.begin() as conn:
        conn.execute(text("ALTER TABLE results DROP COLUMN mfu"))
        conn.execute(text("DROP TABLE device_ceilings"))
    raw.dispose()

    engine = get_engine(any_db_url)
    assert migrate.current(engine) == migrate.head()
    assert "device_ceilings" in inspect(engine).get_table_names()
    assert "mfu" in {c["name"] for c in inspect(engine).get_columns("results")}
    assert_rows_kept(engine, job_id)


def later_revision(tmp_path):
    """A copy of the real migrations plus a throwaway revision on top of their head that adds jobs.priority."""
    scripts = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS, scripts, ignore=shutil.ignore_patterns("__pycache__"))
    (scripts / "versions" / "0002_test_priority.py").write_text(textwrap.dedent(f'''
        import sqlalchemy as sa
        from alembic import op

        revision = "0002_test_priority"
        down_revision = "{migrate.head()}"
        branch_labels = None
        depends_on = None


        def upgrade():
            with op.batch_alter_table("jobs") as batch:
                batch.add_column(sa.Column("priority", sa.Integer(), nullable=True))
                batch.create_index("ix_jobs_priority", ["priority"])
            op.execute("UPDATE jobs SET priority = 5")


        def downgrade():
            with op.batch_alter_table("jobs") as batch:
                batch.drop_index("ix_jobs_priority")
                batch.drop_column("priority")
    '''))
    return scripts


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_later_revision_upgrades_a_baseline_database_without_losing_rows(any_db_url, tmp_path):
    engine = get_engine(any_db_url)  # at the real head
    job_id = add_rows(engine)
    scripts = later_revision(tmp_path)
    assert migrate.upgrade(engine, scripts) == "0002_test_priority"
    assert migrate.current(engine) == "0002_test_priority"
    assert_rows_kept(engine, job_id)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT priority FROM jobs")).scalar_one() == 5
    # the real code now meets a database newer than itself: refused with a clear message
    dispose_engine(any_db_url)
    with pytest.raises(DatabaseError, match="schema revision 0002_test_priority, which this code does not know"):
        get_engine(any_db_url)


def test_results_timed_before_caller_latency_are_labelled_not_mixed(any_db_url):
    """A database from before the three clocks (revision 0003): its CUDA results had GPU time as their only
    clock, so after the upgrade those numbers are GPU time, the latency headline is empty, and the rows say
    timing protocol 1; its CPU results (perf_counter per call) keep their numbers, labelled protocol 1 too."""
    from alembic import command

    raw = make_engine(any_db_url)
    with raw.begin() as conn:
        command.upgrade(migrate.alembic_config(connection=conn), "0003_jobs_status_finished_at")
        conn.execute(text("INSERT INTO sweeps (id, name, request, created_at, created_by) "
                          "VALUES (1, 'old', '{}', '2026-01-01', 'x')"))
        for job_id, device in ((1, "cuda"), (2, "cpu")):
            conn.execute(text("INSERT INTO jobs (id, sweep_id, spec, status, attempts, max_attempts, created_at, "
                              "finished_at) VALUES (:i, 1, :spec, 'succeeded', 1, 3, '2026-01-01', '2026-01-01')"),
                         {"i": job_id, "spec": json.dumps({"model": "simplenet", "batch_size": 32, "device": device,
                                                           "backend": "inductor", "mode": "default"})})
        method = {1: "cuda: events per call behind a GPU spin (host head start) and an L2 flush",
                  2: "cpu: perf_counter per call"}
        for job_id in (1, 2):
            conn.execute(text(
                "INSERT INTO results (job_id, eager_ms, compiled_ms, speedup, eager_p10_ms, break_even_calls, "
                "eager_wall_ms, compiled_wall_ms, timing_method, samples, schedule, detail) VALUES (:i, 0.05, 0.04, "
                "1.25, 0.049, 900, 0.2, 0.3, :m, :samples, '[]', :detail)"),
                {"i": job_id, "m": method[job_id],
                 "samples": json.dumps({"eager": [[0.05]], "compiled": [[0.04]], "eager_wall": [0.2]}),
                 "detail": json.dumps({"speedup_p10": 1.2, "speedup_p90": 1.3})})
    raw.dispose()

    engine = get_engine(any_db_url)
    assert migrate.current(engine) == migrate.head()
    assert not {"eager_wall_ms", "compiled_wall_ms"} & {c["name"] for c in inspect(engine).get_columns("results")}
    with reading(engine) as s:
        cuda, cpu = (s.scalars(select(Result).where(Result.job_id == i)).one() for i in (1, 2))
    assert (cuda.eager_gpu_ms, cuda.compiled_gpu_ms, cuda.gpu_speedup) == (0.05, 0.04, 1.25)
    assert (cuda.eager_ms, cuda.compiled_ms, cuda.speedup, cuda.eager_p10_ms, cuda.break_even_calls) == (None,) * 5
    assert cuda.samples == {"eager_gpu": [[0.05]], "compiled_gpu": [[0.04]], "eager_wall": [0.2]}
    assert cuda.detail == {"gpu_speedup_p10": 1.2, "gpu_speedup_p90": 1.3}
    assert (cpu.eager_ms, cpu.speedup, cpu.eager_gpu_ms, cpu.samples["eager"]) == (0.05, 1.25, None, [[0.05]])
    assert cuda.timing_protocol == cpu.timing_protocol == 1

    # beside a result of today's protocol, an old one is its own series, labelled, never one median with it
    from dashboard.data import frame, plot_data, series_labels
    from db import views

    with atomic(engine) as s:
        s.add(Job(id=3, sweep_id=1, spec={"model": "simplenet", "batch_size": 32, "device": "cpu",
                                          "backend": "inductor", "mode": "default"}, status="succeeded",
                  finished_at=utcnow()))
        s.flush()
        s.add(Result(job_id=3, eager_ms=0.06, compiled_ms=0.05, speedup=1.2, timing_protocol=2))
    frame = frame.load_frame(engine, fields=views.FRAME_FIELDS + views.VIEW_FIELDS)[0]
    cpu_rows = series_labels.label_series(frame[frame["device"] == "cpu"])
    assert cpu_rows.set_index("job_id")["config"].to_dict() == {2: "default · old timing (protocol 1)",
                                                                   3: "default · timing protocol 2"}
    agg, _ = plot_data.summarize(cpu_rows)
    assert sorted(agg["speedup"]) == [1.2, 1.25]  # two series, not one median of both


def test_results_read_without_their_raw_json_after_0015(any_db_url):
    """Whether the graph cache served a run is a column (0015), filled from the stored detail; on SQLite, where a
    column stored after a job's samples is read by walking their overflow pages, the raw JSON columns come last,
    rebuilt with every row kept (a migration that adds a results column must rebuild it so); break-even calls past
    2**31 are stored."""
    from alembic import command

    raw = make_engine(any_db_url)
    with raw.begin() as conn:
        command.upgrade(migrate.alembic_config(connection=conn), "0014_cache_signature")
        conn.execute(text("INSERT INTO sweeps (id, name, request, created_at, created_by) "
                          "VALUES (1, 'kept', '{}', '2026-01-01', 'x')"))
        hits = {1: {"inductor_fx_local_cache_hit_count": 2, "inductor_fx_local_cache_miss_count": 0},
                2: {"inductor_fx_local_cache_hit_count": 0, "inductor_fx_local_cache_miss_count": 1},
                3: {"inductor_fx_local_cache_hit_count": 0, "inductor_fx_local_cache_miss_count": 0}, 4: None}
        for job_id, counts in hits.items():
            conn.execute(text("INSERT INTO jobs (id, sweep_id, spec, status, attempts, max_attempts, created_at) "
                              "VALUES (:i, 1, '{}', 'succeeded', 1, 3, '2026-01-01')"), {"i": job_id})
            conn.execute(text("INSERT INTO results (job_id, speedup, round_speedup, samples, schedule, detail) "
                              "VALUES (:i, 2.0, 1.9, :s, '[]', :d)"),
                         {"i": job_id, "s": json.dumps({"eager": [[2.0]], "compiled": [[1.0]]}),
                          "d": json.dumps({"cache_hits": counts} if counts else {})})
    names = [c["name"] for c in inspect(raw).get_columns("results")]
    raw.dispose()

    engine = get_engine(any_db_url)
    after = [c["name"] for c in inspect(engine).get_columns("results")]
    assert sorted(after) == sorted(c.name for c in Result.__table__.c)
    if engine.dialect.name == "sqlite":
        assert names.index("round_speedup") > names.index("samples")  # where ALTER TABLE ADD COLUMN put it
        assert after[-4:] == ["schedule", "detail_keys", "detail", "samples"]  # at head (0018)
        assert {i["column_names"][0] for i in inspect(engine).get_unique_constraints("results")} == {"job_id"}
    with reading(engine) as s:
        kept = {r.job_id: r for r in s.scalars(select(Result))}
    assert {i: r.graph_cache_hit for i, r in kept.items()} == {1: True, 2: False, 3: None, 4: None}
    assert {(r.speedup, r.round_speedup) for r in kept.values()} == {(2.0, 1.9)}
    assert kept[1].samples == {"eager": [[2.0]], "compiled": [[1.0]]} and kept[4].detail == {}
    with atomic(engine) as s:  # pays off after billions of calls: past PostgreSQL's 32-bit integer
        s.execute(text("UPDATE results SET break_even_calls = 3768561111 WHERE job_id = 1"))
    with reading(engine) as s:
        assert s.scalar(select(Result.break_even_calls).where(Result.job_id == 1)) == 3768561111


def test_a_database_at_0015_gains_the_team_record_with_its_sweeps_kept(any_db_url):
    """0016: a sweep's note and archive, its tags, baselines and the lab's events; an old sweep keeps its submitter,
    reads an empty note and no tags, and takes a tag, a pin and an event afterwards (the new keys and cascades)."""
    from alembic import command

    from db import team

    raw = make_engine(any_db_url)
    with raw.begin() as conn:
        command.upgrade(migrate.alembic_config(connection=conn), "0015_results_layout")
        conn.execute(text("INSERT INTO sweeps (id, name, request, created_at, created_by) "
                          "VALUES (1, 'kept', '{\"model\": \"tiny\"}', '2026-01-01', 'ada@host')"))
        conn.execute(text("INSERT INTO jobs (id, sweep_id, spec, status, attempts, max_attempts, created_at, config) "
                          "VALUES (1, 1, '{\"model\": \"tiny\"}', 'succeeded', 1, 3, '2026-01-01', 'c1')"))
    raw.dispose()

    engine = get_engine(any_db_url)
    assert migrate.current(engine) == migrate.head()
    (m,) = team.meta(engine).values()
    assert (m.submitter, m.tags, m.note, m.archived_at) == ("ada@host", (), "", None)
    assert team.edit_tags(engine, 1, "bob", add=["old"]) == ("old",)
    team.pin_baseline(engine, "tiny", 1, "bob", config="c1")
    team.archive(engine, 1, "bob")
    assert team.sweep_ids(engine, ["old"], archived=True) == [1]
    assert [e.action for e in team.events(engine)] == ["archive", "baseline", "tags"]


def test_a_database_at_0016_gains_the_answers_index_on_sqlite_only(any_db_url):
    """0017: on SQLite the answer's columns of each result are indexed beside its job id (the answer reads them there,
    not from result rows of ~60 kB), rows kept, and the answer reads the same numbers through it; PostgreSQL (TOAST
    keeps its rows narrow) gets no index. Down and up again on SQLite."""
    from alembic import command

    from db import reports
    from db.models import ANSWER_INDEX, ANSWER_INDEXED

    raw = make_engine(any_db_url)
    with raw.begin() as conn:
        command.upgrade(migrate.alembic_config(connection=conn), "0016_team_lab")
        conn.execute(text("INSERT INTO sweeps (id, name, request, created_at, created_by, note) "
                          "VALUES (1, 'kept', '{}', '2026-01-01', 'x', '')"))
        for job_id, speedup in ((1, 2.0), (2, 1.5)):
            conn.execute(text("INSERT INTO jobs (id, sweep_id, spec, status, attempts, max_attempts, created_at) "
                              "VALUES (:i, 1, :s, 'succeeded', 1, 3, '2026-01-01')"),
                         {"i": job_id, "s": json.dumps({"model": "tiny", "batch_size": job_id, "device": "cpu"})})
            conn.execute(text("INSERT INTO results (job_id, speedup, eager_ms, compiled_ms, device_name, samples, "
                              "schedule, detail) VALUES (:i, :x, 2.0, 1.0, 'cpu0', '{}', '[]', '{}')"),
                         {"i": job_id, "x": speedup})
    raw.dispose()

    engine = get_engine(any_db_url)
    indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("results")}
    if engine.dialect.name == "sqlite":
        assert indexes[ANSWER_INDEX] == list(ANSWER_INDEXED)
    else:
        assert ANSWER_INDEX not in indexes
    assert sorted((r.batch_size, r.speedup) for r in reports.report(engine)) == [(1, 2.0), (2, 1.5)]
    if engine.dialect.name == "sqlite":
        with engine.begin() as conn:
            command.downgrade(migrate.alembic_config(connection=conn), "0016_team_lab")
        assert ANSWER_INDEX not in {i["name"] for i in inspect(engine).get_indexes("results")}
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(connection=conn), "head")
        assert ANSWER_INDEX in {i["name"] for i in inspect(engine).get_indexes("results")}


@pytest.mark.subprocess  # starts interpreters (`python -m runner ...`): the subprocess tier
def test_a_database_at_head_opens_without_alembic(tmp_path):
    """get_engine reads the revision with one query and loads alembic only for a database that needs upgrading:
    its HEAD is alembic's head, and a process that opens an up-to-date database never imports alembic."""
    import subprocess
    import sys

    from db import database

    assert database.HEAD == migrate.head()  # a new migration must move HEAD too
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    probe = ("import sys; from db.database import get_engine, schema_revision; e = get_engine(sys.argv[1]); "
             "print(schema_revision(e), 'alembic' in sys.modules)")
    made = subprocess.run([sys.executable, "-c", probe, url], capture_output=True, text=True, check=True)
    assert made.stdout.split() == [database.HEAD, "True"]  # a new file: migrated
    opened = subprocess.run([sys.executable, "-c", probe, url], capture_output=True, text=True, check=True)
    assert opened.stdout.split() == [database.HEAD, "False"]  # at head: one query, no alembic


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def insert_rows(conn, rows: dict) -> None:
    """tests/fixtures/results_0017.json's rows (a database at 0017: samples and detail as JSON text) into `conn`."""
    for table in ("sweeps", "jobs", "results"):
        for row in rows[table]:
            conn.execute(text(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(':' + c for c in row)})"), row)


def exported(url: str, tmp_path, *flags) -> str:
    from runner.cli.main import main

    out = tmp_path / f"export{len(flags)}"
    assert main(["export", *flags, "--db", url, "-o", str(out)]) == 0
    return out.read_text()


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_database_at_0017_keeps_every_sample_exactly_and_exports_what_it_did(any_db_url, tmp_path):
    """0018: the samples and detail stored as JSON text (tests/fixtures/results_0017.json: realistic clocks on CUDA
    and CPU, a process repeat, a failed job, and values no rule packs) are packed in batches, every float back bit
    for bit and every key in its order; `runner export --format json --raw` and `--format csv` (the dashboard's
    downloads run the same) write what the code before 0018 wrote from the same rows (tests/fixtures/export_*:
    made by that code), field by field; the raw columns stay last on SQLite; down to JSON and up again, the same."""
    import csv
    import io

    from alembic import command

    from tests.unit.test_packing import bits

    rows = json.loads((FIXTURES / "results_0017.json").read_text())
    # past one batch of the migration's (500): rows after the first batch are converted too
    extra = [{"id": 100 + i, "sweep_id": 1, "spec": "{}", "status": "succeeded", "attempts": 1, "max_attempts": 3,
              "created_at": "2026-11-20 10:00:00"} for i in range(520)]
    raw = make_engine(any_db_url)
    with raw.begin() as conn:
        command.upgrade(migrate.alembic_config(connection=conn), "0017_results_answer_index")
        insert_rows(conn, rows)
        insert_rows(conn, {"sweeps": [], "jobs": extra, "results": [
            {"job_id": j["id"], "samples": json.dumps({"eager": [[j["id"] / 7]]}), "schedule": "[]",
             "detail": json.dumps({"cache_hits": {"n": j["id"]}, "timeline": [{"start": 0.1}]})} for j in extra]})
    raw.dispose()

    engine = get_engine(any_db_url)
    assert migrate.current(engine) == migrate.head()
    if engine.dialect.name == "sqlite":
        names = [c["name"] for c in inspect(engine).get_columns("results")]
        assert names[-4:] == ["schedule", "detail_keys", "detail", "samples"]
    before = {r["job_id"]: r for r in rows["results"]}
    with reading(engine) as s:
        after = {r.job_id: r for r in s.scalars(select(Result))}
        stored = dict(s.execute(text("SELECT job_id, samples FROM results")).all())
    for job_id, row in before.items():
        assert bits(after[job_id].samples) == bits(json.loads(row["samples"]))
        assert list(after[job_id].samples) == list(json.loads(row["samples"]))
        assert bits(after[job_id].detail) == bits(json.loads(row["detail"]))
        assert len(stored[job_id]) < len(row["samples"])
    assert after[1].detail_keys == {k: json.loads(before[1]["detail"])[k]
                                    for k in ("compile_breakdown_s", "cache_hits", "cache_layers")}
    assert [after[j["id"]].samples["eager"][0][0] for j in extra] == [j["id"] / 7 for j in extra]
    assert [after[j["id"]].detail_keys for j in extra] == [{"cache_hits": {"n": j["id"]}} for j in extra]

    json_now = json.loads(exported(any_db_url, tmp_path, "--format", "json", "--raw"))
    json_then = json.loads((FIXTURES / "export_raw_before_0018.json").read_text())
    csv_now = list(csv.DictReader(io.StringIO(exported(any_db_url, tmp_path, "--format", "csv"))))
    csv_then = list(csv.DictReader(io.StringIO((FIXTURES / "export_before_0018.csv").read_text())))
    assert len(json_now) == len(json_then) + len(extra) and len(csv_now) == len(csv_then) + len(extra)
    for now, then in zip(json_now, json_then):  # a field added to the export record since is not compared
        assert {k: json.dumps(now[k]) for k in then} == {k: json.dumps(v) for k, v in then.items()}
    for now, then in zip(csv_now, csv_then):
        assert {k: now[k] for k in then} == then

    if engine.dialect.name == "sqlite":  # down to JSON text and up again
        with engine.begin() as conn:
            command.downgrade(migrate.alembic_config(connection=conn), "0017_results_answer_index")
            down = dict(conn.execute(text("SELECT job_id, samples FROM results")).all())
            assert [c["name"] for c in inspect(conn).get_columns("results")][-3:] == ["schedule", "detail", "samples"]
        assert {j: bits(json.loads(down[j])) for j in before} == {j: bits(json.loads(r["samples"]))
                                                                  for j, r in before.items()}
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(connection=conn), "head")
        assert json.loads(exported(any_db_url, tmp_path, "--format", "json", "--raw"))[:len(json_then)] == \
            json_now[:len(json_then)]
