"""A job's artifacts in the database: the text the compiler wrote for it (inductor output code, FX graphs, the
structured trace, tlparse's report), kept there so that a dashboard on another host than the worker can show it.

The child packs them into a folder beside its result file (lab.artifact_files); the worker stores what that folder
holds with the job's outcome, in the same transaction (`add`, from lab.artifact_files.read_dir). Reading one back
unpacks at most what the child could have written (lab.unpack): a row written by hand that unpacks further is
refused with a message, never held in memory whole. No torch, no SQLAlchemy session kept open.
"""
from __future__ import annotations

import io
import zipfile
import zlib

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from db.engine import reading
from db.models import Artifact
from lab import unpack
from lab.artifact_files import MAX_TEXT_BYTES, NAME

MAX_UNPACKED_BYTES = MAX_TEXT_BYTES + 4096  # one artifact out of its gzip: the text's cap plus the cut's marker
MAX_REPORT_BYTES = 64 << 20  # tlparse's report, every page of its zip together (its zip is at most MAX_TEXT_BYTES)
MAX_PAGE_BYTES = 16 << 20  # one page of it, shown in the browser


class ArtifactError(LookupError):
    """No such artifact for that job (or the job has none)."""


class DamagedArtifact(ArtifactError, unpack.Damaged):
    """An artifact's stored data does not unpack (a damaged row); the rest of its job reads as ever."""


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


def output_code(engine: Engine, job_id: int) -> str | None:
    """A job's generated code as text (what `runner diff` and Compare's run view diff); None where none was kept."""
    try:
        return data(engine, job_id, "output_code").decode("utf-8", errors="replace")
    except ArtifactError:
        return None
