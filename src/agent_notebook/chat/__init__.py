"""The chat graph (seed 001): LangGraph nodes over the notebook, threads that stay small."""

from __future__ import annotations

from ..langgraph.messages import drafts_for
from .chat import build_chat_graph, thread_id_of
from .context import BuiltContext, ContextBuilder, ContextItem
from .models import ModelNotConfigured, ModelResolver
from .state import ThreadState

__all__ = [
    "BuiltContext",
    "ContextBuilder",
    "ContextItem",
    "ModelNotConfigured",
    "ModelResolver",
    "ThreadState",
    "build_chat_graph",
    "drafts_for",
    "thread_id_of",
]
