"""The portable cache's trust boundary end to end: real workers, real children, a real compile of the tiny model,
on a real SQLite file (storing and reading bundles on PostgreSQL too: tests/unit/test_caches.py). A newer row for a
key, altered by someone who can write the database, is neither written nor loaded anywhere; the portable job runs
cold, says why, and keeps a freshly signed bundle in its place. A worker without the key runs a portable job cold and
says so."""
from sqlalchemy import select

from bench.bombs import with_entry
from dashboard.data.story import portable_lines
from db.database import get_engine
from db.engine import atomic, reading
from db.models import CompileCache
from runner.worker import cache_bundle, cache_key
from tests.conftest import records, submit, work

TINY = ("--model", "tiny", "--batch", "8", "--device", "cpu", "--iters", "3", "--trace", "false")


def newest(url: str, key: str) -> CompileCache:
    with reading(get_engine(url)) as s:
        return s.scalars(select(CompileCache).where(CompileCache.key == key).order_by(CompileCache.id.desc())).first()


def test_an_altered_bundle_is_never_loaded_and_the_job_says_why(db_url, tmp_path, cache_key_file):
    url = db_url
    cold, port = submit(url, *TINY, "--cache", "cold") + submit(url, *TINY, "--cache", "portable")
    (keyless,) = submit(url, *TINY, "--cache", "portable", "--backend", "eager")
    said = work(url, tmp_path / "host-a", "--max-jobs", "1", "--cache-key-file", str(cache_key_file))
    secret = cache_key_file.read_text().strip()
    assert f"checked and signed with the key in {cache_key_file}" in said.stderr and secret not in said.stderr
    key = records(url)[cold]["mega_cache"]["key"]
    genuine = newest(url, key)
    # what the attacker stores: the genuine bundle plus a library, under the same key, the genuine signature kept
    evil = with_entry(genuine.data, "kernels/zz/evil.so", b"\x7fELF a constructor would run here")
    with atomic(get_engine(url)) as s:
        s.add(CompileCache(key=key, parts=genuine.parts, job_id=None, bytes=len(evil), info=genuine.info, data=evil,
                           signature=genuine.signature))
    # the key through the environment this time (the flag above): the worker reads it at start
    said = work(url, tmp_path / "host-b", "--max-jobs", "1", env={cache_key.KEY_FILE_ENV: str(cache_key_file)})
    assert f"compile cache key {key}: refused the newest bundle" in said.stderr and secret not in said.stderr

    rec = records(url)[port]
    mega = rec["mega_cache"]
    assert rec["status"] == "succeeded", rec["error"]
    assert mega["note"] == (f"refused the newest bundle for this key (from no job, {len(evil):,} bytes): its signature "
                            "does not check with this worker's key (altered, stored under another key, or signed with "
                            "a key this worker does not hold); nothing from it was written or loaded, ran as a cold run")
    assert "source" not in mega and "loaded" not in mega  # the child was never given a bundle
    assert not list((tmp_path / "host-b").rglob(cache_bundle.LOAD_FILE)) and not list(tmp_path.rglob("evil.so"))
    assert rec["cache_layers"]["fxgraph"]["miss"] >= 1 and rec["cache_layers"]["fxgraph"]["hit"] == 0  # a cold run
    assert f"Bundle {key[:12]}: {mega['note']}." in portable_lines(rec)  # the job's page, in words
    # its own bundle, signed, replaced the altered one
    kept = newest(url, key)
    assert mega["saved"]["stored"] is True and kept.job_id == port and kept.data != evil
    assert cache_key.load(cache_key_file).verify(key, kept.data, kept.signature)

    said = work(url, tmp_path / "host-c", "--drain")  # no key: loads nothing, keeps nothing
    assert "no cache signing key (--cache-key-file, COMPILE_LAB_CACHE_KEY_FILE)" in said.stderr
    rec = records(url)[keyless]
    assert rec["status"] == "succeeded", rec["error"]
    assert rec["mega_cache"]["note"] == f"{cache_bundle.NO_KEY}: it neither loads nor keeps bundles; ran as a cold run"
    assert "source" not in rec["mega_cache"] and "saved" not in rec["mega_cache"]
