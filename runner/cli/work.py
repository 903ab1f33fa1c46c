"""`python -m runner work`: run queued jobs (runner.worker), one worker or one per GPU (--gpus); its flags and the
checks of their values made before the worker starts."""
from __future__ import annotations

import logging
import os
from pathlib import Path

from db.database import get_engine
from runner.cli.usage import MODELS_ENV, UsageError
from runner.cli.usage import count as _count
from runner.worker import cache_key


def add_parser(sub, add_db) -> None:
    w = sub.add_parser("work", help="run queued jobs")
    add_db(w)
    stop = w.add_mutually_exclusive_group()
    stop.add_argument("--once", action="store_true", help="run one job if one is queued, then exit")
    stop.add_argument("--max-jobs", type=_count, help="exit after this many jobs")
    stop.add_argument("--drain", action="store_true", help="exit when no queued job remains")
    w.add_argument("--idle-exit", type=float, default=0.0, metavar="S", help="with --drain: exit once nothing was "
                   "claimable for S seconds (a launched worker gives its GPU back: docs/operations.md, On a cluster)")
    gpu = w.add_mutually_exclusive_group()
    gpu.add_argument("--gpu", help="GPU index to pin (CUDA_VISIBLE_DEVICES)")
    gpu.add_argument("--gpus", help="one worker per GPU: all (every visible GPU) or a list like 0,1")
    w.add_argument("--lease", type=float, default=60.0,
                   help="lease seconds: a job whose worker stops heartbeating this long is re-queued")
    w.add_argument("--grace", type=float, default=30.0,
                   help="on SIGTERM/SIGINT, seconds the running job may still take before it is re-queued")
    w.add_argument("--models-dir", action="append", default=[],
                   help=f"a lab's own model files (default: ${MODELS_ENV}, folders separated by {os.pathsep}); a file "
                        "added or edited there is offered within seconds, no restart")
    w.add_argument("--model-import", action="append", default=[], metavar="MODULE[:FACTORY]", help="a lab's model by import path: a factory returning (module, inputs), or a model file")  # noqa: E501
    w.add_argument("--home", default="data", help="job folders, logs and the warm compile cache")
    w.add_argument("--spawn", choices=("fork", "fresh", "inline"), default="fork",
                   help="fork: each child forked from a parent that preloaded torch (fast start); "
                        "fresh: a new interpreter per job; inline: in this process, for debugging a job "
                        "under pdb (no isolation, no timeout)")
    w.add_argument("--threads", type=_count, help="torch's intra-op threads in every job (default: the CPUs this "
                                               "worker may run on, its affinity; pin a worker with taskset -c)")
    w.add_argument("--cache-key-file", metavar="PATH",
                   help="the lab's key for compile cache bundles (else the file COMPILE_LAB_CACHE_KEY_FILE names): "
                        "this worker loads only bundles it verifies and signs those it keeps; without one, portable "
                        "jobs run as cold runs (docs/operations.md, \"The portable cache's trust boundary\")")
    w.add_argument("--no-calibrate", action="store_true",
                   help="do not measure this GPU's ceilings at start (the roofline then has none)")


def cmd_work(args) -> int:
    from runner.worker import gpus
    from runner.worker.config import WorkerConfig
    from runner.worker.loop import Worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # db.migrate logs the one line that matters
    if args.max_jobs is not None and args.max_jobs < 1:
        raise UsageError("--max-jobs must be at least 1")
    if not 1 <= args.lease <= 24 * 3600:
        raise UsageError(f"--lease must be between 1 and 86,400 seconds, got {args.lease:,g}")
    if args.threads is not None:
        from lab import cpu_quota

        cpus = cpu_quota.here()  # more threads than cores only makes them queue for the cores, and times that queue
        if not 1 <= args.threads <= cpus:
            raise UsageError(f"--threads must be between 1 and {cpus} (the CPUs this worker may run on, under its "
                             f"cgroup's CPU quota), got {args.threads}")
    if args.idle_exit and not args.drain or not 0 <= args.idle_exit <= 7 * 24 * 3600:
        raise UsageError(f"--idle-exit goes with --drain, between 0 and 604,800 seconds (got {args.idle_exit:,g})")
    if not 0 <= args.grace <= 24 * 3600:
        raise UsageError(f"--grace must be between 0 and 86,400 seconds, got {args.grace:,g}")
    signer = cache_key.load(args.cache_key_file)  # read once, at start; a file that cannot be used stops here
    if args.gpus is not None:
        listed = gpus.parse_gpus(args.gpus)
        get_engine(args.db)  # a bad URL fails here, once, not in every worker; the schema is upgraded once
        return gpus.supervise(listed, _without_gpus(args.argv[1:]))
    if args.gpu is not None:
        args.gpu = gpus.parse_gpu(args.gpu)
    gpus.arm_supervised_worker()
    if signer is None:
        logging.getLogger("compile_lab.worker").warning(
            "no cache signing key (--cache-key-file, %s): portable jobs run as cold runs, cold jobs keep no bundle",
            cache_key.KEY_FILE_ENV)
    else:
        logging.getLogger("compile_lab.worker").info("compile cache bundles: checked and signed with the key in %s",
                                                     signer.source)
    Path(args.home).mkdir(parents=True, exist_ok=True)  # a home that cannot be made stops here, said as an error
    cfg = WorkerConfig(db_url=args.db, home=Path(args.home), gpu=args.gpu, lease_s=args.lease,
                       grace_s=args.grace, models_dirs=args.models_dir, spawn=args.spawn, model_imports=args.model_import,
                       calibrate=not args.no_calibrate, threads=args.threads, signer=signer,
                       max_jobs=1 if args.once else args.max_jobs, drain=args.drain or args.once,
                       idle_exit_s=args.idle_exit)
    worker = Worker(cfg)
    worker.install_signal_handlers()
    worker.run()
    return 0


def _without_gpus(argv: list[str]) -> list[str]:
    """The `work` arguments minus --gpus, for each per-GPU worker."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--gpus":
            skip = True
        elif not a.startswith("--gpus="):
            out.append(a)
    return out


COMMANDS = {"work": cmd_work}
