"""The families' and import paths' listing (runner.worker.model_offer) kept on disk, so a worker offers hf: and timm:
models as soon as it starts instead of after the listing child's imports (transformers, timm, torch: 11 s on an
H200 host). Kept per key: what was asked (families, import paths, GPU-sized defaults) and everything the answer
depends on that can be read without importing anything: the interpreter, the installed versions of torch and of
the families' packages, and the lab's listing code (its files' modification times). A worker that starts from a
kept listing still lists in the background and publishes the new one where it differs. A worker starting in an empty
home (a Kubernetes pod's emptyDir) takes the families' listing that a worker with the same key published in the
database (db.queue.published_listing), and keeps it.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path

from runner.zoo import families

FILE = "model-listing-*.json"
PACKAGES = ("torch", *sorted({p for ps in families.FAMILY_PACKAGES.values() for p in ps}))


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _mtime(path) -> float | None:
    try:
        return os.stat(path).st_mtime if path else None
    except OSError:
        return None


def _import_origin(name: str) -> float | None:
    """The modification time of an import path's top module's file, found without importing it."""
    try:
        spec = importlib.util.find_spec(name.partition(":")[0].split(".")[0])
    except (ImportError, ValueError):
        return None
    return _mtime(spec.origin) if spec is not None else None


def key(family_names: list[str], imports: list[str], gpu: bool) -> dict:
    code = sorted(Path(families.__file__).parent.glob("famil*.py"))
    return {"python": sys.executable, "families": sorted(family_names), "imports": sorted(imports), "gpu": gpu,
            "packages": {p: _version(p) for p in PACKAGES},
            "code": {p.name: _mtime(p) for p in code},
            "import_files": {n: _import_origin(n) for n in sorted(imports)}}


def digest(k: dict) -> str:
    """The key's short hash: the kept file's name, and what a worker publishes for others with the same key."""
    return hashlib.sha256(json.dumps(k, sort_keys=True, default=str).encode()).hexdigest()[:16]


def path(home: Path, k: dict) -> Path:
    return home / FILE.replace("*", digest(k))


def load(home: Path, k: dict) -> dict | None:
    """The listing kept for this key ({"models", "refused", "families"}), or None."""
    try:
        kept = json.loads(path(home, k).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("key") != json.loads(json.dumps(k, default=str)):
        return None
    listed = kept.get("listed")
    return listed if isinstance(listed, dict) and isinstance(listed.get("models"), list) else None


def save(home: Path, k: dict, listed: dict) -> None:
    """Keep the listing for this key, atomically (a worker starting beside this one reads a whole file or none)."""
    final = path(home, k)
    tmp = final.with_suffix(f".{os.getpid()}.tmp")
    try:
        home.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"key": k, "listed": listed}, default=str))
        os.replace(tmp, final)
    except OSError:  # a home that cannot keep it only costs the next start its wait
        tmp.unlink(missing_ok=True)
