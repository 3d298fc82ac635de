"""The notebook's media store: attached images and audio, content-addressed, owner-only.

A file attached to a moment is copied into ``<home>/media/`` under the SHA-256 of its bytes
and its normalised suffix (``media/ab/abcdef….png``), so the same file attached twice is
stored once. A moment's ``image_path`` / ``audio_path`` holds that path *relative to the
home*: a notebook moved elsewhere keeps working. The directory is 0700, the files 0600.

A stored file is removed (:meth:`MediaStore.remove_unused`) only when no moment refers to
it any more: after a failed record, a redaction or a forget.

:func:`attachment_of` checks and signs a file *before* anything is copied: a corrupt file
records nothing and leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from ..core import files
from ..errors import CorruptFile, InvalidInput, NotFound

if TYPE_CHECKING:
    from ..embed.multimodal import MultimodalEmbedder
    from ..model import Moment

__all__ = [
    "MAX_MEDIA_BYTES",
    "MEDIA_DIR",
    "Attachment",
    "MediaKind",
    "MediaStore",
    "attachment_of",
    "media_paths_of",
]

MediaKind = Literal["image", "audio"]
MEDIA_DIR: Final = "media"
#: The largest file that may be attached (a few minutes of WAV, any photo).
MAX_MEDIA_BYTES: Final = 50 * 1024 * 1024
_SUFFIX_ALIASES: Final = {".jpeg": ".jpg", ".tif": ".tiff", ".oga": ".ogg"}
_STORED_RE: Final = re.compile(r"media/([0-9a-f]{2})/([0-9a-f]{64})(\.[a-z0-9]{1,5})?")
_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Attachment:
    """A checked, signed file about to be attached to a moment."""

    kind: MediaKind
    source: Path
    signature: str
    embedding: list[float] | None = None


def check_media_file(value: str | Path, kind: MediaKind) -> Path:
    """``value`` as a readable regular file of ``kind`` under the size cap, or InvalidInput
    saying what is wrong with it."""
    from .decode import media_kind

    path = Path(value).expanduser()
    files.refuse_live_database(path, f"{kind} file")
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InvalidInput(f"{kind} file {path} does not exist") from None
    except OSError as err:
        raise InvalidInput(f"{kind} file {path} cannot be read: {err.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"{kind} file {path} is not a regular file")
    if info.st_size > MAX_MEDIA_BYTES:
        raise InvalidInput(
            f"{kind} file {path} is {info.st_size:,} bytes; at most {MAX_MEDIA_BYTES:,} may be "
            "attached (shorten or downscale it)"
        )
    found = media_kind(path)
    if found != kind:
        raise InvalidInput(f"{path} is an {found} file, not an {kind} file")
    return path


def attachment_of(
    value: str | Path,
    kind: MediaKind,
    embedder: MultimodalEmbedder | None = None,
) -> Attachment:
    """Check and sign ``value`` (and embed it with ``embedder``); raises InvalidInput, or
    CorruptMedia naming the file, before anything is written."""
    from .signatures import audio_signature, image_signature

    path = check_media_file(value, kind)
    signature = image_signature(path) if kind == "image" else audio_signature(path)
    embedding = None
    if embedder is not None:
        embed = embedder.embed_image if kind == "image" else getattr(embedder, "embed_audio", None)
        if embed is not None:
            embedding = [float(x) for x in embed(path)]
            if len(embedding) != embedder.dim:
                raise InvalidInput(
                    f"multimodal embedder {embedder.model_id} gave {len(embedding)} numbers for "
                    f"{path}, not its dim {embedder.dim}"
                )
    return Attachment(kind, path, signature, embedding)


def media_paths_of(moments: Iterable[Moment]) -> set[str]:
    """The stored media paths ``moments`` refer to."""
    return {p for m in moments for p in (m.image_path, m.audio_path) if p is not None}


class MediaStore:
    """``<home>/media/``: see the module docstring."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.root = home / MEDIA_DIR

    def put(self, source: Path) -> tuple[str, bool]:
        """Copy ``source`` in (atomically: temp file, fsync, rename); return its stored
        path (relative to the home) and whether it was new (False: stored already)."""
        suffix = normalised_suffix(source)
        files.ensure_private_dir(self.root)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".incoming-", suffix=".tmp")  # 0600
        try:
            digest = hashlib.sha256()
            with os.fdopen(fd, "wb") as out, source.open("rb") as src:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            name = f"{MEDIA_DIR}/{digest.hexdigest()[:2]}/{digest.hexdigest()}{suffix}"
            target = self.home / name
            if target.exists():
                return name, False
            files.ensure_private_dir(target.parent)
            os.replace(tmp, target)
            files.fsync_dir(target.parent)
            return name, True
        except OSError as err:
            raise InvalidInput(f"cannot copy {source} into {self.root}: {err.strerror}") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def path_of(self, stored: str) -> Path:
        """The file of a stored path (``media/ab/….png``); NotFound when it is missing."""
        path = self.home / check_stored_name(stored)
        if not path.is_file():
            raise NotFound(f"media file {stored} is missing from {self.root}")
        return path

    def verify(self, stored: str) -> Path:
        """:meth:`path_of`, checked against the SHA-256 in its name (CorruptFile if not)."""
        path = self.path_of(stored)
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != Path(stored).name.split(".")[0]:
            raise CorruptFile(path, "its bytes no longer match the SHA-256 in its name")
        return path

    def remove_unused(self, stored: Iterable[str], in_use: Collection[str]) -> list[str]:
        """Delete each of ``stored`` that is not in ``in_use`` (the paths moments still
        refer to); return those deleted."""
        removed = []
        for name in dict.fromkeys(stored):
            if name in in_use or not _STORED_RE.fullmatch(name):
                continue
            path = self.home / name
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(name)
                with contextlib.suppress(OSError):  # the ab/ directory, when empty
                    path.parent.rmdir()
        return removed

    def copy_from(
        self, other: MediaStore, stored: Iterable[str], *, links: bool = True
    ) -> list[str]:
        """Copy each of ``stored`` from ``other`` (export, import), checking each against
        the SHA-256 in its name first; return those that were new here. Without ``links``
        (an import), a symbolic link anywhere in ``other``'s ``media/`` is refused before
        any file is read."""
        names = list(dict.fromkeys(stored))
        if not links:
            for name in names:
                files.refuse_links(other.home, check_stored_name(name), "media file")
        sources = [(name, other.verify(name)) for name in names]  # all, first
        new = []
        for name, source in sources:
            if (self.home / name).exists():
                continue
            got, created = self.put(source)
            if got != name:  # a suffix this installation does not know: keep the name
                raise InvalidInput(f"cannot copy {source}: stored as {got}, not {name}")
            if created:
                new.append(name)
        return new

    def names(self) -> list[str]:
        """Every stored path, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.relative_to(self.home).as_posix()
            for p in self.root.glob("??/*")
            if _STORED_RE.fullmatch(p.relative_to(self.home).as_posix())
        )


def normalised_suffix(path: Path) -> str:
    from .decode import AUDIO_SUFFIXES, IMAGE_SUFFIXES

    suffix = path.suffix.lower()
    suffix = _SUFFIX_ALIASES.get(suffix, suffix)
    known = {_SUFFIX_ALIASES.get(s.lower(), s.lower()) for s in IMAGE_SUFFIXES | AUDIO_SUFFIXES}
    return suffix if suffix in known else ""


def check_stored_name(stored: str) -> str:
    """``stored`` if it is a media store path (no other file of the home can be named)."""
    if not _STORED_RE.fullmatch(stored):
        raise InvalidInput(
            f"{stored!r} is not a stored media path (media/<2 hex>/<sha256><suffix>)"
        )
    return stored
