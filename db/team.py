"""A team's record of its sweeps: tags and notes (editable, each change recorded with who and when), archive and
delete, a model's pinned baseline, and the lab_events that say who did what. Every change is one transaction with its
event: nothing half-stored. Text is checked by lab.team before it gets here."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Mapping

from sqlalchemy import Engine, delete, event, func, select
from sqlalchemy.orm import Session

from db.engine import atomic, reading
from db.models import TERMINAL, Artifact, Baseline, CompileCache, Job, LabEvent, Result, Sweep, SweepTag, utcnow
from lab.team import check_note, check_tags
from lab.wording import count


class TeamError(ValueError):
    """A change that cannot be made (no such sweep, a sweep still running): the message says why."""


class ListingChanged(TeamError):
    """What deleting a sweep also removes is not what was listed and confirmed: nothing was deleted; ask again."""

    def __init__(self, message: str, now: "AlsoRemoved"):
        super().__init__(message)
        self.now = now  # the listing as it stands, to show and confirm instead


@dataclass(frozen=True)
class PinnedBaseline:
    """A model's baseline pinned to a sweep, with who pinned it and when."""

    model: str
    config: str | None
    pinned_by: str
    pinned_at: datetime

    def to_dict(self) -> dict:
        return {"model": self.model, "config": self.config, "pinned_by": self.pinned_by,
                "pinned_at": self.pinned_at.isoformat(sep=" ", timespec="seconds")}


@dataclass(frozen=True)
class AlsoRemoved:
    """What deleting a sweep removes beyond its own jobs, results and artifacts: the baselines pinned to it (someone's
    reference for a model) and the compile cache bundles kept from its jobs (portable jobs of any sweep load them).
    A delete goes ahead only when this, read again in its transaction, equals the listing the person confirmed."""

    baselines: tuple[PinnedBaseline, ...] = ()
    bundle_ids: tuple[int, ...] = ()
    bundle_bytes: int = 0

    def __bool__(self) -> bool:
        return bool(self.baselines or self.bundle_ids)

    def lines(self) -> list[str]:
        """Plain text, one line per thing removed (shown as text by the pages, printed by the CLI)."""
        out = [f"the baseline of {b.model} ({f'configuration {b.config}' if b.config else 'the whole sweep'}), "
               f"pinned by {b.pinned_by or 'unknown'} at {b.pinned_at:%Y-%m-%d %H:%M} UTC" for b in self.baselines]
        if self.bundle_ids:
            n = len(self.bundle_ids)
            out.append(f"{n} compile cache bundle{'s' if n != 1 else ''} kept from its jobs ({_size(self.bundle_bytes)}), "
                       "which portable jobs of any sweep load")
        return out


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class SweepMeta:
    submitter: str
    tags: tuple[str, ...]
    note: str
    archived_at: datetime | None
    archived_by: str | None


def new_sweep(request, stored: dict, created_by: str) -> Sweep:
    """The sweep row of a submission, with the request's tags and note (db.queue.submit_many adds it)."""
    return Sweep(name=request.name, request=stored, created_by=created_by, note=request.note,
                 tag_rows=[SweepTag(tag=t) for t in request.tags])


def _sweep(s, sweep_id: int) -> Sweep:
    sweep = s.get(Sweep, sweep_id, with_for_update=True)
    if sweep is None:
        raise TeamError(f"sweep {sweep_id}: no such sweep")
    return sweep


def _event(s, actor: str, action: str, sweep_id: int | None, **detail) -> None:
    s.add(LabEvent(actor=actor, action=action, sweep_id=sweep_id, detail=detail, at=utcnow()))


def edit_tags(engine: Engine, sweep_id: int, actor: str, add: Iterable[str] = (), remove: Iterable[str] = ()
              ) -> tuple[str, ...]:
    """Add and remove tags; returns the sweep's tags after. Unchanged tags record nothing."""
    add, remove = check_tags(list(add), "tags"), check_tags(list(remove), "tags")
    with atomic(engine) as s:
        sweep = _sweep(s, sweep_id)
        before = {r.tag for r in sweep.tag_rows}
        after = (before | set(add)) - set(remove)
        check_tags(sorted(after), "tags")  # the count limit holds for the whole set
        if after != before:
            sweep.tag_rows = [r for r in sweep.tag_rows if r.tag in after] + [
                SweepTag(tag=t) for t in add if t in after - before]
            _event(s, actor, "tags", sweep_id, added=sorted(after - before), removed=sorted(before - after))
        return tuple(sorted(after))


def set_note(engine: Engine, sweep_id: int, actor: str, note: str) -> str:
    note = check_note(note)
    with atomic(engine) as s:
        sweep = _sweep(s, sweep_id)
        if sweep.note != note:
            _event(s, actor, "note", sweep_id, before=sweep.note, after=note)
            sweep.note = note
        return note


def archive(engine: Engine, sweep_id: int, actor: str, restore: bool = False) -> None:
    with atomic(engine) as s:
        sweep = _sweep(s, sweep_id)
        if (sweep.archived_at is None) == restore:
            return  # already so
        sweep.archived_at, sweep.archived_by = (None, None) if restore else (utcnow(), actor)
        _event(s, actor, "restore" if restore else "archive", sweep_id, name=sweep.name)


def also_removed(engine: Engine, sweep_id: int) -> AlsoRemoved:
    """What deleting the sweep would also remove now: the listing a person confirms before delete_sweep."""
    with reading(engine) as s:
        return _also_removed(s, sweep_id)


def _also_removed(s, sweep_id: int, lock: bool = False) -> AlsoRemoved:
    """`lock` (in the delete's transaction): the rows listed are locked (PostgreSQL), so an unpin or a bundle's
    replacement waits for the delete instead of changing what it records; a row added after is not listed, and
    the delete removes the listed rows only."""
    bundles = select(CompileCache.id, CompileCache.bytes).order_by(CompileCache.id).where(
        CompileCache.job_id.in_(select(Job.id).where(Job.sweep_id == sweep_id)))
    pins = (select(Baseline.model, Baseline.config, Baseline.pinned_by, Baseline.pinned_at)
            .where(Baseline.sweep_id == sweep_id).order_by(Baseline.model))
    if lock:
        bundles, pins = bundles.with_for_update(), pins.with_for_update()
    bundles, pins = s.execute(bundles).all(), s.execute(pins).all()
    return AlsoRemoved(tuple(PinnedBaseline(*p) for p in pins), tuple(i for i, _ in bundles),
                       sum(n or 0 for _, n in bundles))


def delete_sweep(engine: Engine, sweep_id: int, actor: str, confirmed: AlsoRemoved = AlsoRemoved()) -> dict:
    """The sweep, its jobs, their results, artifacts and kept compile caches, and the baselines pinned to it, gone in
    one transaction; the deletion recorded (who, when, what, and whose baselines went). `confirmed`: what the person
    was shown it also removes (also_removed; by default nothing): when that is not what its transaction finds, a pin
    or a bundle that came or went meanwhile, ListingChanged and nothing deleted. Refused while a job of it is queued
    or running (cancel those first)."""
    with atomic(engine) as s:
        sweep = _sweep(s, sweep_id)
        jobs = select(Job.id).where(Job.sweep_id == sweep_id)
        open_jobs = s.scalar(select(func.count()).where(Job.sweep_id == sweep_id, Job.status.not_in(TERMINAL)))
        if open_jobs:
            raise TeamError(f"sweep {sweep_id}: {count(open_jobs, 'job')} still queued or running; cancel them first")
        now = _also_removed(s, sweep_id, lock=True)
        if now != confirmed:
            raise ListingChanged(f"sweep {sweep_id}: deleting it also removes {'; '.join(now.lines()) or 'nothing else'}"
                                 f", not what was confirmed ({'; '.join(confirmed.lines()) or 'nothing else'}); "
                                 "nothing was deleted: confirm again", now)
        counts = {"jobs": s.scalar(select(func.count()).select_from(Job).where(Job.sweep_id == sweep_id)),
                  "last_job_id": s.scalar(select(func.max(Job.id)).where(Job.sweep_id == sweep_id)),
                  "artifacts": s.execute(delete(Artifact).where(Artifact.job_id.in_(jobs))).rowcount,
                  "cache_bundles": s.execute(delete(CompileCache).where(CompileCache.id.in_(now.bundle_ids))).rowcount,
                  "cache_bundle_bytes": now.bundle_bytes, "baselines": [b.to_dict() for b in now.baselines]}
        s.execute(delete(Result).where(Result.job_id.in_(jobs)))
        s.execute(delete(Job).where(Job.sweep_id == sweep_id))
        s.execute(delete(Baseline).where(Baseline.sweep_id == sweep_id,
                                         Baseline.model.in_([b.model for b in now.baselines])))
        s.execute(delete(SweepTag).where(SweepTag.sweep_id == sweep_id))
        _event(s, actor, "delete", sweep_id, name=sweep.name, submitter=sweep.created_by,
               model=(sweep.request or {}).get("model"), **counts)
        s.delete(sweep)
        return counts


def pin_baseline(engine: Engine, model: str, sweep_id: int, actor: str, config: str | None = None) -> None:
    """Pin a sweep (or one configuration of it) as `model`'s baseline, replacing any before."""
    with atomic(engine) as s:
        _sweep(s, sweep_id)
        q = select(func.count()).select_from(Job).where(Job.sweep_id == sweep_id, Job.spec["model"].as_string() == model)
        if config is not None:
            q = q.where(Job.config == config)
        if not s.scalar(q):
            raise TeamError(f"sweep {sweep_id} has no job of model {model!r}"
                            + (f" in configuration {config}" if config else ""))
        old = s.get(Baseline, model)
        if old is not None:
            s.delete(old)
            s.flush()
        s.add(Baseline(model=model, sweep_id=sweep_id, config=config, pinned_by=actor, pinned_at=utcnow()))
        _event(s, actor, "baseline", sweep_id, model=model, config=config,
               replaced=None if old is None else {"sweep_id": old.sweep_id, "config": old.config})


def unpin_baseline(engine: Engine, model: str, actor: str) -> bool:
    with atomic(engine) as s:
        old = s.get(Baseline, model)
        if old is None:
            return False
        _event(s, actor, "unpin", old.sweep_id, model=model, config=old.config)
        s.delete(old)
        return True


@event.listens_for(Session, "before_flush")
def _no_reused_ids(session, _context, _instances) -> None:
    """SQLite gives a new row the largest id + 1: after the newest sweep was deleted, the next one would take its id
    (and its jobs theirs), and old links, exports and the deletion's record would name different work. New sweeps and
    jobs start above the ids deletions have recorded. PostgreSQL's sequences never reuse one."""
    new = [o for o in session.new if isinstance(o, (Sweep, Job)) and o.id is None]
    if not new or session.get_bind().dialect.name != "sqlite":
        return
    with session.no_autoflush:
        floors = session.execute(select(func.max(LabEvent.sweep_id), func.max(LabEvent.detail["last_job_id"].as_integer()))
                                 .where(LabEvent.action == "delete")).one()
        for model, floor in ((Sweep, floors[0]), (Job, floors[1])):
            mine = [o for o in new if isinstance(o, model)]
            if not mine or floor is None:
                continue
            top = max(floor, session.scalar(select(func.max(model.id))) or 0)
            for k, obj in enumerate(mine, 1):
                obj.id = top + k


# -- reading ----------------------------------------------------------------------------------------------------
def meta(engine: Engine, sweep_ids: Iterable[int] | None = None) -> dict[int, SweepMeta]:
    """Per sweep (these, or all), who submitted it, its tags, note and whether it is archived."""
    with reading(engine) as s:
        q = select(Sweep.id, Sweep.created_by, Sweep.note, Sweep.archived_at, Sweep.archived_by)
        t = select(SweepTag.sweep_id, SweepTag.tag).order_by(SweepTag.tag)
        if sweep_ids is not None:
            ids = list(set(sweep_ids))
            q, t = q.where(Sweep.id.in_(ids)), t.where(SweepTag.sweep_id.in_(ids))
        tags: dict[int, list[str]] = {}
        for sweep_id, tag in s.execute(t):
            tags.setdefault(sweep_id, []).append(tag)
        return {r.id: SweepMeta(r.created_by or "", tuple(tags.get(r.id, ())), r.note or "", r.archived_at,
                                r.archived_by) for r in s.execute(q)}


def sweep_ids(engine: Engine, tags: Iterable[str] = (), archived: bool | None = False,
              within: Iterable[int] | None = None) -> list[int] | None:
    """The sweeps carrying every one of `tags`, archived or not (None: either), among `within`; None when that is
    every sweep (no filter to apply: the callers' whole-database paths stay as they are)."""
    tags = check_tags(list(tags), "tags")
    with reading(engine) as s:
        if not tags and within is None and (archived is None or not archived and s.scalar(
                select(Sweep.id).where(Sweep.archived_at.is_not(None)).limit(1)) is None):
            return None
        q = select(Sweep.id).order_by(Sweep.id)
        if archived is not None:
            q = q.where(Sweep.archived_at.is_not(None) if archived else Sweep.archived_at.is_(None))
        for tag in tags:
            q = q.where(Sweep.id.in_(select(SweepTag.sweep_id).where(SweepTag.tag == tag)))
        if within is not None:
            q = q.where(Sweep.id.in_(list(within)))
        return list(s.scalars(q))


def unknown_tags(engine: Engine, tags: Iterable[str]) -> list[str]:
    """The tags among these that no sweep carries, archived or not (a typo to name, not an empty view)."""
    tags = check_tags(list(tags), "tags")
    if not tags:
        return []
    with reading(engine) as s:
        known = set(s.scalars(select(SweepTag.tag).where(SweepTag.tag.in_(tags)).distinct()))
    return [t for t in tags if t not in known]


def baselines(engine: Engine) -> dict[str, Baseline]:
    with reading(engine) as s:
        return {b.model: b for b in s.scalars(select(Baseline))}


def events(engine: Engine, sweep_id: int | None = None, limit: int = 200) -> list[LabEvent]:
    with reading(engine) as s:
        q = select(LabEvent).order_by(LabEvent.id.desc()).limit(limit)
        return list(s.scalars(q.where(LabEvent.sweep_id == sweep_id) if sweep_id is not None else q))


def submitters(engine: Engine, sweep_ids: Iterable[int]) -> Mapping[int, str]:
    with reading(engine) as s:
        return dict(s.execute(select(Sweep.id, Sweep.created_by).where(Sweep.id.in_(list(set(sweep_ids))))).all())
