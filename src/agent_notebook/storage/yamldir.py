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

The files are the truth: ``index.yaml``'s concept index is rebuilt from the moments on load.
A ``.vec`` file names its model and a digest of the text it was made from; one that no
longer matches its moment is ignored (the moment is embedded again). Every file is written
atomically (temp file, fsync, rename), and a transaction's files are all-or-nothing even
when the process dies among them: an undo journal (``.batch-journal.json``, see
:mod:`.journal`) is written first, then the moments, their session, ``archived.yaml`` and
last ``index.yaml``, whose rename commits; an archived moment's file is deleted after that.
The journal is settled (rolled back, or its commit finished) under the lock before the next
load or write, and opening removes the temp files of interrupted writes. A ``.lock`` file
(``flock``) admits one writing process at a time; a process reloads its cache, under that
lock (so it never sees a transaction in part), when another one has changed ``index.yaml``.

Opened ``read_only`` (the source of an import), it writes nothing into the folder: no
``.lock`` file, no settling of a journal (a folder holding one is refused: open it as a
notebook once to settle it), no removal of temp files; it reads under a shared lock on the
``.lock`` file when there is one, and refuses every write. Its records are handed out
uncopied and its words are not indexed until searched (a ``shared`` staged backend): an
import only reads them, and copying each moment three times (planning, media, writing)
was 40% of importing 100,000 moments.

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

from ..core import yamlcodec
from ..core.crypto import sealed_key_id
from ..core.files import (
    ensure_private_dir,
    ensure_private_file,
    exclusive_lock,
    remove_temp_files,
    shared_lock_if_present,
    write_atomic,
)
from ..core.validation import describe_validation_error
from ..errors import CorruptFile, StorageError
from ..model import MAX_ID_NUMBER, SCHEMA_VERSION, ArchiveEntry, Moment, Session
from .base import Capabilities
from .journal import JOURNAL_FILE, FileBatch, recover
from .staged import NotebookState, StagedBackend, StagedChanges

if TYPE_CHECKING:
    from ..core.crypto import Cipher

INDEX_FILE = "index.yaml"
ARCHIVED_FILE = "archived.yaml"
LOCK_FILE = ".lock"
LOCK_TIMEOUT_S = 30.0

_Signature = tuple[int, int, int, int]
_REVISION = re.compile(rb"\nrevision: ([0-9]+)\n")


class YamlDirBackend(StagedBackend):
    capabilities = Capabilities(
        name="yaml",
        crash_atomic=True,  # by the undo journal (see the module docstring)
        multi_process=True,
        persistent=True,
        native_full_text=False,
        vector_index_file=True,  # the vectors are one file per moment
        encrypts_at_rest=True,
    )

    def __init__(
        self, root: Path | str, *, cipher: Cipher | None = None, read_only: bool = False
    ) -> None:
        super().__init__(shared=read_only)  # nothing changes what it hands out
        self.root = Path(root)
        self.cipher = cipher  # encryption at rest: every file is sealed whole, same names
        self.read_only = read_only
        self._signature: _Signature | None = None
        self._revision = 0
        if read_only:
            self._lock_path = self.root / LOCK_FILE
            if not self.root.is_dir():
                raise CorruptFile(self.root, "is not a folder holding a YAML notebook")
            with self._lock:
                self._refresh()
            return
        ensure_private_dir(self.root / "sessions")
        self._lock_path = ensure_private_file(self.root / LOCK_FILE)
        with self._lock, self._writer_lock():
            self._refresh()  # settles the journal of a batch a crash cut short
            self._remove_temp_files()

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
        if self.read_only:
            return shared_lock_if_present(self._lock_path, LOCK_TIMEOUT_S)
        return exclusive_lock(self._lock_path, LOCK_TIMEOUT_S)

    def _write(self) -> StagedChanges:
        if self.read_only:
            raise StorageError(f"{self.root} is opened read-only (the source of an import)")
        return super()._write()

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
        journal = self.root / JOURNAL_FILE
        if signature is not None and signature == self._signature and not journal.exists():
            return
        # Loading while another process writes a batch could see part of it: load under the
        # writers' lock, once the journal of a batch a crash cut short is settled.
        with self._writer_lock():
            if self.read_only and journal.exists():
                raise CorruptFile(
                    journal,
                    "a write to this notebook was cut short and is not settled yet; open it "
                    "as a notebook once (agent-notebook stats --home DIR) to settle it, then "
                    "import it again",
                )
            if not self.read_only:
                self._settle()
            signature = self._index_signature()
            if signature is None or signature != self._signature:
                self._state = self._load()
                self._signature = signature

    def _settle(self) -> None:
        """Settle a journal a crash left (with the writers' lock held)."""
        if recover(self.root):  # a crashed batch: its cut-short temp files go too
            self._remove_temp_files()
        else:  # a crash while the journal itself was written leaves only its temp file
            remove_temp_files(self.root, {JOURNAL_FILE})

    def _invalidate(self) -> None:
        self._signature = None

    def _load(self) -> NotebookState:
        state = NotebookState(text_index=not self._shared)
        index_path = self.root / INDEX_FILE
        if index_path.exists():
            index = yamlcodec.load_data(yamlcodec.read_text(index_path, self.cipher), index_path)
            self._revision, counters = _read_index(index, index_path)
            state.counters.update(counters)
        sessions_dir = self.root / "sessions"
        for entry in sorted(sessions_dir.iterdir()) if sessions_dir.is_dir() else []:
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
        writes: list[tuple[Path, bytes]] = []
        for moment in changes.moments.values():
            writes.append(self._sealed(self._moment_path(moment), yamlcodec.dump_record(moment)))
        for num, vector in changes.vectors.items():
            moment = self._state.moments[num]
            vec = self._vector_path(moment)
            writes.append((vec, self._seal(_vector_file(vector, moment), vec)))
        stale = [  # rewritten text: the old vector no longer describes it
            self._vector_path(moment)
            for num, moment in changes.moments.items()
            if num not in self._state.vectors
        ]
        for session in changes.sessions.values():
            writes.append(
                self._sealed(self._session_path(session.id), yamlcodec.dump_record(session))
            )
        if changes.archived or changes.unarchived:
            entries = [e.model_dump(mode="json") for _, e in sorted(self._state.archived.items())]
            document = {"schema_version": SCHEMA_VERSION, "archived": entries}
            writes.append(self._sealed(self.root / ARCHIVED_FILE, yamlcodec.dump_data(document)))
        deleted = self._deleted_files(changes)
        written = {path for path, _ in writes}
        archived_files = []  # deleted once archived.yaml, committed, names them
        for entry in changes.archived.values():
            path = self.root / "sessions" / entry.session / "moments" / f"{entry.id}.yaml"
            archived_files += [path, path.with_suffix(".vec")]
        self._revision += 1
        FileBatch(
            self.root,
            commit=self._sealed(self.root / INDEX_FILE, self._index_document()),
            writes=writes,
            deletes=[p for p in stale + deleted if p.exists() and p not in written],
            after_commit=[p for p in archived_files if p.exists()],
        ).apply()
        self._signature = self._index_signature()
        if changes.deleted:
            self._remove_empty_dirs(changes.deleted - set(changes.sessions))

    def _sealed(self, path: Path, text: str) -> tuple[Path, bytes]:
        return path, self._seal(text.encode(), path)

    def _deleted_files(self, changes: StagedChanges) -> list[Path]:
        """The files of deleted sessions (their moments, vectors and session file), deleted
        inside the journaled batch: a crash part-way puts them all back."""
        paths: list[Path] = []
        for moment in changes.removed.values():
            path = self._moment_path(moment)
            paths += [path, path.with_suffix(".vec")]
        for session_id in changes.deleted - set(changes.sessions):
            paths.append(self._session_path(session_id))
        return paths

    def _remove_empty_dirs(self, session_ids: set[str]) -> None:
        """After the commit: a deleted session's directories, if nothing else is in them."""
        for session_id in session_ids:
            for empty in (
                self.root / "sessions" / session_id / "moments",
                self.root / "sessions" / session_id,
            ):
                with contextlib.suppress(OSError):  # not empty, or already gone
                    empty.rmdir()

    def _seal(self, data: bytes, path: Path) -> bytes:
        return yamlcodec.seal(data, path, self.cipher)

    def reseal(self) -> int:
        """Rewrite every file not sealed with the cipher's key (a key rotation; plain files
        are sealed too), one atomic file at a time: a kill leaves each file under the old
        key or the new one, and running this again finishes. Returns the files rewritten."""
        if self.cipher is None or self.read_only:
            raise CorruptFile(self.root, "reseal needs a cipher and a notebook open to write")
        done = 0
        with self._lock, self._writer_lock():
            self._refresh()  # a batch cut short is settled first, under the key it was in
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
        if self.read_only:
            raise StorageError(f"{self.root} is opened read-only (the source of an import)")
        # Every record file is rewritten whole (temp file, rename) when it changes; what may
        # be left is the temp file of a write a crash interrupted. The lock keeps out writers.
        with self.atomic():
            self._remove_temp_files()

    def _remove_temp_files(self) -> None:
        """The temp files of this backend's interrupted writes (call with the writers' lock
        held). Only its own: other parts of a home (media, the vector index) write theirs
        without this lock."""
        remove_temp_files(self.root, {INDEX_FILE, ARCHIVED_FILE, JOURNAL_FILE})
        sessions = self.root / "sessions"
        remove_temp_files(sessions)
        for entry in sessions.iterdir():
            if entry.is_dir():
                remove_temp_files(entry / "moments")

    def close(self) -> None:
        with self._lock:
            self._state = NotebookState()
            self._signature = None


def _read_index(index: object, path: Path) -> tuple[int, dict[str, int]]:
    """``index.yaml``'s revision and counters, each a whole number from 0 to
    :data:`MAX_ID_NUMBER` (a larger one could not be stored by any backend)."""
    if not isinstance(index, dict) or not isinstance(index.get("counters"), dict):
        raise CorruptFile(
            path,
            "expected a mapping with a 'counters' mapping (the numbers ids are taken from, "
            "as 'agent-notebook export' writes them: 'counters: {}' when there are none)",
        )
    revision = index.get("revision", 0)
    numbers = {"revision": revision, **{f"counters.{k}": v for k, v in index["counters"].items()}}
    for name, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID_NUMBER:
            shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:40]}…"
            raise CorruptFile(
                path, f"{name} is {shown}: expected a whole number from 0 to {MAX_ID_NUMBER}"
            )
    return revision, {str(k): v for k, v in index["counters"].items()}


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
