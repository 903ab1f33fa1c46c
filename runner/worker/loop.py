"""The worker: starts (learns what its host can run, publishes what it offers), then claims jobs and runs each as an
`Attempt` (runner.worker.attempt), one child process per job, until stopped. Never imports torch, so it can never
hold a CUDA context. docs/operations.md says which faults it survives and how."""
from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

from sqlalchemy.exc import OperationalError

from db import queue
from db.database import get_engine
from db.engine import DatabaseGone, MalformedJSON, file_identity
from db.models import JobStatus
from lab import cpu_quota
from lab.checks import SpecError
from lab.errors import first_line
from lab.noise import cpus_text
from lab.spec import ExperimentSpec
from lab.timeline import Phases
from lab.wording import count
from runner import zoo
from runner.child import preload
from runner.child.disturbance import my_cpus
from runner.child.process import THREADS_ENV, WORKER_PID_ENV
from runner.launch import identity
from runner.worker import ceilings, diskpause, hostfacts, reports
from runner.worker import probe as host_probe
from runner.worker.attempt import Attempt, JobPaths, Lent
from runner.worker.cache_key import KEY_FILE_ENV
from runner.worker.config import WorkerConfig
from runner.worker.lease import Renewed
from runner.worker.model_folders import ModelFolders
from runner.worker.model_offer import PROBLEMS, MoreModels
from runner.worker.neighbours import sharing
from runner.worker.spawn import SpawnError, make_spawner
from runner.worker.store import HANDED_BACK, Kept, Outcome, Store, found

log = logging.getLogger("compile_lab.worker")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTING = "worker start"  # a job's wait for its worker's start to finish (the first job after a fast start)


class Worker:
    """Claims jobs and runs each in a child process (runner.worker.attempt), from a start that learns what its host can
    run."""

    def __init__(self, cfg: WorkerConfig):
        self.cfg = cfg
        self.engine = get_engine(cfg.db_url)
        self.db_file = file_identity(self.engine)  # a SQLite file deleted or replaced later is noticed
        self.hostname = socket.gethostname()
        self.id = f"{self.hostname}:{os.getpid()}:{'gpu' + cfg.gpu if cfg.gpu is not None else 'any'}:{uuid.uuid4().hex[:6]}"
        self.stop = threading.Event()  # first SIGTERM/SIGINT: claim nothing more, let the child finish
        self.hurry = threading.Event()  # second signal: end the grace period now
        self.beat_s = min(cfg.heartbeat_s, cfg.lease_s / 3)
        self.store = Store(self.engine, self.id, cfg.lease_s, self.hurry, self.db_file)  # its writes, retried
        self.home = Path(cfg.home).resolve()
        self.entries = zoo.catalog(cfg.models_dirs)
        self.model_folders = ModelFolders(cfg.models_dirs)  # watched while idle (rescan_models)
        self.more = MoreModels(cfg.model_imports, cfg.families)  # families and import paths, listed by a child
        self.capabilities: dict = {}
        self._refused, self._listing, self.probe = {}, None, {}  # the listing's refusals and record; the probe's facts
        self.cpus = my_cpus()  # its affinity: published, so workers on one host can tell they share cores
        self.threads = cfg.threads or cpu_quota.usable(len(self.cpus), cpu_quota.quota())  # under a cgroup's quota
        self.spawner = make_spawner(cfg.spawn, {**self._env(), preload.FAMILIES_ENV: ",".join(self.more.families)},
                                    PROJECT_ROOT)  # its preloaded parent imports the offered families' modules too
        self._started = threading.Event()  # set: no start in progress (its imports, probe and checks: _get_ready)
        self._started.set()
        self._starting: threading.Thread | None = None
        self._publishing = threading.Lock()  # one read-modify-write and publish of the capabilities at a time
        self._start_error: BaseException | None = None
        self._kept: list[Kept] = []  # outcomes earlier workers of this home could not store (runner.worker.store)
        self.full_disk = diskpause.Strikes()  # a job that fills the disk itself ends failed (runner.worker.diskpause)

    # -- lifecycle --------------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        def handler(signum, _frame):
            name = signal.Signals(signum).name
            if self.stop.is_set():
                log.info("worker %s: %s again; stopping the running job now", self.id, name)
                self.hurry.set()
            else:
                log.info("worker %s: %s received; claiming nothing more, the running job has %g s to finish",
                         self.id, name, self.cfg.grace_s)
                self.stop.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def start(self) -> None:
        """Register and become ready. With facts kept from an earlier start on this host (runner/worker/hostfacts.py) that
        is at once: the preloaded parent's imports, the probe and the rest go on in a thread, and the first job
        waits for them (its timeline's "worker start" phase). Without kept facts, the same from facts read without
        torch (runner/worker/quick_probe.py); where those cannot be read, all of that comes first."""
        began = time.monotonic()
        self.spawner.prepare()  # the preloaded parent imports torch and the compiler now
        known = hostfacts.load(self.home, self._env()) or hostfacts.read_quickly(self._env())  # runner.worker.quick_probe
        starting = None
        if known is None:
            self._get_ready(None)
            how = "probed"
        else:
            self.probe, self.first_call_imports_s = known["probe"], known.get("first_call_imports_s") or 0.0
            self.capabilities = self._capabilities(self.probe)
            self._started.clear()
            starting = threading.Thread(target=self._get_ready, args=(known,), daemon=True, name="start")
            facts = "read without torch" if known.get("quick") else f"kept in {hostfacts.path(self.home, self._env())}"
            how = f"host facts {facts}; the preloaded parent is still loading"
        queue.register_worker(self.engine, self.id, self.hostname, os.getpid(), self.cfg.gpu, self.capabilities)
        self.more.start(self._env(), PROJECT_ROOT, gpu="cuda" in self.capabilities["devices"], home=self.home,
                        published=lambda key: queue.published_listing(self.engine, key))
        self.rescan_models()  # a listing kept from an earlier start (runner.worker.listing_cache): offered now
        if starting is not None:
            # only now: what the start finds replaces the facts registered above, never the other way round (started
            # before the registration, a quick probe could publish first and be overwritten by the older facts)
            self._starting = starting
            starting.start()
        devices, probe = self.capabilities["devices"], self.probe
        log.info("worker %s ready: devices %s%s, %d models, %s children, CPUs %s, torch threads %d; started in %.1f s "
                 "(%s)", self.id, ",".join(devices), f" ({probe.get('device_name')})" if probe.get("device_name") else "",
                 len(self.entries), self.cfg.spawn, cpus_text(self.cpus), self.threads, time.monotonic() - began, how)

    def rescan_models(self) -> bool:
        """While idle, or after a job once the listing child ended: its models folders read again where a file
        changed (runner.worker.model_folders) and the listing taken in; the offer published. True when it changed."""
        listed = self.more.changed.is_set()  # the listing child ended: publish what it found, and refused, once
        if listed:  # (cleared only when seen: one set between the two would be lost)
            self.more.changed.clear()
        entries = self.model_folders.changed(self.entries)
        if entries is None and not listed:
            return False
        problems = self.model_folders.problems
        more, self._refused, self._listing = self.more.snapshot()  # one listing's; it replaces the last, files stay
        entries = {**{n: e for n, e in (self.entries if entries is None else entries).items() if e.path}, **more}
        offered = (listed or {n: e.info for n, e in entries.items()} != {n: e.info for n, e in self.entries.items()}
                   or problems != self.capabilities.get(PROBLEMS, []))
        self.entries = entries  # the code may have changed alone: each job's child reads its file anew
        if offered and self.capabilities:
            with self._publishing:  # the start's thread may publish the host's facts meanwhile: neither loses the other's
                self.capabilities = {**self.capabilities, **self._offer(), PROBLEMS: list(problems)}
                self.store.publish("the models", self.capabilities)
        if offered:
            log.info("worker %s: models changed; now offering %d", self.id, len(entries))
        return offered

    def _offer(self) -> dict:
        return {"models": [e.info.to_dict() for e in self.entries.values()], "refused_models": dict(self._refused),
                "listing": self._listing}

    def _capabilities(self, probe: dict) -> dict:
        devices = (["cuda", "cpu"] if probe.get("cuda") else ["cpu"])
        caps = {
            "devices": devices, "device_name": probe.get("device_name"), "cpu_name": probe.get("cpu_name"),
            "torch_version": probe.get("torch_version"), "triton_version": probe.get("triton_version"),
            **self._offer(), "pid": os.getpid(), "scheduler": identity.current(),  # its Slurm job or pod, if any
            "models_dirs": [str(d) for d in self.cfg.models_dirs], "cpus": self.cpus, "threads": self.threads,
            "signs_bundles": self.cfg.signer is not None,  # whether its portable jobs can load (the Submit page)
        }
        caps["shares_cores_with"] = self._sharing(queue.live_workers(self.engine))
        return caps

    def _get_ready(self, known: dict | None) -> None:
        """Everything a job's child needs from the worker's start: the preloaded parent (or its fallbacks), the probe,
        the ceilings, what preloading takes from a first call, on a GPU the first child warm. Kept as host facts for
        the next start; where they differ from the facts this start began with, the worker publishes the new ones."""
        try:
            kept_cost = None if known is None else known.get("first_call_imports_s")  # else measured beside the parent
            cost = None if kept_cost is not None else host_probe.start_import_cost(self.spawner, self._env(), self.home)
            probe = host_probe.probe(self.spawner, self._env(), self.home)
            if probe.get("cuda") and self.cfg.calibrate:
                try:  # the roofline needs the device's ceilings; without them results just lack that placement
                    ceilings.ensure(self.engine, "cuda", probe.get("device_name"), self._env(), PROJECT_ROOT,
                                    probe.get("torch_version"), probe.get("driver"))
                except Exception as e:
                    log.warning("worker %s: calibration failed (%s); results will have no roofline placement",
                                self.id, first_line(e))
            self.first_call_imports_s = kept_cost if kept_cost is not None else host_probe.import_cost(cost)
            self.spawner = self._ready_spawner()  # ready means a job's child starts at once
            if probe.get("cuda"):  # warm (its CUDA context made: runner.child.prewarm), as every later job's is
                self.spawner.warm_first(self._env())
            facts = {"probe": probe, "first_call_imports_s": self.first_call_imports_s}
            hostfacts.save(self.home, self._env(), facts)
            self.probe = probe
            if known is not None and hostfacts.changed(known, facts):
                log.warning("worker %s: this host's facts differ from those %s (%s); publishing the new ones", self.id,
                            "read without torch" if known.get("quick") else "kept",
                            hostfacts.path(self.home, self._env()))
                with self._publishing:  # built from the models offered now, under the lock rescan_models takes
                    self.capabilities = caps = {**self._capabilities(probe), PROBLEMS: self.capabilities.get(PROBLEMS, [])}
                    self.store.publish("the host's facts", caps)
            elif known is None:
                self.capabilities = self._capabilities(probe)
        except BaseException as e:  # said to the first job waiting, which hands its job back and stops the worker
            self._start_error = e
            if known is None:
                raise
        finally:
            self._started.set()

    def _await_start(self, job: Attempt, renewed: Renewed | None = None) -> Outcome | None:
        """Before a job's child: the worker's start finished (at once, but for the first job after a start from
        kept facts). Renews the job's lease meanwhile (noted in `renewed`). An Outcome if the job cannot go on."""
        if self._started.is_set() and self._start_error is None:
            return None
        claim, waited = job.claim, time.time()
        while not self._started.wait(self.beat_s):
            try:
                sent = time.monotonic()
                if not queue.heartbeat_job(self.engine, claim.job_id, claim.token, self.cfg.lease_s,
                                           "waiting for the worker's start"):
                    return Outcome(None)  # cancelled meanwhile
                if renewed is not None:
                    renewed.at = sent
            except (OperationalError, OSError) as e:
                log.warning("job %s: heartbeat failed (%s); retrying", claim.job_id, first_line(e))
        job.steps.add(STARTING, waited, time.time())
        if self._start_error is not None:
            self.stop.set()
            return job.hand_back(f"could not finish starting ({first_line(self._start_error)}); stopping")
        return None

    def _ready_spawner(self):
        """The spawner with its preloaded parent ready. A parent whose forked children could not use CUDA (its
        preloaded compiler imports touched the CUDA runtime: runner.child.zygote's canary) is started again with torch
        alone preloaded (the children then import the compiler themselves, so nothing is added back to their first
        call); if that fails too, children start as fresh interpreters."""
        try:
            self.spawner.wait_ready()
            return self.spawner
        except SpawnError as e:
            self.spawner.close()
            error = e
        if self.spawner.method == "fork" and preload.enabled():
            log.warning("worker %s: %s; preloading torch alone", self.id, error)
            os.environ[preload.SWITCH] = "0"  # read by the parent (runner.child.zygote) and by _env for every child
            self.first_call_imports_s = 0.0
            spawner = make_spawner("fork", self._env(), PROJECT_ROOT)
            spawner.prepare()
            try:
                spawner.wait_ready()
                return spawner
            except SpawnError as e:
                spawner.close()
                error = e
        log.error("worker %s: %s; children start as fresh interpreters", self.id, error)
        return make_spawner("fresh", self._env(), PROJECT_ROOT)

    def _env(self) -> dict:
        env = dict(os.environ)
        env.pop(KEY_FILE_ENV, None)  # the worker checks and signs bundles; a job's child has no use for the key
        # the child starts in its job folder: this makes it import the very code its worker runs, from a checkout
        # run without `pip install -e .` (`python -m runner` in the project folder) as well as from an install
        env["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        env["PYTHONUNBUFFERED"] = "1"
        env[WORKER_PID_ENV] = str(os.getpid())  # the child checks it is still ours after arming PDEATHSIG
        env[THREADS_ENV] = str(self.threads)
        # a sweep counts the FLOPs of one model, size, dtype, task and device once (roofline_work.CACHE_ENV)
        env["COMPILE_LAB_WORK_CACHE"] = str(Path(self.cfg.home).resolve() / "work-cache")
        spawner = getattr(self, "spawner", None)
        if (spawner is not None and spawner.method == "fork" and preload.enabled()
                and getattr(self, "first_call_imports_s", None)):
            # what preloading took from a CUDA job's compiled first call: the child adds it back (runner/child/preload.py)
            env[preload.ENV] = repr(self.first_call_imports_s)
        if self.cfg.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.cfg.gpu)
            env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # so index I is nvidia-smi's GPU I
        return env

    def run(self) -> int:
        """Claim and run jobs until stopped, max_jobs done, or (drain) nothing is left to claim."""
        self.start()
        self._kept = found(self.home)  # earlier workers' finished outcomes, stored before any claim
        if self.cfg.drain:  # a draining worker claims what it offers: its families and imports listed first
            self.more.wait()
            self.rescan_models()
        done, idle_since = 0, time.monotonic()
        models = list(self.entries)
        try:
            while not self.stop.is_set():
                if self.cfg.max_jobs is not None and done >= self.cfg.max_jobs:
                    reports.make_owed(self.engine, self.home, self.id)  # tlparse's reports owed, before it goes
                    break
                self.store.check_identity()
                # its home short of space: paused, claiming nothing, until it has room
                if not diskpause.room(self.store, self.home, self.capabilities, self.stop):
                    break
                try:
                    self.store.record_found(self._kept)
                    queue.requeue_expired(self.engine)
                    claimed_at = time.monotonic()  # the lease runs from (no later than) here
                    claim_started = time.time()  # the job's timeline starts here (lab.timeline)
                    claim = queue.claim_next(self.engine, self.id, self.capabilities["devices"], models,
                                             self.cfg.lease_s, self.capabilities["torch_version"])
                    steps = Phases()
                    steps.add("claim", claim_started, time.time())
                    if claim is None:
                        queue.heartbeat_worker(self.engine, self.id, "idle")
                except (OperationalError, OSError) as e:  # database down or locked, or its files unwritable: retry
                    log.warning("worker %s: database unavailable (%s); retrying", self.id, first_line(e))
                    self.stop.wait(max(self.cfg.poll_s, 1.0))
                    continue
                if claim is None:
                    if reports.make_owed(self.engine, self.home, self.id, limit=1):
                        continue  # one of tlparse's reports owed (runner.worker.reports), then the queue again
                    self.more.refresh()  # a kept listing checked while nothing runs (runner.worker.model_offer)
                    if self.cfg.drain and time.monotonic() - idle_since >= self.cfg.idle_exit_s:
                        break
                    if self.rescan_models():  # a model file added or edited: offered now, no restart
                        models = list(self.entries)
                        continue
                    self.stop.wait(self.cfg.poll_s)
                    continue
                if self.stop.is_set():  # stopped while it claimed: the claim goes straight back
                    self.store.release(claim, f"worker {self.id} stopped before starting it; re-queued")
                    break
                if self.run_claim(claim, claimed_at, steps) is HANDED_BACK:
                    self.stop.wait(max(self.cfg.poll_s, 1.0))  # our own files failed: not the job's turn yet
                    continue
                done, idle_since = done + 1, time.monotonic()
                if self.more.changed.is_set() and self.rescan_models():  # the listing ended while the job ran
                    models = list(self.entries)
        except DatabaseGone as e:
            log.error("worker %s: %s", self.id, e)
            raise
        finally:
            if self._starting is not None:  # its parent and probe must not outlive the worker half-started
                self._starting.join(timeout=self.cfg.lease_s)
            self.spawner.close()
            self.store.note("stopped")
        log.info("worker %s stopped after %s", self.id, count(done, "job"))
        return done

    # -- one job ----------------------------------------------------------------------------------
    def run_claim(self, claim: queue.Claim, claimed_at: float | None = None, steps: Phases | None = None) -> Outcome:
        """Run one claimed job to its recorded end. `steps`: the worker's own phases so far (the claim); the
        job's timeline is them, the child's phases and the rest of the job's (lab.timeline)."""
        if steps is None:
            steps = Phases()
            steps.add("claim", time.time(), time.time())
        self.store.note("busy", claim.job_id)
        try:
            spec = self.rebuild_spec(claim.spec)
        except SpecError as e:
            return self._job(claim, None, steps).record(Outcome(JobStatus.FAILED, f"stored spec is invalid: {e}"))
        renewed = Renewed(claimed_at or time.monotonic())  # the lease keeper counts from the last renewal
        waited = self._await_start(self._job(claim, spec, steps), renewed)
        if waited is HANDED_BACK:
            return waited
        job = self._job(claim, spec, steps)  # after the start: its probe's facts (they key caches) and spawner
        outcome = job.record(waited) if waited is not None else job.execute(renewed.at)
        if job.spawn_error is not None:  # its preloaded parent failed: later children start as fresh interpreters
            self.spawner.close()
            self.spawner = make_spawner("fresh", self._env(), PROJECT_ROOT)
        if job.shares is not None and job.shares != self.capabilities.get("shares_cores_with"):
            self.capabilities["shares_cores_with"] = self._sharing_changed(job.shares)
        return outcome

    def _job(self, claim: queue.Claim, spec: ExperimentSpec | None, steps: Phases) -> Attempt:
        lent = Lent(env=self._env(), spawner=self.spawner, home=self.home, models_dirs=list(self.cfg.models_dirs),
                    probe=self.probe, signer=self.cfg.signer, worker_id=self.id, hostname=self.hostname,
                    cpus=self.cpus, threads=self.threads, beat_s=self.beat_s, grace_s=self.cfg.grace_s,
                    stop=self.stop, hurry=self.hurry, strikes=self.full_disk, keep_folder=self.cfg.keep_job_dirs)
        return Attempt(claim, spec, JobPaths.under(self.home, claim), self.store, lent, steps)

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
        with self._publishing:
            self.store.publish("what the worker shares", {**self.capabilities, "shares_cores_with": shares})
        return shares

    def rebuild_spec(self, stored) -> ExperimentSpec:
        """The stored spec, validated again: the database is outside our control (old rows, hand edits). The claim
        also hands out rows no worker could route (not an object, unknown device): they fail here with a reason."""
        if isinstance(stored, MalformedJSON):  # SQLite text that does not parse (db.engine.lenient_json)
            ExperimentSpec.from_json(stored)  # raises the SpecError that names the JSON error
        spec = ExperimentSpec.from_dict(stored)  # not an object, unknown fields, bad values: SpecError
        if stored.get("device") not in self.capabilities["devices"]:
            raise SpecError("device", f"{stored.get('device')!r} is not a device this worker offers "
                                      f"({', '.join(self.capabilities['devices'])})")
        if spec.model not in self.entries:
            raise SpecError("model", f"{spec.model!r} is not in the zoo of worker {self.id}")
        return spec.check_model(zoo.model_infos(self.entries))
