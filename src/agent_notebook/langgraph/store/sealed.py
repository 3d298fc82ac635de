"""The notebook's LangGraph store with every item's value sealed (encryption at rest).

The session notebooks live in this store, and their sections quote the conversation. Each
value is stored as ``{"sealed": ...}``: the JSON of the real value sealed with the
notebook's :class:`Cipher`, bound to its namespace and key. Namespaces and keys (thread ids,
``notebook``) stay readable; searching with a ``filter`` on values, or with a query (a
vector index over values), is refused: the store cannot see the values, and vectors of them
would give their meaning away.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import Item, Op, PutOp, Result, SearchOp

from ...core.crypto import Cipher
from ...errors import InvalidInput
from .sqlite import NotebookStore

__all__ = ["SEALED", "SealedSqliteStore", "Sealing", "resealed_value", "store_aad"]

SEALED = "sealed"


def store_aad(namespace: tuple[str, ...], key: str) -> bytes:
    return json.dumps([list(namespace), key]).encode()


def resealed_value(
    cipher: Cipher, namespace: tuple[str, ...], key: str, value: object
) -> dict[str, str] | None:
    """A stored item's value sealed under the cipher's key, for a key rotation: one sealed
    with the old key is opened with it, a plain one (from before encryption was on) is
    sealed. None: it is sealed under the key already."""
    aad = store_aad(namespace, key)
    sealed = value.get(SEALED) if isinstance(value, dict) and len(value) == 1 else None
    if isinstance(sealed, str):
        if cipher.text_key_id(sealed) == cipher.key_id:
            return None
        where = f"store item {'/'.join(namespace)}/{key}"
        plain = cipher.decrypt_text(sealed, aad, where)
    else:
        plain = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return {SEALED: cipher.encrypt_text(plain, aad)}


class Sealing:
    """Seals the values of the store it is mixed into (before the store's class): every
    ``batch`` goes through it; ``abatch`` runs ``batch`` on a worker thread."""

    cipher: Cipher

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._open(result) for result in super().batch(map(self._seal, ops))]  # type: ignore[misc]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _seal(self, op: Op) -> Op:
        if isinstance(op, SearchOp) and (op.filter or op.query):
            raise InvalidInput(
                "the store of an encrypted notebook cannot search by value (filter or "
                "query): its values are sealed"
            )
        if isinstance(op, PutOp) and op.value is not None:
            plain = json.dumps(op.value, ensure_ascii=False, separators=(",", ":"))
            sealed = self.cipher.encrypt_text(plain, store_aad(op.namespace, op.key))
            return op._replace(value={SEALED: sealed}, index=False)
        return op

    def _open(self, result: Result) -> Result:
        if isinstance(result, Item):
            result.value = self._value(result)
        elif isinstance(result, list):
            for item in result:
                if isinstance(item, Item):
                    item.value = self._value(item)
        return result

    def _value(self, item: Item) -> dict[str, Any]:
        sealed = item.value.get(SEALED) if len(item.value) == 1 else None
        if not isinstance(sealed, str):
            return item.value  # written before encryption was turned on
        where = f"store item {'/'.join(item.namespace)}/{item.key}"
        value = json.loads(
            self.cipher.decrypt_text(sealed, store_aad(item.namespace, item.key), where)
        )
        if not isinstance(value, dict):
            raise InvalidInput(f"{where}: a sealed value is not a mapping")
        return value


class SealedSqliteStore(Sealing, NotebookStore):
    def __init__(self, conn: sqlite3.Connection, *, cipher: Cipher) -> None:
        super().__init__(conn)
        self.cipher = cipher
