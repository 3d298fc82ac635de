"""Redact and forget (seed 002): a moment's text leaves every place the notebook keeps it.

:class:`Redaction` tombstones the moments it is given and takes their text out of

* rollups that cover them: an extractive rollup (its summary is sentences of its sources)
  gets each quoted sentence replaced by ``[redacted m_N]``; a rollup written by a model
  (``rollup.summarizer`` is not extractive) may paraphrase, so verbatim matching cannot be
  trusted and the whole rollup is tombstoned ("quotes redacted m_N");
* text cut from session notebooks (moments of speaker ``session-notebook``), active or
  archived;
* the cold archive: the files holding a redacted record (or a rollup above) are rewritten
  atomically, and their index entries follow;
* the media store: the image and audio files of redacted moments (their paths, signatures
  and multimodal embedding leave the moment) are deleted unless another moment has them;
* sessions (condensed history, the audit log's text), every item of the LangGraph store
  (session notebooks, their cuts, an app's items) and every checkpoint and pending write of
  the checkpointer, loaded and dumped with the saver's own ``serde``;
* then it purges: the backend's :meth:`~agent_notebook.storage.StorageBackend.purge`, the
  same ``VACUUM`` on the store's and checkpoints' own SQLite files, and the saved vector
  index rewritten.

A text is removed where it appears whole or as any of its sentences of
:data:`MIN_WORDS` words or more; a line (of a summary, a section, a history) that still
shares a run of :data:`RUN_WORDS` words with it (a clipped sentence) is replaced whole.
Texts shorter than that are removed from the moment and its chat message only: words that
few are not matched elsewhere (they would match unrelated text).

:meth:`Redaction.forget` finds what a concept is tied to (the concept index, archived
moments with it, and every moment, archived record and session-notebook line where the
phrase appears as words) and redacts it the same way, the phrase too. The audit log
records each redaction without its text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field

from ..core.enrich import enrich
from ..errors import InvalidInput, NotFound
from ..langgraph.checkpoint.base import scrub_channel, scrub_checkpoint, scrub_metadata
from ..langgraph.store.vectors import IndexedStore
from ..media.store import media_paths_of
from ..model import (
    CUT_SPEAKER,
    ROLLUP_INDEX_PREFIX,
    ArchiveEntry,
    Decision,
    Moment,
    MomentContent,
    Session,
    Tombstone,
    check_moment_id,
    is_free_text,
    normalize_concept,
    now_utc,
    validate_record,
)
from ..storage.sqlite.backend import database_file, vacuum
from .facts import FactKeeper, without_redacted

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore

    from ..compaction import ColdArchive
    from ..config import ChatSettings, NotebookConfig
    from ..media.store import MediaStore
    from ..search.semantic import SemanticIndex
    from ..storage import StorageBackend

__all__ = ["MIN_WORDS", "RUN_WORDS", "ForgetReport", "Redactable", "Redaction", "Scrubber"]

#: A sentence of this many words or more is removed wherever it appears verbatim.
MIN_WORDS: Final = 4
#: A line sharing this many consecutive words with a redacted text is replaced whole.
RUN_WORDS: Final = 6
#: What replaces a line that mentions a forgotten concept.
FORGOTTEN: Final = "[redacted]"
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_WORD = re.compile(r"\w+")
log = logging.getLogger(__name__)


class Redactable(Protocol):
    """The parts of a notebook a redaction reaches: :class:`~agent_notebook.Notebook`, which
    imports this module (so a protocol), passes itself. ``_semantic`` is the vector index
    only when already loaded, and ``_cold_archive`` the archive the facade keeps open."""

    backend: StorageBackend
    home: Path | None
    config: NotebookConfig
    _semantic: SemanticIndex | None
    facts: FactKeeper

    @property
    def semantic(self) -> SemanticIndex | None: ...
    @property
    def archive_dir(self) -> Path | None: ...
    @property
    def store(self) -> BaseStore: ...
    def media_store(self) -> MediaStore: ...
    def checkpointer_for(self, chat: ChatSettings) -> BaseCheckpointSaver[Any]: ...
    def _cold_archive(self, archive_dir: Path | None = ...) -> ColdArchive: ...


class ForgetReport(BaseModel):
    """What :meth:`Notebook.forget` removed, or with ``dry_run`` would remove."""

    concept: str
    #: Original moments redacted (active or archived), in id order.
    moments: list[str] = Field(default_factory=list)
    #: Rollups whose text was redacted (quoted sentences, or the whole rollup).
    rollups: list[str] = Field(default_factory=list)
    #: Session-notebook sections that mentioned it, as ``<thread>/<section>``.
    sections: list[str] = Field(default_factory=list)
    dry_run: bool = False


# -- matching ------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _fragments(text: str) -> list[str]:
    """The pieces of ``text`` removed wherever they appear verbatim, longest first."""
    pieces = [text.strip(), *(s.strip() for s in _SENTENCE_END.split(text))]
    found = {p for p in pieces if len(_words(p)) >= MIN_WORDS}
    return sorted(found, key=len, reverse=True)


def _runs(text: str) -> set[tuple[str, ...]]:
    """Word runs of ``text`` whose presence in a line gives it away."""
    words = _words(text)
    if len(words) < MIN_WORDS:
        return set()
    size = min(RUN_WORDS, len(words))
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def phrase_pattern(phrase: str) -> re.Pattern[str]:
    """``phrase`` as whole words, any case, any spacing."""
    words = phrase.split()
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", re.I)


@dataclass
class _Secret:
    moment_id: str
    text: str
    source_id: str | None
    fragments: list[str] = field(init=False)
    runs: set[tuple[str, ...]] = field(init=False)

    def __post_init__(self) -> None:
        self.fragments = _fragments(self.text)
        self.runs = _runs(self.text)

    @property
    def marker(self) -> str:
        return f"[redacted {self.moment_id}]"


class Scrubber:
    """Removes redacted texts (and forgotten phrases) from strings and JSON-like values."""

    def __init__(self, secrets: Sequence[_Secret] = (), phrases: Sequence[str] = ()) -> None:
        self.secrets = list(secrets)
        self.patterns = [phrase_pattern(p) for p in phrases if p.strip()]
        self.texts = {s.text for s in self.secrets if s.text}
        self.source_ids = {s.source_id for s in self.secrets if s.source_id}
        self.run_sizes = {len(r) for s in self.secrets for r in s.runs}

    def add(self, secret: _Secret) -> None:
        self.secrets.append(secret)
        if secret.text:
            self.texts.add(secret.text)
        if secret.source_id:
            self.source_ids.add(secret.source_id)
        self.run_sizes |= {len(r) for r in secret.runs}

    def __bool__(self) -> bool:
        return bool(self.secrets or self.patterns)

    def _leak(self, line: str) -> str | None:
        """The marker for ``line`` if it still gives a redacted text away, else None."""
        for pattern in self.patterns:
            if pattern.search(line):
                return FORGOTTEN
        if not self.run_sizes:
            return None
        words = _words(line)
        for size in self.run_sizes:
            runs = {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}
            for secret in self.secrets:
                if runs & secret.runs:
                    return secret.marker
        return None

    def leaks(self, text: str) -> bool:
        return self.text(text) != text

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret.text and value.strip() == secret.text.strip():
                return secret.marker
            for piece in secret.fragments:
                if piece in value:
                    value = value.replace(piece, secret.marker)
        lines = value.split("\n")
        leaked = False
        for i, line in enumerate(lines):
            if (marker := self._leak(line)) is not None:
                indent = line[: len(line) - len(line.lstrip(" \t-*>0123456789."))]
                lines[i] = indent + marker
                leaked = True
        return "\n".join(lines) if leaked else value

    def value(self, data: Any) -> Any:
        """``data`` (str, dict, list, tuple, LangChain message, nested) with redacted text
        removed; the same object when nothing changed."""
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, BaseMessage):
            return self._message(data)
        if isinstance(data, dict):
            items = {k: self.value(v) for k, v in data.items()}
            return data if all(items[k] is v for k, v in data.items()) else items
        if isinstance(data, list | tuple):
            changed = [self.value(v) for v in data]
            if all(a is b for a, b in zip(changed, data, strict=True)):
                return data
            return type(data)(changed) if isinstance(data, tuple) else changed
        return data

    def record(self, record: BaseModel) -> BaseModel:
        """``record`` with redacted text removed from its free-text fields only: an id, a
        time or a status that happens to contain a forgotten phrase is structure, and
        rewriting it would break the record. The same object when nothing changed."""
        update: dict[str, Any] = {}
        for name, info in type(record).model_fields.items():
            value = getattr(record, name)
            new = self._field(value, is_free_text(info.annotation, info.metadata))
            if new is not value:
                update[name] = new
        return record.model_copy(update=update) if update else record

    def _field(self, value: Any, free_text: bool) -> Any:
        if isinstance(value, BaseModel):
            return self.record(value)
        if isinstance(value, list):
            changed = [self._field(v, free_text) for v in value]
            return value if all(a is b for a, b in zip(changed, value, strict=True)) else changed
        if free_text and isinstance(value, str) and not isinstance(value, Enum):
            return self.text(value)
        return value

    def _message(self, message: BaseMessage) -> BaseMessage:
        marker = next(
            (
                s.marker
                for s in self.secrets
                if (s.source_id and message.id == s.source_id)
                or (s.text and message.text.strip() == s.text.strip())
            ),
            None,
        )
        content = marker if marker is not None else self.value(message.content)
        update: dict[str, Any] = {}
        if content is not message.content:
            update["content"] = content
        calls = getattr(message, "tool_calls", None)
        if calls:
            scrubbed = self.value(calls)
            if scrubbed is not calls:
                update["tool_calls"] = scrubbed
        return message.model_copy(update=update) if update else message


# -- the work ------------------------------------------------------------------------------


def _verbatim(rollup: Moment) -> bool:
    """A summary made of its sources' sentences (the extractive summarizer, or a model's
    summarizer that fell back to it), where quotes can be found and cut."""
    assert rollup.rollup is not None
    name = rollup.rollup.summarizer
    return name.startswith("extractive") or "used the extractive summarizer" in name


def _tombstone(moment: Moment, tombstone: Tombstone) -> Moment:
    return moment.model_copy(
        update={
            "content": MomentContent(),  # signatures and multimodal embedding too
            "metadata": moment.metadata.model_copy(update={"concepts": [], "retrieval_keys": []}),
            "actions": [],
            "audio_path": None,
            "image_path": None,
            "redacted": tombstone,
        }
    )


@dataclass
class _Plan:
    """What a redaction touches: ``targets`` are tombstoned; the rest is scrubbed."""

    targets: dict[str, Moment] = field(default_factory=dict)  # id -> moment as it was
    archived_targets: set[str] = field(default_factory=set)
    rollups: set[str] = field(default_factory=set)
    sections: list[str] = field(default_factory=list)


class Redaction:
    """One redact or forget over a notebook; see the module docstring."""

    def __init__(self, nb: Redactable, reason: str, who: str) -> None:
        self.nb = nb
        self.backend = nb.backend
        self.who = who
        self.reason = reason
        self.concept: str | None = None
        self.scrubber = Scrubber()
        self.changed_numbers: list[int] = []

    # -- entry points ------------------------------------------------------------------------

    def redact(self, moment_id: str) -> Moment:
        check_moment_id(moment_id)
        moment = self.backend.get_moment(moment_id)
        archived = False
        if moment is None:
            moment = self._archived_moment(moment_id)
            archived = True
        if moment.redacted is not None:
            return moment
        plan = _Plan(targets={moment.id: moment})
        if archived:
            plan.archived_targets.add(moment.id)
        self.scrubber = Scrubber([_secret(moment)])
        self._apply(plan)
        found = self.backend.get_moment(moment_id)
        return found if found is not None else self._archived_moment(moment_id)

    def forget(self, concept: str, *, dry_run: bool) -> ForgetReport:
        name = normalize_concept(concept)
        if not name or not _words(name):
            raise InvalidInput(
                f"forget: the concept {concept!r} has no words; give the concept to forget, "
                "for example 'agent-notebook forget \"Lyon trip\"'"
            )
        self.concept = name
        self.scrubber = Scrubber(phrases=[name])
        pattern = phrase_pattern(name)
        plan = _Plan()
        tied = self.backend.get_concept(name)
        tied_ids = set(tied.moments) if tied is not None else set()
        for moment in self.backend.iter_moments():
            if moment.redacted is not None:
                continue
            if moment.rollup is not None:
                if moment.id in tied_ids or pattern.search(moment.content.text):
                    plan.rollups.add(moment.id)
            elif moment.id in tied_ids or pattern.search(moment.content.text):
                plan.targets[moment.id] = moment
        archived_ids = set(self.backend.archived_with_concept(name))
        for _, records in self._archive_files():
            for moment in records.values():
                if moment.redacted is not None:
                    continue
                hit = moment.id in archived_ids or bool(pattern.search(moment.content.text))
                if hit and moment.rollup is None:
                    plan.targets[moment.id] = moment
                    plan.archived_targets.add(moment.id)
                elif hit:
                    plan.rollups.add(moment.id)
        for secret in map(_secret, plan.targets.values()):
            self.scrubber.add(secret)
        plan.rollups |= self._rollups_over(plan)
        plan.sections = self._sections_mentioning(pattern)
        report = ForgetReport(
            concept=name,
            moments=_by_number(plan.targets),
            rollups=_by_number(plan.rollups),
            sections=plan.sections,
            dry_run=dry_run,
        )
        if not dry_run:
            self._apply(plan)
        return report

    # -- applying ----------------------------------------------------------------------------

    def _apply(self, plan: _Plan) -> None:
        tombstone = validate_record(
            Tombstone,
            {"when": now_utc(), "who": self.who, "why": self.scrubber.text(self.reason)},
            "redaction",
        )
        self._redact_active(plan, tombstone)
        self._redact_archive(plan, tombstone)
        self._scrub_sessions(plan)
        self._scrub_store()
        self._scrub_checkpoints()
        if (semantic := self.nb._semantic) is not None and self.changed_numbers:
            semantic.forget(self.changed_numbers)
        self._purge()
        self._remove_media(media_paths_of(plan.targets.values()))

    def _remove_media(self, gone: set[str]) -> None:
        """Delete the media files of the redacted moments that no other moment (active or
        archived) refers to."""
        if not gone or self.nb.home is None:
            return
        in_use = media_paths_of(self.backend.iter_moments())
        for _, records in self._archive_files():
            in_use |= media_paths_of(records.values())
        self.nb.media_store().remove_unused(sorted(gone), in_use)

    def _redacted(self, moment: Moment, plan: _Plan, tombstone: Tombstone) -> Moment | None:
        """The new version of ``moment``, or None when it keeps no redacted text."""
        if moment.redacted is not None:
            return None
        if moment.id in plan.targets:
            return _tombstone(moment, tombstone)
        if moment.rollup is not None:
            covers = [i for i in moment.rollup.originals if i in plan.targets]
            untouched = not covers and moment.id not in plan.rollups
            if untouched and not self.scrubber.leaks(moment.content.text):
                return None
            if not _verbatim(moment):
                plan.rollups.add(moment.id)
                why = f"quotes redacted {', '.join(covers) or 'text'}"
                return _tombstone(moment, tombstone.model_copy(update={"why": why}))
            plan.rollups.add(moment.id)
            return self._scrubbed_rollup(moment, plan)
        if moment.speaker == CUT_SPEAKER and self.scrubber.leaks(moment.content.text):
            text = self.scrubber.text(moment.content.text)
            return moment.model_copy(
                update={"content": moment.content.model_copy(update={"text": text})}
            )
        return None

    def _scrubbed_rollup(self, rollup: Moment, plan: _Plan) -> Moment:
        assert rollup.rollup is not None
        text = self._scrubbed_index(self.scrubber.text(rollup.content.text), plan)
        gone = {c for t in plan.targets.values() for c in t.metadata.concepts}
        gone |= {self.concept} if self.concept else set()
        lowered = text.casefold()
        concepts = [c for c in rollup.metadata.concepts if c not in gone or c in lowered]
        if self.concept is not None:
            concepts = [c for c in concepts if c != self.concept]
        dropped = [d for d in rollup.rollup.dropped if not self._mentions(d, plan)]
        return rollup.model_copy(
            update={
                "content": rollup.content.model_copy(update={"text": text}),
                "metadata": rollup.metadata.model_copy(
                    update={"concepts": concepts, "retrieval_keys": enrich(text).retrieval_keys}
                ),
                "rollup": rollup.rollup.model_copy(update={"dropped": dropped}),
            }
        )

    def _scrubbed_index(self, text: str, plan: _Plan) -> str:
        """A rollup's text whose index line keeps no item taken from a redacted text."""
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if line.startswith(ROLLUP_INDEX_PREFIX):
                items = line.removeprefix(ROLLUP_INDEX_PREFIX).split("; ")
                kept = [item for item in items if not self._mentions(item, plan)]
                lines[i] = ROLLUP_INDEX_PREFIX + "; ".join(kept) if kept else ""
        return "\n".join(lines).strip()

    def _mentions(self, item: str, plan: _Plan) -> bool:
        """A dropped-manifest item taken from a redacted text, or naming the concept."""
        if self.scrubber.leaks(item):
            return True
        return any(item.casefold() in t.content.text.casefold() for t in plan.targets.values())

    def _redact_active(self, plan: _Plan, tombstone: Tombstone) -> None:
        changed = [
            new
            for moment in self.backend.iter_moments()
            if (new := self._redacted(moment, plan, tombstone)) is not None
        ]
        with self.backend.atomic():
            for start in range(0, len(changed), 500):
                self.backend.put_moments(changed[start : start + 500])
        self.changed_numbers += [m.number for m in changed]

    def _redact_archive(self, plan: _Plan, tombstone: Tombstone) -> None:
        archive = self._archive()
        if archive is None:
            return
        entries: list[ArchiveEntry] = []
        for name in archive.file_names():
            raw = archive.records_of(name)
            lines: list[bytes] = []
            changed = False
            for moment_id, line in raw.items():
                moment = Moment.model_validate_json(line)
                new = self._redacted(moment, plan, tombstone)
                if new is not None:
                    line = new.model_dump_json().encode("utf-8")
                    changed = True
                lines.append(line)
                entries += self._entry_update(moment_id, line, new)
            if changed:
                archive.rewrite(name, lines)
        if entries:
            with self.backend.atomic():
                self.backend.archive_moments(entries)

    def _entry_update(self, moment_id: str, line: bytes, new: Moment | None) -> list[ArchiveEntry]:
        """The entry of an archived record whose line changed (or whose entry is behind a
        rewritten file: a redaction interrupted between the file and the index)."""
        found = self.backend.get_archived([moment_id])
        if not found:
            return []
        entry = found[0]
        digest = hashlib.sha256(line).hexdigest()
        if new is None and entry.sha256 == digest:
            return []
        concepts = entry.concepts if new is None else new.metadata.concepts
        return [entry.model_copy(update={"sha256": digest, "concepts": concepts})]

    def _scrub_sessions(self, plan: _Plan) -> None:
        audit: dict[str, list[Decision]] = {}
        now = now_utc()
        why = self.scrubber.text(self.reason)
        for moment_id, moment in sorted(plan.targets.items(), key=lambda i: int(i[0][2:])):
            what = f"redacted {moment_id}" + (" (forgot a concept)" if self.concept else "")
            audit.setdefault(moment.session, []).append(
                Decision(when=now, what=what, why=why, who=self.who)
            )
        self.nb.facts.forget()  # the engines hold what they read of the redacted text
        with self.backend.atomic():
            for session in self.backend.list_sessions():
                scrubbed = self.scrubber.record(session)
                if isinstance(scrubbed, Session):  # always (a copy of the same model)
                    scrubbed = without_redacted(scrubbed, plan.targets)
                added = audit.get(session.id, [])
                if scrubbed is session and not added:
                    continue
                new = Session.model_validate(scrubbed.model_dump())
                new.decisions = [*new.decisions, *added]
                self.backend.put_session(new)

    def _scrub_store(self) -> None:
        store = self._store()
        if store is None:
            return
        from ..langgraph.stores import write_lock

        with write_lock(store):
            changes = []
            for item in _store_items(store):
                if item.namespace[:1] == ("session",) and isinstance(
                    item.value.get("content"), str
                ):
                    value = self._scrubbed_session_notebook(item.value)
                else:
                    value = self.scrubber.value(item.value)
                if value is not item.value:
                    changes.append((item.namespace, item.key, value))
            for namespace, key, value in changes:
                # an indexed item is embedded again from its scrubbed value (its old vectors
                # go with the old value); others stay unindexed
                indexed = isinstance(store, IndexedStore) and store.is_indexed(namespace, key)
                store.put(namespace, key, value, index=None if indexed else False)

    def _scrubbed_session_notebook(self, value: dict[str, Any]) -> dict[str, Any]:
        """A session notebook's stored value with its text (and the errors of failed
        updates) scrubbed and its revision bumped; its thread, times and marks are
        structure and stay. The same object when nothing changed."""
        content = self.scrubber.text(value["content"])
        old_failures = value.get("failures") or []
        failures = [self._scrubbed_failure(f) for f in old_failures]
        changed = any(a is not b for a, b in zip(failures, old_failures, strict=True))
        if content is value["content"] and not changed:
            return value
        revision = value.get("revision")
        bumped = revision + 1 if isinstance(revision, int) else revision
        return {**value, "content": content, "failures": failures, "revision": bumped}

    def _scrubbed_failure(self, failure: Any) -> Any:
        """A failed update's record with its error scrubbed (its time and updater stay)."""
        if not isinstance(failure, dict) or not isinstance(failure.get("error"), str):
            return failure
        error = self.scrubber.text(failure["error"])
        return failure if error is failure["error"] else {**failure, "error": error}

    def _scrub_checkpoints(self) -> None:
        saver = self._saver()
        if saver is None:
            return
        from langgraph.checkpoint.sqlite import SqliteSaver

        if not isinstance(saver, SqliteSaver):  # a PostgreSQL notebook's: its own statements
            saver.scrub(self.scrubber.value)  # type: ignore[attr-defined]
            return
        serde = saver.serde
        with saver.cursor() as cur:
            rows = cur.execute(
                "SELECT rowid, type, checkpoint, metadata FROM checkpoints"
            ).fetchall()
            for rowid, kind, blob, metadata in rows:
                value = serde.loads_typed((kind, blob))
                scrubbed = scrub_checkpoint(self.scrubber.value, value)
                meta = json.loads(metadata) if metadata is not None else None
                new_meta = scrub_metadata(self.scrubber.value, meta)
                if scrubbed is value and new_meta is meta:
                    continue
                new_kind, new_blob = serde.dumps_typed(scrubbed)
                cur.execute(
                    "UPDATE checkpoints SET type = ?, checkpoint = ?, metadata = ? WHERE rowid = ?",
                    (
                        new_kind,
                        new_blob,
                        None if new_meta is None else json.dumps(new_meta, ensure_ascii=False),
                        rowid,
                    ),
                )
            rows = cur.execute("SELECT rowid, channel, type, value FROM writes").fetchall()
            for rowid, channel, kind, blob in rows:
                value = serde.loads_typed((kind, blob))
                scrubbed = scrub_channel(self.scrubber.value, channel, value)
                if scrubbed is not value:
                    new_kind, new_blob = serde.dumps_typed(scrubbed)
                    cur.execute(
                        "UPDATE writes SET type = ?, value = ? WHERE rowid = ?",
                        (new_kind, new_blob, rowid),
                    )

    def _purge(self) -> None:
        self.backend.purge()
        main = Path(self.backend.location) if self.backend.capabilities.name == "sqlite" else None
        for conn in self._side_connections():
            if database_file(conn) != main:
                vacuum(conn)
        if (saver := self._saver()) is not None and hasattr(saver, "pool"):  # PostgreSQL's
            from ..langgraph.store.postgres import vacuum_full

            vacuum_full(saver.pool)
        self._purge_vectors()

    def _purge_vectors(self) -> None:
        home = self.nb.home
        if home is None or self.backend.capabilities.name != "yaml":
            return
        index_file = home / "embeddings.faiss"
        if not index_file.exists():
            return
        semantic = self.nb.semantic
        if semantic is not None and semantic.index_file == index_file:
            semantic.purge()
        else:  # derived, and no embedder here to rebuild it: gone until the next reindex
            index_file.unlink(missing_ok=True)
            index_file.with_name(index_file.name + ".json").unlink(missing_ok=True)

    # -- finding -----------------------------------------------------------------------------

    def _archived_moment(self, moment_id: str) -> Moment:
        found = self.backend.get_archived([moment_id])
        archive = self._archive()
        if not found or archive is None:
            raise NotFound(
                f"redact: no moment {moment_id} in {self.backend.location} (neither active nor "
                "archived); list moments with 'agent-notebook moments'"
            )
        return Moment.model_validate_json(archive.records_of(found[0].file)[moment_id])

    def _rollups_over(self, plan: _Plan) -> set[str]:
        """Rollups (active and archived) whose originals include a target."""
        found = {
            m.id
            for m in self.backend.iter_moments()
            if m.rollup is not None and set(m.rollup.originals) & set(plan.targets)
        }
        for _, records in self._archive_files():
            found |= {
                m.id
                for m in records.values()
                if m.rollup is not None and set(m.rollup.originals) & set(plan.targets)
            }
        return found

    def _sections_mentioning(self, pattern: re.Pattern[str]) -> list[str]:
        store = self._store()
        if store is None:
            return []
        from ..session import sections
        from ..session.session_notebook import KEY, NAMESPACE_ROOT

        found = []
        for item in _store_items(store):
            if item.namespace[:1] != (NAMESPACE_ROOT,) or len(item.namespace) != 2:
                continue
            if item.key != KEY or not isinstance(item.value.get("content"), str):
                continue
            for name, text in sections.parse(item.value["content"]).items():
                if pattern.search(text):
                    found.append(f"{item.namespace[1]}/{name}")
        return found

    def _archive_files(self) -> Iterator[tuple[str, dict[str, Moment]]]:
        archive = self._archive()
        if archive is None:
            return
        for name in archive.file_names():
            records = archive.records_of(name)
            yield name, {i: Moment.model_validate_json(line) for i, line in records.items()}

    def _archive(self) -> ColdArchive | None:
        if self.nb.archive_dir is None:
            return None
        return self.nb._cold_archive()

    def _store(self) -> BaseStore | None:
        from ..langgraph.stores import is_postgres, store_path

        if is_postgres(self.backend):  # in the database: there is one
            return self.nb.store
        path = store_path(self.backend)
        return self.nb.store if path is not None and path.exists() else None

    def _saver(self) -> BaseCheckpointSaver[Any] | None:
        """The checkpointer to scrub: a ``SqliteSaver`` on an existing file, or a PostgreSQL
        notebook's ``NotebookPostgresSaver`` (which has ``scrub``)."""
        from langgraph.checkpoint.sqlite import SqliteSaver

        from ..langgraph.stores import CHECKPOINT_FILE, is_postgres, store_path

        chat = self.nb.config.chat
        path = chat.checkpoints
        if path is None and is_postgres(self.backend):
            saver = self.nb.checkpointer_for(chat)
            return saver if hasattr(saver, "scrub") else None
        if path is None and (beside := store_path(self.backend)) is not None:
            path = (
                beside
                if self.backend.capabilities.name == "sqlite"
                else beside.with_name(CHECKPOINT_FILE)
            )
        if path is None or not Path(path).expanduser().exists():
            return None
        saver = self.nb.checkpointer_for(chat)
        return saver if isinstance(saver, SqliteSaver) else None

    def _side_connections(self) -> list[sqlite3.Connection]:
        conns = []
        if (store := self._store()) is not None and isinstance(
            conn := getattr(store, "conn", None), sqlite3.Connection
        ):
            conns.append(conn)
        if (saver := self._saver()) is not None and isinstance(
            conn := getattr(saver, "conn", None), sqlite3.Connection
        ):
            conns.append(conn)
        unique: dict[Path | None, sqlite3.Connection] = {}
        for conn in conns:
            unique.setdefault(database_file(conn), conn)
        return list(unique.values())


def _secret(moment: Moment) -> _Secret:
    return _Secret(moment.id, moment.content.text, moment.source_id)


def _by_number(ids: Any) -> list[str]:
    return sorted(ids, key=lambda i: int(i[2:]))


def _store_items(store: BaseStore, page: int = 500) -> Iterator[Any]:
    offset = 0
    while batch := store.search((), limit=page, offset=offset):
        yield from batch
        offset += len(batch)
