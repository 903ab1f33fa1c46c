"""`python -m runner cancel`, `report` and `artifact`: cancel a queued or running job, the answer over the finished
ones (lab.answer; --versions: lab.versions), and one job's stored artifact written out as it was kept."""
from __future__ import annotations

import sys
from pathlib import Path

from db import artifacts, queue, reports
from db.database import get_engine
from lab import answer, versions
from runner.cli import sweeps as cli_lab


def add_cancel_parser(sub, add_db, row_id) -> None:
    c = sub.add_parser("cancel", help="cancel a queued or running job")
    c.add_argument("job_id", type=row_id)
    add_db(c)


def add_report_parser(sub, add_db, row_id) -> None:
    r = sub.add_parser("report", help="the answer: per model, batch size and configuration, speedup with a 95%% "
                                      "interval, first calls, break-even and a verdict (as Results shows first)")
    add_db(r)
    r.add_argument("--format", choices=("md", "json", "csv"), default="md")
    r.add_argument("--sweep", type=row_id, action="append", help="only these sweeps")
    cli_lab.add_filter_flags(r)
    r.add_argument("--baseline", action="store_true", help="each row's change against its model's pinned baseline")
    r.add_argument("--versions", action="store_true",
                   help="the version diff instead: each configuration under two torch versions side by side, the "
                        f"change in speedup, compiled latency and cold first call, better or worse past "
                        f"{versions.THRESHOLD_PCT:g}%%")
    r.add_argument("-o", "--output", help="file to write (default: stdout)")


def add_artifact_parser(sub, add_db, row_id) -> None:
    a = sub.add_parser("artifact", help="write out one of a job's artifacts (output_code, fx_graphs, trace, tlparse)")
    a.add_argument("job_id", type=row_id)
    a.add_argument("name")
    a.add_argument("-o", "--output", help="file to write (default: stdout)")
    add_db(a)


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


COMMANDS = {"cancel": cmd_cancel, "report": cmd_report, "artifact": cmd_artifact}
