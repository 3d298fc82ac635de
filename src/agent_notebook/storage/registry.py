"""The kinds of backend, by name and by how their locations look (URL schemes, paths).

One :class:`BackendKind` per backend: its name (as in :attr:`Capabilities.name`), the URL
schemes and exact locations that name it, how a plain path is recognised as one, how it is
opened (its module, and its driver, imported only then), and whether ``agent-notebook init
--backend`` takes its name or its URL. What it can do is its class's :class:`Capabilities`,
read here without opening one (:attr:`BackendKind.capabilities`), so the callers above
``storage/`` ask the kind (:func:`kind_of`) rather than matching a URL themselves.
:func:`~agent_notebook.storage.open_backend`, ``init --backend`` and the API tokens consult it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.crypto import Cipher
    from .base import Capabilities, StorageBackend
    from .sqlite.connection import Synchronous

__all__ = [
    "KINDS",
    "BackendKind",
    "OpenOptions",
    "init_choices",
    "is_server_url",
    "kind_of",
    "unknown_location",
]


@dataclass(frozen=True, slots=True)
class OpenOptions:
    """What ``open_backend`` passes on to the kind it opens."""

    sqlite_synchronous: Synchronous = "FULL"
    cipher: Cipher | None = None
    #: Only read (the source of an import): a YAML folder gets no lock file nor any write.
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class BackendKind:
    """One kind of backend (see the module's docstring)."""

    #: Its name: :attr:`Capabilities.name` of its class.
    name: str
    #: The class, imported when asked (its driver is imported only when one is opened).
    backend_class: Callable[[], type[StorageBackend]]
    #: Opens the backend at a location this kind recognised (the whole text, scheme and all).
    open: Callable[[str, OpenOptions], StorageBackend]
    #: Location prefixes that name this kind (``sqlite://``).
    schemes: tuple[str, ...] = ()
    #: Whole locations that name this kind (``memory``).
    exact: tuple[str, ...] = ()
    #: Whether a plain path (no scheme) is one of this kind's notebooks.
    recognises_path: Callable[[Path], bool] | None = None
    #: How a location of this kind looks, for the message naming the choices.
    example: str = ""
    #: What a plain path of this kind looks like, for the same message.
    path_example: str | None = None
    #: ``init --backend`` takes this name (``config.yaml``'s ``backend:``, in the home).
    init_by_name: bool = False
    #: The notebook is in a database server: ``init --backend`` takes its URL, and a URL
    #: given as the home (``Notebook.open("postgresql://…")``) names the backend.
    server: bool = False

    @property
    def capabilities(self) -> Capabilities:
        return self.backend_class().capabilities

    def names(self, location: str) -> bool:
        """Whether ``location`` names this kind by its scheme or whole."""
        return location in self.exact or location.startswith(self.schemes)


# -- the kinds ---------------------------------------------------------------------------------


def _sqlite_class() -> type[StorageBackend]:
    from .sqlite import SqliteBackend

    return SqliteBackend


def _open_sqlite(text: str, options: OpenOptions) -> StorageBackend:
    from .sqlite import SqliteBackend

    if text == ":memory:":
        return SqliteBackend(":memory:")
    if text.startswith("sqlite://"):
        return SqliteBackend(
            text.removeprefix("sqlite://") or ":memory:",
            synchronous=options.sqlite_synchronous,
            cipher=options.cipher,
        )
    return SqliteBackend(
        Path(text).expanduser(), synchronous=options.sqlite_synchronous, cipher=options.cipher
    )


def _yaml_class() -> type[StorageBackend]:
    from .yamldir import YamlDirBackend

    return YamlDirBackend


def _open_yaml(text: str, options: OpenOptions) -> StorageBackend:
    from .yamldir import YamlDirBackend

    root = text.removeprefix("yaml://") if text.startswith("yaml://") else Path(text).expanduser()
    return YamlDirBackend(root, cipher=options.cipher, read_only=options.read_only)


def _is_yaml_dir(path: Path) -> bool:
    return path.is_dir() and ((path / "index.yaml").exists() or (path / "sessions").is_dir())


def _postgres_class() -> type[StorageBackend]:
    from .postgres import PostgresBackend  # its modules import psycopg only when opening

    return PostgresBackend


def _open_postgres(text: str, options: OpenOptions) -> StorageBackend:
    from . import postgres_timeout_s
    from .postgres import PostgresBackend  # here: the driver loads only when used

    return PostgresBackend(text, cipher=options.cipher, timeout_s=postgres_timeout_s())


def _memory_class() -> type[StorageBackend]:
    from .memory import MemoryBackend

    return MemoryBackend


def _open_memory(text: str, options: OpenOptions) -> StorageBackend:
    from .memory import MemoryBackend

    return MemoryBackend()


#: Every kind, in the order the message naming the choices lists them. Locations are matched
#: by scheme or whole first (every kind), then plain paths (in this order).
KINDS: tuple[BackendKind, ...] = (
    BackendKind(
        name="sqlite",
        backend_class=_sqlite_class,
        open=_open_sqlite,
        schemes=("sqlite://",),
        exact=(":memory:",),
        recognises_path=lambda path: path.suffix in (".db", ".sqlite", ".sqlite3"),
        example="sqlite:///path/notebook.db",
        path_example="a path ending in .db",
        init_by_name=True,
    ),
    BackendKind(
        name="yaml",
        backend_class=_yaml_class,
        open=_open_yaml,
        schemes=("yaml://",),
        recognises_path=_is_yaml_dir,
        example="yaml:///path/dir",
        init_by_name=True,
    ),
    BackendKind(
        name="postgres",
        backend_class=_postgres_class,
        open=_open_postgres,
        schemes=("postgresql://", "postgres://"),
        example="postgresql://user@host/database",
        server=True,
    ),
    BackendKind(
        name="memory",
        backend_class=_memory_class,
        open=_open_memory,
        exact=("memory", "memory://"),
        example="memory://",
    ),
)


def kind_of(location: str | Path, *, paths: bool = True) -> BackendKind | None:
    """The kind of backend ``location`` names (None: no kind recognises it); without
    ``paths``, only by its scheme or whole (a plain path is not looked at)."""
    text = str(location)
    for kind in KINDS:
        if kind.names(text):
            return kind
    if not paths:
        return None
    path = Path(text).expanduser()
    for kind in KINDS:
        if kind.recognises_path is not None and kind.recognises_path(path):
            return kind
    return None


def is_server_url(location: str | Path) -> bool:
    """Whether ``location`` is the URL of a notebook in a database server."""
    kind = kind_of(location, paths=False)
    return kind is not None and kind.server


def unknown_location(text: str) -> str:
    """The message for a location no kind recognises: the choices."""
    choices = [kind.example for kind in KINDS if kind.example]
    choices += [kind.path_example for kind in KINDS if kind.path_example]
    listed = ", ".join(choices[:-1]) + f", or {choices[-1]}"
    return f"cannot tell which backend {text!r} is: use {listed}"


def init_choices() -> tuple[set[str], list[BackendKind], str]:
    """What ``init --backend`` takes: the names, the kinds whose URL it takes, and both
    said in words (``sqlite, yaml or a postgresql:// URL``)."""
    names = [kind.name for kind in KINDS if kind.init_by_name]
    servers = [kind for kind in KINDS if kind.server]
    urls = [f"a {kind.schemes[0]} URL" for kind in servers]
    words = [*names, *urls]
    said = ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]
    return set(names), servers, said
