"""The lab's key for compile cache bundles (db.caches, runner.worker.cache_bundle). A bundle is code: the inductor cache loads
its kernel libraries into the child, and torch unpickles its FX-graph entries. Anyone who can write the database
could otherwise run code on every worker that loads one. So a worker stores a bundle with an HMAC-SHA256 of the
cache key it is stored under and its exact bytes, made with a key only the lab's workers hold (a file named by
`work --cache-key-file` or COMPILE_LAB_CACHE_KEY_FILE, never the database), and loads nothing whose signature does
not check. A worker without the key neither loads nor stores bundles. docs/operations.md: the trust boundary.

The file holds one key per line. The first signs; every line verifies, so that a key can be rotated without a
window in which workers refuse each other's bundles.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

KEY_FILE_ENV = "COMPILE_LAB_CACHE_KEY_FILE"
MIN_KEY_CHARS = 32  # `openssl rand -hex 32` writes 64
DOMAIN = b"compile-lab cache bundle v1\n"  # a signature made for anything else never checks here


class CacheKeyError(Exception):
    """The cache signing key file cannot be used: missing, unreadable, open to others, or a key too short."""


@dataclass(frozen=True)
class Signer:
    """Signs and checks bundles; its keys never appear in a repr, a log line or the database."""

    keys: tuple[bytes, ...] = field(repr=False)
    source: str = ""  # the file they came from, for the worker's log

    def sign(self, cache_key: str, data: bytes) -> str:
        return _mac(self.keys[0], cache_key, data)

    def verify(self, cache_key: str, data: bytes, signature: str | None) -> bool:
        """Whether `signature` was made by one of these keys for exactly `data` stored under `cache_key`."""
        if not signature or not isinstance(signature, str):
            return False
        given = signature.encode("ascii", "replace")
        # every key is tried, whatever the first one said: the time taken tells nothing about which one matched
        return sum(hmac.compare_digest(_mac(k, cache_key, data).encode(), given) for k in self.keys) > 0


def _mac(key: bytes, cache_key: str, data: bytes) -> str:
    h = hmac.new(key, DOMAIN, hashlib.sha256)
    name = cache_key.encode()
    h.update(len(name).to_bytes(8, "big") + name)  # length first: no key/data split reads as another
    h.update(data)
    return h.hexdigest()


def digest(data: bytes) -> str:
    """SHA-256 of a checked bundle: the child unpacks the file only if it still has this digest."""
    return hashlib.sha256(data).hexdigest()


def load(path: str | os.PathLike | None = None) -> Signer | None:
    """The keys in `path`, else in the file COMPILE_LAB_CACHE_KEY_FILE names; None when neither is given (no
    portable cache on this worker). CacheKeyError for a file that cannot be used: refusing to start beats a
    worker that quietly stops signing."""
    path = path or os.environ.get(KEY_FILE_ENV) or None
    if path is None:
        return None
    p = Path(path)
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):
            raise CacheKeyError(f"cache key file {p}: not a regular file")
        if st.st_mode & 0o077:
            raise CacheKeyError(f"cache key file {p}: readable or writable by others (mode "
                                f"{stat.S_IMODE(st.st_mode):04o}); chmod 600 it, the key signs code")
        lines = p.read_bytes().splitlines()
    except OSError as e:
        raise CacheKeyError(f"cache key file {p}: {e.strerror or type(e).__name__}") from e
    keys = tuple(k for k in (line.strip() for line in lines) if k and not k.startswith(b"#"))
    if not keys:
        raise CacheKeyError(f"cache key file {p}: holds no key")
    short = next((i for i, k in enumerate(keys) if len(k) < MIN_KEY_CHARS), None)
    if short is not None:
        raise CacheKeyError(f"cache key file {p}: key {short + 1} is shorter than {MIN_KEY_CHARS} characters; make "
                            "one with `openssl rand -hex 32`")
    return Signer(keys, str(p))

