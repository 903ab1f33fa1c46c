"""The worker's side of a portable compile cache (db.caches; no torch here). Before a job: a cold job is asked to
save its compile cache artifacts; a portable job gets the newest artifacts stored under its key, or runs as a
cold run that says why (none for this key, or the newest refused) and saves its own, so the next portable job
finds them. After a successful job: its artifacts are stored, signed, and the record's detail.mega_cache says
which key, from which job, how many bytes, and what was stored.

A bundle is code (runner.worker.cache_key): it is loaded only if its signature checks with this worker's key, and that is
checked here, before a byte of it reaches the job's folder. The child then unpacks the file only if it still has
the digest of the bytes checked, so the key itself never leaves the worker. No key, no portable cache.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Mapping

from sqlalchemy import Engine

from db import caches
from lab.spec import ExperimentSpec
from runner.worker.cache_key import Signer, digest

log = logging.getLogger("compile_lab.worker")
LOAD_ENV, SAVE_ENV = "COMPILE_LAB_LOAD_CACHE", "COMPILE_LAB_SAVE_CACHE"  # runner.child.cache_bundle reads them
LOAD_SHA_ENV = "COMPILE_LAB_LOAD_CACHE_SHA256"  # the digest of the checked bundle, which the child compares
LOAD_FILE, SAVE_FILE = "megacache-in.bin", "megacache-out.bin"
NO_KEY = "this worker holds no cache signing key (work --cache-key-file; docs/operations.md)"


def prepare(engine: Engine, spec: ExperimentSpec, probe: Mapping, jobdir: Path, env: dict,
            signer: Signer | None) -> dict | None:
    """Set the child's environment for this job's artifacts; returns what the record will say (None: a warm job,
    which neither loads nor saves)."""
    if spec.cache not in ("cold", "portable"):
        return None
    parts = caches.key_parts(spec, caches.device_env(probe, spec.device))
    note = {"key": caches.cache_key(parts), "parts": parts}
    for name in (LOAD_FILE, SAVE_FILE):
        (jobdir / name).unlink(missing_ok=True)
    if signer is None:
        note["note"] = (f"{NO_KEY}: it neither loads nor keeps bundles; ran as a cold run" if spec.cache == "portable"
                        else f"{NO_KEY}: it keeps no bundle")
        return note
    found = None
    if spec.cache == "portable":
        try:
            found = caches.find(engine, note["key"])
        except Exception as e:  # the database is the only place they are: say so, run as a cold run
            note["note"] = f"could not fetch the artifacts ({type(e).__name__}: {str(e).splitlines()[0][:200]}); " \
                           "ran as a cold run"
        else:
            if found is None:
                note["note"] = f"{caches.NO_ARTIFACTS}: ran as a cold run (a cold job of the same settings on " \
                               "this torch, triton and device stores them)"
                near = caches.nearest(engine, parts)
                if near is not None:  # why it missed: what differs from the closest bundle there is
                    note["nearest"] = near
                    source = f"job #{near['job_id']}" if near["job_id"] is not None else "no job"
                    note["note"] += (f"; the nearest stored bundle (from {source}, key {near['key'][:12]}) differs in "
                                     f"{caches.differs_words(near['differs'])}")
            elif (why := refusal(found, signer)) is not None:
                log.warning("compile cache key %s: refused the newest bundle (job %s, %d bytes): %s", note["key"],
                            found.job_id, len(found.data), why)
                source = f"from job #{found.job_id}" if found.job_id is not None else "from no job"
                note["note"] = (f"refused the newest bundle for this key ({source}, {len(found.data):,} bytes): {why}; "
                                "nothing from it was written or loaded, ran as a cold run")
                note["refused"] = {"job_id": found.job_id, "bytes": len(found.data), "why": why}
                found = None
    if found is not None:
        (jobdir / LOAD_FILE).write_bytes(found.data)
        env[LOAD_ENV], env[LOAD_SHA_ENV] = str(jobdir / LOAD_FILE), digest(found.data)
        note["source"] = {"job_id": found.job_id, "bytes": found.bytes}
    else:
        env[SAVE_ENV] = str(jobdir / SAVE_FILE)
    return note


def refusal(found: caches.Found, signer: Signer) -> str | None:
    """Why a fetched bundle must not be loaded, or None when its signature checks."""
    if len(found.data) > caches.MAX_CACHE_BYTES:
        return f"past the {caches.MAX_CACHE_BYTES:,}-byte cap"
    if not found.signature:
        return "it is unsigned"
    if not signer.verify(found.key, found.data, found.signature):
        return ("its signature does not check with this worker's key (altered, stored under another key, or "
                "signed with a key this worker does not hold)")
    return None


def finish(engine: Engine, note: dict | None, job_id: int, detail: dict, jobdir: Path, signer: Signer | None) -> None:
    """After a successful job: store the artifacts it saved, signed, and put `note` with the child's load/save
    outcome into its record's detail (mega_cache)."""
    if note is None:
        return
    child = detail.get("mega_cache") or {}
    out = {**note, **child}
    saved = dict(child.get("saved") or {})
    keys = saved.pop("keys", None)
    path = jobdir / SAVE_FILE
    if saved.get("bytes") and path.exists() and signer is not None:
        data = path.read_bytes()
        try:
            stored = caches.store(engine, note["key"], note["parts"], job_id, data, {"artifacts": keys or {}},
                                  signer.sign(note["key"], data))
        except Exception as e:  # the measurement stands without it
            log.warning("job %s: its compile cache artifacts were not stored (%s)", job_id, e)
            stored = False
        saved["stored"] = stored
        if not stored:
            saved["why_not"] = (f"{len(data):,} bytes, past the {caches.MAX_CACHE_BYTES:,}-byte cap"
                                if len(data) > caches.MAX_CACHE_BYTES else "the database refused them")
    if saved:
        out["saved"] = saved
    loaded = child.get("loaded")
    if note.get("source") and loaded and not loaded.get("mega_cache_loaded"):
        out["note"] = loaded.get("error") or "torch loaded nothing from these artifacts: ran as a cold run"
    detail["mega_cache"] = json.loads(json.dumps(out, default=str))
