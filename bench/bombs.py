"""Hostile rows for the adversarial bench and the tests: decompression bombs (a megabyte stored, a gibibyte
unpacked) and altered compile cache bundles. Built without ever holding what they unpack to: the zip is written by
hand around one deflate segment of zeros repeated, which is a valid stream because each segment ends on a full
flush (byte-aligned, no back-references across it)."""
from __future__ import annotations

import gzip
import io
import struct
import zipfile
import zlib

SEGMENT = 16 << 20  # zeros per repeated piece


def gzip_bomb(unpacked: int) -> bytes:
    """gzip data of at least `unpacked` zero bytes, as gzip members of SEGMENT bytes one after another (what
    gzip.decompress reads whole): about a thousandth of that stored."""
    return gzip.compress(bytes(SEGMENT), 9) * -(-unpacked // SEGMENT)


def _deflated_zeros(n: int) -> tuple[bytes, int, int]:
    """(raw deflate stream, size, crc32) of `n` zero bytes rounded up to SEGMENT."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = c.compress(bytes(SEGMENT)) + c.flush(zlib.Z_FULL_FLUSH)
    count, crc, zeros = -(-n // SEGMENT), 0, bytes(SEGMENT)
    for _ in range(count):
        crc = zlib.crc32(zeros, crc)
    return piece * count + b"\x03\x00", count * SEGMENT, crc  # 03 00: an empty final block


def zip_bomb(entries: dict[str, int | bytes]) -> bytes:
    """A zip of deflated entries: name -> its bytes, or a size (that many zeros, rounded up to SEGMENT; under
    4 GiB, so no zip64)."""
    out, central = io.BytesIO(), []
    for name, content in entries.items():
        if isinstance(content, int):
            data, size, crc = _deflated_zeros(content)
        else:
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            data, size, crc = c.compress(content) + c.flush(), len(content), zlib.crc32(content)
        raw, offset = name.encode(), out.tell()
        fields = (20, 0, zipfile.ZIP_DEFLATED, 0, 0x21, crc, len(data), size, len(raw))
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, 0) + raw + data)
        central.append(struct.pack("<IH", 0x02014B50, 20) + struct.pack("<HHHHHIIIHH", *fields, 0)
                       + struct.pack("<HHHII", 0, 0, 0, 0, offset) + raw)
    start = out.tell()
    out.write(b"".join(central))
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), out.tell() - start, start, 0))
    return out.getvalue()


def with_entry(bundle: bytes, name: str, content: bytes) -> bytes:
    """`bundle` (a zip) with one more entry: what an attacker who can write the database stores under a key."""
    buf = io.BytesIO(bundle)
    with zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, content)
    return buf.getvalue()
