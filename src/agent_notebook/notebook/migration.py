"""Migrating a notebook to another backend (a PostgreSQL database): everything copied with
:func:`.exchange.copy_notebook` into an empty target, then both counted
(:func:`notebook_counts`), so a difference shows before the source is given up."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import Conflict
from ..storage import StorageBackend
from .exchange import Archives, ChatState, CopyReport, copy_notebook

if TYPE_CHECKING:
    from ..media.store import MediaStore

__all__ = ["Count", "MigrationReport", "migrate", "notebook_counts", "refuse_unless_empty"]


@dataclass(frozen=True, slots=True)
class Count:
    """One thing :func:`migrate` counts in the source and in the target."""

    what: str
    source: int
    target: int

    @property
    def ok(self) -> bool:
        return self.source == self.target


@dataclass(frozen=True, slots=True)
class MigrationReport:
    source: str
    target: str
    counts: list[Count]
    copied: CopyReport

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.counts)


def migrate(
    source: StorageBackend,
    target: StorageBackend,
    chat: tuple[ChatState, ChatState],
    *,
    archives: Archives | None = None,
    media: tuple[MediaStore, MediaStore] | None = None,
    progress: Callable[[int], None] | None = None,
) -> MigrationReport:
    """Copy the whole of ``source`` (records, vectors, archive, chat state, media files)
    into the empty ``target`` through :func:`copy_notebook`, then count both. Only reads
    ``source``; ``target`` must be empty (:class:`Conflict` otherwise). ``chat`` is the
    (source, target) store and checkpointer, whatever kind each is; ``media`` the (source,
    target) media stores."""
    refuse_unless_empty(target, chat[1])
    copied_media: list[str] = []
    if media is not None:
        from ..media.store import media_paths_of

        wanted = sorted(media_paths_of(source.iter_moments()))
        copied_media = media[1].copy_from(media[0], wanted) if wanted else []
    try:
        report = copy_notebook(source, target, progress, archives=archives, chat=chat)
    except BaseException:
        if media is not None:  # a file the target had before stays
            for name in copied_media:
                (media[1].home / name).unlink(missing_ok=True)
        raise
    mine, theirs = (
        notebook_counts(source, chat[0], media and media[0]),
        notebook_counts(target, chat[1], media and media[1]),
    )
    counts = [Count(k, mine[k], theirs.get(k, 0)) for k in mine]
    counts += [Count(k, 0, v) for k, v in theirs.items() if k not in mine]
    return MigrationReport(source.location, target.location, counts, report)


def refuse_unless_empty(target: StorageBackend, chat: ChatState) -> None:
    """:class:`Conflict` unless ``target`` holds no record, store item nor checkpoint."""
    from ..langgraph.stores import store_items

    held = {
        "sessions": target.count_sessions(),
        "moments": target.count_moments(),
        "archived moments": target.count_archived(),
    }
    if chat.store is not None:
        held["store items"] = sum(1 for _ in store_items(chat.store))
    if chat.checkpointer is not None:
        held["checkpoints"] = sum(1 for _ in chat.checkpointer.list(None))
    found = ", ".join(f"{n} {what}" for what, n in held.items() if n)
    if found:
        raise Conflict(
            f"{target.location} is not empty ({found}): migrate only into a new notebook "
            "(a new database or schema); to merge into this one, or to finish a migration "
            "that stopped half-way (identical records are skipped), export this notebook "
            "(agent-notebook export --to sqlite FILE) and import it there "
            "(agent-notebook --home URL import FILE)"
        )


def notebook_counts(
    backend: StorageBackend, chat: ChatState, media: MediaStore | None = None
) -> dict[str, int]:
    """What a notebook holds, counted: records, indexes, counters, vectors of each model,
    audit entries, chat state and (with ``media``) the media files its moments refer to
    that are there."""
    from ..langgraph.stores import store_items

    sessions = backend.list_sessions()
    counts = {
        "sessions": len(sessions),
        "moments": backend.count_moments(),
        "archived moments": backend.count_archived(),
        "concepts": backend.count_concepts(),
        "audit entries": sum(len(s.decisions) for s in sessions),
    }
    counters = backend.counters()  # one row per day's session counter would be too many
    counts |= {"counters": len(counters), "counter values": sum(counters.values())}
    for model in backend.vector_models():
        counts[f"vectors {model}"] = _count_vectors(backend, model)
    if chat.store is not None:
        counts["store items"] = sum(1 for _ in store_items(chat.store))
    if chat.checkpointer is not None:
        counts["checkpoints"] = sum(1 for _ in chat.checkpointer.list(None))
    if media is not None:
        from ..media.store import media_paths_of

        wanted = media_paths_of(backend.iter_moments())
        counts["media files"] = sum(1 for name in wanted if (media.home / name).is_file())
    return counts


def _count_vectors(backend: StorageBackend, model: str) -> int:
    total, after = 0, 0
    while page := backend.get_vectors(model, after, limit=5000):
        total += len(page)
        after = page[-1][0]
    return total
