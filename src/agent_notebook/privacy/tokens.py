"""API tokens for ``agent-notebook serve``: one owner token and named guest tokens per
notebook, behind one interface (:class:`Tokens`) with two homes for them.

A file notebook (SQLite, YAML) keeps them in ``<home>/secrets/`` (0700), each file 0600
(:class:`FileTokens`):

* ``owner-token`` holds the owner's token in clear. The owner's own tools (curl, scripts, the
  tests) must send it, and the file sits beside the notebook it protects in the same
  owner-only home: whoever can read it can read the notebook's files directly, so a hash
  would protect nothing and only make the owner's life harder.
* ``guest-tokens.json`` holds, per guest, only the SHA-256 of its token with its name, role
  and creation time. A guest token is shown once, when it is created; a leaked file does not
  leak it, and revoking the name ends it.

A PostgreSQL notebook, served by many stateless servers on many machines, keeps them in the
database (:class:`DatabaseTokens`, table ``api_tokens``): only hashes, the owner's too, so
every server honours a token made, revoked or rotated anywhere at its next request. The
owner's clear token is printed once, by whichever command made it (the first ``serve``,
``token rotate-owner``), and kept for the owner's own CLI and scripts in that machine's
``<home>/secrets/owner-token``; other machines never see it in clear (copy it, or rotate).

Tokens are ``secrets.token_urlsafe(32)`` (256 bits) and are compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, cast

from pydantic import BaseModel, ValidationError

from ..core.files import ensure_private_dir, exclusive_lock, write_atomic
from ..errors import Conflict, CorruptFile, InvalidInput, NotFound
from ..model import now_utc
from .guest_scope import GuestScope
from .web_sessions import FileSessionRows, WebSessions

if TYPE_CHECKING:
    from ..storage import StorageBackend

SECRETS_DIR = "secrets"
OWNER_TOKEN_FILE = "owner-token"
GUEST_TOKENS_FILE = "guest-tokens.json"
LOCK_FILE = ".tokens.lock"
GUEST_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

Role = Literal["owner", "guest"]


class TokenRecord(BaseModel):
    """What is kept of a guest token: never the token, only its SHA-256."""

    name: str
    role: Role = "guest"
    sha256: str
    created: datetime
    #: What the guest may read (None: every slice, as before scopes).
    scope: GuestScope | None = None


class TokenInfo(BaseModel):
    """A token as ``token list`` shows it (no secret); ``scope``: what a guest may read."""

    name: str
    role: Role
    created: datetime | None
    where: str
    scope: str = ""


class _GuestFile(BaseModel):
    tokens: list[TokenRecord] = []


@dataclass(frozen=True)
class Grant:
    """Who a valid token belongs to: the owner, or the guest ``name`` within ``scope``."""

    role: Role
    name: str
    scope: GuestScope | None = None


def secrets_dir(home: Path) -> Path:
    return home / SECRETS_DIR


def owner_token_path(home: Path) -> Path:
    return secrets_dir(home) / OWNER_TOKEN_FILE


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _same(a: str, b: str) -> bool:
    """Constant-time equality (bytes, so any text a client sends can be compared)."""
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8"))


def _write_private(path: Path, data: bytes) -> None:
    ensure_private_dir(path.parent)
    write_atomic(path, data)  # the temp file is created 0600 and renamed over
    os.chmod(path, 0o600)


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when a file is replaced (a save renames a new file in), or None."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def ensure_owner_token(home: Path) -> tuple[str, bool]:
    """The owner's token of ``home``, created first if there is none; and whether it was
    created now."""
    ensure_private_dir(secrets_dir(home))
    with exclusive_lock(secrets_dir(home) / LOCK_FILE):
        path = owner_token_path(home)
        if path.exists():
            return read_owner_token(home), False
        token = secrets.token_urlsafe(32)
        _write_private(path, (token + "\n").encode())
        return token, True


def rotate_owner_token(home: Path) -> str:
    """A new owner token for ``home``, written atomically (0600) over the old one, which
    stops working: a running server reads the file again when it changes."""
    ensure_private_dir(secrets_dir(home))
    with exclusive_lock(secrets_dir(home) / LOCK_FILE):
        token = secrets.token_urlsafe(32)
        _write_private(owner_token_path(home), (token + "\n").encode())
        return token


def read_owner_token(home: Path) -> str:
    """The owner's token of ``home`` (``<home>/secrets/owner-token``)."""
    path = owner_token_path(home)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise NotFound(
            f"no owner token at {path}: run 'agent-notebook init --home {home}' "
            "(or start 'agent-notebook serve', which creates it)"
        ) from None
    if not token:
        raise CorruptFile(path, "the owner token file is empty; delete it and run init again")
    return token


def check_guest_name(name: str) -> str:
    if not GUEST_NAME_RE.fullmatch(name):
        raise InvalidInput(
            f"guest name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


class Tokens(Protocol):
    """Where a notebook's tokens are kept: the server asks it at every request."""

    def identify(self, token: str) -> Grant | None: ...
    def listing(self) -> list[TokenInfo]: ...
    def create_guest(self, name: str, scope: GuestScope | None = None) -> str: ...
    def revoke(self, name: str) -> TokenRecord: ...
    def ensure_owner(self) -> tuple[str | None, bool]: ...
    def rotate_owner(self) -> str: ...
    def owner_hint(self) -> str: ...
    def grant_of_hash(self, sha256: str) -> Grant | None: ...
    @property
    def sessions(self) -> WebSessions: ...


def web_session_grant(tokens: Tokens, session: str) -> Grant | None:
    """Who a live web session (see :mod:`.web_sessions`) signed in as, while the token it
    was made with is still valid."""
    token_sha = tokens.sessions.token_hash(session)
    return None if token_sha is None else tokens.grant_of_hash(token_sha)


class FileTokens:
    """The tokens of one home, in its ``secrets`` directory. Writes hold a lock and replace
    the file atomically; reads of the token files are cached by their inode, times and size
    (one ``stat`` a request), so a long-running server sees tokens created, revoked or
    rotated by the CLI at its next request."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.guest_path = secrets_dir(home) / GUEST_TOKENS_FILE
        self._owner: tuple[tuple[int, int, int, int] | None, str] | None = None
        self._cache: tuple[tuple[int, int, int, int], list[TokenRecord]] | None = None
        self.sessions = WebSessions(FileSessionRows(secrets_dir(home), LOCK_FILE))

    # -- reading ----------------------------------------------------------------------------

    def _owner_token(self) -> str | None:
        """The owner token as the file holds it now (None while there is no file: then no
        owner token is valid until 'token rotate-owner' or 'init' makes one)."""
        stamp = _stamp(owner_token_path(self.home))
        if stamp is None:
            return None
        if self._owner is None or self._owner[0] != stamp:
            self._owner = (stamp, read_owner_token(self.home))
        return self._owner[1]

    def _guests(self) -> list[TokenRecord]:
        stamp = _stamp(self.guest_path)
        if stamp is None:
            return []
        if self._cache is not None and self._cache[0] == stamp:
            return self._cache[1]
        raw = self.guest_path.read_bytes()
        try:
            records = _GuestFile.model_validate(json.loads(raw)).tokens
        except (ValueError, ValidationError) as err:
            raise CorruptFile(
                self.guest_path, f"not a guest token file ({err}); restore it or delete it"
            ) from None
        self._cache = (stamp, records)
        return records

    def identify(self, token: str) -> Grant | None:
        """Whose token this is, or None when it is none of this home's."""
        owner = self._owner_token()
        if owner is not None and _same(token, owner):
            return Grant("owner", "owner")
        digest = _hash(token)
        found = None
        for record in self._guests():  # every record is compared: no early exit to time
            if hmac.compare_digest(record.sha256, digest):
                found = Grant("guest", record.name, record.scope)
        return found

    def grant_of_hash(self, sha256: str) -> Grant | None:
        """Whose token has this SHA-256, or None (a web session's token, since revoked)."""
        owner = self._owner_token()
        if owner is not None and hmac.compare_digest(_hash(owner), sha256):
            return Grant("owner", "owner")
        found = None
        for record in self._guests():
            if hmac.compare_digest(record.sha256, sha256):
                found = Grant("guest", record.name, record.scope)
        return found

    def listing(self) -> list[TokenInfo]:
        owner = owner_token_path(self.home)
        rows = []
        if owner.exists():
            created = datetime.fromtimestamp(owner.stat().st_mtime).astimezone()
            rows.append(TokenInfo(name="owner", role="owner", created=created, where=str(owner)))
        for r in self._guests():
            scope = (r.scope or GuestScope()).describe()
            where = str(self.guest_path)
            rows.append(
                TokenInfo(name=r.name, role=r.role, created=r.created, where=where, scope=scope)
            )
        return rows

    # -- writing ----------------------------------------------------------------------------

    def create_guest(self, name: str, scope: GuestScope | None = None) -> str:
        """A new guest token for ``name`` (reading only within ``scope``); only its hash is
        stored, so this is the one time it is seen."""
        check_guest_name(name)
        ensure_private_dir(secrets_dir(self.home))
        with exclusive_lock(secrets_dir(self.home) / LOCK_FILE):
            records = list(self._guests())
            if any(r.name == name for r in records):
                raise Conflict(
                    f"a guest token named {name!r} exists already: revoke it first "
                    f"('agent-notebook token revoke {name}') or choose another name"
                )
            token = secrets.token_urlsafe(32)
            record = TokenRecord(name=name, sha256=_hash(token), created=now_utc(), scope=scope)
            records.append(record)
            self._save(records)
        return token

    def revoke(self, name: str) -> TokenRecord:
        with exclusive_lock(secrets_dir(self.home) / LOCK_FILE):
            records = list(self._guests())
            gone = [r for r in records if r.name == name]
            if not gone:
                known = ", ".join(r.name for r in records) or "none"
                raise NotFound(f"no guest token named {name!r} (guest tokens: {known})")
            self._save([r for r in records if r.name != name])
        return gone[0]

    def ensure_owner(self) -> tuple[str | None, bool]:
        return ensure_owner_token(self.home)

    def rotate_owner(self) -> str:
        return rotate_owner_token(self.home)

    def owner_hint(self) -> str:
        return f"the owner token is in {owner_token_path(self.home)}"

    def _save(self, records: list[TokenRecord]) -> None:
        data = _GuestFile(tokens=records).model_dump_json(indent=2).encode()
        _write_private(self.guest_path, data)
        self._cache = None


class TokenTable(Protocol):
    """What :class:`DatabaseTokens` needs of a database: rows of (role, name, sha256,
    created, scope as JSON or None), written each in its own transaction."""

    @property
    def location(self) -> str: ...
    def api_tokens(self) -> list[tuple[str, str, str, datetime, str | None]]: ...
    def add_api_token(
        self, role: Role, name: str, sha256: str, created: datetime, scope: str | None = None
    ) -> bool: ...
    def set_api_token(self, role: Role, name: str, sha256: str, created: datetime) -> None: ...
    def delete_api_token(self, role: Role, name: str) -> bool: ...
    def web_sessions(self) -> list[tuple[str, str, datetime]]: ...
    def add_web_session(self, sha256: str, token_sha256: str, created: datetime) -> None: ...
    def delete_web_sessions(self, sha256s: list[str]) -> None: ...


class DatabaseTokens:
    """The tokens of a notebook shared by many servers: hashes in its database (read at
    every request, so nothing is cached that another server could change), the owner's
    clear token in this machine's ``<home>/secrets/owner-token`` when it was made here."""

    def __init__(self, table: TokenTable, home: Path) -> None:
        self.table, self.home = table, home
        self.sessions = WebSessions(table)  # in the database: every server honours them

    def _records(self) -> list[TokenRecord]:
        return [
            TokenRecord(
                name=name,
                role=role,
                sha256=digest,
                created=created,
                scope=None if scope is None else GuestScope.model_validate_json(scope),
            )
            for role, name, digest, created, scope in self.table.api_tokens()
        ]

    def identify(self, token: str) -> Grant | None:
        return self.grant_of_hash(_hash(token))

    def grant_of_hash(self, sha256: str) -> Grant | None:
        found = None
        for record in self._records():  # every record is compared: no early exit to time
            if hmac.compare_digest(record.sha256, sha256):
                found = Grant(record.role, record.name, record.scope)
        return found

    def listing(self) -> list[TokenInfo]:
        where = f"the database {self.table.location}"
        records = sorted(self._records(), key=lambda r: (r.role != "owner", r.name))
        return [
            TokenInfo(
                name=r.name,
                role=r.role,
                created=r.created,
                where=where,
                scope=(r.scope or GuestScope()).describe() if r.role == "guest" else "",
            )
            for r in records
        ]

    def create_guest(self, name: str, scope: GuestScope | None = None) -> str:
        check_guest_name(name)
        kept = None if scope is None or scope == GuestScope() else scope.model_dump_json()
        token = secrets.token_urlsafe(32)
        if not self.table.add_api_token("guest", name, _hash(token), now_utc(), kept):
            raise Conflict(
                f"a guest token named {name!r} exists already: revoke it first "
                f"('agent-notebook token revoke {name}') or choose another name"
            )
        return token

    def revoke(self, name: str) -> TokenRecord:
        gone = [r for r in self._records() if r.role == "guest" and r.name == name]
        if not gone or not self.table.delete_api_token("guest", name):
            known = ", ".join(r.name for r in self._records() if r.role == "guest") or "none"
            raise NotFound(f"no guest token named {name!r} (guest tokens: {known})")
        return gone[0]

    def ensure_owner(self) -> tuple[str | None, bool]:
        """The owner's token, made now if the database has none (then also written to this
        home); None when it was made elsewhere and this home holds no copy of it."""
        token = secrets.token_urlsafe(32)
        if self.table.add_api_token("owner", "owner", _hash(token), now_utc()):
            self._keep_locally(token)  # after the insert: a lost race writes nothing
            return token, True
        local = self._local_owner()
        return local, False

    def rotate_owner(self) -> str:
        token = secrets.token_urlsafe(32)
        self.table.set_api_token("owner", "owner", _hash(token), now_utc())
        self._keep_locally(token)
        return token

    def owner_hint(self) -> str:
        if self._local_owner() is not None:
            return f"the owner token is in {owner_token_path(self.home)}"
        return (
            "the database keeps only the owner token's hash and this machine has no copy: use "
            "the token printed where it was made, or 'agent-notebook token rotate-owner'"
        )

    def _local_owner(self) -> str | None:
        """This home's copy of the owner token, if it is the current one."""
        try:
            local = read_owner_token(self.home)
        except NotFound:
            return None
        grant = self.identify(local)
        return local if grant is not None and grant.role == "owner" else None

    def _keep_locally(self, token: str) -> None:
        ensure_private_dir(secrets_dir(self.home))
        with exclusive_lock(secrets_dir(self.home) / LOCK_FILE):
            _write_private(owner_token_path(self.home), (token + "\n").encode())


def tokens_of(home: Path, backend: StorageBackend) -> Tokens:
    """Where the notebook in ``home``, stored by ``backend``, keeps its tokens: the database
    when it can hold them (``holds_api_tokens``: a PostgreSQL notebook), else ``home``'s files."""
    if backend.capabilities.holds_api_tokens:
        return DatabaseTokens(cast("TokenTable", backend), home)
    return FileTokens(home)


@contextmanager
def open_tokens(home: Path, backend: str | None = None) -> Iterator[Tokens]:
    """The tokens of the notebook in ``home`` (``backend`` overrides its configured one),
    for the CLI: a PostgreSQL notebook's database is opened for the time of the block."""
    from .. import config as cfg
    from ..core.crypto import load_cipher
    from ..storage import kind_of, open_backend

    conf = cfg.load_config(home)
    location = cfg.backend_location(home, conf, backend)
    kind = kind_of(location)
    if kind is None or not kind.capabilities.holds_api_tokens:
        yield FileTokens(home)
        return
    opened = open_backend(location, cipher=load_cipher(conf.privacy.encryption, home))
    try:
        yield tokens_of(home, opened)
    finally:
        opened.close()
