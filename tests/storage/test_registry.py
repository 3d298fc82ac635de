"""The kinds of backend (storage/registry.py): what names each, and what open_backend says."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_notebook.errors import InvalidInput
from agent_notebook.storage import (
    MemoryBackend,
    SqliteBackend,
    YamlDirBackend,
    is_server_url,
    kind_of,
    open_backend,
)
from agent_notebook.storage.registry import KINDS, init_choices


def test_each_kind_is_named_as_its_class_says() -> None:
    assert [kind.name for kind in KINDS] == [k.capabilities.name for k in KINDS]


@pytest.mark.parametrize(
    ("location", "name"),
    [
        ("memory", "memory"),
        ("memory://", "memory"),
        (":memory:", "sqlite"),
        ("sqlite://", "sqlite"),
        ("sqlite:///x/notebook.db", "sqlite"),
        ("notes.sqlite3", "sqlite"),
        ("yaml:///x/dir", "yaml"),
        ("postgresql://u@h/db", "postgres"),
        ("postgres://u@h/db", "postgres"),
    ],
)
def test_a_location_names_its_kind(location: str, name: str) -> None:
    kind = kind_of(location)
    assert kind is not None and kind.name == name


def test_open_backend_opens_each_local_kind(tmp_path: Path) -> None:
    assert isinstance(open_backend("memory://"), MemoryBackend)
    assert isinstance(open_backend(":memory:"), SqliteBackend)
    opened = open_backend(tmp_path / "n.db")
    assert isinstance(opened, SqliteBackend)
    opened.close()
    made = open_backend(f"yaml://{tmp_path / 'y'}")
    assert isinstance(made, YamlDirBackend)
    made.close()
    again = open_backend(tmp_path / "y")  # a directory holding a YAML notebook
    assert isinstance(again, YamlDirBackend)
    again.close()


def test_an_unknown_location_lists_the_choices(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        open_backend(tmp_path / "nothing")
    assert str(caught.value).endswith(
        "use sqlite:///path/notebook.db, yaml:///path/dir, postgresql://user@host/database, "
        "memory://, or a path ending in .db"
    )


def test_init_takes_the_local_names_and_the_servers_urls() -> None:
    names, servers, said = init_choices()
    assert names == {"sqlite", "yaml"}
    assert [kind.name for kind in servers] == ["postgres"]
    assert said == "sqlite, yaml or a postgresql:// URL"
    assert is_server_url("postgresql://u@h/db") and not is_server_url("memory://")
