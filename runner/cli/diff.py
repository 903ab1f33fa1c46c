"""`python -m runner diff A B`: two jobs' compiler stories (lab.jobdiff), one row a line ("name: a -> b", a list's
items one a line), the rows that differ marked, then their generated code as a unified diff. Everything read from the
database is printed as text: control characters shown as \\xNN."""
from __future__ import annotations

import sys

from db import artifacts
from db.database import get_engine
from db.results import export_records
from lab import jobdiff
from runner.cli.usage import UsageError


def add_parser(sub, add_db, row_id) -> None:
    d = sub.add_parser("diff", help="two jobs' compiler stories side by side (graphs, breaks, recompiles and failed "
                                    "guards, kernels, cache layers, compile phases) and their generated code's diff")
    d.add_argument("job_a", type=row_id)
    d.add_argument("job_b", type=row_id)
    d.add_argument("--all", action="store_true", help="every row of the story, not only those that differ")
    d.add_argument("--no-code", action="store_true", help="leave out the generated code's diff")
    add_db(d)


def cmd_diff(args) -> int:
    engine = get_engine(args.db)
    records = {r["job_id"]: r for r in export_records(engine, job_ids=[args.job_a, args.job_b])}
    missing = [str(i) for i in (args.job_a, args.job_b) if i not in records]
    if missing:
        raise UsageError(f"diff: no such job: {', '.join(missing)}")
    a, b = records[args.job_a], records[args.job_b]
    rows = jobdiff.story_rows(a, b)
    out = [f"A: job {a['job_id']} ({a['model']} bs {a['batch_size']}, {a['status']})\n",
           f"B: job {b['job_id']} ({b['model']} bs {b['batch_size']}, {b['status']})\n",
           f"{sum(r['differs'] for r in rows)} of {len(rows)} rows differ (*)\n\n",
           jobdiff.lines_text(rows, only_differences=not args.all)]
    if not args.no_code:
        ids = a["job_id"], b["job_id"]
        diff = jobdiff.code_diff(*(artifacts.output_code(engine, i) for i in ids), *(f"job {i}" for i in ids))
        out += ["\ngenerated code (output_code): ", "the same\n" if not diff else "\n" + diff]
    sys.stdout.write(jobdiff.printable("".join(out)))
    return 0
