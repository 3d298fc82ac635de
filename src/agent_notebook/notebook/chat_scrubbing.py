"""Scrubbing a redacted text out of the LangGraph chat state: every item of the store
(session notebooks with their cuts and failed updates, an app's items); the checkpoints and
pending writes are scrubbed by the adapter of their tables
(:meth:`agent_notebook.langgraph.tables.Tables.scrub_checkpoints`; see :mod:`.redaction`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..langgraph.store.vectors import IndexedStore
from .scrubbing import Scrubber

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

__all__ = ["scrub_store", "store_items"]


def scrub_store(store: BaseStore, scrubber: Scrubber) -> None:
    """Scrub every item of ``store`` (a session notebook's text and failures, any other
    value whole); an indexed item is embedded again from its scrubbed value."""
    from ..langgraph.stores import write_lock

    with write_lock(store):
        changes = []
        for item in store_items(store):
            if item.namespace[:1] == ("session",) and isinstance(item.value.get("content"), str):
                value = _scrubbed_session_notebook(scrubber, item.value)
            else:
                value = scrubber.value(item.value)
            if value is not item.value:
                changes.append((item.namespace, item.key, value))
        for namespace, key, value in changes:
            # an indexed item is embedded again from its scrubbed value (its old vectors
            # go with the old value); others stay unindexed
            indexed = isinstance(store, IndexedStore) and store.is_indexed(namespace, key)
            store.put(namespace, key, value, index=None if indexed else False)


def _scrubbed_session_notebook(scrubber: Scrubber, value: dict[str, Any]) -> dict[str, Any]:
    """A session notebook's stored value with its text (and the errors of failed
    updates) scrubbed and its revision bumped; its thread, times and marks are
    structure and stay. The same object when nothing changed."""
    content = scrubber.text(value["content"])
    old_failures = value.get("failures") or []
    failures = [_scrubbed_failure(scrubber, f) for f in old_failures]
    changed = any(a is not b for a, b in zip(failures, old_failures, strict=True))
    if content is value["content"] and not changed:
        return value
    revision = value.get("revision")
    bumped = revision + 1 if isinstance(revision, int) else revision
    return {**value, "content": content, "failures": failures, "revision": bumped}


def _scrubbed_failure(scrubber: Scrubber, failure: Any) -> Any:
    """A failed update's record with its error scrubbed (its time and updater stay)."""
    if not isinstance(failure, dict) or not isinstance(failure.get("error"), str):
        return failure
    error = scrubber.text(failure["error"])
    return failure if error is failure["error"] else {**failure, "error": error}


def store_items(store: BaseStore, page: int = 500) -> Iterator[Any]:
    """Every item of ``store``, a page at a time."""
    offset = 0
    while batch := store.search((), limit=page, offset=offset):
        yield from batch
        offset += len(batch)
