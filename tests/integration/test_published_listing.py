"""db.queue.published_listing on SQLite and PostgreSQL: the newest worker that published this listing key, cut to
what a worker takes from it (its models, refusals, the families' versions); None for a key nobody published."""
from datetime import timedelta

from sqlalchemy import update

from db import queue
from db.database import get_engine
from db.engine import atomic
from db.models import WorkerRow, utcnow
from tests.conftest import at_head


def test_the_newest_worker_with_the_key_gives_its_listing(any_db_url, migrated_sqlite):
    engine = get_engine(at_head(any_db_url, migrated_sqlite))
    models = [{"name": "hf:GPT2LMHeadModel", "description": "a model", "params": []}]
    queue.register_worker(engine, "new", "box", 2, None, {"models": models, "refused_models": {"timm:*": "no timm"},
                                                         "listing": {"key": "k1", "families": {"hf": "5"}}})
    queue.register_worker(engine, "old", "box", 1, None, {"models": [], "listing": {"key": "k1", "families": {"hf": "4"}}})
    with atomic(engine) as s:  # the older one's last heartbeat a minute before
        s.execute(update(WorkerRow).where(WorkerRow.id == "old").values(heartbeat_at=utcnow() - timedelta(minutes=1)))
    queue.register_worker(engine, "other", "box", 3, None, {"models": [], "listing": {"key": "k2", "families": {}}})
    queue.register_worker(engine, "none", "box", 4, None, {"models": models, "listing": None})
    got = queue.published_listing(engine, "k1")
    assert got == {"models": models, "refused": {"timm:*": "no timm"}, "families": {"hf": "5"}}
    assert queue.published_listing(engine, "k3") is None
