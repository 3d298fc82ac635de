"""LangGraph's checkpointer conformance suite on fresh notebooks' checkpointers, through
their async methods or (:class:`SyncBridge`) their sync ones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from agent_notebook import Notebook

KEY_ENV = "AGENT_NOTEBOOK_KEY"


class SyncBridge(BaseCheckpointSaver[str]):
    """A checkpointer whose async methods call ``inner``'s sync ones, so that the (async)
    conformance suite exercises the sync API."""

    def __init__(self, inner: BaseCheckpointSaver[str]) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in list(self.inner.list(config, filter=filter, before=before, limit=limit)):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.inner.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.inner.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.inner.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.inner.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.inner.prune(thread_ids, strategy=strategy)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self.inner.get_delta_channel_history(config=config, channels=channels)

    def get_next_version(self, current: str | None, channel: None) -> str:
        return self.inner.get_next_version(current, channel)


def notebook_supply(
    tmp_path: Path, open_one: Callable[[Path], Notebook]
) -> Iterator[Iterator[Notebook]]:
    """For a fixture to ``yield from``: an endless supply of fresh notebooks, each opened
    by ``open_one`` in a home of its own under ``tmp_path``; all closed at the end."""
    opened: list[Notebook] = []

    def fresh() -> Iterator[Notebook]:
        while True:
            nb = open_one(tmp_path / f"nb{len(opened)}")
            opened.append(nb)
            yield nb

    yield fresh()
    for nb in opened:
        nb.close()


def passes_conformance(
    notebooks: Iterator[Notebook],
    api: str,
    request: pytest.FixtureRequest,
    saver_type: type[BaseCheckpointSaver[Any]],
    name: str,
) -> Any:
    """Run LangGraph's conformance suite on fresh notebooks' checkpointers (``saver_type``,
    sealed when the test's parameter says "encrypted"; ``api`` async or through
    :class:`SyncBridge`), check every capability passes in full, and return its report."""
    encrypted = "encrypted" in request.node.callspec.id

    @checkpointer_test(name=f"{name} ({api})")
    async def factory() -> AsyncIterator[BaseCheckpointSaver[str]]:
        saver = next(notebooks).checkpointer
        assert isinstance(saver, saver_type)
        assert isinstance(saver.serde, EncryptedSerializer) is encrypted
        yield saver if api == "async" else SyncBridge(saver)

    report = asyncio.run(validate(factory))
    failures = {name: r.failures for name, r in report.results.items() if not r.passed}
    assert failures == {}
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}
    assert all(r.detected and r.tests_failed == 0 for r in report.results.values())
    return report
