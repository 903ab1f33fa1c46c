"""A job's artifacts on a real SQLite file and a real PostgreSQL database: stored with the job's outcome, capped
per artifact and per job (the database never grows without bound), listed in the export, read back, and gone
with the job. (`runner artifact` at the CLI: tests/integration/test_cli_input.py.)"""
import gzip
import random

import pytest
from sqlalchemy import func, select

from db import artifacts, queue
from db.database import get_engine
from db.engine import atomic, reading
from db.models import Artifact, Job, JobStatus
from db.results import export_records
from lab import artifact_files
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.conftest import at_head

RESULT = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "samples": {}, "detail": {}}


@pytest.fixture
def engine(any_db_url, migrated_sqlite):
    return get_engine(at_head(any_db_url, migrated_sqlite))


def claimed(engine):
    queue.submit(engine, SweepRequest(process_repeats=1, model="tiny", batch_sizes=[2], device="cpu"),
                 {"tiny": ModelInfo("tiny", "d")})
    return queue.claim_next(engine, "w", ["cpu"], ["tiny"], 60)


def noise(n: int) -> str:
    """Text that gzip cannot shrink much, so the compressed caps are reached."""
    rng = random.Random(n)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 \n") for _ in range(n))


def test_text_past_the_cap_is_cut_and_says_so(tmp_path):
    index = artifact_files.write_dir(tmp_path, {"output_code": "x = 1\n" * 1000, "fx_graphs": "", "../evil": "no"},
                                limit=600)
    assert index == [{"name": "output_code", "bytes": 6000, "truncated": True}]  # empty and odd names: not kept
    (kept,) = artifact_files.read_dir(tmp_path)
    text = gzip.decompress(kept["data"]).decode()
    assert text.startswith("x = 1\n") and len(text) < 700 and "cut by Compile Lab at 600 of 6000 bytes" in text


def test_a_job_stores_at_most_its_budget_and_the_export_lists_what_it_kept(engine, tmp_path):
    artifact_files.write_dir(tmp_path, {"output_code": noise(3000), "fx_graphs": noise(3000), "trace": "tiny"})
    sizes = {p.stem: p.stat().st_size for p in tmp_path.glob("*.gz")}
    items = artifact_files.read_dir(tmp_path, budget=sizes["output_code"] + sizes["trace"])  # fx_graphs does not fit
    assert [i["name"] for i in items] == ["output_code", "trace"]
    claim = claimed(engine)
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT, artifacts=items)
    (rec,) = export_records(engine)
    assert [(a["name"], a["bytes"], a["truncated"]) for a in rec["artifacts"]] == [
        ("output_code", 3000, False), ("trace", 4, False)]
    assert sum(a["stored_bytes"] for a in rec["artifacts"]) <= sizes["output_code"] + sizes["trace"]
    assert artifacts.text(engine, claim.job_id, "trace") == "tiny"
    with pytest.raises(artifacts.ArtifactError, match="has: output_code, trace"):
        artifacts.text(engine, claim.job_id, "fx_graphs")


def test_a_stale_finisher_stores_no_artifacts_and_a_deleted_job_leaves_none(engine, tmp_path):
    artifact_files.write_dir(tmp_path, {"output_code": "def call(args): pass\n"})
    items = artifact_files.read_dir(tmp_path)
    claim = claimed(engine)
    assert not queue.finish(engine, claim.job_id, "not-the-lease", JobStatus.FAILED, "x", artifacts=items)
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.FAILED, "compile failed", artifacts=items)
    with reading(engine) as s:
        assert s.scalar(select(func.count(Artifact.id))) == 1
    with atomic(engine) as s:
        s.delete(s.get(Job, claim.job_id))
    with reading(engine) as s:
        assert s.scalar(select(func.count(Artifact.id))) == 0


def test_a_row_that_unpacks_past_the_limit_is_refused_naming_it(engine):
    """A row written by hand, not by a worker: 64 MiB of zeros in 64 KB of gzip. Read back, it is refused at the
    limit instead of unpacked whole; what a worker writes, cut at the cap, still reads back."""
    from bench.bombs import gzip_bomb

    claim = claimed(engine)
    cut, total, _ = artifact_files.pack("x" * (artifact_files.MAX_TEXT_BYTES + 10))
    rows = [{"name": "output_code", "bytes": 10, "truncated": False, "data": gzip_bomb(64 << 20)},
            {"name": "fx_graphs", "bytes": total, "truncated": True, "data": cut},
            {"name": "trace", "bytes": 3, "truncated": False, "data": b"not gzip"}]
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT, artifacts=rows)
    with pytest.raises(ValueError, match=rf"job {claim.job_id}'s artifact 'output_code' unpacks to more than "
                                         r"4,198,400 bytes, the limit: refused"):
        artifacts.text(engine, claim.job_id, "output_code")
    assert artifacts.text(engine, claim.job_id, "fx_graphs").endswith(f"of {total} bytes\n")
    with pytest.raises(ValueError, match=rf"job {claim.job_id}'s artifact 'trace' is damaged: not valid gzip data"):
        artifacts.data(engine, claim.job_id, "trace")
