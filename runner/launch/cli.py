"""`python -m runner launch slurm|kubernetes`: workers through the cluster's scheduler (runner.launch). Its errors
(the config file, the scheduler's commands, the cluster) end here: one line and exit code 2."""
from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from pathlib import Path

from db import cluster
from db.database import get_engine
from db.engine import DatabaseError
from lab.wording import count
from runner.launch import config, kubernetes, sizing, slurm
from runner.launch.launcher import SlurmLauncher


def add_parser(sub, add_db) -> None:
    launch = sub.add_parser("launch", help="start workers through the cluster's scheduler, as many as the queue needs")
    kinds = launch.add_subparsers(dest="scheduler", required=True)
    s = kinds.add_parser("slurm", help="submit Slurm job arrays of workers (one GPU each) for what is queued")
    s.add_argument("--config", help=f"the launcher's config file (else ${config.CONFIG_ENV})")
    s.add_argument("--watch", action="store_true",
                   help="keep looking (every interval_s): workers appear when jobs are queued; idle ones exit")
    s.add_argument("--dry-run", action="store_true", help="print the sbatch command and job script; submit nothing")
    add_db(s)
    k = kinds.add_parser("kubernetes", help="render an Indexed Job of workers (one GPU per pod); --apply creates it")
    k.add_argument("--config", help=f"the launcher's config file (else ${config.CONFIG_ENV})")
    k.add_argument("--pool", help="the pool to start (default: the first that has queued jobs)")
    k.add_argument("--workers", type=int, help="pods to start (default: as many as the pool's queued jobs need)")
    k.add_argument("--apply", action="store_true", help="create the Job with the kubernetes client (~/.kube/config)")
    k.add_argument("-o", "--output", help="write the manifest to this file (default: stdout)")
    add_db(k)


def cmd_launch(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        cfg = config.load(config.config_path(args.config))
        return _slurm(cfg, args) if args.scheduler == "slurm" else _kubernetes(cfg, args)
    except (config.ConfigError, slurm.SlurmError, kubernetes.KubernetesError, DatabaseError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _slurm(cfg: config.LaunchConfig, args) -> int:
    launcher = SlurmLauncher(cfg, args.db)
    if args.dry_run:
        for pool in cfg.pools:
            n = cfg.pool_max(pool)
            print(f"# pool {pool.name}: up to {count(n, 'worker')} like this one\n" + " ".join(slurm.sbatch_argv(cfg, pool, n))
                  + " <<'EOF'\n" + slurm.script(cfg, pool, slurm.worker_grace(cfg)) + "EOF")
        return 0
    if not args.watch:
        launcher.once()
        return 0
    stop = threading.Event()

    def handler(signum, _frame):
        logging.getLogger("compile_lab.launch").info("launcher: %s; stopping (the workers drain and exit by "
                                                     "themselves)", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    launcher.watch(stop)
    return 0


def _kubernetes(cfg: config.LaunchConfig, args) -> int:
    pools = {p.name: p for p in cfg.pools}
    if args.pool is not None and args.pool not in pools:
        raise config.ConfigError(f"--pool {args.pool}: no such pool in {cfg.source} ({', '.join(pools)})")
    workers = args.workers
    pool = pools.get(args.pool) if args.pool else None
    if workers is None or pool is None:
        engine = get_engine(args.db)
        needs = {n.pool: n for n in sizing.plan(cfg, cluster.queued_demand(engine), {}, set(), cluster.pool_offers(engine))}
        pool = pool or next((p for p in cfg.pools if needs[p.name].queued), cfg.pools[0])
        if workers is None:  # the pool's pods still there count, where the cluster can be asked
            held = kubernetes.active_workers(cfg, pool) if args.apply else 0
            workers = max(0, min(needs[pool.name].queued, cfg.pool_max(pool)) - held)
    if workers < 1:
        print(f"pool {pool.name}: nothing queued for it; no Job made", file=sys.stderr)
        return 0
    body = kubernetes.manifest(cfg, pool, workers)
    text = _yaml(body)
    if args.output:
        Path(args.output).write_text(text)
    elif not args.apply:
        sys.stdout.write(text)
    if args.apply:
        print(f"job {kubernetes.apply(body)}: {count(workers, 'worker')} of pool {pool.name} in namespace "
              f"{body['metadata']['namespace']}", file=sys.stderr)
    return 0


def _yaml(body: dict) -> str:
    try:
        import yaml
    except ImportError:  # JSON is YAML too: kubectl apply -f takes either
        return json.dumps(body, indent=2) + "\n"
    return yaml.safe_dump(body, sort_keys=False)


COMMANDS = {"launch": cmd_launch}
