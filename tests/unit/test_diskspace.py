"""How a full disk is told apart from the experiment's failure (runner.child.diskspace), with real ENOSPC from the kernel:
/dev/full for a log that cannot be written, a small tmpfs (where root may mount one) for a job folder that takes no
new block, and the real file system's statvfs for a child that could say nothing."""
import contextlib
import errno
import os
import sys
import threading

import pytest

from db import queue
from db.engine import reading
from db.models import Job, JobStatus, WorkerRow
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from runner.child import diskspace
from runner.child import process as child
from runner.worker import diskpause
from runner.worker.attempt import log_tail
from tests.conftest import wait_until
from tests.tmpfs import mounted


def raised(make):
    try:
        make()
    except BaseException as e:  # noqa: B036 (the exception is the value under test)
        return e
    raise AssertionError("nothing raised")


def no_space(filename=None):
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)


def test_enospc_is_found_however_the_compiler_wrapped_it():
    def wrapped():  # inductor: raise InductorError(...) from the OSError; the lab: ExperimentFailed from that
        try:
            try:
                raise no_space("/home/cache/x.py")
            except OSError as e:
                raise RuntimeError("InductorError: OSError: [Errno 28]") from e
        except RuntimeError as e:
            raise ValueError("compiled call failed") from e
    found = diskspace.no_space_error(raised(wrapped))
    assert found is not None and found.errno == errno.ENOSPC and found.filename == "/home/cache/x.py"

    def while_handling():
        try:
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
        except OSError:
            raise KeyError("x")  # noqa: B904 (raised while handling it, without `from`)
    assert diskspace.no_space_error(raised(while_handling)).errno == errno.EDQUOT
    group = ExceptionGroup("pool", [ValueError("a"), RuntimeError("b")])
    group.exceptions[1].__cause__ = no_space()
    assert diskspace.no_space_error(group).errno == errno.ENOSPC


def test_other_os_errors_and_plain_failures_are_the_experiments():
    assert diskspace.no_space_error(PermissionError(errno.EACCES, "Permission denied")) is None
    assert diskspace.no_space_error(RuntimeError("No space left on device")) is None  # words alone are not errno
    loop = RuntimeError("a")
    loop.__context__ = ValueError("b")
    loop.__context__.__context__ = loop  # a cycle ends
    assert diskspace.no_space_error(loop) is None


def test_a_log_the_disk_refuses_makes_the_child_say_so_in_its_marker(tmp_path, monkeypatch):
    """The compile failed for a reason of its own, but its traceback cannot be written: the log's disk is full
    (/dev/full answers every write with ENOSPC). The child names the full disk, not the compile error."""
    diskspace.reserve(tmp_path)
    log = open("/dev/full", "w", buffering=1)  # line by line, as the child's unbuffered stderr
    monkeypatch.setattr(sys, "stderr", log)
    try:
        code = child._failed(raised(lambda: 1 / 0), "compiling", str(tmp_path / "result.json"))
    finally:
        with contextlib.suppress(OSError):
            log.close()
    assert code == diskspace.EXIT_NO_SPACE
    said = diskspace.told(tmp_path)
    assert said["errno"] == errno.ENOSPC and said["phase"] == "compiling"
    assert said["tail"].rstrip().endswith("ZeroDivisionError: division by zero")  # what the log could not take
    full = diskspace.judge(tmp_path, code, None, [tmp_path], "warming up")
    assert full is not None and full.phase == "compiling" and full.text().startswith(
        f"no space left on device under {tmp_path} (")


def test_a_failure_with_room_to_write_is_the_experiments(tmp_path):
    diskspace.reserve(tmp_path)
    assert child._failed(raised(lambda: 1 / 0), "compiling", str(tmp_path / "result.json")) is None
    assert (tmp_path / "result.json").exists() and diskspace.told(tmp_path) is None
    assert diskspace.judge(tmp_path, 0, "ZeroDivisionError during compiling", [tmp_path], "compiling") is None


def test_a_child_that_said_nothing_is_judged_by_the_homes_free_space(tmp_path, monkeypatch):
    """No marker, no exit code of its own (killed, say): the worker's own statvfs of the home decides."""
    how = "child exited with code 1 without a result while compiling"
    monkeypatch.setenv(diskspace.MIN_FREE_ENV, "0")
    assert diskspace.judge(tmp_path, 1, how, [tmp_path], "compiling") is None  # this disk has room
    monkeypatch.setenv(diskspace.MIN_FREE_ENV, str(2 ** 40))  # a threshold no disk here reaches: "full"
    full = diskspace.judge(tmp_path, 1, how, [tmp_path], "compiling")
    # its own look at the disk, as this one's a moment later (the other test process writes meanwhile)
    assert full is not None and abs(full.free - diskspace.free_bytes(tmp_path)) < 2 ** 30 and how in full.text()
    assert diskspace.judge(tmp_path, 0, None, [tmp_path], "warming up") is None  # a success is a success
    exit_only = diskspace.judge(tmp_path, diskspace.EXIT_NO_SPACE, None, [tmp_path], "compiling")
    assert exit_only is not None and "code 28" in exit_only.text()


@pytest.fixture
def full_tmpfs(tmp_path):
    with mounted(tmp_path / "small", "1m") as where:
        yield where


def test_on_a_full_disk_the_marker_still_takes_the_childs_word_and_the_log_tail_keeps_its_end(full_tmpfs):
    jobdir = full_tmpfs / "jobs" / "1-1"
    jobdir.mkdir(parents=True)
    diskspace.reserve(jobdir)
    log = jobdir / "child.log"
    log.write_text("compile-lab child: tiny bs 2\n" + "inductor says a lot\n" * 300)  # what went in before
    with open(full_tmpfs / "filler", "wb", buffering=0) as f:
        with pytest.raises(OSError) as filled:
            while True:
                f.write(b"\0" * 4096)
    assert filled.value.errno == errno.ENOSPC and diskspace.free_bytes(full_tmpfs) == 0

    def compile_on_a_full_disk():
        with open(jobdir / "kernel.py", "w") as f:
            f.write("y" * 8192)
    code = child._failed(raised(compile_on_a_full_disk), "compiling", str(jobdir / "result.json"))
    assert code == diskspace.EXIT_NO_SPACE and not (jobdir / "result.json").exists()
    full = diskspace.judge(jobdir, code, "crashed", [full_tmpfs, jobdir], "compiling")
    assert full.folder == full_tmpfs and full.free == 0 and full.phase == "compiling"
    assert full.text().startswith(f"no space left on device under {full_tmpfs} (0.0 MB free) while compiling: ")
    tail = log_tail(log)
    assert "OSError: [Errno 28] No space left on device" in tail.rstrip().splitlines()[-1]  # what the file lacks
    assert "inductor says a lot" in tail and diskspace.CUT in tail


# -- the worker's side (runner.worker.diskpause), on a real SQLite file ----------------------------------------------------
@pytest.fixture
def worker(db_url, tmp_path):
    from runner.worker.config import WorkerConfig
    from runner.worker.loop import Worker

    w = Worker(WorkerConfig(db_url=db_url, home=tmp_path / "home", spawn="fresh", calibrate=False, threads=1))
    w.capabilities = {"devices": ["cpu"]}
    queue.register_worker(w.engine, w.id, w.hostname, os.getpid(), None, w.capabilities)
    return w


def room(w) -> bool:
    return diskpause.room(w.store, w.home, w.capabilities, w.stop)


def row(w, table, key):
    with reading(w.engine) as s:
        return s.get(table, key)


def queued_job(w) -> int:
    (job_id,) = queue.submit(w.engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[1],
                                                    device="cpu"), {"simplenet": ModelInfo("simplenet", "d")})[1]
    return job_id


def test_a_full_disk_hands_the_job_back_uncounted_until_the_job_fills_it_itself(worker, tmp_path):
    full = diskspace.NoSpace(tmp_path, 0, "[Errno 28] No space left on device", "compiling")
    job_id = queued_job(worker)
    for _ in range(diskpause.MAX_STRIKES - 1):
        claim = queue.claim_next(worker.engine, worker.id, ["cpu"], ["simplenet"], 30)
        assert diskpause.hand_back(worker.store, worker.full_disk, claim, full, "the child's end") is None
        job = row(worker, Job, job_id)
        assert job.status == "queued" and job.attempts == 0 and job.log_tail == "the child's end"
        assert job.error == (f"no space left on device under {tmp_path} (0.0 MB free) while compiling: [Errno 28] No "
                             f"space left on device; handed back by worker {worker.id}, not counted")
    claim = queue.claim_next(worker.engine, worker.id, ["cpu"], ["simplenet"], 30)
    # the third in a row: the job's own doing
    failed = diskpause.hand_back(worker.store, worker.full_disk, claim, full, None)
    assert failed is not None and f"{diskpause.MAX_STRIKES} times in a row on worker {worker.id}" in failed
    assert row(worker, Job, job_id).status == "running"  # the caller records it failed, as any outcome
    queue.finish(worker.engine, job_id, claim.token, JobStatus.FAILED, failed)
    other = queued_job(worker)  # another job's full disk starts the count again
    claim = queue.claim_next(worker.engine, worker.id, ["cpu"], ["simplenet"], 30)
    assert claim.job_id == other and diskpause.hand_back(worker.store, worker.full_disk, claim, full, None) is None


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_worker_short_of_space_pauses_saying_why_and_claims_again_once_there_is_room(worker, monkeypatch):
    monkeypatch.setenv(diskspace.MIN_FREE_ENV, "0")
    assert room(worker) is True  # room: not paused, nothing said
    assert row(worker, WorkerRow, worker.id).state == "idle"
    monkeypatch.setenv(diskspace.MIN_FREE_ENV, str(2 ** 40))  # more than this disk has: short of space
    answer = []
    waiting = threading.Thread(target=lambda: answer.append(room(worker)))
    waiting.start()
    try:
        paused = wait_until(lambda: (w := row(worker, WorkerRow, worker.id)).state == "paused" and w, 10,
                            "the worker to say it is paused")
        assert paused.capabilities["paused"].startswith(  # space left, but under the threshold: said so
            f"paused: too little free space (below its threshold) under {worker.home}")
        assert paused.capabilities["devices"] == ["cpu"] and waiting.is_alive()
        wait_until(lambda: row(worker, WorkerRow, worker.id).heartbeat_at > paused.heartbeat_at, 10,
                   "a heartbeat while paused")
        monkeypatch.setenv(diskspace.MIN_FREE_ENV, "0")  # the space is back
        waiting.join(timeout=diskpause.LAST_LOOK_S + 10)  # by its next look
        assert answer == [True]
    finally:
        worker.stop.set()
        waiting.join(timeout=10)
    back = row(worker, WorkerRow, worker.id)
    assert back.state == "idle" and "paused" not in back.capabilities
    monkeypatch.setenv(diskspace.MIN_FREE_ENV, str(2 ** 40))
    assert room(worker) is False  # stopped while short of space: it claims nothing
