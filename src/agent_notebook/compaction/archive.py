"""The cold archive: ``<home>/archive/``, where compaction moves the moments it replaced.

One file per batch, ``archive/<YYYY-MM>/<rollup id>-<digest>.jsonl.gz``: gzip (no timestamp
in the header, so the same batch always gives the same bytes) of JSON lines, each a moment's
record exactly as :meth:`Moment.model_dump_json` writes it. A file is written whole (temp
file, fsync, rename, fsync of the directory) before the backend forgets the moments it holds,
so an archived moment is always somewhere. The backend keeps where each one went
(:class:`ArchiveEntry`, with the SHA-256 of its line), so a record is read back by id, byte
for byte, and checked.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import files
from ..core.crypto import sealed_key_id
from ..core.lexical import Bm25Index
from ..errors import CorruptFile, InvalidInput, NotFound
from ..model import ArchiveEntry, Moment
from ..storage import MomentFilter, StorageBackend

if TYPE_CHECKING:
    from ..core.crypto import Cipher

__all__ = ["ColdArchive"]


class ColdArchive:
    """Archive files under ``root``; ``also`` lists other roots to read from (a dry run
    writes to a scratch directory and still reads the real archive). With ``cipher``
    (encryption at rest) each file is sealed whole, bound to its name."""

    def __init__(
        self, root: Path, *, also: Sequence[Path] = (), cipher: Cipher | None = None
    ) -> None:
        self.root = root
        self.also = list(also)
        self.cipher = cipher
        self._cache: dict[str, dict[str, bytes]] = {}  # file -> {moment id: record bytes}

    # -- writing ------------------------------------------------------------------------------

    def write(self, rollup: Moment, moments: Sequence[Moment]) -> list[ArchiveEntry]:
        """Write ``moments`` (replaced by ``rollup``) durably to one file; return the entries
        that say where each one is. Writing the same batch again gives the same file."""
        if not moments:
            return []
        ordered = sorted(moments, key=_number)
        lines = [m.model_dump_json().encode("utf-8") for m in ordered]
        digest = hashlib.sha256(b"\n".join(lines)).hexdigest()[:12]
        name = f"{rollup.timestamp:%Y-%m}/{rollup.id}-{digest}.jsonl.gz"
        path = self.root / name
        files.ensure_private_dir(path.parent)
        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz:
            gz.write(b"".join(line + b"\n" for line in lines))
        data = buffer.getvalue()
        if self.cipher is not None:
            data = self.cipher.encrypt(data, name.encode())
        files.write_atomic(path, data)
        self._cache.pop(name, None)
        return [
            ArchiveEntry(
                id=moment.id,
                session=moment.session,
                timestamp=moment.timestamp,
                rollup=rollup.id,
                file=name,
                sha256=hashlib.sha256(line).hexdigest(),
                concepts=moment.metadata.concepts,
            )
            for moment, line in zip(ordered, lines, strict=True)
        ]

    def file_names(self) -> list[str]:
        """The archive files under ``root``, relative to it, sorted."""
        if not self.root.exists():
            return []
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*.jsonl.gz"))

    def records_of(self, name: str) -> dict[str, bytes]:
        """Every record of the file ``name``: moment id -> its line."""
        return dict(self._file(name))

    def rewrite(self, name: str, lines: Sequence[bytes]) -> None:
        """Replace the file ``name`` with ``lines`` (a redaction), atomically; its name
        stays, so the entries that point into it stay valid."""
        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz:
            gz.write(b"".join(line + b"\n" for line in lines))
        data = buffer.getvalue()
        if self.cipher is not None:  # encryption at rest: sealed like ``write``
            data = self.cipher.encrypt(data, name.encode())
        files.write_atomic(self.root / name, data)
        self._cache.pop(name, None)

    # -- reading ------------------------------------------------------------------------------

    def record(self, entry: ArchiveEntry) -> bytes:
        """The archived record of ``entry``, byte for byte (checked against its SHA-256)."""
        records = self._file(entry.file)
        data = records.get(entry.id)
        if data is None:
            raise CorruptFile(self.root / entry.file, f"does not hold {entry.id}")
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise CorruptFile(self.root / entry.file, f"the record of {entry.id} was altered")
        return data

    def moment(self, entry: ArchiveEntry) -> Moment:
        return Moment.model_validate_json(self.record(entry))

    def moments(self, entries: Iterable[ArchiveEntry]) -> list[Moment]:
        return [self.moment(e) for e in entries]

    def _file(self, name: str) -> dict[str, bytes]:
        if name not in self._cache:
            if ".." in Path(name).parts or Path(name).is_absolute():
                raise InvalidInput(f"archive file {name!r} is outside the archive")
            for root in [self.root, *self.also]:
                path = root / name
                if path.exists():
                    break
            else:
                raise NotFound(
                    f"archive file {self.root / name} is missing; restore it from a backup "
                    "of the notebook's archive/ directory"
                )
            try:
                raw = path.read_bytes()
                if self.cipher is not None or sealed_key_id(raw) is not None:
                    raw = self._open(raw, name, path)
                raw = gzip.decompress(raw)
            except (OSError, EOFError) as err:
                raise CorruptFile(path, f"not a readable gzip file ({err})") from None
            records: dict[str, bytes] = {}
            for line in raw.split(b"\n"):
                if line:
                    try:
                        records[str(json.loads(line)["id"])] = line
                    except (ValueError, KeyError, TypeError):
                        raise CorruptFile(path, "holds a line that is not a record") from None
            self._cache[name] = records
        return self._cache[name]

    def _open(self, data: bytes, name: str, path: Path) -> bytes:
        """An archive file's gzip bytes: sealed ones opened (a plain one, written before
        encryption was turned on, passes through)."""
        if sealed_key_id(data) is None:
            return data
        if self.cipher is None:
            raise InvalidInput(
                f"{path} is encrypted: turn privacy.encryption on and give the notebook's key"
            )
        return self.cipher.decrypt(data, name.encode(), str(path))

    # -- search -------------------------------------------------------------------------------

    def search(
        self, backend: StorageBackend, query: str, where: MomentFilter, limit: int
    ) -> list[tuple[Moment, float]]:
        """Archived original moments matching ``query`` by words (BM25), best first, within
        ``where`` (the rollups a higher one replaced are left out: their summary is active).
        Reads the archive files the filter leaves in: for occasional, on-request use."""
        entries = []
        offset = 0
        while page := backend.list_archived(offset, 1000):
            offset += len(page)
            entries += [e for e in page if _may_match(e, where)]
        candidates = {m.number: m for m in self.moments(entries) if where.matches(m)}
        index = Bm25Index()
        for num, moment in candidates.items():
            if moment.redacted is None and moment.rollup is None:  # its summary is active
                index.put(num, moment.content.text)
        return [(candidates[num], score) for num, score in index.score(query)[:limit]]


def _number(moment: Moment) -> int:
    return moment.number


def _may_match(entry: ArchiveEntry, where: MomentFilter) -> bool:
    if where.session is not None and entry.session != where.session:
        return False
    if where.since is not None and entry.timestamp < where.since:
        return False
    return where.until is None or entry.timestamp < where.until
