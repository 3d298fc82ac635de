"""The conformance suite every storage backend must pass, as pytest classes.

Use it from a test module that provides two fixtures::

    from agent_notebook.storage.conformance import *  # noqa: F403  (the Test* classes)

    @pytest.fixture
    def backend(tmp_path) -> StorageBackend: ...       # a fresh, empty backend

    @pytest.fixture
    def reopen(backend) -> Callable[[], StorageBackend]: ...  # same data, new instance

The in-memory reference backend passes it first; no driver is mocked. The classes are
grouped by topic: records (:mod:`.records`), derived indexes (:mod:`.indexes`), the cold
archive and deletion (:mod:`.removal`); the records they write come from :mod:`.records`.
"""

from .indexes import TestConceptIndex, TestFactIndex, TestLexicalSearch, TestVectors
from .records import (
    SID,
    SID2,
    T0,
    TestAtomic,
    TestCounters,
    TestMoments,
    TestReopen,
    TestSessions,
    make_entry,
    make_moment,
    make_session,
    rich_moment,
    rich_session,
)
from .removal import TestArchive, TestDeleteSession

__all__ = [
    "SID",
    "SID2",
    "T0",
    "TestArchive",
    "TestAtomic",
    "TestConceptIndex",
    "TestCounters",
    "TestDeleteSession",
    "TestFactIndex",
    "TestLexicalSearch",
    "TestMoments",
    "TestReopen",
    "TestSessions",
    "TestVectors",
    "make_entry",
    "make_moment",
    "make_session",
    "rich_moment",
    "rich_session",
]
