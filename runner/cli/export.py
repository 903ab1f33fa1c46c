"""`python -m runner export`: every job as an export record (db.results.iter_records), streamed. `--yield-cpu` is
how the dashboard's downloads run it (dashboard/server/downloads.py): besides the lowest CPU priority the server
gives it, the export pauses while other work keeps the host's cores busy. A lower priority alone did not keep other
sessions' pages as fast as without it (+11% at 100k jobs on 2 vCPUs): what runs beside them on the core's other
hardware thread, or in its caches, slows them whatever its priority."""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator

from db.database import get_engine
from db.results import iter_records, write_csv, write_json
from lab.tabular import EXPORT_PARENT_ENV
from lab.wording import count
from runner.child import disturbance
from runner.child.process import set_pdeathsig
from runner.cli import files as cli_files
from runner.cli import sweeps as cli_lab


def add_parser(sub, add_db, row_id) -> None:
    e = sub.add_parser("export", help="every job as an export record")
    add_db(e)
    e.add_argument("--format", choices=("json", "csv"), required=True)
    e.add_argument("-o", "--output", help="file to write (default: stdout)")
    e.add_argument("--sweep", type=row_id, action="append", help="only these sweeps")
    cli_lab.add_filter_flags(e)
    e.add_argument("--raw", action="store_true", help="json only: include raw samples and schedule calls")
    e.add_argument("--jobs", metavar="FILE", help="only the jobs whose ids FILE lists (whitespace between them; "
                                                  "'-' reads stdin): the dashboard's downloads of the jobs in view")
    e.add_argument("--yield-cpu", action="store_true",
                   help="pause while other processes keep the host's cores busy (the dashboard's downloads)")
    e.set_defaults(row_id=row_id)


def cmd_export(args) -> int:
    """Written as the records stream from the database (db.results.iter_records): memory stays bounded at any
    number of jobs. A file is written beside its name and renamed when complete, so it is never half an export."""
    server = os.environ.get(EXPORT_PARENT_ENV, "")
    if server.isdigit():  # the dashboard's: its server holds it stopped (SIGSTOP) while pages are drawn; were the
        # server to die meanwhile, nothing would continue it and it would keep its database snapshot open: it dies
        # with it (PR_SET_PDEATHSIG); a server already gone, before prctl took effect, ends it here
        if set_pdeathsig(signal.SIGKILL) and os.getppid() != int(server):
            return 1
    job_ids = cli_files.job_ids(args.jobs, args.row_id) if args.jobs else None
    sweeps = cli_lab.chosen_sweeps(get_engine(args.db), args)
    records = iter_records(get_engine(args.db), job_ids=job_ids, sweep_ids=sweeps, include_raw=args.raw)
    if args.yield_cpu:
        records = Yielding()(records)
    write = write_json if args.format == "json" else write_csv
    if not args.output:
        write(records, sys.stdout)
        sys.stdout.write("\n" if args.format == "json" else "")  # a CSV's rows end with their own line ends
        return 0
    out = Path(args.output)
    partial = out.with_name(out.name + ".partial")
    try:
        with partial.open("w", newline="" if args.format == "csv" else None) as f:
            n = write(records, f)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    print(f"{count(n, 'record')} written to {args.output}", file=sys.stderr)
    return 0


def busy_s(cpus: set[int] | None = None) -> float | None:
    """Seconds the CPUs `cpus` (None: all of the host's) have spent busy since boot, together, steal and interrupts
    included (runner.child.disturbance.cpu_ticks: /proc/stat's per-CPU lines); None off Linux."""
    try:
        _busy, _steal, parts = disturbance.cpu_ticks(cpus if cpus is not None else set(range(os.cpu_count() or 1)))
    except OSError:
        return None
    return sum(parts.values()) / os.sysconf("SC_CLK_TCK")


MIN_WINDOW_S = 0.05  # /proc/stat counts in 10 ms ticks: a shorter look sees nothing


class Yielding:
    """Every `every` records, look at what the host's other processes did since the last look (busy CPU time less
    this process's own): while they kept more than `share` of the cores busy, pause `pause_s` and look again, for at
    most `max_wait_s` in a row (a host that never goes quiet, a worker measuring beside the dashboard, still gets its
    export, a batch per wait). The export goes at the pace of the idle cores."""

    def __init__(self, every: int = 200, share: float = 0.2, pause_s: float = 0.1, max_wait_s: float = 0.8):
        self.every, self.share, self.pause_s, self.max_wait_s = every, share, pause_s, max_wait_s
        # the cores this export may run on, and whose business it judges (a container's cpuset, a worker's pinning)
        self.cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        self.cores = len(self.cpus) if self.cpus else (os.cpu_count() or 1)
        self.paused_s = 0.0  # in all: what yielding cost this export

    def __call__(self, records: Iterable[dict]) -> Iterator[dict]:
        if busy_s(self.cpus) is None:  # nothing to read: no pauses
            yield from records
            return
        mark = self._mark()
        for i, rec in enumerate(records, 1):
            yield rec
            if i % self.every == 0 and time.monotonic() - mark[0] >= MIN_WINDOW_S:
                pauses = 0
                while pauses < round(self.max_wait_s / self.pause_s) and self._others_busy(mark):
                    mark = self._mark()
                    time.sleep(self.pause_s)  # the next look judges this pause: were they still busy meanwhile?
                    pauses += 1
                self.paused_s += pauses * self.pause_s
                mark = self._mark()

    def _mark(self) -> tuple[float, float, float]:
        t = os.times()
        return time.monotonic(), busy_s(self.cpus) or 0.0, t.user + t.system

    def _others_busy(self, mark: tuple[float, float, float]) -> bool:
        now, busy, own = self._mark()
        wall = now - mark[0]
        if wall <= 0:
            return False
        others = (busy - mark[1]) - (own - mark[2])
        return others > self.share * self.cores * wall
