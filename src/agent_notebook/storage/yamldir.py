"""The YAML directory backend, in the seed's layout::

    <root>/
    ├── sessions/
    │   ├── s_2026-06-07_001.yaml      # session file
    │   └── s_2026-06-07_001/
    │       └── moments/
    │           ├── m_1829.yaml        # individual moment
    │           └── m_1829.vec         # its text vector, when embedded
    ├── index.yaml                     # counters and the cross-session concept index
    ├── archived.yaml                  # moments compaction moved to the cold archive
    └── embeddings.faiss               # the vector index (derived from the .vec files)

The files are the truth: ``index.yaml``'s concept index is rebuilt from the moments on load,
so a crash between two file writes never leaves the notebook inconsistent. A ``.vec`` file
names its model and a digest of the text it was made from; one that no longer matches its
moment is ignored (the moment is embedded again). Every write is
atomic (temp file, fsync, rename); moments are written first, their session next and the
index last; an archived moment's file is deleted only after ``archived.yaml`` names it (a
moment whose file is still there counts as active). A ``.lock`` file (``flock``) admits one writing process at a time; a process
reloads its cache when another one has changed ``index.yaml``.

Every commit rewrites ``index.yaml`` whole, so a write costs time in proportion to the
number of concepts: this backend is for notebooks a person reads and diffs, SQLite is for
volume.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..errors import CorruptFile
from ..model import SCHEMA_VERSION, ArchiveEntry, Moment, Session, describe_validation_error
from ..privacy.crypto import sealed_key_id
from . import yamlcodec
from .base import Capabilities
from .files import (
    ensure_private_dir,
    ensure_private_file,
    exclusive_lock,
    fsync_dir,
    write_atomic,
)
from .staged import NotebookState, StagedBackend, StagedChanges

if TYPE_CHECKING:
    from ..privacy.crypto import Cipher

INDEX_FILE = "index.yaml"
ARCHIVED_FILE = "archived.yaml"
LOCK_FILE = ".lock"
LOCK_TIMEOUT_S = 30.0

_Signature = tuple[int, int, int, int]
_REVISION = re.compile(rb"\nrevision: ([0-9]+)\n")


class YamlDirBackend(StagedBackend):
    capabilities = Capabilities(
        name="yaml",
        crash_atomic=False,  # each file is atomic; a transaction of several files is ordered
        multi_process=True,
        persistent=True,
        native_full_text=False,
    )

    def __init__(self, root: Path | str, *, cipher: Cipher | None = None) -> None:
        super().__init__()
        self.root = Path(root)
        self.cipher = cipher  # encryption at rest: every file is sealed whole, same names
        ensure_private_dir(self.root / "sessions")
        self._lock_path = ensure_private_file(self.root / LOCK_FILE)
        self._signature: _Signature | None = None
        self._revision = 0
        with self._lock:
            self._refresh()

    @property
    def location(self) -> str:
        return str(self.root)

    # -- paths ------------------------------------------------------------------------------

    def _session_path(self, session_id: str) -> Path:
        return self.root / "sessions" / f"{session_id}.yaml"

    def _moment_path(self, moment: Moment) -> Path:
        return self.root / "sessions" / moment.session / "moments" / f"{moment.id}.yaml"

    def _vector_path(self, moment: Moment) -> Path:
        return self._moment_path(moment).with_suffix(".vec")

    # -- hooks ------------------------------------------------------------------------------

    def _writer_lock(self) -> AbstractContextManager[None]:
        return exclusive_lock(self._lock_path, LOCK_TIMEOUT_S)

    def _index_signature(self) -> _Signature | None:
        """What identifies the committed state: the file's identity plus the revision in its
        header, so a rewrite is seen even where inode, time and size all repeat."""
        try:
            with open(self.root / INDEX_FILE, "rb") as f:
                st = os.fstat(f.fileno())
                header = f.read(64)
        except FileNotFoundError:
            return None
        found = _REVISION.search(header)
        return (st.st_ino, st.st_mtime_ns, st.st_size, int(found[1]) if found else -1)

    def _refresh(self) -> None:
        signature = self._index_signature()
        if signature is not None and signature == self._signature:
            return
        self._state = self._load()
        self._signature = signature

    def _invalidate(self) -> None:
        self._signature = None

    def _load(self) -> NotebookState:
        state = NotebookState()
        index_path = self.root / INDEX_FILE
        if index_path.exists():
            index = yamlcodec.load_data(yamlcodec.read_text(index_path, self.cipher), index_path)
            if not isinstance(index, dict) or not isinstance(index.get("counters", {}), dict):
                raise CorruptFile(index_path, "expected a mapping with 'counters'")
            self._revision = int(index.get("revision", 0))
            state.counters.update({str(k): int(v) for k, v in index["counters"].items()})
        sessions_dir = self.root / "sessions"
        for entry in sorted(sessions_dir.iterdir()):
            if entry.name.startswith("."):
                continue  # temp files of an interrupted write
            if entry.is_file() and entry.suffix == ".yaml":
                session = yamlcodec.read_record(entry, Session, self.cipher)
                if session.id != entry.stem:
                    raise CorruptFile(entry, f"holds session {session.id}, not {entry.stem}")
                state.sessions[session.id] = session
            elif entry.is_dir():
                for path in sorted((entry / "moments").glob("m_*.yaml")):
                    moment = yamlcodec.read_record(path, Moment, self.cipher)
                    if moment.id != path.stem or moment.session != entry.name:
                        raise CorruptFile(
                            path, f"holds {moment.id} of {moment.session}, not {path.stem}"
                        )
                    state.put_moment(moment)
                    vec = path.with_suffix(".vec")
                    if (found := _read_vector(vec, moment, self.cipher)) is not None:
                        state.vectors[moment.number] = found
        archived_path = self.root / ARCHIVED_FILE
        if archived_path.exists():
            for archived in _read_archived(archived_path, self.cipher):
                if archived.number not in state.moments:  # else its removal did not finish
                    state.put_archived(archived)
        if state.moments:  # never hand out an id a moment file already has
            top = max(state.moments)
            state.counters["moment"] = max(state.counters.get("moment", 0), top)
        return state

    def _persist(self, changes: StagedChanges) -> None:
        dirs: set[Path] = set()
        if changes.deleted:
            dirs |= self._delete_files(changes)
        for moment in changes.moments.values():
            path = self._moment_path(moment)
            ensure_private_dir(path.parent)
            write_atomic(
                path, self._seal(yamlcodec.dump_record(moment).encode(), path), sync_dir=False
            )
            dirs.add(path.parent)
        for num, vector in changes.vectors.items():
            moment = self._state.moments[num]
            vec = self._vector_path(moment)
            write_atomic(vec, self._seal(_vector_file(vector, moment), vec), sync_dir=False)
        for num, moment in changes.moments.items():
            if num not in self._state.vectors:  # rewritten text: the old vector is stale
                self._vector_path(moment).unlink(missing_ok=True)
        for session in changes.sessions.values():
            path = self._session_path(session.id)
            write_atomic(
                path, self._seal(yamlcodec.dump_record(session).encode(), path), sync_dir=False
            )
            dirs.add(path.parent)
        if changes.archived or changes.unarchived:
            entries = [e.model_dump(mode="json") for _, e in sorted(self._state.archived.items())]
            document = {"schema_version": SCHEMA_VERSION, "archived": entries}
            archived = self.root / ARCHIVED_FILE
            write_atomic(archived, self._seal(yamlcodec.dump_data(document).encode(), archived))
        for d in dirs:
            fsync_dir(d)
        self._revision += 1
        index = self.root / INDEX_FILE
        write_atomic(index, self._seal(self._index_document().encode(), index))
        self._signature = self._index_signature()
        gone: set[Path] = set()
        for entry in changes.archived.values():  # named in archived.yaml: now safe to delete
            path = self.root / "sessions" / entry.session / "moments" / f"{entry.id}.yaml"
            path.unlink(missing_ok=True)
            path.with_suffix(".vec").unlink(missing_ok=True)
            gone.add(path.parent)
        for d in gone:
            if d.exists():
                fsync_dir(d)

    def _delete_files(self, changes: StagedChanges) -> set[Path]:
        """Delete the files of deleted sessions: moments first, so a crash part-way leaves a
        session with fewer moments (deleting it again finishes), never moments without a
        session. Returns the directories to sync."""
        dirs: set[Path] = set()
        for moment in changes.removed.values():
            path = self._moment_path(moment)
            path.unlink(missing_ok=True)
            path.with_suffix(".vec").unlink(missing_ok=True)
            dirs.add(path.parent)
        for session_id in changes.deleted - set(changes.sessions):
            self._session_path(session_id).unlink(missing_ok=True)
            dirs.add(self._session_path(session_id).parent)
            for empty in (
                self.root / "sessions" / session_id / "moments",
                self.root / "sessions" / session_id,
            ):
                with contextlib.suppress(OSError):  # gone, or re-created in this transaction
                    empty.rmdir()
        return {d for d in dirs if d.exists()}

    def _seal(self, data: bytes, path: Path) -> bytes:
        return yamlcodec.seal(data, path, self.cipher)

    def reseal(self) -> int:
        """Rewrite every file not sealed with the cipher's key (a key rotation; plain files
        are sealed too), one atomic file at a time: a kill leaves each file under the old
        key or the new one, and running this again finishes. Returns the files rewritten."""
        if self.cipher is None:
            raise CorruptFile(self.root, "reseal needs a cipher")
        done = 0
        with self._lock, self._writer_lock():
            paths = [self.root / INDEX_FILE, self.root / ARCHIVED_FILE]
            paths += sorted((self.root / "sessions").rglob("*.yaml"))
            paths += sorted((self.root / "sessions").rglob("*.vec"))
            for path in paths:
                if path.name.startswith(".") or not path.is_file():
                    continue
                raw = path.read_bytes()
                if sealed_key_id(raw) == self.cipher.key_id:
                    continue
                plain = yamlcodec.open_sealed(raw, path, self.cipher)
                write_atomic(path, self._seal(plain, path))
                done += 1
            self._invalidate()
        return done

    def _index_document(self) -> str:
        concepts = {
            concept: ([f"m_{n}" for n in sorted(entry)], sorted(set(entry.values())))
            for concept, entry in self._state.concepts.items()
        }
        return yamlcodec.dump_index(SCHEMA_VERSION, self._revision, self._state.counters, concepts)

    def purge(self) -> None:
        # Every record file is rewritten whole (temp file, rename) when it changes; what may
        # be left is the temp file of a write a crash interrupted. The lock keeps out writers.
        with self.atomic():
            for stale in self.root.rglob(".*.tmp"):
                stale.unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            self._state = NotebookState()
            self._signature = None


def _read_archived(path: Path, cipher: Cipher | None = None) -> list[ArchiveEntry]:
    data = yamlcodec.load_data(yamlcodec.read_text(path, cipher), path)
    if not isinstance(data, dict) or not isinstance(data.get("archived"), list):
        raise CorruptFile(path, "expected a mapping with an 'archived' list")
    entries = []
    for i, item in enumerate(data["archived"]):
        try:
            entries.append(ArchiveEntry.model_validate(item))
        except ValidationError as err:
            raise CorruptFile(
                path, f"entry {i} is not valid: {describe_validation_error(err)}"
            ) from None
    return entries


def _text_digest(moment: Moment) -> str:
    return hashlib.sha256(moment.content.text.encode()).hexdigest()[:32]


def _vector_file(vector: tuple[str, bytes], moment: Moment) -> bytes:
    model, blob = vector
    return f"{model} {_text_digest(moment)}\n".encode() + blob


def _read_vector(
    path: Path, moment: Moment, cipher: Cipher | None = None
) -> tuple[str, bytes] | None:
    """The vector file's (model, bytes), or None when absent or made from other text."""
    try:
        data = yamlcodec.open_sealed(path.read_bytes(), path, cipher)
    except FileNotFoundError:
        return None
    header, _, blob = data.partition(b"\n")
    model, _, digest = header.decode(errors="replace").partition(" ")
    return (model, blob) if digest == _text_digest(moment) and blob else None
