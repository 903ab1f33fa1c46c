"""`python -m runner`: the parser of every command and the dispatch to the module of its group (submit, work, status,
cancel, export, report, artifact, calibrate, models, ...; README.md, "The runner CLI").

Errors raised deep (SpecError, QueueError, DatabaseError, ModelFileError) are translated here, at the
edge: one line on stderr and exit code 2, with nothing stored.
"""
from __future__ import annotations

import argparse
import os
import sys

from sqlalchemy import exc as sa_exc

from db import artifacts, queue, team
from db.engine import DatabaseError, describe, resolve_url
from lab import unpack
from lab.axes import BY_FIELD
from lab.checks import SpecError
from lab.errors import first_line
from runner import zoo
from runner.cli import advise as cli_advise
from runner.cli import diff as cli_diff
from runner.cli import export as cli_export
from runner.cli import host as cli_host
from runner.cli import jobs as cli_jobs
from runner.cli import status as cli_status
from runner.cli import submit as cli_submit
from runner.cli import sweeps as cli_lab
from runner.cli import work as cli_work
from runner.cli.usage import MODELS_ENV, UsageError
from runner.cli.usage import row_id as _row_id
from runner.launch import cli as cli_launch
from runner.worker import cache_key
from runner.worker.gpus import GpuError


def _add_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="database URL (else DATABASE_URL, else sqlite:///data/compile_lab.db)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner", description="Compile Lab: torch.compile experiments")
    sub = parser.add_subparsers(dest="command", required=True)
    cli_submit.add_parser(sub, _add_db)  # the order here is the order `--help` lists the commands in
    cli_work.add_parser(sub, _add_db)
    cli_status.add_parser(sub, _add_db)
    cli_jobs.add_cancel_parser(sub, _add_db, _row_id)
    cli_export.add_parser(sub, _add_db, _row_id)
    cli_jobs.add_report_parser(sub, _add_db, _row_id)
    cli_jobs.add_artifact_parser(sub, _add_db, _row_id)
    cli_host.add_parsers(sub, _add_db)
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

COMMANDS = cli_submit.COMMANDS | cli_work.COMMANDS | cli_jobs.COMMANDS | cli_host.COMMANDS \
    | {"export": cli_export.cmd_export, "diff": cli_diff.cmd_diff} | cli_lab.COMMANDS | cli_status.COMMANDS \
    | cli_launch.COMMANDS | cli_advise.COMMANDS
