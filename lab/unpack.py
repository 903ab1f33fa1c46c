"""Decompression with a ceiling. What the database holds (a job's artifacts, a compile cache bundle, tlparse's
zipped report) can be written by anyone who reaches the database, and a few kilobytes of gzip or deflate unpack to
gigabytes: every reader here stops at a limit on what comes out, whatever the data claims about itself, and
refuses the rest with a message that names the data and the limit. No torch, no SQLAlchemy.
"""
from __future__ import annotations

import zipfile
import zlib
from typing import IO

CHUNK = 1 << 20  # read a zip member this much at a time, so what is held never passes the limit by more
MAX_MEMBERS = 10_000  # entries in one zip: a report has a page per compile, a bundle a library per kernel


class UnpackError(ValueError):
    """Stored data refused instead of unpacked: too big, or damaged."""


class TooBig(UnpackError):
    """Data unpacks past the size allowed for it: refused, nothing of it kept."""


class Damaged(UnpackError):
    """Data that does not unpack: not valid gzip, or cut short."""


def too_big(what: str, limit: int) -> TooBig:
    return TooBig(f"{what} unpacks to more than {limit:,} bytes, the limit: refused")


def gunzip(data: bytes, limit: int, what: str) -> bytes:
    """`data` (gzip, one or more members, as gzip.decompress reads it) unpacked; TooBig past `limit` bytes of
    output, Damaged for a stream that is not gzip or ends early."""
    out, rest = bytearray(), data
    try:
        while rest:
            d = zlib.decompressobj(wbits=31)
            out += d.decompress(rest, limit + 1 - len(out))
            if len(out) > limit or d.unconsumed_tail:
                raise too_big(what, limit)
            if not d.eof:
                raise Damaged(f"{what} is cut short: its gzip stream does not end")
            rest = d.unused_data.lstrip(b"\0")  # gzip.decompress allows trailing zero padding too
    except zlib.error as e:
        raise Damaged(f"{what} is not valid gzip data ({e})") from e
    return bytes(out)


def check_zip(z: zipfile.ZipFile, limit: int, what: str) -> list[zipfile.ZipInfo]:
    """The entries of `z` if, together, they unpack to at most `limit` bytes (by their declared sizes, which
    `read_member` holds them to), are not too many and are stored or deflated; else TooBig or Damaged, before
    anything is unpacked."""
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise TooBig(f"{what} has {len(infos):,} entries, more than the {MAX_MEMBERS:,} allowed: refused")
    # zipfile bounds what a read of a deflated entry returns; bzip2 and lzma entries it unpacks a chunk whole
    odd = next((i for i in infos if i.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)), None)
    if odd is not None:
        raise Damaged(f"{what}: {odd.filename} is compressed with method {odd.compress_type}, not stored or "
                      "deflated: refused")
    if sum(i.file_size for i in infos) > limit:
        raise too_big(what, limit)
    return infos


def read_member(z: zipfile.ZipFile, name: str | zipfile.ZipInfo, limit: int, what: str) -> bytes:
    """One entry of `z`, at most `limit` bytes of it, else TooBig (its declared size is checked first, then what
    actually comes out: zipfile stops at the declared size, and this at the limit whatever that size says)."""
    info = name if isinstance(name, zipfile.ZipInfo) else z.getinfo(name)
    label = f"{what}: {info.filename}"
    if info.file_size > limit:
        raise too_big(label, limit)
    with z.open(info) as f:
        return copy_bounded(f, None, limit, label)


def copy_bounded(src: IO[bytes], dst: IO[bytes] | None, limit: int, what: str) -> bytes:
    """Read `src` to its end in chunks, into `dst` (returns b"") or into memory (returns the bytes); TooBig as soon
    as more than `limit` bytes came out."""
    held, n = bytearray(), 0
    while chunk := src.read(min(CHUNK, limit + 1 - n)):
        n += len(chunk)
        if n > limit:
            raise too_big(what, limit)
        if dst is None:
            held += chunk
        else:
            dst.write(chunk)
    return bytes(held)
