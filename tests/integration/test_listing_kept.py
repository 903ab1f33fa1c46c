"""A worker offers hf: models at once from the listing kept in its home (runner.worker.listing_cache), while its
listing child lists again in the background: real workers, a real listing child held at its start by a gate (a
sitecustomize that waits for a file, in the listing child only), and a real job for an hf: model claimed and run
while the listing is still held. Start to ready, with the host's facts and the listing kept, is printed."""
import contextlib
import importlib.util
import signal
import time

import pytest

from db import queue
from db.database import get_engine
from tests.conftest import records, run_cli, start_worker, submit, wait_until

pytestmark = [pytest.mark.subprocess,
              pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs transformers")]

GATE = '''
import os, time
try:
    cmdline = open("/proc/self/cmdline", "rb").read()
except OSError:
    cmdline = b""
if b"runner.zoo.families" in cmdline and os.environ.get("LISTING_FAILS"):
    raise SystemExit("this listing child fails (LISTING_FAILS)")
if b"runner.zoo.families" in cmdline and os.environ.get("LISTING_GATE"):
    open(os.environ["LISTING_GATE"] + ".waiting", "w").close()
    deadline = time.monotonic() + 300
    while not os.path.exists(os.environ["LISTING_GATE"]) and time.monotonic() < deadline:
        time.sleep(0.05)
'''
MODEL = "hf:GPT2LMHeadModel"
TINY = ["--arg", "seq_len=16", "--arg", "n_layer=1", "--arg", "n_embd=32", "--arg", "n_head=2"]


def test_a_kept_listing_is_offered_at_once_and_its_jobs_run_while_the_listing_refreshes(db_url, tmp_path):
    engine = get_engine(db_url)
    home = tmp_path / "home"
    _listed_by_a_first_worker(db_url, home)  # it lists in its child and keeps the listing (and the host's facts)
    wait_until(lambda: list(home.glob("model-listing-*.json")) and list(home.glob("host-facts-*.json")), 60,
               "the kept listing and host facts")
    gate, env = _gated(tmp_path)
    launched = time.monotonic()
    with _running(db_url, home, env, gate) as second:
        wait_until(lambda: _offers(engine, second.pid), 120, "the second worker to offer the kept listing")
        ready_s = time.monotonic() - launched
        wait_until(lambda: gate.with_suffix(".waiting").exists(), 120, "the listing child to reach its gate")
        assert not gate.exists()  # the listing child is still held: what is offered is the kept listing
        _an_hf_job_succeeds(db_url)
        assert not gate.exists()  # claimed, run and stored while the listing was held
        gate.touch()  # the listing ends; the same listing: nothing to publish again
        print(f"start to offering {MODEL} with the listing and host facts kept: {ready_s:.1f} s")


def test_a_worker_in_an_empty_home_offers_the_listing_another_worker_published(db_url, tmp_path):
    """A Kubernetes pod's home is an emptyDir: without a kept listing it takes the one a worker with the same packages
    and code published in the database, offers it while its own listing child is held, and keeps it in its home."""
    engine = get_engine(db_url)
    _listed_by_a_first_worker(db_url, tmp_path / "first")
    gate, env = _gated(tmp_path)
    home = tmp_path / "pod"  # empty
    launched = time.monotonic()
    with _running(db_url, home, env, gate) as second:
        wait_until(lambda: _offers(engine, second.pid), 120, "the second worker to offer the published listing")
        offered_s = time.monotonic() - launched
        assert not gate.exists()  # its own listing child has not been let through: the listing came from the database
        assert list(home.glob("model-listing-*.json")), "the published listing is kept in the empty home"
        log = second.log_path.read_text()
        assert "offering the listing kept in the database" in log, log[-2000:]
        print(f"start to offering {MODEL} in an empty home, from the database: {offered_s:.1f} s")


def test_a_first_start_offers_the_families_read_from_their_sources_while_its_child_lists(db_url, tmp_path):
    """No listing kept, none published: the worker offers the hf: models as transformers' sources name them (read as
    text, nothing imported) while its listing child is held, runs a job for one, and publishes the child's listing
    for others only once it ended."""
    engine = get_engine(db_url)
    gate, env = _gated(tmp_path)
    launched = time.monotonic()
    with _running(db_url, tmp_path / "home", env, gate) as worker:
        wait_until(lambda: _offers(engine, worker.pid), 120, "the worker to offer the families' sources")
        offered_s = time.monotonic() - launched
        assert not gate.exists() and _listing_record(engine, worker.pid) is None  # nothing of it published as a listing
        assert "read from the families' sources while listing" in worker.log_path.read_text()
        _an_hf_job_succeeds(db_url)
        gate.touch()
        wait_until(lambda: _listing_record(engine, worker.pid) is not None, 300, "the child's listing published")
        print(f"start to offering {MODEL} in an empty home and database, from the sources: {offered_s:.1f} s")


def test_a_listing_child_that_fails_takes_the_sources_listing_back(db_url, tmp_path):
    """Where the child cannot list (a broken install), what the sources said is no longer offered: its jobs would
    fail. The family is refused with the child's reason instead, by a busy worker too (after the job it was running,
    not once its queue is empty)."""
    engine = get_engine(db_url)
    _, env = _gated(tmp_path)
    jobs = submit(db_url, "--model", "tiny", *(a for b in range(2, 8) for a in ("--batch", str(b))), "--device",
                  "cpu", "--backend", "eager", "--iters", "2")
    with _running(db_url, tmp_path / "home", {**env, "LISTING_FAILS": "1"}) as worker:
        wait_until(lambda: _refused(engine, worker.pid), 120, "the family refused after the child failed")
        assert any(r["status"] in ("queued", "running") for j, r in records(db_url).items() if j in jobs)
        assert not _offers(engine, worker.pid)
        assert "read from the families' sources while listing" in worker.log_path.read_text()


FAMILIES = {"COMPILE_LAB_FAMILIES": "1"}


def _listed_by_a_first_worker(db_url: str, home) -> None:
    """A worker started in `home` until its listing child listed MODEL (published as its listing), then stopped."""
    with _running(db_url, home, FAMILIES) as first:
        wait_until(lambda: _offers(get_engine(db_url), first.pid) and _listing_record(get_engine(db_url), first.pid),
                   300, "the first worker's listing")


def _gated(tmp_path):
    """(the gate file, a worker's environment whose listing child waits at its start until the gate exists)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(GATE)
    gate = tmp_path / "gate"
    return gate, {**FAMILIES, "PYTHONPATH": f"{site}", "LISTING_GATE": str(gate)}


def _offers(engine, pid: int) -> bool:
    return any(w.capabilities.get("pid") == pid and any(m.get("name") == MODEL for m in w.capabilities.get("models", []))
               for w in queue.live_workers(engine))


@contextlib.contextmanager
def _running(db_url: str, home, env: dict, gate=None):
    """A worker started in `home` for the block; after it, its listing gate (if any) opened and the worker stopped."""
    worker = start_worker(db_url, home, "--no-calibrate", env=env)
    try:
        yield worker
    finally:
        if gate is not None:
            gate.touch()
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=120)


def _an_hf_job_succeeds(db_url: str) -> None:
    done = run_cli("submit", "--db", db_url, "--model", MODEL, "--batch", "2", *TINY, "--device", "cpu", "--backend",
                   "eager", "--reruns", "0", "--process-repeats", "1")
    assert done.returncode == 0, done.stderr
    (job,) = [int(x) for x in done.stdout.split()]
    wait_until(lambda: records(db_url)[job]["status"] not in ("queued", "running"), 300, "the hf: job")
    assert records(db_url)[job]["status"] == "succeeded", records(db_url)[job]["error"]


def _mine(engine, pid: int) -> dict:
    return next((w.capabilities for w in queue.live_workers(engine) if w.capabilities.get("pid") == pid), {})


def _listing_record(engine, pid: int) -> dict | None:
    return _mine(engine, pid).get("listing")


def _refused(engine, pid: int) -> bool:
    return "hf:*" in (_mine(engine, pid).get("refused_models") or {})
