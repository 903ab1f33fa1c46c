"""The child's side of a portable compile cache (db.caches). A bundle (one zip) holds torch's mega-cache
(torch.compiler.save_cache_artifacts: FX graphs, AOT autograd entries, autotuning results, and on the GPU the
Triton kernels) and the compiled kernel libraries inductor left in the cache directory (*.so: on the CPU the
mega-cache does not carry the C++ kernels it compiles, and rebuilding them is most of a CPU compile). It is
loaded into the fresh cache directory before a `portable` job compiles anything, and saved after a cold job.

The worker names the files through the environment, as it names the cache directories; each torch API is
looked up, since an older or newer torch may lack it. The worker checked the bundle's signature before writing its
file (runner.worker.cache_bundle); the child unpacks it only if the file still has the digest of the bytes the worker checked,
and only what fits in MAX_UNPACKED_BYTES (lab.unpack), both before anything is written or loaded."""
from __future__ import annotations

import hashlib
import hmac
import io
import os
import time
import zipfile
import zlib
from pathlib import Path, PurePosixPath

import torch

from lab import unpack

LOAD_ENV = "COMPILE_LAB_LOAD_CACHE"  # a bundle to load before compiling
LOAD_SHA_ENV = "COMPILE_LAB_LOAD_CACHE_SHA256"  # the digest of the bytes whose signature the worker checked
SAVE_ENV = "COMPILE_LAB_SAVE_CACHE"  # where to write this job's bundle
MAX_UNPACKED_BYTES = 512 << 20  # a bundle's entries together, unpacked (it is at most 64 MB packed: db.caches)
MEGA = "megacache.bin"
KERNELS = "kernels/"  # + the library's path inside the inductor cache directory


def _inductor_dir() -> Path | None:
    d = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    return Path(d) if d else None


def _libraries(root: Path | None) -> list[Path]:
    if root is None or not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*.so") if p.is_file())


def load() -> dict | None:
    """Unpack the bundle the worker fetched and checked: kernel libraries into the (fresh) inductor cache
    directory, then torch's mega-cache hot-loaded. {"mega_cache_loaded", "load_s", "artifacts": {kind: count},
    "kernel_libraries": n}, with an "error" that says what was refused or failed; None when this job loads
    nothing."""
    path = os.environ.get(LOAD_ENV)
    if not path:
        return None
    started = time.perf_counter()
    out: dict = {"mega_cache_loaded": False, "kernel_libraries": 0}
    try:
        data = Path(path).read_bytes()
        expected = os.environ.get(LOAD_SHA_ENV) or ""
        if not hmac.compare_digest(hashlib.sha256(data).hexdigest().encode(), expected.encode()):
            return {**out, "error": "the bundle file is not the one whose signature the worker checked: "
                                    "nothing from it was written or loaded"}
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            mega = _unpack(z, _inductor_dir(), out)
    except unpack.UnpackError as e:
        return {**out, "error": f"{e}; nothing from it was written or loaded"[:500]}
    except (OSError, EOFError, RuntimeError, zlib.error, zipfile.BadZipFile) as e:
        return {**out, "error": f"the bundle did not open ({type(e).__name__}: {e}); nothing from it was loaded"[:500]}
    fn = getattr(getattr(torch, "compiler", None), "load_cache_artifacts", None)
    if mega is not None and fn is None:
        out["error"] = f"torch {torch.__version__} has no torch.compiler.load_cache_artifacts"
    elif mega is not None:
        try:
            info = fn(mega)
        except Exception as e:  # artifacts of another torch, or damaged: the job goes on and says so
            out["error"] = f"load_cache_artifacts failed: {type(e).__name__}: {e}"[:500]
        else:
            out.update(mega_cache_loaded=info is not None, artifacts=counts(info))
    out["load_s"] = time.perf_counter() - started
    out["restored"] = sorted(str(p) for p in _libraries(_inductor_dir()))  # to tell reused from rebuilt later
    return out


def _unpack(z: zipfile.ZipFile, root: Path | None, out: dict) -> bytes | None:
    """The kernel libraries of `z` written under `root`, its mega-cache returned. The sizes are checked first,
    for the whole bundle: one past the limit and nothing is written; one that fails part way is removed."""
    what = "the compile cache bundle"
    infos = unpack.check_zip(z, MAX_UNPACKED_BYTES, what)
    mega, written = None, []
    try:
        for info in infos:
            name = info.filename
            if name == MEGA:
                mega = unpack.read_member(z, info, MAX_UNPACKED_BYTES, what)
                continue
            rel = PurePosixPath(name[len(KERNELS):]) if name.startswith(KERNELS) else None
            if rel is None or root is None or rel.is_absolute() or ".." in rel.parts or rel.suffix != ".so":
                continue  # only libraries, only inside the cache directory
            target = root.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            written.append(target)
            with z.open(info) as src, open(target, "wb") as dst:
                unpack.copy_bounded(src, dst, info.file_size, f"{what}: {name}")
    except BaseException:  # a bundle damaged part way: no library of it stays for inductor to load
        for target in written:
            target.unlink(missing_ok=True)
        raise
    out["kernel_libraries"] = len(written)
    return mega


def built_here(loaded: dict | None) -> int | None:
    """Kernel libraries this job compiled itself, past those the bundle restored (0: every one was reused)."""
    if not loaded or "restored" not in loaded:
        return None
    return len({str(p) for p in _libraries(_inductor_dir())} - set(loaded["restored"]))


def save() -> dict | None:
    """Write this job's bundle where the worker asked: {"bytes", "artifacts", "kernel_libraries", "keys"}, with an
    "error" for what is missing; None when this job keeps nothing."""
    path = os.environ.get(SAVE_ENV)
    if not path:
        return None
    out: dict = {}
    fn = getattr(getattr(torch, "compiler", None), "save_cache_artifacts", None)
    mega = None
    if fn is None:
        out["error"] = f"torch {torch.__version__} has no torch.compiler.save_cache_artifacts"
    else:
        try:
            saved = fn()
        except Exception as e:
            out["error"] = f"save_cache_artifacts failed: {type(e).__name__}: {e}"[:500]
        else:
            if saved is None:
                out["error"] = "torch recorded no cache artifacts for this job"
            else:
                mega, info = saved
                out.update(mega_cache_bytes=len(mega), artifacts=counts(info), keys=keys(info))
    root = _inductor_dir()
    libraries = _libraries(root)
    if mega is None and not libraries:
        return out
    if len(mega or b"") + sum(p.stat().st_size for p in libraries) > MAX_UNPACKED_BYTES:
        return {**out, "error": f"the bundle would unpack past {MAX_UNPACKED_BYTES:,} bytes, which no worker loads"}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        if mega is not None:
            z.writestr(MEGA, mega)
        for lib in libraries:
            z.write(lib, KERNELS + lib.relative_to(root).as_posix())
    data = buf.getvalue()
    tmp = Path(path + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return {**out, "bytes": len(data), "kernel_libraries": len(libraries)}


def keys(info) -> dict:
    """torch's CacheInfo as {kind: [artifact key, ...]}."""
    artifacts = getattr(info, "artifacts", None) or {}
    return {str(kind): [str(k) for k in v] for kind, v in dict(artifacts).items()}


def counts(info) -> dict:
    return {kind: len(v) for kind, v in keys(info).items()}
