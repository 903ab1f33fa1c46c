"""Torch versions as an axis, on real SQLite and PostgreSQL: a sweep pinned to versions makes one job per version;
the claim hands a pinned job only to a worker whose torch matches it (a prefix at a component), an unpinned or old
row to any; a job no live worker's torch matches says which version it waits for; all-live resolves to the live
workers' versions."""
import json

import pytest
from sqlalchemy import update

from db import queue
from db.engine import atomic
from db.models import Job
from lab.checks import SpecError
from lab.spec import ModelInfo, torch_matches
from lab.sweep import SweepRequest

CATALOG = {"tiny": ModelInfo("tiny", "fixture")}


def pinned(engine, *versions: str) -> list[int]:
    return queue.submit(engine, SweepRequest(process_repeats=1, model="tiny", batch_sizes=[8], device="cpu",
                                             torch_versions=list(versions)), CATALOG)[1]


def register(engine, name: str, version: str) -> None:
    queue.register_worker(engine, name, "host", 1, None, {"devices": ["cpu"], "torch_version": version,
                                                          "models": [CATALOG["tiny"].to_dict()]})


def test_a_pin_matches_at_a_version_component():
    assert torch_matches("2.14", "2.14.1+cu128") and torch_matches("2.14.1+cu128", "2.14.1+cu128")
    assert torch_matches("2", "2.13.0+cpu") and torch_matches("any", "2.13.0") and torch_matches(None, None)
    assert not torch_matches("2.1", "2.14.1") and not torch_matches("2.14.1+cpu", "2.14.1+cu128")
    assert not torch_matches("2.13", None)


def test_the_claim_hands_a_pinned_job_only_to_a_matching_torch(any_db_url):
    from db.database import get_engine

    engine = get_engine(any_db_url)
    ids = pinned(engine, "2.99", "2.1", "2.13", "any")
    old = pinned(engine, "any")[0]
    with atomic(engine) as s:  # a row stored before jobs named a torch: any worker's
        spec = {k: v for k, v in s.get(Job, old).spec.items() if k != "torch"}
        s.execute(update(Job).where(Job.id == old).values(spec=spec))
    claimed = []
    while (c := queue.claim_next(engine, "w", ["cpu"], ["tiny"], 60, torch_version="2.13.0+cpu")) is not None:
        claimed.append(c.job_id)
    assert claimed == [ids[2], ids[3], old]  # never 2.99, never 2.1 (2.13 is not 2.1.x)
    assert queue.claim_next(engine, "w", ["cpu"], ["tiny"], 60) is None  # no version known: unpinned jobs only
    c = queue.claim_next(engine, "w2", ["cpu"], ["tiny"], 60, torch_version="2.99.0")
    assert c.job_id == ids[0]


def test_a_job_no_live_torch_matches_says_which_version_it_waits_for(engine):
    register(engine, "w1", "2.13.0+cpu")
    assert queue.waiting_reason({"device": "cpu", "model": "tiny", "torch": "2.99"}, queue.live_workers(engine)) == \
        "no live worker has torch 2.99 (live: 2.13.0+cpu)"
    assert queue.waiting_reason({"device": "cpu", "model": "tiny", "torch": "2.13"}, queue.live_workers(engine)) is None
    assert queue.waiting_reason({"device": "cpu", "model": "tiny"}, queue.live_workers(engine)) is None


def test_all_live_becomes_one_job_per_live_version(engine):
    with pytest.raises(SpecError, match="torch_versions: all-live: no live worker"):
        pinned(engine, "all-live")
    register(engine, "w1", "2.13.0+cpu")
    register(engine, "w2", "2.14.1+cu128")
    sweep_id, ids, _ = queue.submit(engine, SweepRequest(process_repeats=1, model="tiny", batch_sizes=[8, 16], device="cpu",
                                                         torch_versions=["all-live"]), CATALOG)
    from db.engine import reading
    from db.models import Sweep

    with reading(engine) as s:
        specs = [s.get(Job, i).spec for i in ids]
        assert s.get(Sweep, sweep_id).request["torch_versions"] == ["2.13.0+cpu", "2.14.1+cu128"]
    assert [(x["batch_size"], x["torch"]) for x in specs] == [(8, "2.13.0+cpu"), (8, "2.14.1+cu128"),
                                                              (16, "2.13.0+cpu"), (16, "2.14.1+cu128")]
    with pytest.raises(SpecError, match="torch_versions: '2_1' is not a torch version"):
        SweepRequest(process_repeats=1, model="tiny", batch_sizes=[8], torch_versions=["2_1"])


def test_a_job_whose_only_able_worker_is_paused_says_so_and_why(engine):
    register(engine, "w1", "2.13.0+cpu")
    why = "paused: no space left on device under /lab/home (12 MB free; claims again above 2,048 MB, COMPILE_LAB_MIN_FREE_MB)"
    caps = {**queue.live_workers(engine)[0].capabilities, "paused": why}
    queue.publish_capabilities(engine, "w1", caps)
    queue.heartbeat_worker(engine, "w1", "paused")
    assert queue.waiting_reason({"device": "cpu", "model": "tiny"}, queue.live_workers(engine)) == \
        f"the only worker able to run it (w1) is {why}"
    register(engine, "w2", "2.13.0+cpu")  # another able worker that claims: no reason to give
    assert queue.waiting_reason({"device": "cpu", "model": "tiny"}, queue.live_workers(engine)) is None


@pytest.mark.subprocess  # starts an interpreter (`python -m runner status`)
def test_runner_status_says_why_a_worker_is_paused(engine, db_url):
    from tests.conftest import run_cli
    register(engine, "w1", "2.13.0+cpu")
    why = "paused: too little free space (below its threshold) under /lab/home (900 MB free)"
    queue.publish_capabilities(engine, "w1", {**queue.live_workers(engine)[0].capabilities, "paused": why})
    queue.heartbeat_worker(engine, "w1", "paused")
    text = run_cli("status", "--db", db_url).stdout
    assert "w1  host host  gpu -  paused" in text and f"\n    {why}" in text
    (worker,) = json.loads(run_cli("status", "--db", db_url, "--json").stdout)["workers"]
    assert worker["paused"] == why
