"""Encryption at rest: the notebook's key and the :class:`Cipher` that seals stored blobs.

A sealed blob is ``ANE1 | key id (8) | nonce (12) | AES-256-GCM ciphertext and tag``. The key
id (a digest of the key, never the key) tells which key sealed a blob, so a key rotation
interrupted half-way leaves every blob readable with one of the two keys. The associated
data binds a blob to its place (``moment``, ``vector:42``, a file's path), so a blob moved
elsewhere does not open.

Besides sealing, the key derives (HKDF) two more keys: one for the lexical index's keyed
word tokens (:meth:`Cipher.token`: equal words give equal tokens, so BM25 still works, but
the index holds no word) and one for deterministic AES-SIV names (:meth:`Cipher.seal_name`:
concept names stay unique and can be looked up, yet are unreadable without the key).

The key is 32 random bytes, written as URL-safe base64: in the environment variable named by
``privacy.encryption.key_env``, or in ``key_file``, a file kept outside the notebook's home
(owner-only) so a copy of the home alone does not carry its key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Protocol

from ..errors import InvalidInput, SealedBlobError, WrongKey

__all__ = [
    "MAGIC",
    "Cipher",
    "KeySettings",
    "SealedBlobError",
    "WrongKey",
    "generate_key",
    "key_from_text",
    "load_cipher",
    "load_key",
    "read_key_file",
    "sealed_key_id",
    "write_key_file",
]

MAGIC: Final = b"ANE1"
KEY_BYTES: Final = 32
KEY_ID_BYTES: Final = 8
NONCE_BYTES: Final = 12
HEADER_BYTES: Final = len(MAGIC) + KEY_ID_BYTES + NONCE_BYTES
CHECKPOINT_CIPHER: Final = "anb-aesgcm"  # the name LangGraph's EncryptedSerializer records
_NEW_KEY_HINT: Final = "create one with 'agent-notebook key new --file PATH'"


def generate_key() -> bytes:
    return os.urandom(KEY_BYTES)


def key_text(key: bytes) -> str:
    return base64.urlsafe_b64encode(key).decode("ascii")


def key_from_text(text: str, where: str) -> bytes:
    """A key from its base64 text (URL-safe or standard); ``where`` names its source."""
    cleaned = text.strip()
    try:
        key = base64.b64decode(cleaned.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise InvalidInput(
            f"{where} does not hold an encryption key: expected {KEY_BYTES} bytes as base64 "
            f"(44 characters); {_NEW_KEY_HINT}"
        )
    return key


def key_id(key: bytes) -> bytes:
    return hashlib.sha256(b"agent-notebook key id\0" + key).digest()[:KEY_ID_BYTES]


def _inside(path: Path, home: Path) -> bool:
    return path.resolve().is_relative_to(home.resolve())


def read_key_file(path: Path, home: Path | None = None) -> bytes:
    """The key in ``path``, refused when it lives inside ``home`` or others can read it."""
    path = Path(path).expanduser()
    if home is not None and _inside(path, home):
        raise InvalidInput(
            f"key file {path} is inside the notebook's home {home}: a copy of the home would "
            "carry its own key. Move the key file elsewhere (for example "
            "~/.config/agent-notebook/key) and point privacy.encryption.key_file at it"
        )
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise InvalidInput(f"key file {path} does not exist; {_NEW_KEY_HINT}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInput(f"key file {path} cannot be read ({err})") from None
    if mode & 0o077:
        raise InvalidInput(
            f"key file {path} can be read by other users (mode {mode & 0o777:o}); "
            f"run 'chmod 600 {path}'"
        )
    return key_from_text(text, f"key file {path}")


def write_key_file(path: Path, key: bytes, home: Path | None = None) -> Path:
    """Write ``key`` to a new owner-only file ``path`` (never over an existing one)."""
    path = Path(path).expanduser().absolute()
    if home is not None and _inside(path, home):
        raise InvalidInput(
            f"key file {path} would be inside the notebook's home {home}; choose a path outside it"
        )
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InvalidInput(f"{path} exists already; choose another path") from None
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(key_text(key) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return path


class KeySettings(Protocol):
    """Where the key comes from: ``privacy.encryption`` of ``config.yaml``
    (:class:`~agent_notebook.config.EncryptionSettings`). A protocol, because the storage
    layer below the config imports this module."""

    @property
    def enabled(self) -> bool: ...
    @property
    def key_env(self) -> str: ...
    @property
    def key_file(self) -> Path | None: ...
    def key_from_env(self) -> str | None:
        """The key's text in the environment variable ``key_env`` (read in config, as every
        environment variable), or None."""
        ...


def load_key(settings: KeySettings, home: Path | None) -> tuple[bytes, str]:
    """The configured key and where it came from: ``key_env`` when that variable is set,
    else ``key_file``. Missing both is a clear :class:`InvalidInput`."""
    text = settings.key_from_env()
    if text:
        return key_from_text(text, f"environment variable {settings.key_env}"), (
            f"environment variable {settings.key_env}"
        )
    if settings.key_file is not None:
        return read_key_file(settings.key_file, home), f"key file {settings.key_file}"
    raise InvalidInput(
        f"encryption is on (privacy.encryption.enabled) but no key was given: set the "
        f"environment variable {settings.key_env} to the key, or point "
        f"privacy.encryption.key_file at a key file outside the home; {_NEW_KEY_HINT}"
    )


def load_cipher(settings: KeySettings, home: Path | None) -> Cipher | None:
    """The notebook's cipher, or None when encryption is off."""
    if not settings.enabled:
        return None
    key, source = load_key(settings, home)
    return Cipher(key, source=source)


def sealed_key_id(blob: bytes) -> bytes | None:
    """The id of the key that sealed ``blob``, or None when it is not a sealed blob."""
    if len(blob) < HEADER_BYTES + 16 or not blob.startswith(MAGIC):
        return None
    return blob[len(MAGIC) : len(MAGIC) + KEY_ID_BYTES]


# ``cryptography`` loads with the first key used: the storage layer imports this module for
# sealed_key_id, and a notebook without encryption never needs it.


def _derive(key: bytes, purpose: bytes, length: int = 32) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(hashes.SHA256(), length, salt=None, info=b"agent-notebook " + purpose).derive(key)


class _Keyring:
    """What one key gives: its AES-GCM, token and name keys."""

    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV

        self.id = key_id(key)
        self.aead = AESGCM(key)
        self.token_key = _derive(key, b"lexical tokens")
        self.names = AESSIV(_derive(key, b"names", 64))


class Cipher:
    """Seals with ``key``; opens blobs sealed with ``key`` or any of ``also`` (the old key
    during a rotation). ``source`` names where the key came from, for error messages."""

    def __init__(self, key: bytes, *, also: Sequence[bytes] = (), source: str = "the key") -> None:
        self._primary = _Keyring(key)
        self._rings = {self._primary.id: self._primary}
        for other in also:
            ring = _Keyring(other)
            self._rings.setdefault(ring.id, ring)
        self.source = source

    @property
    def key_id(self) -> bytes:
        return self._primary.id

    def knows(self, kid: bytes) -> bool:
        return kid in self._rings

    # -- blobs -----------------------------------------------------------------------------

    def encrypt(self, plaintext: bytes, aad: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._primary.aead.encrypt(nonce, plaintext, aad)
        return MAGIC + self._primary.id + nonce + sealed

    def decrypt(self, blob: bytes, aad: bytes, where: str = "a stored blob") -> bytes:
        from cryptography.exceptions import InvalidTag

        kid = sealed_key_id(blob)
        if kid is None:
            raise SealedBlobError(f"{where} is not encrypted, or is truncated")
        ring = self._rings.get(kid)
        if ring is None:
            raise self.wrong_key(kid, where)
        nonce = blob[len(MAGIC) + KEY_ID_BYTES : HEADER_BYTES]
        try:
            return ring.aead.decrypt(nonce, blob[HEADER_BYTES:], aad)
        except InvalidTag:
            raise SealedBlobError(
                f"{where} does not open with its key: it was altered, truncated or moved"
            ) from None

    def wrong_key(self, kid: bytes, where: str) -> WrongKey:
        return WrongKey(
            f"{where} was encrypted with key {kid.hex()}, but {self.source} holds key "
            f"{self.key_id.hex()}: give the key this notebook was encrypted with (after "
            "'agent-notebook key rotate', the new one). Nothing was changed"
        )

    def encrypt_text(self, text: str, aad: bytes) -> str:
        """:meth:`encrypt` for text columns: URL-safe base64 of the sealed blob."""
        return base64.urlsafe_b64encode(self.encrypt(text.encode("utf-8"), aad)).decode("ascii")

    def decrypt_text(self, sealed: str, aad: bytes, where: str = "a stored record") -> str:
        try:
            blob = base64.urlsafe_b64decode(sealed.encode("ascii"))
        except (binascii.Error, ValueError, UnicodeEncodeError):
            raise SealedBlobError(f"{where} is not a sealed record") from None
        return self.decrypt(blob, aad, where).decode("utf-8")

    @staticmethod
    def text_key_id(sealed: str) -> bytes | None:
        """The key id of an :meth:`encrypt_text` value."""
        try:
            head = base64.urlsafe_b64decode(sealed[:16].encode("ascii"))  # magic and key id
        except (binascii.Error, ValueError, UnicodeEncodeError):
            return None
        if not head.startswith(MAGIC):
            return None
        return head[len(MAGIC) : len(MAGIC) + KEY_ID_BYTES]

    # -- tokens and names --------------------------------------------------------------------

    def token(self, term: str) -> str:
        """A keyed token for an index term: 20 decimal digits (digits only, so FTS5's porter
        stemmer passes it through unchanged)."""
        digest = hmac.new(self._primary.token_key, term.encode("utf-8"), hashlib.sha256).digest()
        return f"{int.from_bytes(digest[:8], 'big'):020d}"

    def seal_name(self, name: str) -> str:
        """A name sealed deterministically (AES-SIV): equal names give equal text, so a
        UNIQUE column and lookups by name keep working."""
        sealed = self._primary.names.encrypt(name.encode("utf-8"), [b"name"])
        return "~" + self._primary.id.hex() + ":" + base64.urlsafe_b64encode(sealed).decode()

    def open_name(self, stored: str) -> str:
        """The name :meth:`seal_name` sealed (a name stored in plain text passes through)."""
        from cryptography.exceptions import InvalidTag

        if not stored.startswith("~") or ":" not in stored:
            return stored
        kid_hex, _, body = stored[1:].partition(":")
        ring = self._rings.get(bytes.fromhex(kid_hex))
        if ring is None:
            raise self.wrong_key(bytes.fromhex(kid_hex), "a concept name")
        try:
            return ring.names.decrypt(base64.urlsafe_b64decode(body), [b"name"]).decode()
        except (InvalidTag, binascii.Error, ValueError):
            raise SealedBlobError("a sealed concept name does not open: it was altered") from None

    # -- LangGraph ---------------------------------------------------------------------------

    def checkpoint_cipher(self) -> CheckpointCipher:
        return CheckpointCipher(self)


class CheckpointCipher:
    """LangGraph's ``CipherProtocol`` over a :class:`Cipher`, for ``EncryptedSerializer``:
    checkpoints hold the chat's messages."""

    def __init__(self, cipher: Cipher) -> None:
        self.cipher = cipher

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return CHECKPOINT_CIPHER, self.cipher.encrypt(plaintext, b"checkpoint")

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        if ciphername != CHECKPOINT_CIPHER:
            raise SealedBlobError(f"a checkpoint was sealed with unknown cipher {ciphername!r}")
        return self.cipher.decrypt(ciphertext, b"checkpoint", "a checkpoint")
