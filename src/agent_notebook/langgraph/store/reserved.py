"""The store namespaces the notebook keeps its own items in, reserved
(:data:`~agent_notebook.model.NOTEBOOK_NAMESPACE_ROOTS`: the thread map ``("threads",)``,
the session notebooks ``("session", thread, ...)``).

The notebook's stores refuse an app's put or delete there (:func:`check_op`), so that an
app's item never overwrites a thread's session or its notebook; the notebook's own writes
run inside :func:`notebook_writes` (every read-modify-write under
:func:`agent_notebook.langgraph.stores.write_lock` does). The items there never expire
(:func:`lasting`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from langgraph.store.base import GetOp, Op, PutOp, SearchOp

from ...errors import InvalidInput
from ...model import NOTEBOOK_NAMESPACE_ROOTS

__all__ = ["check_op", "is_reserved", "lasting", "notebook_writes"]

_OWN = {(root,) for root in NOTEBOOK_NAMESPACE_ROOTS}
#: Set while the notebook writes its own items (copied into worker threads by ``abatch``).
_notebook_writing: ContextVar[bool] = ContextVar("agent_notebook_store_writes", default=False)


def is_reserved(namespace: Sequence[str]) -> bool:
    """Whether ``namespace`` (a tuple, or a list as LangGraph's stores also take) is the
    notebook's own."""
    return tuple(namespace[:1]) in _OWN


@contextmanager
def notebook_writes() -> Iterator[None]:
    """Within it, this thread (or task) may write the reserved namespaces."""
    token = _notebook_writing.set(True)
    try:
        yield
    finally:
        _notebook_writing.reset(token)


def check_op(op: Op) -> Op:
    """``op``, ready for the store: InvalidInput for an app's put or delete into a reserved
    namespace; a put there never expires, and a read there refreshes no TTL (with
    ``refresh_on_read`` each read would otherwise be a write, waiting on any writer). A
    search's prefix given as a list becomes a tuple, as LangGraph's own SQL expects."""
    if isinstance(op, SearchOp) and not isinstance(op.namespace_prefix, tuple):
        op = op._replace(namespace_prefix=tuple(op.namespace_prefix))
    if isinstance(op, GetOp) and op.refresh_ttl and is_reserved(op.namespace):
        return op._replace(refresh_ttl=False)
    if isinstance(op, SearchOp) and op.refresh_ttl and is_reserved(op.namespace_prefix):
        return op._replace(refresh_ttl=False)
    if not isinstance(op, PutOp) or not is_reserved(op.namespace):
        return op
    if not _notebook_writing.get():
        where = "/".join(op.namespace)
        raise InvalidInput(
            f"store namespace {where!r} is reserved for the notebook's own items (the thread "
            "map ('threads',) and the session notebooks ('session', thread_id, ...)): put "
            "your app's items under another first label, such as ('app', ...); nothing was "
            "written"
        )
    return lasting(op)


def lasting(op: PutOp) -> PutOp:
    """The put without a TTL: the notebook's items never expire."""
    return op if op.ttl is None else op._replace(ttl=None)
