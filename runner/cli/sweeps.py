"""`python -m runner` commands about the lab's record of its sweeps (db.team): tag, note, archive, delete, baseline;
the submit flags --tag and --note; report's --tag, --archived and --baseline. The actor is the OS user at the host
(the CLI's credential is its database URL; the dashboard records its signed-in name)."""
from __future__ import annotations

import argparse
import sys

from db import team
from db.database import get_engine
from lab.wording import count
from runner.cli.usage import UsageError, row_id


def add_submit_flags(s: argparse.ArgumentParser) -> None:
    s.add_argument("--tag", action="append", dest="tags", metavar="TAG",
                   help="a word to find the sweep by (repeat, or commas between them); editable later with `tag`")
    s.add_argument("--note", help="why it ran: plain text, editable later with `note`")


def add_filter_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tag", action="append", dest="tags", default=[], metavar="TAG",
                   help="only sweeps carrying this tag (repeat: every one of them)")
    p.add_argument("--archived", choices=("no", "yes", "both"), default="no",
                   help="archived sweeps: left out (default), only them, or both")


def add_parsers(sub, add_db) -> None:
    t = sub.add_parser("tag", help="add or remove a sweep's tags (recorded: who, when)")
    t.add_argument("sweep_id", type=_id)
    t.add_argument("--add", action="append", default=[], metavar="TAG")
    t.add_argument("--remove", action="append", default=[], metavar="TAG")
    n = sub.add_parser("note", help="set a sweep's note (recorded: who, when); '' clears it")
    n.add_argument("sweep_id", type=_id)
    n.add_argument("text")
    a = sub.add_parser("archive", help="move a sweep out of the default views (--restore brings it back)")
    a.add_argument("sweep_id", type=_id)
    a.add_argument("--restore", action="store_true")
    d = sub.add_parser("delete", help="delete a sweep with its jobs, results, artifacts, cache bundles and the "
                                      "baselines pinned to it (lists them and asks first; recorded: who, when, what)")
    d.add_argument("sweep_id", type=_id)
    d.add_argument("--yes", action="store_true", help="do not ask (scripts)")
    b = sub.add_parser("baseline", help="pin a sweep (or one configuration of it) as a model's baseline to beat; "
                                        "without --sweep, show the pinned ones")
    b.add_argument("model", nargs="?")
    b.add_argument("--sweep", type=_id)
    b.add_argument("--config", help="one configuration of the sweep (its key, as `runner export` shows config_key)")
    b.add_argument("--clear", action="store_true", help="unpin the model's baseline")
    ev = sub.add_parser("events", help="who changed what in the lab's record, newest first")
    ev.add_argument("--sweep", type=_id)
    for p in (t, n, a, d, b, ev):
        add_db(p)


def _id(text: str) -> int:
    return row_id(text)


def actor() -> str:
    from db.queue import whoami
    return whoami()


def known_sweeps(engine, sweep_ids) -> None:
    """A --sweep that names no sweep is a mistake to say, not an empty table."""
    there = set(team.meta(engine, sweep_ids)) if sweep_ids else set()
    missing = [str(i) for i in sweep_ids or () if i not in there]
    if missing:
        raise UsageError(f"--sweep: no such sweep: {', '.join(missing)}")


def chosen_sweeps(engine, args) -> list[int] | None:
    """The sweeps a report or export covers: --sweep, narrowed by --tag and --archived; None: every sweep."""
    known_sweeps(engine, args.sweep)
    unknown = team.unknown_tags(engine, getattr(args, "tags", None) or ())
    if unknown:
        raise UsageError(f"--tag: no sweep carries the tag{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    archived = {"no": False, "yes": True, "both": None}[getattr(args, "archived", "no")]
    if args.sweep and not getattr(args, "tags", None) and archived is False:
        archived = None  # a sweep asked for by its id is shown, archived or not
    return team.sweep_ids(engine, getattr(args, "tags", ()) or (), archived, args.sweep)


def cmd_tag(args) -> int:
    tags = team.edit_tags(get_engine(args.db), args.sweep_id, actor(), args.add, args.remove)
    print(f"sweep {args.sweep_id}: tags {', '.join(tags) or '(none)'}")
    return 0


def cmd_note(args) -> int:
    note = team.set_note(get_engine(args.db), args.sweep_id, actor(), args.text)
    print(f"sweep {args.sweep_id}: note {'set' if note else 'cleared'}")
    return 0


def cmd_archive(args) -> int:
    team.archive(get_engine(args.db), args.sweep_id, actor(), restore=args.restore)
    print(f"sweep {args.sweep_id}: {'restored' if args.restore else 'archived'}")
    return 0


def cmd_delete(args) -> int:
    """Lists what the delete also removes (baselines pinned to the sweep, the cache bundles kept from its jobs) before
    it acts; that listing is what the delete confirms (db.team.ListingChanged: it changed meanwhile, nothing deleted)."""
    engine = get_engine(args.db)
    if args.sweep_id not in team.meta(engine, [args.sweep_id]):
        raise UsageError(f"delete: no such sweep: {args.sweep_id}")
    also = team.also_removed(engine, args.sweep_id)
    for line in also.lines():
        print(f"sweep {args.sweep_id}: also removes {line}")
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("delete: not asked on a terminal; pass --yes to delete without asking"
                             + (" (and to remove what is listed above with it)" if also else ""))
        answer = input(f"delete sweep {args.sweep_id} with its jobs, results, artifacts"
                       + (" and what is listed above" if also else "") + "? type its id to confirm: ")
        if answer.strip() != str(args.sweep_id):
            print("not deleted", file=sys.stderr)
            return 1
    counts = team.delete_sweep(engine, args.sweep_id, actor(), confirmed=also)
    print(f"sweep {args.sweep_id}: deleted ({count(counts['jobs'], 'job')}, {count(counts['artifacts'], 'artifact')}, "
          f"{count(counts['cache_bundles'], 'cache bundle')}, {count(len(counts['baselines']), 'baseline')})")
    return 0


def cmd_baseline(args) -> int:
    engine = get_engine(args.db)
    if args.clear or args.sweep is not None:
        if not args.model:
            raise UsageError("baseline: name the model")
        if args.clear:
            done = team.unpin_baseline(engine, args.model, actor())
            print(f"{args.model}: baseline {'unpinned' if done else 'was not pinned'}")
            return 0
        team.pin_baseline(engine, args.model, args.sweep, actor(), args.config)
    pins = team.baselines(engine)
    for model, pin in sorted(pins.items()):
        if args.model in (None, model):
            print(f"{model}: sweep {pin.sweep_id}" + (f" configuration {pin.config}" if pin.config else "")
                  + f", pinned by {pin.pinned_by} at {pin.pinned_at:%Y-%m-%d %H:%M} UTC")
    if not pins or (args.model and args.model not in pins):
        print(f"{args.model + ': ' if args.model else ''}no baseline pinned")
    return 0


def cmd_events(args) -> int:
    import json

    for e in team.events(get_engine(args.db), args.sweep):
        print(f"{e.at:%Y-%m-%d %H:%M:%S} {e.actor} {e.action}" + (f" sweep {e.sweep_id}" if e.sweep_id else "")
              + f" {json.dumps(e.detail, sort_keys=True)}")
    return 0


BASELINE_HEADLINE = {"baseline": "baseline", "vs_baseline_latency_pct": "latency vs baseline %",
                     "vs_baseline_first_call_s": "first call vs baseline s",
                     "vs_baseline_break_even_calls": "break-even vs baseline"}


def report_text(engine, rows: list, args) -> str:
    """The answer rows in --format; with --baseline, each with its change against its model's pinned baseline."""
    from db.baseline_rows import COLUMNS, with_baseline
    from lab import answer

    if not args.baseline:
        return {"md": answer.rows_markdown, "json": answer.rows_json, "csv": answer.rows_csv}[args.format](rows)
    rows = with_baseline(engine, rows)
    if args.format == "md":
        return answer.rows_markdown(rows, answer.HEADLINE | BASELINE_HEADLINE)
    return answer.rows_json(rows) if args.format == "json" else answer.rows_csv(rows, answer.COLUMNS + COLUMNS)


COMMANDS = {"tag": cmd_tag, "note": cmd_note, "archive": cmd_archive, "delete": cmd_delete, "baseline": cmd_baseline,
            "events": cmd_events}
