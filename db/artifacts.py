"""A job's artifacts: the text the compiler wrote for it (inductor output code, FX graphs, the structured trace),
kept in the database so that a dashboard on another host than the worker can show it.

The child packs each text (runner.artifacts): cut at MAX_TEXT_BYTES, gzip-compressed, into a folder beside its
result file, with an index. The worker stores the folder with the job's outcome, in the same transaction, and at
most MAX_JOB_BYTES of it (compressed): a trace of a large model must not grow the database without bound. What
was cut or left out says so (`truncated`, and the marker at the cut). Reading one back unpacks at most what the
child could have written (db.unpack): a row written by hand that unpacks further is refused with a message, never
held in memory whole. No torch, no SQLAlchemy session kept open.
"""
from __future__ import annotations

import gzip
import io
import json
import re
import zipfile
import zlib
from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from db import unpack
from db.engine import reading
from db.models import Artifact

MAX_TEXT_BYTES = 4 << 20  # per artifact, before compression (output code of a large model is ~1 MB)
MAX_JOB_BYTES = 8 << 20  # per job, compressed: what one job may add to the database
INDEX = "index.json"
NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
CUT = "\n\n# ... cut by Compile Lab at {kept} of {total} bytes\n"
MAX_UNPACKED_BYTES = MAX_TEXT_BYTES + 4096  # one artifact out of its gzip: the text's cap plus the cut's marker
MAX_REPORT_BYTES = 64 << 20  # tlparse's report, every page of its zip together (its zip is at most MAX_TEXT_BYTES)
MAX_PAGE_BYTES = 16 << 20  # one page of it, shown in the browser


class ArtifactError(LookupError):
    """No such artifact for that job (or the job has none)."""


class DamagedArtifact(ArtifactError, unpack.Damaged):
    """An artifact's stored data does not unpack (a damaged row); the rest of its job reads as ever."""


def pack(text: str, limit: int = MAX_TEXT_BYTES) -> tuple[bytes, int, bool]:
    """(gzip data, the text's full size in bytes, whether it was cut): at most `limit` bytes of text are kept."""
    raw = text.encode("utf-8", "replace")
    total, cut = len(raw), len(raw) > limit
    if cut:
        raw = raw[:limit] + CUT.format(kept=limit, total=total).encode()
    return gzip.compress(raw, compresslevel=6), total, cut


def write_dir(folder: Path, texts: dict[str, str | bytes], limit: int = MAX_TEXT_BYTES) -> list[dict]:
    """Pack each text into `folder` (NAME.gz and the index); returns the index: [{name, bytes, truncated}]. Bytes
    (a zipped report) are kept whole or, past `limit`, not at all: a cut archive would not open."""
    folder.mkdir(parents=True, exist_ok=True)
    index = []
    for name, text in texts.items():
        if not NAME.fullmatch(name) or not text or (isinstance(text, bytes) and len(text) > limit):
            continue
        if isinstance(text, bytes):
            data, total, cut = gzip.compress(text, compresslevel=6), len(text), False
        else:
            data, total, cut = pack(text, limit)
        (folder / f"{name}.gz").write_bytes(data)
        index.append({"name": name, "bytes": total, "truncated": cut})
    (folder / INDEX).write_text(json.dumps(index))
    return index


def read_dir(folder: Path, budget: int = MAX_JOB_BYTES) -> list[dict]:
    """The packed artifacts a child left in `folder`, in its order, as long as they fit in `budget` (compressed);
    the rest are left out. Only names from the index, only files inside the folder: nothing else is read."""
    try:
        index = json.loads((folder / INDEX).read_text())
    except (OSError, ValueError):
        return []
    out, used = [], 0
    for item in index if isinstance(index, list) else []:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not NAME.fullmatch(name):
            continue
        try:
            data = (folder / f"{name}.gz").read_bytes()
        except OSError:
            continue
        if used + len(data) > budget:
            continue
        used += len(data)
        out.append({"name": name, "bytes": int(item.get("bytes") or 0), "truncated": bool(item.get("truncated")),
                    "data": data})
    return out


def add(session: Session, job_id: int, items: list[dict]) -> None:
    """Store `items` (from read_dir) for the job, replacing what an earlier attempt stored under the same name."""
    names = [i["name"] for i in items]
    if not names:
        return
    for old in session.scalars(select(Artifact).where(Artifact.job_id == job_id, Artifact.name.in_(names))):
        session.delete(old)
    session.flush()
    session.add_all(Artifact(job_id=job_id, name=i["name"], bytes=i["bytes"], stored_bytes=len(i["data"]),
                             truncated=i["truncated"], data=i["data"]) for i in items)


def listing(engine: Engine, job_ids: list[int]) -> dict[int, list[dict]]:
    """{job id: [{name, bytes, stored_bytes, truncated}]} for the export record and the job's page."""
    out: dict[int, list[dict]] = {}
    if not job_ids:
        return out
    q = (select(Artifact.job_id, Artifact.name, Artifact.bytes, Artifact.stored_bytes, Artifact.truncated)
         .where(Artifact.job_id.in_(job_ids)).order_by(Artifact.job_id, Artifact.id))
    with reading(engine) as s:
        for job_id, name, size, stored, cut in s.execute(q):
            out.setdefault(job_id, []).append({"name": name, "bytes": size, "stored_bytes": stored, "truncated": cut})
    return out


def text(engine: Engine, job_id: int, name: str) -> str:
    """One artifact's text, decompressed; ArtifactError names what there is instead."""
    return data(engine, job_id, name).decode("utf-8", "replace")


def data(engine: Engine, job_id: int, name: str) -> bytes:
    """One artifact as written (text as UTF-8, a report as its zip); ArtifactError names what there is instead,
    unpack.UnpackError refuses one that unpacks past MAX_UNPACKED_BYTES; DamagedArtifact says what is wrong with a
    stored one that does not unpack."""
    if not isinstance(name, str) or not NAME.fullmatch(name):  # never sent to the database (a NUL, 10 kB)
        raise ArtifactError(f"{name[:40]!r} is not an artifact name (output_code, fx_graphs, trace, tlparse)")
    with reading(engine) as s:
        data = s.scalar(select(Artifact.data).where(Artifact.job_id == job_id, Artifact.name == name))
    if data is None:
        have = [a["name"] for a in listing(engine, [job_id]).get(job_id, [])]
        raise ArtifactError(f"job {job_id} has no artifact {name!r}" +
                            (f" (it has: {', '.join(have)})" if have else " (it has none)"))
    what = f"job {job_id}'s artifact {name!r}"
    try:
        return unpack.gunzip(data, MAX_UNPACKED_BYTES, what)
    except unpack.Damaged as e:  # a row no worker wrote so: damaged, said as such
        raise DamagedArtifact(str(e).replace(f"{what} is ", f"{what} is damaged: ", 1)) from None


def report_pages(report: bytes, what: str) -> list[str]:
    """The HTML pages of tlparse's zipped report, the index first; unpack.UnpackError for a zip that does not open,
    holds too many entries or unpacks past MAX_REPORT_BYTES."""
    with _report(report, what) as z:
        names = [i.filename for i in unpack.check_zip(z, MAX_REPORT_BYTES, what) if i.filename.endswith(".html")]
    return sorted(names, key=lambda n: (n != "index.html", n))


def report_file(report: bytes, name: str, what: str) -> bytes:
    """One file of tlparse's zipped report, at most MAX_PAGE_BYTES of it (else unpack.UnpackError); KeyError when
    the report has no file of that name."""
    with _report(report, what) as z:
        unpack.check_zip(z, MAX_REPORT_BYTES, what)
        if name not in z.namelist():
            raise KeyError(name)
        try:
            return unpack.read_member(z, name, MAX_PAGE_BYTES, what)
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, zlib.error) as e:
            raise unpack.Damaged(f"{what}: page {name!r} does not unpack ({type(e).__name__})") from e


def report_page(report: bytes, page: str, what: str) -> str:
    """One page of tlparse's zipped report as text, at most MAX_PAGE_BYTES of it (else unpack.UnpackError)."""
    try:
        return report_file(report, page, what).decode("utf-8", "replace")
    except KeyError as e:
        raise unpack.Damaged(f"{what}: page {page!r} does not unpack (KeyError)") from e


def _report(report: bytes, what: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(report))
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise unpack.Damaged(f"{what} is not a zip that opens ({e})") from e
