"""Checking lake files against the manifest: what every reader trusts, and what ``assay lake verify`` proves.

A file's manifest row records the rows, the bytes and the sha256 of what its writer wrote, and the file's
footer names the file itself (``assay.file``: its path relative to the lake's root). Two levels of check:

- :func:`problem` (``full=False``, on every read): the size on disk equals the manifest's bytes, and the
  footer's raw bytes end as Parquet's do and name this file (``assay.file``). It catches a file deleted,
  truncated, grown, replaced by garbage or by another valid lake file; it costs a ``stat`` and one small
  read at the file's end, and a check once passed is remembered for the same (path, size, mtime) within
  the process. A file written before ``assay.file`` existed has its footer parsed instead (table, schema
  version, rows). A commit (``parsed=True``) parses the footer of each staged file too: its row count.
- ``full=True`` (``assay lake verify``, and compaction before it rewrites files): also the sha256 of the
  whole file and its columns. It catches what keeps the size and the footer: a value rewritten in place
  (a flipped ``met``). Files listed before checksums were recorded have none to compare.

A problem fails only the readers of that file's partition, naming the file, its team and date, and the fix.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from assay.core.errors import EvidenceError

from .manifest import LakeFile

if TYPE_CHECKING:
    from .store import Lake

__all__ = ["FILE_KEY", "TABLE_KEY", "VERSION_KEY", "FileProblem", "LakeFileError", "checksum", "problem"]

TABLE_KEY, VERSION_KEY, FILE_KEY = b"assay.table", b"assay.schema_version", b"assay.file"

_CHUNK = 4 * 2**20
_passed: set[tuple[str, int, int, int, int]] = set()
"""(address, size, mtime in ns, rows, version) of the local files whose footer check passed in this process."""


class LakeFileError(EvidenceError):
    """A listed lake file is missing or differs from what its manifest row records."""


@dataclass(frozen=True)
class FileProblem:
    """A listed file that is not what the manifest says: which one, and what differs."""

    table: str
    path: str
    """Relative to the lake's root."""
    address: str
    team_id: str
    date: str
    what: str

    def describe(self) -> str:
        """The file, its table and partition, and what differs."""
        return f"lake file {self.address} ({self.table}, team {self.team_id}, date {self.date}) {self.what}"

    def message(self) -> str:
        """What a reader is told: :meth:`describe` and the fix."""
        return (f"{self.describe()}; readers of that partition are refused until it is restored from a backup "
                "(`assay lake verify` lists every such file)")

    def error(self) -> LakeFileError:
        return LakeFileError(self.message())


def checksum(data: bytes | memoryview | pa.Buffer) -> str:
    """The sha256 (hex) the manifest records for a file's bytes."""
    return hashlib.sha256(memoryview(data)).hexdigest()


def problem(lake: Lake, f: LakeFile, *, full: bool = False, parsed: bool = False) -> FileProblem | None:
    """What differs between the file ``f`` names and ``f`` (its manifest row), or None when it matches;
    ``parsed``: parse the footer (rows, table, version) even where its raw bytes would do."""
    what = _differs(lake, f, full, parsed or full)
    if what is None:
        return None
    return FileProblem(f.table, f.path, lake.address(f.path), f.team_id, f.date, what)


def _differs(lake: Lake, f: LakeFile, full: bool, parsed: bool) -> str | None:
    path = lake.path(f.path)
    try:
        size, mtime = _stat(lake, path)
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be opened ({exc})"
    if size != f.bytes:
        return f"is {size} bytes where the manifest records {f.bytes}"
    key = (lake.address(f.path), size, mtime, f.rows, f.version)
    if parsed or key not in _passed:
        try:
            raw = _footer(lake, path, size)
            if FILE_KEY in raw and not parsed:  # names itself: its raw bytes say whose file it is
                found = None if f.path.encode() in raw else "is a copy of another lake file (its footer names another path)"
                meta = None
            else:
                meta = pq.read_metadata(pa.BufferReader(b"PAR1" + raw))
                found = _footer_differs(lake, f, meta)
        except (OSError, pa.ArrowException, ValueError) as exc:
            return f"has no readable Parquet footer ({exc})"
        if found:
            return found
        if full and meta is not None:
            table = lake.table(f.table)
            found_columns = [(c.name, c.type) for c in meta.schema.to_arrow_schema()]
            if found_columns != [(c.name, c.type) for c in table.file_schema(f.version)]:  # nullability aside
                return f"has columns that differ from {table.name} v{f.version}: {[n for n, _ in found_columns]}"
        if mtime:
            _passed.add(key)
    if full and f.checksum is not None:
        digest = _sha256(lake, path)
        if digest != f.checksum:
            return f"has changed since it was written: its sha256 is {digest}, the manifest records {f.checksum}"
    return None


def _footer_differs(lake: Lake, f: LakeFile, meta: pq.FileMetaData) -> str | None:
    keys = meta.metadata or {}
    found = {name: keys.get(key, b"").decode(errors="replace") for name, key in
             (("table", TABLE_KEY), ("schema version", VERSION_KEY), ("file", FILE_KEY))}
    if found["table"] != f.table:
        return f"says it belongs to table {found['table'] or '(none)'!r}"
    if found["schema version"] != str(f.version):
        return f"says it is schema version {found['schema version'] or '(none)'}, the manifest records {f.version}"
    if found["file"] and found["file"] != f.path:
        return f"is a copy of another lake file ({found['file']})"
    if meta.num_rows != f.rows:
        return f"holds {meta.num_rows} rows where the manifest records {f.rows}"
    return None


def _stat(lake: Lake, path: str) -> tuple[int, int]:
    """(size, mtime in ns; 0 off the local disk, where nothing is remembered)."""
    if lake.local:
        st = os.stat(path)
        return st.st_size, st.st_mtime_ns
    if not lake.fs.exists(path):
        raise FileNotFoundError(path)
    return int(lake.fs.size(path)), 0


def _footer(lake: Lake, path: str, size: int) -> bytes:
    """The file's Parquet footer as raw bytes (its metadata, length and magic), read from its end alone."""
    if size < 12:
        raise ValueError(f"{size} bytes is too small for a Parquet file")
    if lake.local:
        with open(path, "rb") as source:
            source.seek(size - 8)
            tail = source.read(8)
            length = _footer_length(tail, size)
            source.seek(size - 8 - length)
            return source.read(length + 8)
    tail = lake.fs.cat_file(path, start=size - 8, end=size)
    length = _footer_length(tail, size)
    return lake.fs.cat_file(path, start=size - 8 - length, end=size)


def _footer_length(tail: bytes, size: int) -> int:
    if tail[4:] != b"PAR1":
        raise ValueError("the file does not end with the Parquet magic bytes")
    (length,) = struct.unpack("<I", tail[:4])
    if length + 12 > size:
        raise ValueError(f"its footer claims {length} bytes in a file of {size}")
    return length


def _sha256(lake: Lake, path: str) -> str:
    digest = hashlib.sha256()
    with lake.fs.open(path, "rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
