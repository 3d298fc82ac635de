"""Rows of an encrypted notebook (``privacy.encryption``) in the SQL backends (SQLite and
PostgreSQL share them): what is sealed and how.

- ``moments.body`` is a JSON object ``{"sealed": ..., ...}``: the whole record (its text
  too) sealed, beside the few fields ranking reads in SQL (importance and decay rate when
  not at their defaults, whether it was redacted).
- ``moments.text`` is what the full-text index needs and nothing more: each index term
  (a stemmed word) replaced by a keyed token (:meth:`Cipher.token`), in order, plus ``?``
  when the text asks a question. FTS5 and BM25 work on token identity unchanged.
- ``sessions.body`` and ``archived.body`` are ``{"sealed": ...}`` of the whole record.
- vectors are sealed blobs bound to their moment number.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from ...core.lexical import terms
from ...errors import InvalidInput
from ...model import DEFAULT_DECAY_RATE, DEFAULT_IMPORTANCE, ArchiveEntry, Moment, Session
from .. import rows

if TYPE_CHECKING:
    from ...core.crypto import Cipher

SEALED_PREFIX: Final = '{"sealed":"'
MOMENT_AAD: Final = b"moment"
SESSION_AAD: Final = b"session"
ARCHIVED_AAD: Final = b"archived"


def is_sealed(body: str) -> bool:
    return body.startswith(SEALED_PREFIX)


def sealed_part(body: str) -> str:
    return str(json.loads(body)["sealed"])


def check_key(cipher: Cipher | None, body: str, where: str) -> None:
    """Refuse a stored ``body`` sealed with a key ``cipher`` does not hold (or sealed at
    all, without a cipher); a backend checks its newest rows at open, before any write."""
    if not is_sealed(body):
        return
    if cipher is None:
        _require(cipher)  # raises: needs the key
    elif (kid := cipher.text_key_id(sealed_part(body))) and not cipher.knows(kid):
        raise cipher.wrong_key(kid, where)


def index_text(cipher: Cipher, text: str) -> str:
    """The ``moments.text`` of ``text``: its terms as keyed tokens (order kept)."""
    tokens = " ".join(cipher.token(term) for term in terms(text))
    return tokens + " ?" if "?" in text else tokens


def index_terms(cipher: Cipher, text: str) -> list[str]:
    return [cipher.token(term) for term in terms(text)]


def moment_row(cipher: Cipher, moment: Moment) -> tuple[int, str, int, str, str, str, str]:
    num, session, ts, speaker, role, _, _ = rows.moment_row(moment)
    record = moment.model_dump(mode="json", exclude_defaults=True)
    record["schema_version"] = moment.schema_version  # as the plain body keeps it
    body: dict[str, object] = {"sealed": cipher.encrypt_text(_json(record), MOMENT_AAD)}
    meta = moment.metadata
    brief = {
        k: v
        for k, v, default in [
            ("importance", meta.importance, DEFAULT_IMPORTANCE),
            ("decay_rate", meta.decay_rate, DEFAULT_DECAY_RATE),
        ]
        if v != default
    }
    if brief:
        body["metadata"] = brief
    if moment.redacted is not None:
        body["redacted"] = True
    return (num, session, ts, speaker, role, index_text(cipher, moment.content.text), _json(body))


def moment_from_row(cipher: Cipher | None, row: Sequence[Any]) -> Moment:
    """The moment of a row of ``MOMENT_READ``'s columns. A sealed record is whole (its id,
    session, time and speaker too): the plain columns beside it are not trusted."""
    body = row[-1]
    if not is_sealed(body):
        return rows.moment_from_row(row)
    record = _require(cipher).decrypt_text(sealed_part(body), MOMENT_AAD, "a stored moment")
    return Moment.model_validate_json(record)


def session_body(cipher: Cipher, session: Session) -> str:
    return _json({"sealed": cipher.encrypt_text(session.model_dump_json(), SESSION_AAD)})


def session_from_row(cipher: Cipher | None, body: str) -> Session:
    if not is_sealed(body):
        return rows.session_from_row(body)
    record = _require(cipher).decrypt_text(sealed_part(body), SESSION_AAD, "a stored session")
    return Session.model_validate_json(record)


def archive_body(cipher: Cipher, entry: ArchiveEntry) -> str:
    return _json({"sealed": cipher.encrypt_text(entry.model_dump_json(), ARCHIVED_AAD)})


def archive_from_row(cipher: Cipher | None, body: str) -> ArchiveEntry:
    if not is_sealed(body):
        return rows.archive_from_row(body)
    record = _require(cipher).decrypt_text(sealed_part(body), ARCHIVED_AAD, "an archive entry")
    return ArchiveEntry.model_validate_json(record)


def vector_aad(num: int) -> bytes:
    return b"vector:%d" % num


def _require(cipher: Cipher | None) -> Cipher:
    if cipher is None:
        raise InvalidInput(
            "this notebook is encrypted: set privacy.encryption.enabled: true in its "
            "config.yaml and give its key (the AGENT_NOTEBOOK_KEY environment variable or "
            "privacy.encryption.key_file)"
        )
    return cipher


def _json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
