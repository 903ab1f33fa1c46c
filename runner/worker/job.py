"""The worker's side of one job's child: its job folder and compile cache set up, the child started in its own process
group and watched (its timeout, its lease, a cancel, the worker's stop, the host's other workers), its whole tree
killed when it must end, and how it ended turned into exactly one recorded state (Outcome); and, where the worker
rather than the job is at fault (an outage, its own files, its preloaded parent), the job handed back uncounted, and
the database writes retried through an outage. Part of runner.worker.loop's Worker, whose config, database, spawner and
stop signals it uses."""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.exc import DBAPIError, OperationalError

from db import queue
from db.engine import DatabaseGone, check_identity
from db.models import JobStatus
from db.results import store_timeline
from lab import timeline
from lab.errors import cut, first_line
from lab.noise import cpus_text
from lab.spec import ExperimentSpec
from lab.timeline import Phases
from runner.child import diskspace
from runner.child.reaper import kill_tree
from runner.launch import ended
from runner.worker import cache_bundle, cache_repeat, diskpause
from runner.worker.lease import LeaseKeeper, read_progress
from runner.worker.neighbours import Watch, sharing
from runner.worker.spawn import SpawnError, make_spawner

log = logging.getLogger("compile_lab.worker")
PROJECT_ROOT = Path(__file__).resolve().parent.parent
LOG_TAIL_CHARS = 6000
SUPERVISE_TICK_S = 0.2  # how often the supervisor looks at the child, its lease and the stop signal


@dataclass
class Outcome:
    status: JobStatus | None  # None: the lease is gone (cancelled, taken back, handed back); nothing to write
    error: str | None = None
    result: dict | None = None
    phases: list = field(default_factory=list)  # the child's phases (lab.timeline), as its result file gives them
    written_at: float | None = None  # when the child began writing its result file


HANDED_BACK = Outcome(None, "handed back: the worker's own files failed")


class Supervision:
    """Worker's methods that run one job's child (runner.worker.loop.Worker is one)."""

    def _supervise(self, claim: queue.Claim, spec: ExperimentSpec, jobdir: Path, logfile: Path,
                   claimed_at: float, steps: Phases) -> Outcome:
        spec_file, result_file, progress_file = jobdir / "spec.json", jobdir / "result.json", jobdir / "progress.jsonl"
        jobdir.mkdir(parents=True, exist_ok=True)
        spec_file.write_text(spec.to_json())
        diskspace.reserve(jobdir)  # where the child can say, on a full disk, that the disk is full
        for stale in (result_file, progress_file):  # a released attempt re-runs in the same folder
            stale.unlink(missing_ok=True)
        shutil.rmtree(jobdir / "artifacts", ignore_errors=True)
        env = self._env()
        cold_dir = kept = None
        kept_name = cache_repeat.key(spec.to_dict(), self.probe.get("torch_version"))
        if spec.cache in ("cold", "portable") and claim.follow_up:  # its configuration's first run's cache, if here
            kept = cache_repeat.find(self.home, kept_name)
        if kept is not None:
            cache = kept
        elif spec.cache in ("cold", "portable"):  # a fresh, empty compile cache, kept for its follow-ups
            cache = cold_dir = cache_repeat.fresh(self.home, kept_name, claim.job_id)
        else:  # the worker's persistent cache, shared by its warm jobs
            cache = self.home / "cache"
        env["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "inductor")
        env["TRITON_CACHE_DIR"] = str(cache / "triton")
        # load or save a bundle; a follow-up in its first run's cache has what that run loaded
        mega = None if kept is not None else cache_bundle.prepare(self.engine, spec, self.probe, jobdir, env,
                                                               self.cfg.signer)
        argv = ["--spec", str(spec_file), "--result", str(result_file), "--progress", str(progress_file),
                "--lease-file", str(jobdir / "lease")]
        argv += ["--repeat"] if claim.follow_up else []  # the headline clock only (runner.child.measure)
        argv += ["--cache-from-first-run"] if kept is not None else []
        outcome = None
        try:
            outcome = self._run_child(claim, spec, jobdir, logfile, claimed_at, steps, env, argv, mega)
            return outcome
        finally:
            if cold_dir is not None:  # a first run's cache stays for its follow-ups; any other cold one goes
                cache_repeat.settle(cold_dir, keep=not claim.follow_up and outcome is not None
                                   and outcome.status is JobStatus.SUCCEEDED)

    def _run_child(self, claim: queue.Claim, spec: ExperimentSpec, jobdir: Path, logfile: Path, claimed_at: float,
                   steps: Phases, env: dict, argv: list[str], mega: dict | None) -> Outcome:
        result_file, progress_file = jobdir / "result.json", jobdir / "progress.jsonl"
        for d in self.cfg.models_dirs:
            argv += ["--models-dir", str(Path(d).resolve())]
        deadline = time.monotonic() + spec.timeout_s
        stop_deadline = None
        lease = LeaseKeeper(self, claim, jobdir, claimed_at)
        lease.start()  # before the spawn: starting a fresh preloaded parent can take a while
        watch = Watch(self.engine, self.id, self.hostname, self.cpus, every_s=self.beat_s)
        watch.sample(force=True)
        proc = None
        steps.marks["spawned"] = spawned = time.time()
        steps.add("job setup", steps.intervals[-1]["end"], spawned)
        try:
            try:  # in its own process group either way: one kill reaches all
                proc = self.spawner.start(argv, env, jobdir, logfile)
                while (rc := proc.wait(SUPERVISE_TICK_S)) is None and not getattr(proc, "result_ready", False):
                    outcome = self._check(proc, claim, lease, progress_file, deadline, spec, stop_deadline)
                    if isinstance(outcome, Outcome):
                        return outcome
                    stop_deadline = outcome
                    watch.sample()
            except SpawnError as e:  # our own machinery failed, not the experiment: hand the job back
                if ended.with_worker(self.stop):  # a scheduler stopped the preloaded parent with the worker
                    ended.hand_back(self, claim, read_progress(progress_file)[0])
                    return Outcome(None)
                return self._spawn_failed(claim, e)
            # when the worker learned the child exited, or (a forked child) that its result is complete while its
            # exit, the CUDA context's teardown, goes on (runner.child.process.result_ready): closes "result write"
            steps.marks["child exited"] = time.time()
            if rc is None:
                rc = 0
        finally:
            cleanup_started = time.time()
            lease.done.set()
            lease.join(timeout=1.0)  # a renewal stuck on a lock is left behind (daemon thread)
            if proc is not None:
                kill_group(proc)  # grandchildren (inductor compile workers) must not outlive the job
            steps.add("job cleanup", cleanup_started, time.time())
        with steps.phase("read result"):
            phase, _ = read_progress(progress_file)
            if rc == -signal.SIGKILL and time.monotonic() > lease.child_deadline():  # the child's keeper stopped it
                return self._lease_stale(claim, lease, phase)
            if rc < 0 and ended.with_worker(self.stop):  # a scheduler ended the child with its worker
                ended.hand_back(self, claim, phase)
                return Outcome(None)
            outcome = read_outcome(rc, result_file, phase)
            bad = cut(outcome.error or "", 300) if outcome.status in (JobStatus.FAILED, JobStatus.CRASHED) else None
            full = diskspace.judge(jobdir, rc, bad, [self.home, jobdir, Path(env["TORCHINDUCTOR_CACHE_DIR"]).parent],
                                   phase)
        if full is not None:  # the disk's outage, not the experiment's failure
            failed = diskpause.hand_back(self, claim, full, log_tail(logfile))
            return HANDED_BACK if failed is None else Outcome(JobStatus.FAILED, failed)
        if outcome.status is JobStatus.SUCCEEDED:
            watch.sample(force=True)
            self._note_neighbours(outcome.result, watch)
            with steps.phase("cache bundle"):  # a cold job's bundle kept, for portable jobs (runner.worker.cache_bundle)
                cache_bundle.finish(self.engine, mega, claim.job_id, outcome.result, jobdir, self.cfg.signer)
        return outcome

    def _note_neighbours(self, result: dict, watch: Watch) -> None:
        """The host's other workers into the result: who shared this worker's cores and who was busy while the job
        ran (detail.host_state), and, on a noisy result, in its noise_note: the likely reason."""
        host_state = result.setdefault("detail", {}).setdefault("host_state", {}) or {}
        result["detail"]["host_state"] = {**host_state, **watch.state(), "threads_pinned": self.threads}
        note = watch.note()
        if note and result.get("noisy"):
            result["noise_note"] = f"{result.get('noise_note') or 'noisy'}; {note}"
        shares = sorted(watch.shares)
        if shares != self.capabilities.get("shares_cores_with"):
            self.capabilities["shares_cores_with"] = self._sharing_changed(shares)

    def _sharing(self, workers) -> list[str]:
        """The live workers of this host that share its cores, said in the log when they change."""
        shares = sharing(self.id, self.cpus, [w for w in workers if w.hostname == self.hostname])
        if shares and shares != self.capabilities.get("shares_cores_with"):
            log.warning("worker %s shares CPUs %s with %s: their timings disturb each other's (pin each worker to its "
                        "own cores, e.g. taskset -c, or run one worker per host)", self.id, cpus_text(self.cpus),
                        ", ".join(shares))
        return shares

    def _sharing_changed(self, shares: list[str]) -> list[str]:
        if shares:
            log.warning("worker %s shares CPUs %s with %s: their timings disturb each other's", self.id,
                        cpus_text(self.cpus), ", ".join(shares))
        caps = {**self.capabilities, "shares_cores_with": shares}
        self._retry("publish what the worker shares", lambda: queue.publish_capabilities(self.engine, self.id, caps))
        return shares

    def _check(self, proc, claim, lease, progress_file: Path, deadline: float, spec: ExperimentSpec,
               stop_deadline: float | None):
        """One look at a running child: an Outcome if it must end now, else the (new) stop deadline."""
        phase, _ = read_progress(progress_file)
        if time.monotonic() > deadline:
            kill_group(proc)
            return Outcome(JobStatus.TIMED_OUT, f"timed out after {spec.timeout_s} s (while {phase}); "
                                                "the child's process group was killed")
        if lease.lost.is_set():  # cancelled, or taken back by another worker
            kill_group(proc)
            return Outcome(None)
        if lease.stale():  # the database has not taken a renewal for almost a whole lease
            kill_group(proc)  # first: once the lease ends, another worker may start this job
            return self._lease_stale(claim, lease, phase)
        try:
            check_identity(self.engine, self.db_file)
        except DatabaseGone:
            kill_group(proc)
            raise
        if self.stop.is_set():
            stop_deadline = stop_deadline or time.monotonic() + self.cfg.grace_s
            if self.hurry.is_set() or time.monotonic() > stop_deadline:
                kill_group(proc)
                ended.hand_back(self, claim, phase)  # in the scheduler's words, where one stopped the worker
                return Outcome(None)
        return stop_deadline

    def _store_timeline(self, job_id: int, outcome: Outcome, steps: Phases, t0: float) -> None:
        """The job's timeline, claim to stored, into its stored result's detail: a second short write, since the
        first one's own duration belongs on it. A result without it is still whole, so a failure only warns."""
        tl = timeline.for_job(steps, outcome.phases, outcome.written_at, t0, steps.intervals[-1]["end"])
        try:
            self._retry("store the timeline", lambda: store_timeline(self.engine, job_id, outcome.result.get("detail"),
                                                                     tl))
        except DBAPIError as e:
            log.warning("job %s: timeline not stored (%s)", job_id, first_line(e))


    def _retry(self, what: str, write, patient: bool = False):
        """Run a database write, retrying while the database is unreachable or locked (or its lock file
        unwritable), for up to one lease (after that the lease is gone anyway: another worker re-runs the
        job), or, if patient, until it goes in (handing a job back is all there is left to do; a second
        SIGTERM ends the wait). None if it never went in."""
        deadline = None if patient else time.monotonic() + self.cfg.lease_s
        while True:
            try:
                return write()
            except (OperationalError, OSError) as e:
                if self.hurry.is_set() if deadline is None else time.monotonic() > deadline:
                    log.error("worker %s: could not %s: %s; giving up", self.id, what, first_line(e))
                    return None
                log.warning("worker %s: could not %s (%s); retrying", self.id, what, first_line(e))
                time.sleep(1.0)

    def _lease_stale(self, claim: queue.Claim, lease: LeaseKeeper, phase: str) -> Outcome:
        lease.done.set()  # renewing is over: what is left is handing the job back
        log.error("job %s: lease not renewed for %.0f s (database unreachable or its files unwritable?); "
                  "child stopped", claim.job_id, time.monotonic() - lease.renewed_at)
        self._retry("hand the job back", lambda: queue.hand_back(  # once the database answers again
            self.engine, claim.job_id, claim.token, self.id, claim.attempt, f"worker {self.id} could not renew "
            f"the lease while {phase}; re-queued without counting the attempt"), patient=True)
        return Outcome(None)

    def _hand_back(self, claim: queue.Claim, why: str, error: OSError | None = None) -> Outcome:
        full = diskspace.from_worker(error, diskpause.home_folders(self.home)) if error is not None else None
        if full is not None:  # its own full disk: named as such, and the next claim waits for space
            diskpause.hand_back(self, claim, full, None, strike=False)
            return HANDED_BACK
        log.error("job %s: worker %s %s; handed back, retrying later", claim.job_id, self.id, why)
        self._retry("hand the job back", lambda: queue.hand_back(
            self.engine, claim.job_id, claim.token, self.id, claim.attempt,
            f"worker {self.id} {why}; re-queued without counting the attempt"), patient=True)
        self._retry("note the worker idle", lambda: queue.heartbeat_worker(self.engine, self.id, "idle"))
        return HANDED_BACK

    def _spawn_failed(self, claim: queue.Claim, error: SpawnError) -> Outcome:
        """The preloaded parent failed (it died, or was killed with its children): that is the worker's
        fault, not the experiment's. Hand the job back without counting the attempt, and start later
        children from fresh interpreters, so a parent that keeps dying cannot eat the queue."""
        log.error("worker %s: %s; job %s handed back, later jobs use fresh interpreters", self.id, error,
                  claim.job_id)
        self.spawner.close()
        self.spawner = make_spawner("fresh", self._env(), PROJECT_ROOT)
        self._retry("hand the job back", lambda: queue.release(
            self.engine, claim.job_id, claim.token,
            f"worker {self.id}: {error}; re-queued without counting the attempt"))
        return Outcome(None)


def read_outcome(rc: int, result_file: Path, phase: str) -> Outcome:
    """Turn how the child ended into one recorded state."""
    payload = None
    if result_file.exists():
        try:
            payload = json.loads(result_file.read_text())
        except ValueError as e:
            return Outcome(JobStatus.CRASHED, f"child wrote an unreadable result file ({e})")
    if payload is not None and payload.get("status") == "succeeded" and rc == 0:
        return Outcome(JobStatus.SUCCEEDED, None, payload["result"], payload.get("phases") or [],
                       payload.get("written_at"))
    if payload is not None and payload.get("status") == "failed":
        return Outcome(JobStatus.FAILED, payload.get("error") or "failed without a message")
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return Outcome(JobStatus.CRASHED, f"child killed by {name} while {phase}")
    return Outcome(JobStatus.CRASHED, f"child exited with code {rc} without a result while {phase}")


def kill_group(proc) -> None:
    """SIGKILL the child's whole tree (runner/child/reaper.py: descendants in other sessions too), its process
    group, and reap the child."""
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
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
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


def log_outcome(job_id: int, o: Outcome) -> None:
    if o.status is None:
        log.info("job %s: stopped without a result (cancelled or handed back)", job_id)
    elif o.status is JobStatus.SUCCEEDED:
        r = o.result
        log.info("job %s: succeeded, eager %.4g ms, compiled %.4g ms, speedup %.3gx, first call %.3g s",
                 job_id, r["eager_ms"], r["compiled_ms"], r["speedup"], r["compiled_first_call_s"])
        t = (r.get("detail") or {}).get("traffic")
        if t and t.get("ratio") is not None:  # lab.traffic: the answer under the job's stream
            log.info("job %s: under its traffic (%d calls) compiled %.4g s / eager %.4g s = %.3gx, %d recompiles, "
                     "%d recompile-limit hits, %d fallback calls", job_id, t["calls_compared"],
                     t["compiled_total_s"], t["eager_total_s"], t["ratio"], t["recompiles"], t["limit_hits"],
                     t["fallback_calls"])
    else:
        log.info("job %s: %s: %s", job_id, o.status.value, o.error)
