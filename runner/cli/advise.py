"""`python -m runner advise`: start a racing search for a model's best compile settings (lab.advise, db.advice), or
show one; with --wait (the default) it follows the search until it ends, printing each round's decision, then the
recommendation. The worker drives the search after each of its jobs, so closing this terminal stops nothing:
`runner advise --sweep ID` shows it again later."""
from __future__ import annotations

import sys
import time

from db import advice, queue
from db.database import get_engine
from lab import advice_text
from lab.advise import Search, parse_budget, search_request
from lab.axes import BY_FIELD
from lab.sweep import SweepRequest, split_sizes
from lab.wording import count
from runner import zoo
from runner.cli import files as cli_files
from runner.cli.usage import UsageError, model_args, row_id
from runner.worker.model_offer import offered_catalog

POLL_S = 2.0  # how often a waiting `advise` looks at its search (the Queue page's refresh)


def add_parser(sub, add_db) -> None:
    a = sub.add_parser("advise", help="find a model's best compile settings: a racing search that drops clearly worse "
                                      "settings after one process and stops once one is separable at 95%%")
    a.add_argument("--model", help="the model (with --batch; or --sweep ID to show a search)")
    a.add_argument("--batch", help="the batch size the caller runs")
    a.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="model size parameter")
    for name in ("task", "device", "dtype", "iters", "timeout", "name", "reruns"):
        a.add_argument(f"--{name}")
    for field in ("backend", "mode", "dynamic", "scope"):
        a.add_argument(BY_FIELD[field].flag, dest=BY_FIELD[field].plural, action="append",
                       help=f"race only these (repeat); default: every {field} that applies"
                       + (" (backend: inductor)" if field == "backend" else ""))
    goal = a.add_mutually_exclusive_group()
    goal.add_argument("--calls", help="the caller's number of calls: compiling must pay for itself within them")
    goal.add_argument("--traffic", help="judge on this stream of calls (as submit --traffic): uniform:1..512, "
                                        "chat:1..512, sizes or a FILE")
    a.add_argument("--budget", default="30m", help="device time the search may spend, e.g. 10m, 1h (default 30m)")
    a.add_argument("--max-processes", default=6, help="processes per setting at most (default 6)")
    a.add_argument("--sweep", type=row_id, help="show (and resume) the search stored as this sweep")
    a.add_argument("--no-wait", action="store_true", help="queue the search and return (workers drive it)")
    a.add_argument("--models-dir", action="append", default=[])
    add_db(a)


def cmd_advise(args) -> int:
    engine = get_engine(args.db)
    if args.sweep is not None:
        sweep_id = args.sweep
        if advice.search_of(engine, sweep_id) is None:
            raise UsageError(f"--sweep {sweep_id}: no search is stored as that sweep")
    else:
        sweep_id = _start(engine, args)
    if not args.no_wait:
        _follow(engine, sweep_id)
    advice.advance(engine, sweep_id)  # a search whose last job ended with a worker that died resumes here
    st = advice.load(engine, sweep_id)
    sys.stdout.write(advice_text.report(st.search, st.measured, st.rounds, st.spent_s, st.device, st.pending))
    return 0


def _start(engine, args) -> int:
    if not args.model or not args.batch:
        raise UsageError("give --model and --batch (or --sweep ID to show a search)")
    batch = split_sizes(args.batch, "batch_sizes")
    if len(batch) != 1:
        raise UsageError("--batch: one batch size, the one the caller runs")

    fields = {"model": args.model, "batch_sizes": batch, "model_args": model_args(args.arg)}
    for key, value in (("task", args.task), ("device", args.device), ("dtype", args.dtype), ("iters", args.iters),
                       ("timeout_s", args.timeout), ("reruns", args.reruns), ("name", args.name or f"advise {args.model}"),
                       *((BY_FIELD[f].plural, getattr(args, BY_FIELD[f].plural))
                         for f in ("backend", "mode", "dynamic", "scope"))):
        if value is not None:
            fields[key] = value
    if args.traffic is not None:
        fields["traffic"] = cli_files.traffic_stream(args.traffic, None, None)
    search = Search(calls=args.calls, traffic=args.traffic is not None, budget_s=parse_budget(args.budget),
                    max_processes=args.max_processes)
    device = SweepRequest.from_dict(fields).device  # validated before the catalog is read
    catalog, waiting = offered_catalog(engine, args.model, zoo.model_infos(zoo.catalog(args.models_dir)), device)
    info = catalog.get(args.model)
    fields, notes = search_request(fields, blocks=bool(info and info.blocks))
    sweep_id, job_ids, more = advice.start(engine, SweepRequest.from_dict(fields), search, catalog, queue.whoami())
    for note in (*waiting, *notes, *more):
        print(f"note: {note}", file=sys.stderr)
    print(f"search: sweep {sweep_id}, {count(len(job_ids), 'setting')}, one process each to start", file=sys.stderr)
    return sweep_id


def _follow(engine, sweep_id: int) -> None:
    """Print each round's decision as it is stored, until the search ends."""
    seen = 0
    while True:
        advice.advance(engine, sweep_id)
        st = advice.load(engine, sweep_id)
        for r in st.rounds[seen:]:
            dropped = "".join(f"\n    dropped: {d.why}" for d in r.step.dropped)
            print(f"round {r.round}: {r.step.outcome.value}, {r.step.why}{dropped}", file=sys.stderr)
        seen = len(st.rounds)
        if st.finished:
            return
        time.sleep(POLL_S)


COMMANDS = {"advise": cmd_advise}
