"""One claimed attempt at a job, as rq's work-horse runs it: prepare (its folder, compile cache and child arguments),
run the child in its own process group, watch it (timeout, lease, cancel, the worker's stop), record the outcome. An
`Attempt` is handed what it needs (claim, spec, paths, store, what its worker lends), never the worker."""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.exc import DBAPIError

from db import queue
from db.engine import DatabaseGone
from db.models import JobStatus
from db.results import store_timeline
from lab import timeline
from lab.errors import cut, first_line
from lab.spec import ExperimentSpec
from lab.timeline import Phases
from runner.child import diskspace
from runner.child.reaper import kill_tree
from runner.launch import ended
from runner.worker import cache_bundle, cache_repeat, ceilings, diskpause, header_warm, reports
from runner.worker.lease import LeaseKeeper, read_progress
from runner.worker.neighbours import Watch, with_neighbours
from runner.worker.spawn import SpawnError, family_of
from runner.worker.store import FILE as KEPT_FILE
from runner.worker.store import HANDED_BACK, Outcome, Store, keep_or_hold, log_outcome, read_outcome

log = logging.getLogger("compile_lab.worker")
LOG_TAIL_CHARS = 6000
SUPERVISE_TICK_S = 0.2  # how often the supervisor looks at the child, its lease and the stop signal


@dataclass(frozen=True)
class JobPaths:
    """A job attempt's folder under the worker's home and the files the worker and its child share there."""

    folder: Path

    @classmethod
    def under(cls, home: Path, claim: queue.Claim) -> "JobPaths":
        return cls(home / "jobs" / f"{claim.job_id}-{claim.attempt}")

    spec = property(lambda self: self.folder / "spec.json")
    result = property(lambda self: self.folder / "result.json")
    progress = property(lambda self: self.folder / "progress.jsonl")
    log = property(lambda self: self.folder / "child.log")
    lease = property(lambda self: self.folder / "lease")


@dataclass(frozen=True)
class Lent:
    """What a job borrows from its worker, read-only: how to start a child, where caches live, its stop signals."""

    env: dict  # the child's environment (the worker's, with its pins)
    spawner: object  # runner.worker.spawn: starts the child in its own process group
    home: Path
    models_dirs: list
    probe: dict  # torch, triton, devices: what keys a portable compile cache
    signer: object  # runner.worker.cache_key.Signer, or None: no portable cache
    worker_id: str
    hostname: str
    cpus: list
    threads: int
    beat_s: float
    grace_s: float
    stop: threading.Event  # first SIGTERM/SIGINT: the child gets grace_s
    hurry: threading.Event  # second signal: the grace ends now
    strikes: diskpause.Strikes  # full-disk hand-backs of one job in a row
    keep_folder: bool = True


@dataclass
class Child:
    """What prepare hands to run_child and watch: the child's arguments and environment, and its caches."""

    argv: list[str]
    env: dict
    cold_dir: Path | None  # a fresh compile cache, kept for the configuration's follow-ups if the job succeeds
    bundle: dict | None  # a portable cache bundle's note (runner.worker.cache_bundle)
    lease: LeaseKeeper | None = None
    watch: Watch | None = None
    deadline: float = 0.0
    stop_deadline: float | None = None
    shares: list[str] = field(default_factory=list)  # the workers that shared this worker's cores meanwhile
    held: int | None = None  # the lock on its first run's folder (runner.worker.cache_repeat.hold), till it ends


class Attempt:
    """One claimed job, claim to recorded end: prepare, run_child, watch, record (execute runs all four)."""

    def __init__(self, claim: queue.Claim, spec: ExperimentSpec | None, paths: JobPaths, store: Store, lent: Lent,
                 steps: Phases):
        self.claim, self.spec, self.paths, self.store, self.lent, self.steps = claim, spec, paths, store, lent, steps
        self.spawn_error: SpawnError | None = None  # the worker's own machinery failed: it starts fresh children
        self.shares: list[str] | None = None  # who shared its cores while it ran, once it ran

    def execute(self, renewed_at: float) -> Outcome:
        outcome = None
        try:
            child = self.prepare()
            try:
                proc = None
                try:
                    proc = self.run_child(child, renewed_at)
                    ended_as = self.watch(proc, child)
                except SpawnError as e:  # our own machinery failed, not the experiment: the job goes back
                    ended_as = self._spawn_lost(e)
                finally:
                    self._stop_lease(child, proc)
                outcome = ended_as if isinstance(ended_as, Outcome) else self._ended(ended_as, child)
            finally:
                cache_repeat.release(child.held)
                if child.cold_dir is not None:  # a cold compile that succeeded stays for the configuration's
                    # follow-ups: a first run's, or a follow-up's that found none here (its first run ran elsewhere)
                    cache_repeat.settle(child.cold_dir, keep=outcome is not None
                                        and outcome.status is JobStatus.SUCCEEDED)
        except OSError as e:  # the worker's own folder failed (full, unwritable): not the experiment's fault
            return self.hand_back(f"cannot use its job folder {self.paths.folder} ({first_line(e)})", e)
        return outcome if outcome is HANDED_BACK else self.record(outcome)

    # -- prepare ----------------------------------------------------------------------------------
    def prepare(self) -> Child:
        """The job folder (its spec file, a reserved full-disk marker, no stale result), its compile cache (a first
        run's, a fresh one, or the worker's warm one) and a portable bundle loaded or asked for."""
        p, spec, claim, lent = self.paths, self.spec, self.claim, self.lent
        p.folder.mkdir(parents=True, exist_ok=True)
        p.spec.write_text(spec.to_json())
        diskspace.reserve(p.folder)  # where the child can say, on a full disk, that the disk is full
        for stale in (p.result, p.progress):  # a released attempt re-runs in the same folder
            stale.unlink(missing_ok=True)
        shutil.rmtree(p.folder / "artifacts", ignore_errors=True)
        env = dict(lent.env)
        first_run = None
        name = cache_repeat.key(spec.to_dict(), lent.probe.get("torch_version"))
        held = None
        if spec.cache in ("cold", "portable") and claim.follow_up:  # its configuration's kept cache, if here and free
            first_run, held = cache_repeat.take(lent.home, name)
        try:
            return self._child(first_run, held, name, env)
        except BaseException:
            cache_repeat.release(held)  # no child will end to release it
            raise

    def _child(self, first_run: Path | None, held: int | None, name: str, env: dict) -> Child:
        """The child's compile cache, bundle and arguments (`held`: the lock on first_run, handed to the Child)."""
        p, spec, claim, lent = self.paths, self.spec, self.claim, self.lent
        cold_dir = None
        if first_run is not None:
            cache = first_run
        elif spec.cache in ("cold", "portable"):  # a fresh, empty compile cache, kept for its follow-ups
            cache = cold_dir = cache_repeat.fresh(lent.home, name, claim.job_id, follow_up=bool(claim.follow_up))
        else:  # the worker's persistent cache, shared by its warm jobs
            cache = lent.home / "cache"
        env["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "inductor")
        env["TRITON_CACHE_DIR"] = str(cache / "triton")
        # load or save a bundle; a follow-up in its first run's cache has what that run loaded
        bundle = None if first_run is not None else cache_bundle.prepare(self.store.engine, spec, lent.probe,
                                                                         p.folder, env, lent.signer)
        argv = ["--spec", str(p.spec), "--result", str(p.result), "--progress", str(p.progress),
                "--lease-file", str(p.lease)]
        argv += ["--repeat"] if claim.follow_up else []  # the headline clock only (runner.child.measure)
        argv += ["--cache-from-first-run"] if first_run is not None else []
        for d in lent.models_dirs:
            argv += ["--models-dir", str(Path(d).resolve())]
        return Child(argv, env, cold_dir, bundle, held=held)

    # -- run the child ----------------------------------------------------------------------------
    def run_child(self, child: Child, renewed_at: float):
        """The lease renewed from its own thread, then the child started in its own process group (SpawnError: the
        worker's machinery failed)."""
        child.deadline = time.monotonic() + self.spec.timeout_s
        child.lease = LeaseKeeper(self.store, self.claim, self.paths.folder, renewed_at, self.lent.beat_s)
        child.lease.start()  # before the spawn: starting a fresh preloaded parent can take a while
        child.watch = Watch(self.store.engine, self.lent.worker_id, self.lent.hostname, self.lent.cpus,
                            every_s=self.lent.beat_s)
        child.watch.sample(force=True)
        header_warm.before_child(self.spec, child.env, self.lent.probe.get("torch_version"), self.steps, self.paths.folder)
        self.steps.marks["spawned"] = spawned = time.time()
        self.steps.add("job setup", self.steps.intervals[-1]["end"], spawned)
        return self.lent.spawner.start(child.argv, child.env, self.paths.folder, self.paths.log,
                                       warm_ok=self.spec.device == "cuda",  # a child warmed ahead holds a CUDA context
                                       family=family_of(self.spec.model))  # its family's preloaded parent

    # -- watch it ---------------------------------------------------------------------------------
    def watch(self, proc, child: Child) -> Outcome | int:
        """Look at the running child every tick until it exits (its exit code) or must end now (an Outcome)."""
        self.warm_asked = not (self.spec.device == "cuda" and self.lent.probe.get("cuda"))
        if hasattr(proc, "when_measured"):  # a forked child says when it is done with the GPU, before its artifacts
            proc.when_measured(self.warm_next)
        while (rc := proc.wait(SUPERVISE_TICK_S)) is None and not getattr(proc, "result_ready", False):
            ended_now = self._look(proc, child)
            if ended_now is not None:
                return ended_now
            child.watch.sample()
        # when the worker learned the child exited, or (a forked child) that its result is complete while its
        # exit, the CUDA context's teardown, goes on (runner.child.process.result_ready): closes "result write"
        self.steps.marks["child exited"] = time.time()
        self.warm_next()
        return 0 if rc is None else rc

    def warm_next(self) -> None:
        """Once this job's GPU work is done, the next child warms beside the rest: this job's artifacts, record and
        store, and the next claim (runner.child.prewarm), in the parent of this job's family."""
        if not self.warm_asked and not self.lent.stop.is_set():
            self.lent.spawner.prewarm(self.lent.env, family_of(self.spec.model))
        self.warm_asked = True

    def _look(self, proc, child: Child) -> Outcome | None:
        """One look at a running child: an Outcome if it must end now."""
        phase, _ = read_progress(self.paths.progress)
        if time.monotonic() > child.deadline:
            kill_group(proc)
            return Outcome(JobStatus.TIMED_OUT, f"timed out after {self.spec.timeout_s} s (while {phase}); "
                                                "the child's process group was killed")
        if child.lease.lost.is_set():  # cancelled, or taken back by another worker
            kill_group(proc)
            return Outcome(None)
        if child.lease.stale():  # the database has not taken a renewal for almost a whole lease
            kill_group(proc)  # first: once the lease ends, another worker may start this job
            return self._lease_stale(child.lease, phase)
        try:
            self.store.check_identity()
        except DatabaseGone:
            kill_group(proc)
            raise
        if self.lent.stop.is_set():
            child.stop_deadline = child.stop_deadline or time.monotonic() + self.lent.grace_s
            if self.lent.hurry.is_set() or time.monotonic() > child.stop_deadline:
                kill_group(proc)
                ended.hand_back(self.store, self.claim, phase)  # in the scheduler's words, where one stopped the worker
                return Outcome(None)
        return None

    def _stop_lease(self, child: Child, proc) -> None:
        cleanup_started = time.time()
        if child.lease is not None:
            child.lease.done.set()
            child.lease.join(timeout=1.0)  # a renewal stuck on a lock is left behind (daemon thread)
        if proc is not None:
            kill_group(proc)  # grandchildren (inductor compile workers) must not outlive the job
        self.steps.add("job cleanup", cleanup_started, time.time())

    def _ended(self, rc: int, child: Child) -> Outcome:
        """The exited child's state: its result file, its lease's end, its worker's stop, a full disk."""
        with self.steps.phase("read result"):
            phase, _ = read_progress(self.paths.progress)
            if rc == -signal.SIGKILL and time.monotonic() > child.lease.child_deadline():  # its keeper stopped it
                return self._lease_stale(child.lease, phase)
            if rc < 0 and ended.with_worker(self.lent.stop):  # a scheduler ended the child with its worker
                ended.hand_back(self.store, self.claim, phase)
                return Outcome(None)
            outcome = read_outcome(rc, self.paths.result, phase)
            bad = cut(outcome.error or "", 300) if outcome.status in (JobStatus.FAILED, JobStatus.CRASHED) else None
            folders = [self.lent.home, self.paths.folder, Path(child.env["TORCHINDUCTOR_CACHE_DIR"]).parent]
            full = diskspace.judge(self.paths.folder, rc, bad, folders, phase)
        if full is not None:  # the disk's outage, not the experiment's failure
            failed = diskpause.hand_back(self.store, self.lent.strikes, self.claim, full, log_tail(self.paths.log))
            return HANDED_BACK if failed is None else Outcome(JobStatus.FAILED, failed)
        if outcome.status is JobStatus.SUCCEEDED:
            child.watch.sample(force=True)
            outcome.record = with_neighbours(outcome.record, child.watch, self.lent.threads)
            self.shares = sorted(child.watch.shares)
            with self.steps.phase("cache bundle"):  # a cold job's bundle kept, for portable jobs
                cache_bundle.finish(self.store.engine, child.bundle, self.claim.job_id, outcome.record.detail,
                                    self.paths.folder, self.lent.signer)
        return outcome

    # -- record the outcome -----------------------------------------------------------------------
    def record(self, outcome: Outcome) -> Outcome:
        """Place a success on its roofline, keep the outcome in the job folder, store it (through an outage), then
        its timeline; the folder holds it until some worker of this home stores it."""
        claim, steps = self.claim, self.steps
        if outcome.status is JobStatus.SUCCEEDED:
            try:
                with steps.phase("roofline placement"):
                    outcome.record = ceilings.place_result(self.store.engine, self.spec, outcome.record)
            except Exception as e:  # placement is extra; the measurement is stored either way
                log.warning("job %s: no roofline placement (%s)", claim.job_id, first_line(e))
        stored = None
        if outcome.status is not None:
            store_started = time.time()
            result = outcome.record.to_dict() if outcome.record is not None else None
            finished = keep_or_hold(self.paths.folder, claim, self.store.worker_id, outcome.status, outcome.error,
                                    result, log_tail(self.paths.log))
            stored = self.store.record(finished)
            if stored is False:
                log.warning("job %s: lease lost (cancelled, or claimed again) before the result was stored; nothing "
                            "written", claim.job_id)
            elif stored and outcome.status is JobStatus.SUCCEEDED:
                steps.add("store", store_started, time.time())
                self._store_timeline(outcome, finished.result)
        if outcome.status is not None and stored is None:  # its folder holds it until a worker stores it
            log.error("job %s: its %s outcome is kept in %s; a worker started with this home stores it",
                      claim.job_id, outcome.status.value, self.paths.folder / KEPT_FILE)
            return outcome
        if outcome.status is None or stored:  # stored False: said above, and what ran is not what was stored
            log_outcome(claim.job_id, outcome)
        if stored:  # its child gone and its outcome stored: tlparse's report owed, made when nothing is queued
            reports.owe(self.lent.home, claim.job_id, self.paths.folder, finished.result)  # (runner.worker.reports)
        if not self.lent.keep_folder:
            shutil.rmtree(self.paths.folder, ignore_errors=True)
        self.store.note("idle")
        return outcome

    def _store_timeline(self, outcome: Outcome, stored_result: dict) -> None:
        """The job's timeline, claim to stored, into its stored result's detail: a second short write, since the
        first one's own duration belongs on it. A result without it is still whole, so a failure only warns."""
        steps = self.steps
        tl = timeline.for_job(steps, outcome.phases, outcome.written_at, steps.intervals[0]["start"],
                              steps.intervals[-1]["end"])
        try:
            self.store.retry("store the timeline", lambda: store_timeline(self.store.engine, self.claim.job_id,
                                                                          stored_result.get("detail"), tl))
        except DBAPIError as e:
            log.warning("job %s: timeline not stored (%s)", self.claim.job_id, first_line(e))

    # -- the worker's faults, not the job's -------------------------------------------------------
    def _lease_stale(self, lease: LeaseKeeper, phase: str) -> Outcome:
        lease.done.set()  # renewing is over: what is left is handing the job back
        log.error("job %s: lease not renewed for %.0f s (database unreachable or its files unwritable?); "
                  "child stopped", self.claim.job_id, time.monotonic() - lease.renewed_at)
        self.store.hand_back(self.claim, f"worker {self.store.worker_id} could not renew the lease while {phase}; "
                                         "re-queued without counting the attempt")  # once the database answers again
        return Outcome(None)

    def hand_back(self, why: str, error: OSError | None = None) -> Outcome:
        """The worker's own files failed: the job back in the queue uncounted (a full disk named as such)."""
        store, claim = self.store, self.claim
        full = diskspace.from_worker(error, diskpause.home_folders(self.lent.home)) if error is not None else None
        if full is not None:  # its own full disk: named as such, and the next claim waits for space
            diskpause.hand_back(store, self.lent.strikes, claim, full, None, strike=False)
            return HANDED_BACK
        log.error("job %s: worker %s %s; handed back, retrying later", claim.job_id, store.worker_id, why)
        store.hand_back(claim, f"worker {store.worker_id} {why}; re-queued without counting the attempt")
        store.note("idle")
        return HANDED_BACK

    def _spawn_lost(self, error: SpawnError) -> Outcome:
        """The preloaded parent failed (it died, or was killed with its children): the worker's fault, not the
        experiment's. The job goes back uncounted (in a scheduler's words where one stopped the worker); the worker
        starts later children from fresh interpreters (spawn_error)."""
        if ended.with_worker(self.lent.stop):  # a scheduler stopped the preloaded parent with the worker
            ended.hand_back(self.store, self.claim, read_progress(self.paths.progress)[0])
            return Outcome(None)
        log.error("worker %s: %s; job %s handed back, later jobs use fresh interpreters", self.store.worker_id, error,
                  self.claim.job_id)
        self.spawn_error = error
        self.store.release(self.claim, f"worker {self.store.worker_id}: {error}; re-queued without counting the "
                                       "attempt")
        return Outcome(None)


def kill_group(proc) -> None:
    """SIGKILL the child's whole tree (runner.child.reaper: descendants in other sessions too), its process group,
    and reap the child."""
    if getattr(proc, "inline", False):  # --spawn inline: the job ran in this process, which must live on
        return
    try:
        running = proc.wait(0) is None
    except SpawnError:
        running = True
    if running:  # an exited child's pid may already belong to someone else: never stop that one
        kill_tree(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # a child forked a moment ago may not lead its own group yet
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    except PermissionError:
        pass
    if running and getattr(proc, "result_ready", False):  # its result is stored; its exit is its own (and quick)
        proc.forget()
        return
    try:
        if proc.wait(30) is None:
            log.error("child %s did not die after SIGKILL", proc.pid)
    except SpawnError:
        pass


def log_tail(path: Path) -> str | None:
    """The end of a job's log (LOG_TAIL_CHARS of it), stored with its outcome; and the child's last lines where a
    full disk kept them out of the file (runner.child.diskspace)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - LOG_TAIL_CHARS))
            tail = f.read().decode(errors="replace")
    except OSError:
        tail = None
    return diskspace.with_childs_end(tail, path.parent)
