"""A job's artifacts as files: the child packs each text the compiler wrote (runner.child.capture.trace: output code, FX graphs,
the structured trace; tlparse's zipped report) cut at MAX_TEXT_BYTES and gzip-compressed into a folder beside its
result file, with an index; the worker reads the folder back, at most MAX_JOB_BYTES of it (compressed), and stores it
with the job's outcome (db.artifacts): a trace of a large model must not grow the database without bound. What was
cut or left out says so (`truncated`, and the marker at the cut). Plain files, no database."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

MAX_TEXT_BYTES = 4 << 20  # per artifact, before compression (output code of a large model is ~1 MB)
MAX_JOB_BYTES = 8 << 20  # per job, compressed: what one job may add to the database
INDEX = "index.json"
NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
CUT = "\n\n# ... cut by Compile Lab at {kept} of {total} bytes\n"
# gzip's fastest level: the child packs between its last timed step and its exit, and the next job waits for it
# (bench.artifact_pack on an H200 sweep's first runs: 2.3-3x faster than level 6 for large models, 26-35% more bytes)
LEVEL = 1


def pack(text: str, limit: int = MAX_TEXT_BYTES) -> tuple[bytes, int, bool]:
    """(gzip data, the text's full size in bytes, whether it was cut): at most `limit` bytes of text are kept."""
    raw = text.encode("utf-8", "replace")
    total, cut = len(raw), len(raw) > limit
    if cut:
        raw = raw[:limit] + CUT.format(kept=limit, total=total).encode()
    return gzip.compress(raw, compresslevel=LEVEL), total, cut


def write_dir(folder: Path, texts: dict[str, str | bytes], limit: int = MAX_TEXT_BYTES) -> list[dict]:
    """Pack each text into `folder` (NAME.gz and the index); returns the index: [{name, bytes, truncated}]. Bytes
    (a zipped report) are kept whole or, past `limit`, not at all: a cut archive would not open."""
    folder.mkdir(parents=True, exist_ok=True)
    index = []
    for name, text in texts.items():
        if not NAME.fullmatch(name) or not text or (isinstance(text, bytes) and len(text) > limit):
            continue
        if isinstance(text, bytes):
            data, total, cut = gzip.compress(text, compresslevel=LEVEL), len(text), False
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
