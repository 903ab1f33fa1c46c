"""bench/adversarial.py's rows that no worker wrote: what someone who can write the database stores, and whether
the lab handles it. Each case counts as handled when it is refused with a message (naming the data and, for a
bomb, the limit), nothing of it is written or loaded, and the reader's memory stays far below what it would unpack
to (peak resident size of a child process, or traced allocations in this one).

    altered compile cache bundles: the newest row for a key unsigned, altered under the genuine signature,
      another key's genuine bundle replayed, signed with a stranger's key (runner.worker.cache_bundle, the worker's check);
    decompression bombs: 1 GiB of text in a 1 MB artifact row (`runner artifact`, a child process), 1 GiB of
      kernel library in a signed bundle (runner.child.cache_bundle in a child), tlparse reports with a 1 GiB page, 20,000
      entries, or a bzip2 entry (the job page's readers).
"""
from __future__ import annotations

import bz2
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import tracemalloc
import zipfile
from pathlib import Path

from bench.bombs import gzip_bomb, with_entry, zip_bomb

ROOT = Path(__file__).resolve().parent.parent
GIB = 1 << 30


def _claimed_job(url: str, rows: list[dict]) -> int:
    from db import queue
    from db.database import get_engine
    from db.models import JobStatus
    from lab.spec import ModelInfo
    from lab.sweep import SweepRequest

    engine = get_engine(url)
    queue.submit(engine, SweepRequest(model="tiny", batch_sizes=[2], device="cpu"), {"tiny": ModelInfo("tiny", "d")})
    claim = queue.claim_next(engine, "bench", ["cpu"], ["tiny"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={"speedup": 1.0}, artifacts=rows)
    return claim.job_id


# the child reports its own peak (VmHWM, per address space): ru_maxrss from wait4 would carry over the peak of the
# process it was forked from, which is the whole test run when pytest has imported torch
_PEAK = """import atexit, runpy, sys
out = sys.argv[1]
def peak():
    with open("/proc/self/status") as f:
        kib = next(line.split()[1] for line in f if line.startswith("VmHWM"))
    with open(out, "w") as f:
        f.write(kib)
atexit.register(peak)
if sys.argv[2] == "-c":
    code, sys.argv = sys.argv[3], ["-c"]
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
else:
    sys.argv = sys.argv[3:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def measured(argv: list[str], env: dict | None = None) -> tuple[int, str, int]:
    """(exit code, stderr, peak resident MiB) of `python -m MODULE ARGS` or `python -c CODE` (argv without the
    interpreter), run in a child process that reports its own peak."""
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak"
        done = subprocess.run([sys.executable, "-c", _PEAK, str(peak_file), *argv], cwd=ROOT, capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
        kib = int(peak_file.read_text()) if peak_file.exists() else -1
    return done.returncode, done.stderr, kib >> 10


def _traced(fn) -> tuple[str | None, int]:
    """(the refusal's message, or None when nothing was refused; peak traced MiB) of fn() in this process."""
    from lab.unpack import UnpackError

    tracemalloc.start()
    try:
        fn()
        said = None
    except UnpackError as e:
        said = str(e)
    peak = tracemalloc.get_traced_memory()[1] >> 20
    tracemalloc.stop()
    return said, peak


def bundles(url: str, tmp: Path) -> tuple:
    """The worker's check, on the database at `url`: each altered newest row is refused before a byte is written."""
    from db import caches
    from db.database import get_engine
    from lab.spec import ExperimentSpec
    from runner.worker import cache_bundle as portable
    from runner.worker import cache_key as signing

    key_file = tmp / "cache.key"
    key_file.write_text(os.urandom(32).hex())
    key_file.chmod(0o600)
    signer, stranger = signing.load(key_file), signing.Signer((os.urandom(32).hex().encode(),))
    engine, spec = get_engine(url), ExperimentSpec(model="tiny", batch_size=8, device="cpu", cache="portable")
    probe = {"torch_version": "2.13.0+cpu", "cpu_name": "bench"}
    key = caches.cache_key(caches.key_parts(spec, caches.device_env(probe, "cpu")))
    genuine = zip_bomb({"megacache.bin": b"graphs", "kernels/ab/k.so": b"\x7fELF"})
    other = caches.cache_key({"another": "key"})
    caches.store(engine, key, {}, None, genuine, {}, signer.sign(key, genuine))
    evil = with_entry(genuine, "kernels/zz/evil.so", b"\x7fELF constructor")
    tries = [(evil, None), (evil, signer.sign(key, genuine)), (genuine, signer.sign(other, genuine)),
             (evil, stranger.sign(key, evil))]
    handled, bad = 0, []
    for n, (data, signature) in enumerate(tries):
        caches.store(engine, key, {}, None, data, {}, signature)
        env, folder = {}, tmp / f"job{n}"
        folder.mkdir()
        note = portable.prepare(engine, spec, probe, folder, env, signer)
        ok = ("refused the newest bundle" in note.get("note", "") and "source" not in note
              and not (folder / portable.LOAD_FILE).exists() and portable.LOAD_ENV not in env)
        handled += ok
        if not ok:
            bad.append(note)
    return "altered bundles: newest row for the key", len(tries), handled, "-", bad


def artifact_bomb(url: str, tmp: Path) -> tuple:
    job = _claimed_job(url, [{"name": "output_code", "bytes": 10, "truncated": False, "data": gzip_bomb(GIB)}])
    code, err, peak = measured(["-m", "runner", "artifact", str(job), "output_code", "-o", str(tmp / "out.py"),
                                "--db", url])
    ok = code == 2 and "unpacks to more than 4,198,400 bytes, the limit: refused" in err and peak < 300
    return "bomb in an artifact row (runner artifact)", 1, int(ok), f"{peak} MiB", [] if ok else [(code, err[-300:])]


def bundle_bomb(tmp: Path) -> tuple:
    """A bundle whose signature checks (a key holder's, or a worker's own) and that unpacks to a gibibyte."""
    from runner.worker import cache_key as signing

    bomb = zip_bomb({"megacache.bin": b"graphs", "kernels/cd/big.so": GIB})
    path, inductor = tmp / "megacache-in.bin", tmp / "inductor"
    path.write_bytes(bomb)
    inductor.mkdir()
    code, err, peak = measured(["-c", "import json, sys; from runner import megacache; "
                                "print(json.dumps(megacache.load()), file=sys.stderr)"],
                               {"COMPILE_LAB_LOAD_CACHE": str(path), "COMPILE_LAB_LOAD_CACHE_SHA256": signing.digest(bomb),
                              "TORCHINDUCTOR_CACHE_DIR": str(inductor)})
    written = list(inductor.rglob("*"))
    ok = code == 0 and "unpacks to more than 536,870,912 bytes" in err and not written
    return "bomb in a signed bundle (the child's load)", 1, int(ok), f"{peak} MiB, with torch", \
        [] if ok else [(code, err[-300:], written)]


def report_bombs() -> tuple:
    from db import artifacts

    many = io.BytesIO()
    with zipfile.ZipFile(many, "w", zipfile.ZIP_STORED) as z:
        for i in range(20_000):
            z.writestr(f"p{i}.html", b"")
    squeezed = io.BytesIO()
    with zipfile.ZipFile(squeezed, "w", zipfile.ZIP_BZIP2) as z:
        z.writestr("index.html", bz2.compress(b""))
    big_page = zip_bomb({"index.html": b"<h1>index</h1>", "huge.html": GIB})
    tries = [("a 1 GiB page", lambda: artifacts.report_page(big_page, "huge.html", "report")),
             ("20,000 entries", lambda: artifacts.report_pages(many.getvalue(), "report")),
             ("a bzip2 entry", lambda: artifacts.report_pages(squeezed.getvalue(), "report"))]
    handled, bad, peaks = 0, [], []
    for what, fn in tries:
        said, peak = _traced(fn)
        peaks.append(peak)
        ok = said is not None and peak < 100
        handled += ok
        if not ok:
            bad.append((what, said, peak))
    return "bombs in a tlparse report's zip (job page)", len(tries), handled, f"<= {max(peaks)} MiB traced", bad


def table(sqlite_url: str, pg_url: str | None, tmp: Path) -> list[tuple]:
    """(what, tried, handled, peak memory, what was not handled) per case, per database where one is involved (on
    PostgreSQL a database of its own, dropped afterwards)."""
    rows = []
    with _own_pg_database(pg_url) as pg:
        for name, url in [("SQLite", sqlite_url)] + ([("PostgreSQL", pg)] if pg else []):
            for case in (bundles, artifact_bomb):
                folder = tmp / f"{case.__name__}-{name}"
                folder.mkdir()
                what, *rest = case(url, folder)
                rows.append((f"{what} [{name}]", *rest))
    (tmp / "bundle").mkdir()
    rows.append(bundle_bomb(tmp / "bundle"))
    rows.append(report_bombs())
    return rows


@contextlib.contextmanager
def _own_pg_database(base: str | None):
    """A fresh database on the server `base` names (the rows these cases store stay out of the shared one)."""
    if not base:
        yield None
        return
    from bench.scratch import scratch_database

    with scratch_database(base, "lab_bench") as url:
        yield url
