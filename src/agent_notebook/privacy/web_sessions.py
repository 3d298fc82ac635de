"""The web pages' sign-in sessions: the cookie holds a random session id, never a token.

Signing in with a token makes a session (``secrets.token_urlsafe(32)``, 256 bits); what is
kept of it is only its SHA-256, the SHA-256 of the token it was made with, and when. It is
kept beside the notebook's tokens (see :mod:`.tokens`): in ``<home>/secrets/web-sessions.json``
(0600) for a file notebook, in the ``web_sessions`` table for a PostgreSQL one, so every
server of that notebook honours it, and ends it at sign-out. A session is as good as its
token: revoking a guest token or rotating the owner's ends the sessions made with it. A
session ends by itself after :data:`MAX_AGE` (the cookie has no expiry of its own).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ValidationError

from ..core.files import ensure_private_dir, exclusive_lock, write_atomic
from ..errors import CorruptFile
from ..model import now_utc

SESSIONS_FILE = "web-sessions.json"
MAX_AGE = timedelta(days=30)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class SessionRows(Protocol):
    """Where the sessions are kept: rows of (sha256, token_sha256, created)."""

    def web_sessions(self) -> list[tuple[str, str, datetime]]: ...
    def add_web_session(self, sha256: str, token_sha256: str, created: datetime) -> None: ...
    def delete_web_sessions(self, sha256s: list[str]) -> None: ...


class _Record(BaseModel):
    sha256: str
    token_sha256: str
    created: datetime


class _File(BaseModel):
    sessions: list[_Record] = []


class FileSessionRows:
    """The sessions of a file notebook, in its ``secrets`` directory (written under the
    tokens' lock, replaced atomically)."""

    def __init__(self, secrets_dir: Path, lock_name: str) -> None:
        self.dir, self.path, self.lock = secrets_dir, secrets_dir / SESSIONS_FILE, lock_name

    def _read(self) -> list[_Record]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            return _File.model_validate(json.loads(raw)).sessions
        except (ValueError, ValidationError) as err:
            raise CorruptFile(self.path, f"not a web session file ({err}); delete it") from None

    def _save(self, records: list[_Record]) -> None:
        ensure_private_dir(self.dir)
        write_atomic(self.path, _File(sessions=records).model_dump_json(indent=2).encode())
        self.path.chmod(0o600)

    def web_sessions(self) -> list[tuple[str, str, datetime]]:
        return [(r.sha256, r.token_sha256, r.created) for r in self._read()]

    def add_web_session(self, sha256: str, token_sha256: str, created: datetime) -> None:
        ensure_private_dir(self.dir)
        with exclusive_lock(self.dir / self.lock):
            record = _Record(sha256=sha256, token_sha256=token_sha256, created=created)
            self._save([*self._read(), record])

    def delete_web_sessions(self, sha256s: list[str]) -> None:
        ensure_private_dir(self.dir)
        with exclusive_lock(self.dir / self.lock):
            records = self._read()
            kept = [r for r in records if r.sha256 not in sha256s]
            if len(kept) != len(records):
                self._save(kept)


class WebSessions:
    """The sessions kept in ``rows``; whether their token is still valid is the tokens'
    to say (:func:`.tokens.web_session_grant`)."""

    def __init__(self, rows: SessionRows) -> None:
        self.rows = rows

    def open(self, token: str) -> str:
        """A new session for a valid ``token`` (the caller checked it); the expired ones
        are dropped now, so the rows stay few."""
        now = now_utc()
        old = [h for h, _, created in self.rows.web_sessions() if now - created > MAX_AGE]
        if old:
            self.rows.delete_web_sessions(old)
        session = secrets.token_urlsafe(32)
        self.rows.add_web_session(digest(session), digest(token), now)
        return session

    def token_hash(self, session: str) -> str | None:
        """The SHA-256 of the token of a live ``session``, or None."""
        wanted, found = digest(session), None
        for sha, token_sha, created in self.rows.web_sessions():  # no early exit to time
            if hmac.compare_digest(sha, wanted) and now_utc() - created <= MAX_AGE:
                found = token_sha
        return found

    def close(self, session: str) -> None:
        self.rows.delete_web_sessions([digest(session)])
