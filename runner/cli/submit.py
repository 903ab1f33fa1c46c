"""`python -m runner submit`: queue a sweep, one job per combination of the swept axes (lab.axes); its flags, the
spec it builds (validated before anything touches the database) and the lines it prints (notes, then the job ids)."""
from __future__ import annotations

import sys

from db import queue
from db.database import get_engine
from lab.axes import AXES, COMPILE_AXES
from lab.checks import SpecError
from lab.sweep import SweepRequest, split_sizes
from lab.wording import count, ids
from runner import zoo
from runner.cli import files as cli_files
from runner.cli import sweeps as cli_lab
from runner.cli.usage import UsageError, model_args
from runner.worker.model_offer import offered_catalog


def add_parser(sub, add_db) -> None:
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
                                             "than 5%%; 1: one); one that ran before on this device: up to 4 more "
                                             "where its earlier processes spread, one where 6 or more agreed)")
    s.add_argument("--name", help="sweep name")
    cli_lab.add_submit_flags(s)
    s.add_argument("--models-dir", action="append", default=[],
                   help="also accept the models in this folder (live workers' models are always accepted)")
    add_db(s)


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


COMMANDS = {"submit": cmd_submit}
