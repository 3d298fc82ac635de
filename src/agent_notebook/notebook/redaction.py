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
moments with it, and every moment and archived record that holds all the concept's words as
search matches them, by their stems, in its text or its concepts: :class:`.ConceptMatch`)
and redacts it the same way; rollups over those moments, and the lines of rollups, session
notebooks and histories that hold all the words, go too. The audit log records each
redaction without its text. The matching is :mod:`.scrubbing`'s, the
scrubbing of the store and the checkpoints :mod:`.chat_scrubbing`'s.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..compaction.notes import is_note_of
from ..core.enrich import enrich
from ..core.validation import validate_record
from ..errors import InvalidInput, NotFound
from ..langgraph.tables import tables_of
from ..media.store import media_paths_of
from ..model import (
    CUT_SPEAKER,
    ROLLUP_INDEX_PREFIX,
    ArchiveEntry,
    Decision,
    FadedLine,
    KeptLine,
    Moment,
    MomentContent,
    Session,
    Tombstone,
    check_moment_id,
    normalize_concept,
    now_utc,
)
from .chat_scrubbing import scrub_store, store_items
from .facts import without_redacted
from .scrubbing import MIN_WORDS, RUN_WORDS, ConceptMatch, Scrubber, secret_of

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore

    from ..compaction import ColdArchive
    from .reach import Reach

__all__ = ["MIN_WORDS", "RUN_WORDS", "ForgetReport", "Redaction", "Scrubber"]

log = logging.getLogger(__name__)


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
    #: Only the concept's words were redacted within the moments (else whole moments).
    words_only: bool = False
    #: Each moment's text as it is (whole moments), or as it would be left (words only).
    texts: dict[str, str] = Field(default_factory=dict)
    #: What matched the concept in each moment: its words as the moment writes them
    #: ("peanuts", "allergic"), or a concept of its index that holds them.
    matched: dict[str, list[str]] = Field(default_factory=dict)


# -- the work ------------------------------------------------------------------------------


def _verbatim(rollup: Moment) -> bool:
    """A summary made of its sources' sentences (the extractive summarizer, or a model's
    summarizer that fell back to it), where quotes can be found and cut."""
    assert rollup.rollup is not None
    name = rollup.rollup.summarizer
    return name.startswith("extractive") or "used the extractive summarizer" in name


def _note_of(line: str, targets: Sequence[Moment]) -> Moment | None:
    """The redacted moment ``line`` of a rollup's notes may stand for, if any."""
    return next((t for t in targets if is_note_of(line, t)), None)


def _tombstone(moment: Moment, tombstone: Tombstone) -> Moment:
    return moment.model_copy(
        update={
            "content": MomentContent(),  # signatures and multimodal embedding too
            "metadata": moment.metadata.model_copy(
                update={"concepts": [], "retrieval_keys": [], "fact_keys": []}
            ),
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
    #: Moments that keep their text but the forgotten words (``forget --words-only``).
    words: dict[str, Moment] = field(default_factory=dict)
    archived_targets: set[str] = field(default_factory=set)
    rollups: set[str] = field(default_factory=set)
    sections: list[str] = field(default_factory=list)


class Redaction:
    """One redact or forget over a notebook; see the module docstring."""

    def __init__(self, reach: Reach, reason: str, who: str) -> None:
        self.reach = reach
        self.backend = reach.context.backend
        self.who = who
        self.reason = reason
        self.concept: str | None = None
        #: What the audit log says of each removal besides its id (the forgetting policy's).
        self.label = ""
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
        self.scrubber = Scrubber([secret_of(moment)])
        self._apply(plan)
        found = self.backend.get_moment(moment_id)
        return found if found is not None else self._archived_moment(moment_id)

    def redact_all(self, moments: list[Moment], label: str) -> None:
        """Redact ``moments`` (active originals) in one pass, each noted in the audit log
        with ``label`` (the forgetting policy, :mod:`.forgetting`)."""
        targets = {m.id: m for m in moments if m.redacted is None}
        if not targets:
            return
        self.label = label
        self.scrubber = Scrubber([secret_of(m) for m in targets.values()])
        self._apply(_Plan(targets=targets))

    def forget(self, concept: str, *, dry_run: bool, words_only: bool = False) -> ForgetReport:
        name = normalize_concept(concept)
        match = ConceptMatch(name)
        if not name or not match:
            raise InvalidInput(
                f"forget: the concept {concept!r} has no words; give the concept to forget, "
                "for example 'agent-notebook forget \"Lyon trip\"'"
            )
        self.concept = name
        self.scrubber = Scrubber(concepts=[name], words_only=words_only)
        plan = _Plan()
        hit = plan.words if words_only else plan.targets
        matched: dict[str, list[str]] = {}
        tied = self.backend.get_concept(name)
        tied_ids = set(tied.moments) if tied is not None else set()
        tied_ids |= set(self.backend.archived_with_concept(name))
        for moment, archived in self._every_moment():
            if moment.redacted is not None:
                continue
            if moment.rollup is not None:
                if moment.id in tied_ids or self._rollup_mentions(moment):
                    plan.rollups.add(moment.id)
                continue
            words = match.found(moment.content.text, moment.metadata.concepts)
            if words is None and moment.id in tied_ids:
                words = [name]
            if words is not None:
                hit[moment.id] = moment
                matched[moment.id] = words
                if archived and not words_only:
                    plan.archived_targets.add(moment.id)
        for secret in map(secret_of, plan.targets.values()):
            self.scrubber.add(secret)
        plan.rollups |= self._rollups_over(set(plan.targets) | set(plan.words))
        plan.sections = self._sections_mentioning()
        chosen = plan.words if words_only else plan.targets
        report = ForgetReport(
            concept=name,
            moments=_by_number(chosen),
            rollups=_by_number(plan.rollups),
            sections=plan.sections,
            dry_run=dry_run,
            words_only=words_only,
            texts={
                i: self.scrubber.words(m.content.text) if words_only else m.content.text
                for i, m in chosen.items()
            },
            matched={i: matched[i] for i in _by_number(chosen)},
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
        if (store := self._store()) is not None:
            scrub_store(store, self.scrubber)
        if (saver := self._saver()) is not None:
            tables_of(self.backend).scrub_checkpoints(saver, self.scrubber.value)
        self.reach.vectors.forget(self.changed_numbers)
        self._purge()
        self._remove_media(media_paths_of(plan.targets.values()))

    def _remove_media(self, gone: set[str]) -> None:
        """Delete the media files of the redacted moments that no other moment (active or
        archived) refers to."""
        if not gone or self.reach.context.home is None:
            return
        in_use = media_paths_of(self.backend.iter_moments())
        for _, records in self._archive_files():
            in_use |= media_paths_of(records.values())
        self.reach.context.media_store().remove_unused(sorted(gone), in_use)

    def _redacted(self, moment: Moment, plan: _Plan, tombstone: Tombstone) -> Moment | None:
        """The new version of ``moment``, or None when it keeps no redacted text."""
        if moment.redacted is not None:
            return None
        if moment.id in plan.targets:
            return _tombstone(moment, tombstone)
        if moment.id in plan.words:
            return self._words_scrubbed(moment)
        if moment.rollup is not None and self.scrubber.words_only:
            if moment.id not in plan.rollups:
                return None
            return self._scrubbed_rollup(moment, plan)  # words only: its text keeps the rest
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

    def _words_scrubbed(self, moment: Moment) -> Moment:
        """``moment`` without the forgotten words (each ``[redacted]``) nor the concept,
        its retrieval keys read again from what is left."""
        text = self.scrubber.words(moment.content.text)
        concepts = [c for c in moment.metadata.concepts if not self._names_concept(c)]
        return moment.model_copy(
            update={
                "content": moment.content.model_copy(update={"text": text}),
                "metadata": moment.metadata.model_copy(
                    update={
                        "concepts": concepts,
                        "retrieval_keys": enrich(text).retrieval_keys,
                        "fact_keys": [],  # read from the words forgotten: filed no more
                    }
                ),
            }
        )

    def _scrubbed_rollup(self, rollup: Moment, plan: _Plan) -> Moment:
        assert rollup.rollup is not None
        if self.scrubber.words_only:  # the concept's words go from each line, the rest stays
            words = self.scrubber.words
            kept = [k.model_copy(update={"text": words(k.text)}) for k in rollup.rollup.kept]
            faded = [f.model_copy(update={"line": words(f.line)}) for f in rollup.rollup.faded]
            text = self._scrubbed_index(words(rollup.content.text), plan)
        else:
            kept, faded, text = self._rollup_without(rollup, plan)
        gone = {c for t in plan.targets.values() for c in t.metadata.concepts}
        gone |= {self.concept} if self.concept else set()
        lowered = text.casefold()
        concepts = [c for c in rollup.metadata.concepts if c not in gone or c in lowered]
        concepts = [c for c in concepts if not self._names_concept(c)]
        dropped = [d for d in rollup.rollup.dropped if not self._mentions(d, plan)]
        return rollup.model_copy(
            update={
                "content": rollup.content.model_copy(update={"text": text}),
                "metadata": rollup.metadata.model_copy(
                    update={
                        "concepts": concepts,
                        "retrieval_keys": enrich(text).retrieval_keys,
                        "fact_keys": [],  # read from the words forgotten: filed no more
                    }
                ),
                "rollup": rollup.rollup.model_copy(
                    update={"dropped": dropped, "kept": kept, "faded": faded}
                ),
            }
        )

    def _names_concept(self, concept: str) -> bool:
        """Whether ``concept`` (of a moment's index) goes with the forgotten concept: it is
        the concept, holds all its words, or (words only) any of them."""
        if concept == self.concept:
            return True
        if self.scrubber.words_only:
            return self.scrubber.words(concept) != concept
        return self.scrubber.leaks(concept)

    def _rollup_without(
        self, rollup: Moment, plan: _Plan
    ) -> tuple[list[KeptLine], list[FadedLine], str]:
        """``rollup``'s kept lines, faded lines and text without the redacted moments' (and
        without those that name the forgotten concept)."""
        assert rollup.rollup is not None
        leaks = self.scrubber.leaks
        targets = [t for t in plan.targets.values() if t.id in rollup.rollup.originals]
        kept = [k for k in rollup.rollup.kept if k.source not in plan.targets and not leaks(k.text)]
        faded = [
            f for f in rollup.rollup.faded if f.source not in plan.targets and not leaks(f.line)
        ]
        gone = {f.line for f in rollup.rollup.faded} - {f.line for f in faded}
        lines = [  # the notes and faded lines of a redacted moment go with it
            f"[redacted {t.id}]" if (t := _note_of(line, targets)) is not None else line
            for line in rollup.content.text.split("\n")
            if line not in gone
        ]
        return kept, faded, self._scrubbed_index(self.scrubber.text("\n".join(lines)), plan)

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
            what += f" ({self.label})" if self.label else ""
            audit.setdefault(moment.session, []).append(
                Decision(when=now, what=what, why=why, who=self.who)
            )
        self.reach.facts.forget()  # the engines hold what they read of the redacted text
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

    def _purge(self) -> None:
        self.backend.purge()
        tables_of(self.backend).vacuum(self.backend, self._store(), self._saver())
        self._purge_vectors()

    def _purge_vectors(self) -> None:
        home = self.reach.context.home
        if home is None or not self.backend.capabilities.vector_index_file:
            return
        index_file = home / "embeddings.faiss"
        if not index_file.exists():
            return
        semantic = self.reach.vectors.semantic
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

    def _rollups_over(self, ids: set[str]) -> set[str]:
        """Rollups (active and archived) whose originals include one of ``ids``."""
        return {
            m.id
            for m, _ in self._every_moment()
            if m.rollup is not None
            and m.redacted is None
            and not ids.isdisjoint(m.rollup.originals)
        }

    def _every_moment(self) -> Iterator[tuple[Moment, bool]]:
        """Every moment, active then archived, and whether it is an archived record."""
        for moment in self.backend.iter_moments():
            yield moment, False
        for _, records in self._archive_files():
            for moment in records.values():
                yield moment, True

    def _rollup_mentions(self, rollup: Moment) -> bool:
        """Whether the forgotten concept is in ``rollup``'s text, a line it keeps (the text of
        an original, word for word) or a faded line."""
        assert rollup.rollup is not None
        lines = [k.text for k in rollup.rollup.kept] + [f.line for f in rollup.rollup.faded]
        return any(self.scrubber.leaks(text) for text in [rollup.content.text, *lines])

    def _sections_mentioning(self) -> list[str]:
        store = self._store()
        if store is None:
            return []
        from ..session import sections
        from ..session.session_notebook import KEY, NAMESPACE_ROOT

        found = []
        for item in store_items(store):
            if item.namespace[:1] != (NAMESPACE_ROOT,) or len(item.namespace) != 2:
                continue
            if item.key != KEY or not isinstance(item.value.get("content"), str):
                continue
            for name, text in sections.parse(item.value["content"]).items():
                if self.scrubber.leaks(text):
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
        if self.reach.context.archive_dir is None:
            return None
        return self.reach.archive.cold_archive()

    def _store(self) -> BaseStore | None:
        from ..langgraph.stores import in_database, store_path

        if in_database(self.backend):  # in the database: there is one
            return self.reach.langgraph.store
        path = store_path(self.backend)
        return self.reach.langgraph.store if path is not None and path.exists() else None

    def _saver(self) -> BaseCheckpointSaver[Any] | None:
        """The checkpointer to scrub, when its tables hold any (see
        :meth:`~agent_notebook.langgraph.tables.Tables.has_checkpoints`)."""
        chat = self.reach.context.config.chat
        if not tables_of(self.backend).has_checkpoints(self.backend, chat.checkpoints):
            return None
        return self.reach.langgraph.checkpointer_for(chat)


def _by_number(ids: Any) -> list[str]:
    return sorted(ids, key=lambda i: int(i[2:]))
