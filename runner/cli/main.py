"""`python -m runner`: submit, work, status, cancel, export, report, artifact, models (README.md, "The runner CLI").

Errors raised deep (SpecError, QueueError, DatabaseError, ModelFileError) are translated here, at the
edge: one line on stderr and exit code 2, with nothing stored.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from sqlalchemy import exc as sa_exc

from db import artifacts, queue, reports, team
from db.database import get_engine
from db.engine import DatabaseError, describe, resolve_url
from lab import answer, unpack, versions
from lab.axes import AXES, BY_FIELD, COMPILE_AXES
from lab.checks import SpecError
from lab.errors import first_line
from lab.sweep import SweepRequest, split_sizes
from lab.wording import count, ids
from runner import zoo
from runner.cli import advise as cli_advise
from runner.cli import diff as cli_diff
from runner.cli import export as cli_export
from runner.cli import files as cli_files
from runner.cli import status as cli_status
from runner.cli import sweeps as cli_lab
from runner.cli.usage import UsageError, model_args
from runner.cli.usage import count as _count
from runner.cli.usage import row_id as _row_id
from runner.launch import cli as cli_launch
from runner.worker import cache_key
from runner.worker.gpus import GpuError
from runner.worker.model_offer import offered_catalog


def _add_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="database URL (else DATABASE_URL, else sqlite:///data/compile_lab.db)")


MODELS_ENV = "COMPILE_LAB_MODELS_DIR"  # the model folders of a worker started without --models-dir


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner", description="Compile Lab: torch.compile experiments")
    sub = parser.add_subparsers(dest="command", required=True)

    s = sub.add_parser("submit", help="queue a sweep: one job per combination")
    s.add_argument("--model", required=True)
    for axis in AXES:  # the swept axes (lab.axes): --batch, --backend, --mode, --dynamic, --fullgraph
        s.add_argument(axis.flag, dest=axis.plural, action="append", required=axis.field == "batch_size",
                       help=axis.help)
    s.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="model size parameter, e.g. --arg image_size=128 (see `models`)")
    s.add_argument("--device", help="cuda (default) or cpu; left out where live workers offer cpu and none offers "
                                    "cuda, submit refuses and says to pass --device cpu")
    s.add_argument("--dtype")
    s.add_argument("--task")
    s.add_argument("--cache", help="cold (fresh compile cache per job; its artifacts are kept in the database), warm "
                                   "(the worker's cache) or portable (a fresh cache plus the artifacts a cold job of "
                                   "the same settings kept: a colleague's first call on another host)")
    s.add_argument("--trace", help="true (default): keep each job's compile trace and tlparse report; false: only "
                                   "the output code and FX graphs")
    s.add_argument("--schedule", help="sizes called in order after the steady state, e.g. 8,16,32")
    s.add_argument("--traffic", help="a stream of calls each job replays eagerly and compiled after its rounds: "
                                     "uniform:1..512, chat:1..512, sizes (8,16,32) or a FILE of them (one size a "
                                     "line, or `size: count` lines)")
    s.add_argument("--calls", help="the stream's number of calls (default 200 for a drawn stream)")
    s.add_argument("--bucket", help="pad each size of the stream up to a multiple of this on the compiled side")
    s.add_argument("--iters", help="interleaved eager/compiled rounds")
    s.add_argument("--timeout", help="seconds before the child is killed")
    s.add_argument("--torch", action="append", dest="torch_versions", metavar="VERSION",
                   help="run each combination under this torch (repeat for a version axis): a prefix of a worker's "
                        "torch.__version__ at a component (2.14 matches 2.14.1+cu128), any (default), or all-live: "
                        "every version a live worker offers now; only a worker whose torch matches claims the job")
    s.add_argument("--repeat", help="run each combination this many times")
    s.add_argument("--reruns", help="re-run a job disturbed from outside (another process on its cores or GPU, "
                                    "throttled clocks, memory pressure: measured and named) automatically, up to this "
                                    "many times per combination (default 2; 0: never); it is left out of the answer")
    s.add_argument("--process-repeats", help="run each combination in this many fresh processes, the later ones from "
                                             "the first's compile cache, so the answer's interval holds across "
                                             "processes (default 2, and one more where they disagree by more "
                                             "than 5%%; 1: one)")
    s.add_argument("--name", help="sweep name")
    cli_lab.add_submit_flags(s)
    s.add_argument("--models-dir", action="append", default=[],
                   help="also accept the models in this folder (live workers' models are always accepted)")
    _add_db(s)

    w = sub.add_parser("work", help="run queued jobs")
    _add_db(w)
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

    cli_status.add_parser(sub, _add_db)

    c = sub.add_parser("cancel", help="cancel a queued or running job")
    c.add_argument("job_id", type=_row_id)
    _add_db(c)

    cli_export.add_parser(sub, _add_db, _row_id)

    r = sub.add_parser("report", help="the answer: per model, batch size and configuration, speedup with a 95%% "
                                      "interval, first calls, break-even and a verdict (as Results shows first)")
    _add_db(r)
    r.add_argument("--format", choices=("md", "json", "csv"), default="md")
    r.add_argument("--sweep", type=_row_id, action="append", help="only these sweeps")
    cli_lab.add_filter_flags(r)
    r.add_argument("--baseline", action="store_true", help="each row's change against its model's pinned baseline")
    r.add_argument("--versions", action="store_true",
                   help="the version diff instead: each configuration under two torch versions side by side, the "
                        f"change in speedup, compiled latency and cold first call, better or worse past "
                        f"{versions.THRESHOLD_PCT:g}%%")
    r.add_argument("-o", "--output", help="file to write (default: stdout)")

    a = sub.add_parser("artifact", help="write out one of a job's artifacts (output_code, fx_graphs, trace, tlparse)")
    a.add_argument("job_id", type=_row_id)
    a.add_argument("name")
    a.add_argument("-o", "--output", help="file to write (default: stdout)")
    _add_db(a)

    cal = sub.add_parser("calibrate", help="measure this host's device ceilings (copy bandwidth, matmul rate)")
    cal.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    cal.add_argument("--gpu", help="GPU index to pin (CUDA_VISIBLE_DEVICES)")
    _add_db(cal)

    m = sub.add_parser("models", help="the model zoo")
    m.add_argument("--models-dir", action="append", default=[])
    m.add_argument("--json", action="store_true")
    cli_lab.add_parsers(sub, _add_db)
    cli_diff.add_parser(sub, _add_db, _row_id)
    cli_launch.add_parser(sub, _add_db)
    cli_advise.add_parser(sub, _add_db)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    if hasattr(args, "models_dir") and not args.models_dir:  # `make run MODELS=dir`: the embedded worker's too
        args.models_dir = [d for d in os.environ.get(MODELS_ENV, "").split(os.pathsep) if d.strip()]
    try:
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a reader gone early is met here, where it is handled, not in the exit's own flush
        return code
    except SpecError as e:  # name the flag the person typed, not the dataclass field
        flag = FLAGS.get(e.field.split(".")[0], f"--{e.field.replace('_', '-')}")
        message = str(e).split(": ", 1)[1]
        if e.field.startswith("model_args."):
            flag = f"--arg {e.field.split('.', 1)[1]}"
        print(f"error: {flag}: {message}", file=sys.stderr)
        return 2
    except (queue.QueueError, artifacts.ArtifactError, unpack.UnpackError, DatabaseError, zoo.ModelFileError, UsageError,
            GpuError, cache_key.CacheKeyError, team.TeamError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader stopped early (`runner events | head`): the output was cut short, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is still buffered goes nowhere
        return 1
    except OSError as e:  # a folder or file of ours: --home unwritable, export -o into a missing folder
        print(f"error: {e.strerror or type(e).__name__}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except sa_exc.SQLAlchemyError as e:  # the server down, a damaged SQLite file: one line, no traceback
        why = first_line(getattr(e, "orig", None) or e)  # the driver's words, not the SQL around them
        print(f"error: database {describe(resolve_url(getattr(args, 'db', None)))}: {why}", file=sys.stderr)
        return 2


FLAGS = {name: axis.flag for name, axis in BY_FIELD.items()} | {"timeout_s": "--timeout", "model_args": "--arg",
                                                               "tags": "--tag"}


# -- commands -------------------------------------------------------------------------------------------
def cmd_submit(args) -> int:
    batches = [size for text in args.batch_sizes for size in split_sizes(text, "batch_sizes")]  # --batch 8,16 too
    fields = {"model": args.model, "batch_sizes": batches, "model_args": model_args(args.arg)}
    swept = [(a.plural, getattr(args, a.plural)) for a in COMPILE_AXES]
    for key, value in (*swept, ("device", args.device), ("dtype", args.dtype),
                       ("task", args.task), ("cache", args.cache), ("trace", args.trace), ("iters", args.iters),
                       ("timeout_s", args.timeout), ("repeat", args.repeat), ("reruns", args.reruns),
                       ("process_repeats", args.process_repeats), ("name", args.name),
                       ("torch_versions", args.torch_versions), ("tags", args.tags), ("note", args.note)):
        if value is not None:  # unset flags keep the dataclass defaults: defaults live once
            fields[key] = value
    if args.schedule is not None:
        fields["schedule"] = _int_list(args.schedule, "schedule")
    if args.traffic is not None:
        fields["traffic"] = cli_files.traffic_stream(args.traffic, args.calls, args.bucket)
    elif args.calls is not None or args.bucket is not None:
        raise UsageError("--calls and --bucket shape a --traffic stream: give --traffic too")
    request = SweepRequest.from_dict(fields)  # validates before anything touches the database
    engine = get_engine(args.db)
    if args.device is None and request.device == "cuda":  # the default, not asked for: a CPU-only lab never runs it
        devices = queue.live_devices(engine)
        if "cuda" not in devices and "cpu" in devices:
            raise UsageError("--device: no live worker offers cuda (the default), one offers cpu: pass --device cpu, "
                             "or --device cuda to queue for a GPU worker still to come")
    catalog, waiting = offered_catalog(engine, request.model, zoo.model_infos(zoo.catalog(args.models_dir)),
                                       request.device)
    sweep_id, job_ids, notes = queue.submit(engine, request, catalog)
    notes = [*waiting, *notes]
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"sweep {sweep_id}: {count(len(job_ids), 'job')} queued ({ids(job_ids)})", file=sys.stderr)
    for job_id in job_ids:
        print(job_id)
    return 0


def _int_list(text: str, field_name: str) -> list:
    parts = split_sizes(text, field_name)
    if not parts:
        raise SpecError(field_name, "expected comma-separated sizes, e.g. 8,16,32")
    return parts  # ExperimentSpec checks each one


def cmd_work(args) -> int:
    from runner.worker import gpus
    from runner.worker.config import WorkerConfig
    from runner.worker.loop import Worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # db.migrate logs the one line that matters
    if args.max_jobs is not None and args.max_jobs < 1:
        raise UsageError("--max-jobs must be at least 1")
    if not 1 <= args.lease <= 24 * 3600:
        raise UsageError(f"--lease must be between 1 and 86400 seconds, got {args.lease:g}")
    if args.threads is not None:
        from runner.child.disturbance import my_cpus

        cpus = len(my_cpus())  # more threads than cores only makes them queue for the cores, and times that queue
        if not 1 <= args.threads <= cpus:
            raise UsageError(f"--threads must be between 1 and {cpus} (the CPUs this worker may run on), "
                             f"got {args.threads}")
    if args.idle_exit and not args.drain or not 0 <= args.idle_exit <= 7 * 24 * 3600:
        raise UsageError(f"--idle-exit goes with --drain, between 0 and 604800 seconds (got {args.idle_exit:g})")
    if not 0 <= args.grace <= 24 * 3600:
        raise UsageError(f"--grace must be between 0 and 86400 seconds, got {args.grace:g}")
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


def cmd_cancel(args) -> int:
    was = queue.cancel(get_engine(args.db), args.job_id)
    print(f"job {args.job_id}: cancelled (was {was})")
    return 0


def cmd_report(args) -> int:
    sweeps = cli_lab.chosen_sweeps(get_engine(args.db), args)
    if args.versions:
        rows = reports.version_report(get_engine(args.db), sweep_ids=sweeps)
        text = {"md": versions.rows_markdown, "json": answer.rows_json, "csv": versions.rows_csv}[args.format](rows)
    else:
        rows = reports.report(get_engine(args.db), sweep_ids=sweeps)
        text = cli_lab.report_text(get_engine(args.db), rows, args)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_artifact(args) -> int:
    """As written: text, or the tlparse report's zip (unzip it and open index.html)."""
    data = artifacts.data(get_engine(args.db), args.job_id, args.name)
    if args.output:
        Path(args.output).write_bytes(data)
        print(f"job {args.job_id}: {args.name} ({len(data)} bytes) written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
    return 0


def cmd_calibrate(args) -> int:
    import os

    from runner.worker import ceilings, gpus
    from runner.worker.loop import PROJECT_ROOT

    env = dict(os.environ)  # the calibration child starts in PROJECT_ROOT, where `-m runner.child` finds the code
    if args.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpus.parse_gpu(args.gpu)
    found = ceilings.measure(get_engine(args.db), args.device, env, PROJECT_ROOT)
    print(f"{found['device_name']}: copy {found['copy_gbps']:.1f} GB/s; matmul " +
          ", ".join(f"{k} {v:.2f} TFLOP/s" for k, v in found["matmul_tflops"].items()))
    return 0


def cmd_models(args) -> int:
    """The models that read, then each file that does not (stderr, exit 2): a broken file hides none of the others."""
    entries, problems = zoo.read_folders(args.models_dir)
    if args.json:
        print(json.dumps([e.info.to_dict() for e in entries.values()], indent=1))
    else:
        for e in entries.values():
            params = ", ".join(f"{p.name}={p.default}" + (f" ({'|'.join(p.choices)})" if p.choices else "")
                               for p in e.info.params)
            tasks = "" if len(e.info.tasks) > 1 else f" [{e.info.tasks[0]} only]"
            print(f"{e.info.name:<12} {e.info.description}{tasks}" + (f"\n{'':<12} params: {params}" if params else ""))
    for problem in problems:
        print(f"error: not offered: {problem}", file=sys.stderr)
    return 2 if problems else 0


COMMANDS = {"submit": cmd_submit, "work": cmd_work, "cancel": cmd_cancel,
            "export": cli_export.cmd_export, "report": cmd_report, "artifact": cmd_artifact, "models": cmd_models,
            "calibrate": cmd_calibrate, "diff": cli_diff.cmd_diff} | cli_lab.COMMANDS | cli_status.COMMANDS \
    | cli_launch.COMMANDS | cli_advise.COMMANDS
