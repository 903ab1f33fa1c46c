"""A worker restarted on a host it has started on before is ready at once: it registers from the facts it kept
(runner/worker/hostfacts.py) while its start (preloaded parent, probe, checks) goes on in a thread, and the first job
waits for that start, renewing its lease, with the wait on its timeline. Real SQLite, a real worker object; the
probe is stood in for by one the test releases, so "not started yet" is a state the test holds, not a race."""
import json
import threading
import time

import pytest

from db import queue
from db.engine import reading
from db.models import Job, JobStatus, WorkerRow
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from lab.timeline import Phases
from runner.worker import hostfacts
from runner.worker import loop as worker
from runner.worker.store import Outcome

PROBE = {"torch_version": "2.13.0+cpu", "cuda": False, "device_count": 0, "device_name": None, "capability": None,
         "triton_version": None, "cpu_name": "test cpu", "driver": None}
CATALOG = {"simplenet": ModelInfo("simplenet", "d")}


def test_facts_are_kept_per_key_and_a_changed_key_misses(tmp_path):
    env = {"CUDA_VISIBLE_DEVICES": "0"}
    assert hostfacts.load(tmp_path, env) is None
    hostfacts.save(tmp_path, env, {"probe": PROBE, "first_call_imports_s": 0.4})
    assert hostfacts.load(tmp_path, env) == {"probe": PROBE, "first_call_imports_s": 0.4}
    assert hostfacts.load(tmp_path, {"CUDA_VISIBLE_DEVICES": "1"}) is None  # another GPU: probe again
    assert hostfacts.load(tmp_path, {**env, "COMPILE_LAB_PRELOAD_COMPILER": "0"}) is None
    # the workers of `work --gpus` share a home: each GPU's facts are kept beside the others'
    hostfacts.save(tmp_path, {"CUDA_VISIBLE_DEVICES": "1"}, {"probe": {**PROBE, "device_name": "gpu 1"}})
    assert hostfacts.load(tmp_path, env) == {"probe": PROBE, "first_call_imports_s": 0.4}
    assert hostfacts.load(tmp_path, {"CUDA_VISIBLE_DEVICES": "1"})["probe"]["device_name"] == "gpu 1"
    hostfacts.path(tmp_path, env).write_text("{not json")
    assert hostfacts.load(tmp_path, env) is None


def test_the_key_follows_the_installed_torch(tmp_path, monkeypatch):
    env = {}
    hostfacts.save(tmp_path, env, {"probe": PROBE})
    real = hostfacts._package
    monkeypatch.setattr(hostfacts, "_package", lambda name: {**real(name), "version": "9.9"} if name == "torch"
                        else real(name))
    assert hostfacts.load(tmp_path, env) is None


class Gate:
    """The probe, held until the test opens it (or until it sees `until` hold)."""

    def __init__(self, answer=PROBE, until=None, fail=None):
        self.opened, self.answer, self.until, self.fail = threading.Event(), answer, until, fail
        self.calls = 0

    def __call__(self, spawner, env, home):
        self.calls += 1
        deadline = time.monotonic() + 30
        while not self.opened.is_set() and not (self.until and self.until()) and time.monotonic() < deadline:
            self.opened.wait(0.05)
        if self.fail:
            raise RuntimeError(self.fail)
        return dict(self.answer)


def gated_workers(monkeypatch, home, **config):
    """A factory of workers whose host probe is a test's gate (the test decides when a start finishes); after the
    test, no start thread outlives it. Shared with tests/faults/test_lease_timing.py."""
    made = []

    def make(gate, quick=None):
        monkeypatch.setattr(worker.host_probe, "probe", gate)
        monkeypatch.setattr(hostfacts.quick_probe, "probe", quick or (lambda env: None))  # a first start probes first
        w = worker.Worker(worker.WorkerConfig(home=home, spawn="fresh", calibrate=False, threads=1, **config))
        made.append(w)
        return w

    yield make
    for w in made:  # no start thread outlives its test
        if w._starting is not None:
            w._starting.join(30)


@pytest.fixture
def make_worker(tmp_path, db_url, monkeypatch):
    yield from gated_workers(monkeypatch, tmp_path / "home", db_url=db_url, heartbeat_s=0.2, lease_s=30)


def claim_one(w):
    queue.submit(w.engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[1], device="cpu"), CATALOG)
    return queue.claim_next(w.engine, w.id, ["cpu"], ["simplenet"], 30)


def job(w, job_id):
    with reading(w.engine) as s:
        j = s.get(Job, job_id)
        return j.status, j.phase, j.attempts


def test_first_start_probes_before_it_is_ready_then_keeps_the_facts(make_worker):
    gate = Gate()
    gate.opened.set()
    w = make_worker(gate)
    w.start()
    assert w._started.is_set() and w._starting is None and gate.calls == 1
    kept = json.loads(hostfacts.path(w.home, w._env()).read_text())
    assert kept["facts"]["probe"] == PROBE


def test_a_restart_from_kept_facts_is_ready_before_its_start_is_done_and_the_first_job_waits_for_it(make_worker):
    first = make_worker(Gate(until=lambda: True))
    first.start()  # keeps the facts
    holder = {}
    gate = Gate(until=lambda: holder.get("w") is not None and holder.get("job") is not None
                and job(holder["w"], holder["job"])[1] == "waiting for the worker's start")
    w = make_worker(gate)
    w.start()
    holder["w"] = w
    # registered and claiming while its probe is still held
    assert not w._started.is_set()
    with reading(w.engine) as s:
        assert s.get(WorkerRow, w.id).capabilities["torch_version"] == PROBE["torch_version"]
    claim = claim_one(w)
    holder["job"] = claim.job_id
    steps = Phases()
    assert w._await_start(w._job(claim, None, steps)) is None  # returns once the start is done: the probe saw the job waiting
    assert [iv["phase"] for iv in steps.intervals] == [worker.STARTING]
    assert steps.intervals[0]["end"] > steps.intervals[0]["start"]
    assert job(w, claim.job_id)[0] == JobStatus.RUNNING.value  # its lease was kept, not lost
    assert w._await_start(w._job(claim, None, Phases())) is None  # later jobs do not wait


def test_facts_that_changed_are_published(make_worker):
    make_worker(Gate(until=lambda: True)).start()
    newer = {**PROBE, "torch_version": "2.14.1+cu130"}
    w = make_worker(Gate(answer=newer, until=lambda: True))
    w.start()
    w._started.wait(30)
    with reading(w.engine) as s:
        assert s.get(WorkerRow, w.id).capabilities["torch_version"] == "2.14.1+cu130"
    assert hostfacts.load(w.home, w._env())["probe"]["torch_version"] == "2.14.1+cu130"


def test_a_start_that_fails_after_a_fast_ready_hands_the_first_job_back_and_stops(make_worker):
    make_worker(Gate(until=lambda: True)).start()
    w = make_worker(Gate(until=lambda: True, fail="probe exploded"))
    w.start()
    claim = claim_one(w)
    out = w._await_start(w._job(claim, None, Phases()))
    assert out is worker.HANDED_BACK and w.stop.is_set()
    status, _, attempts = job(w, claim.job_id)
    assert status == JobStatus.QUEUED.value and attempts == 0  # not counted against the job


def test_a_restart_keeps_the_measured_import_cost_instead_of_measuring_it_beside_the_parent(make_worker, monkeypatch):
    first = make_worker(Gate(until=lambda: True))
    hostfacts.save(first.home, first._env(), {"probe": PROBE, "first_call_imports_s": 0.7})
    started = []
    monkeypatch.setattr(worker.host_probe, "start_import_cost", lambda *a: started.append(a))
    w = make_worker(Gate(until=lambda: True))
    w.start()
    w._started.wait(30)
    assert w.first_call_imports_s == 0.7 and started == []


def test_a_first_start_is_ready_from_facts_read_without_torch_and_keeps_the_probed_ones(make_worker):
    from runner.worker import quick_probe

    read = quick_probe.probe({})  # this host, read without importing torch: its torch and CPU, no GPU here
    assert read is not None and read["cuda"] is False and read["torch_version"]
    holder = {}
    gate = Gate(answer=read, until=lambda: holder.get("job") is not None
                and job(holder["w"], holder["job"])[1] == "waiting for the worker's start")
    w = make_worker(gate, quick=quick_probe.probe)
    began = time.monotonic()
    w.start()
    holder["w"] = w
    assert not w._started.is_set()  # registered and claiming while its probe is still held
    print(f"a first start, ready from facts read without torch: {time.monotonic() - began:.2f} s")
    with reading(w.engine) as s:
        caps = s.get(WorkerRow, w.id).capabilities
    assert (caps["torch_version"], caps["devices"]) == (read["torch_version"], ["cpu"])
    claim = claim_one(w)
    holder["job"] = claim.job_id
    assert w._await_start(w._job(claim, None, Phases())) is None  # the first job waited for the real probe
    assert hostfacts.load(w.home, w._env())["probe"] == read  # what the probe said is kept for the next start


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_the_start_publishes_its_facts_after_the_registration_never_before_it(make_worker, monkeypatch):
    """The start's probe can end before the worker registers (a fast probe, a slow database): its facts must still
    win. The registration here waits (bounded) for a publish to have happened first: begun before the registration,
    the start published 2.99 and the registration then wrote the quick read over it."""
    from runner.worker import quick_probe

    read = quick_probe.probe({})
    published, register = threading.Event(), queue.register_worker
    monkeypatch.setattr(queue, "publish_capabilities", _noting(queue.publish_capabilities, published))

    def slow_register(*args, **kwargs):
        published.wait(2)  # a start that publishes first does so meanwhile; one that waits its turn does not
        return register(*args, **kwargs)

    monkeypatch.setattr(queue, "register_worker", slow_register)
    w = make_worker(Gate(answer={**read, "torch_version": "2.99.0"}, until=lambda: True), quick=quick_probe.probe)
    w.start()
    assert w._started.wait(30)
    with reading(w.engine) as s:
        assert s.get(WorkerRow, w.id).capabilities["torch_version"] == "2.99.0"


def _noting(publish, happened: threading.Event):
    def noted(*args, **kwargs):
        got = publish(*args, **kwargs)
        happened.set()
        return got
    return noted


def test_a_probe_that_disagrees_with_the_quick_read_is_published(make_worker):
    from runner.worker import quick_probe

    read = quick_probe.probe({})
    w = make_worker(Gate(answer={**read, "torch_version": "2.99.0"}, until=lambda: True), quick=quick_probe.probe)
    w.start()
    w._started.wait(30)
    with reading(w.engine) as s:
        assert s.get(WorkerRow, w.id).capabilities["torch_version"] == "2.99.0"


def test_the_offer_drops_what_the_listing_no_longer_has_and_keeps_every_file(tmp_path, db_url, monkeypatch):
    """A model file named with a dot (`my.model.py`) stays offered; a family member the listing withdrew (the sources'
    listing after a failed child) goes, and the record published is the one taken with the entries."""
    import shutil

    from runner import zoo
    from tests.conftest import FIXTURE_MODELS

    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(FIXTURE_MODELS / "perturbed.py", models / "my.model.py")
    w = next(gated_workers(monkeypatch, tmp_path / "home", db_url=db_url, models_dirs=[str(models)]))(Gate())
    assert "my.model" in w.entries
    info = ModelInfo(name="hf:GPT2LMHeadModel", description="d")
    w.more.entries, w.more.versions, w.more.key, w.more.quick = ({info.name: zoo.ZooEntry(info=info, path=None)},
                                                                  {"hf": "5"}, "k", True)
    w.more.changed.set()
    assert w.rescan_models() and {"my.model", "hf:GPT2LMHeadModel"} <= set(w.entries)
    assert w._offer()["listing"] is None  # the sources' listing is not offered to others as the key's
    w.more.entries, w.more.refused, w.more.quick = {}, {"hf:*": "the listing child exited 1"}, False
    w.more.changed.set()
    assert w.rescan_models() and "hf:GPT2LMHeadModel" not in w.entries and "my.model" in w.entries
    assert w._offer()["refused_models"] == {"hf:*": "the listing child exited 1"}


def test_the_first_job_borrows_the_probed_facts_not_those_read_before_the_start_ended(make_worker, monkeypatch):
    """A first start is ready from the quick read; its first job waits for the real probe, and must then use what the
    probe said: its compile cache and portable bundle are keyed by the torch version (a CUDA wheel's package metadata
    says '2.11.0' where torch says '2.11.0+cu130'), and later jobs, the repeats among them, look under the probe's."""
    from runner.worker.attempt import Attempt

    quick = {**PROBE, "torch_version": "2.11.0"}
    real = {**PROBE, "torch_version": "2.11.0+cu130"}
    holder = {}
    gate = Gate(answer=real, until=lambda: holder.get("job") is not None
                and job(holder["w"], holder["job"])[1] == "waiting for the worker's start")
    w = make_worker(gate, quick=lambda env: dict(quick))
    w.start()
    holder["w"] = w
    assert not w._started.is_set() and w.probe["torch_version"] == "2.11.0"
    borrowed = []
    monkeypatch.setattr(Attempt, "execute", lambda self, renewed_at: borrowed.append(self.lent.probe) or Outcome(None))
    claim = claim_one(w)
    holder["job"] = claim.job_id
    w.run_claim(claim)
    assert [p["torch_version"] for p in borrowed] == ["2.11.0+cu130"]
