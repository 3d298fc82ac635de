"""Bounded threads: which old messages leave the live state when it outgrows its budget.

Pure functions, no I/O. When the live messages of a thread do not fit ``budget_tokens``,
:func:`plan_compaction` says which of the oldest ones to remove; the caller keeps them first
(moments, the condensed history), then drops them from the state (:func:`removals`). Rules:

* **Hysteresis.** Once over ``budget_tokens``, the oldest messages go until the kept ones fit
  ``target_ratio * budget_tokens``, so compaction does not run again on the next turn. When
  that is out of reach, as few go as make the kept ones fit the budget.
* **Turn boundaries.** The cut falls only where no tool call before it is answered after it:
  an AI message's tool calls never part from their ToolMessages. A ToolMessage whose call is
  not in the list (an orphan) belongs with the messages before it.
* **Pinned.** SystemMessages and the newest HumanMessage are never removed. What goes is a
  prefix of the other messages, so past the newest human message a cut may reach into the
  agent's current run (old tool calls and results) while the request itself stays verbatim.
* **User turns.** A cut before the newest human message moves forward to the start of a user
  turn, so the kept conversation opens with a user message (many chat APIs require it).
* **Too big to fit.** When the pinned messages alone exceed the budget, everything from the
  newest human message on is kept. If nothing can go, the plan's ``remove`` is empty.

Messages are taken by position and returned as the same objects; tool calls pair with their
results by call id, and :func:`removals` removes by message id.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from ..core.tokens import DEFAULT_COUNTER, TokenCounter
from ..errors import InvalidInput

__all__ = [
    "MESSAGE_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "CompactionPlan",
    "message_tokens",
    "plan_compaction",
    "removals",
    "tool_pairs_intact",
    "turn_boundaries",
]

MESSAGE_OVERHEAD: Final = 4  # role and framing, as chat APIs count them
TOOL_CALL_OVERHEAD: Final = 3  # the call's id and framing


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What leaves the live state (oldest first) and what stays (in order)."""

    remove: list[BaseMessage]
    keep: list[BaseMessage]
    tokens_before: int
    tokens_after: int


def message_tokens(message: BaseMessage, counter: TokenCounter = DEFAULT_COUNTER) -> int:
    """The message's text, its tool calls (name and JSON arguments) and a small overhead."""
    tokens = MESSAGE_OVERHEAD + counter.count(str(message.text))
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = json.dumps(call["args"], ensure_ascii=False, default=str)
            tokens += TOOL_CALL_OVERHEAD + counter.count(call["name"]) + counter.count(args)
    return tokens


def turn_boundaries(messages: Sequence[BaseMessage]) -> list[int]:
    """The positions ``i`` (``0`` to ``len(messages)``) where ``messages[:i]`` can be cut off
    without parting a tool call from its result or an orphan ToolMessage from the messages
    before it; ascending, always with ``0`` and ``len(messages)``."""
    n = len(messages)
    owner: dict[str, int] = {}  # tool call id -> position of the AI message that made it
    start = [n + 1] * (n + 1)  # start[j]: first position a ToolMessage at j forbids cutting at
    for j, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            made_at = owner.get(m.tool_call_id)
            start[j] = made_at + 1 if made_at is not None else j
        elif isinstance(m, AIMessage):
            owner.update((c["id"], j) for c in m.tool_calls if c["id"])
    # A cut at i is forbidden when a ToolMessage at j >= i has start[j] <= i.
    for j in range(n - 1, -1, -1):
        start[j] = min(start[j], start[j + 1])
    return [i for i in range(n + 1) if i in (0, n) or start[i] > i]


def plan_compaction(
    messages: Sequence[BaseMessage],
    budget_tokens: int,
    counter: TokenCounter = DEFAULT_COUNTER,
    *,
    target_ratio: float = 0.5,
) -> CompactionPlan | None:
    """``None`` when ``messages`` fit ``budget_tokens``; otherwise the plan that brings them
    down to ``target_ratio * budget_tokens`` (see the module doc for the rules)."""
    if budget_tokens < 0:
        raise InvalidInput(f"budget_tokens must be 0 or more, not {budget_tokens}")
    if not 0 < target_ratio <= 1:
        raise InvalidInput(f"target_ratio must be in (0, 1], not {target_ratio}")
    tokens = [message_tokens(m, counter) for m in messages]
    total = sum(tokens)
    if total <= budget_tokens:
        return None
    n = len(messages)
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    newest_human = humans[-1] if humans else None
    pinned = [isinstance(m, SystemMessage) or i == newest_human for i, m in enumerate(messages)]
    removable = [0]  # removable[i]: tokens of the unpinned messages before position i
    for size, is_pinned in zip(tokens, pinned, strict=True):
        removable.append(removable[-1] + (0 if is_pinned else size))
    boundaries = turn_boundaries(messages)

    if total - removable[n] > budget_tokens:  # the pinned messages alone do not fit
        cut = n if newest_human is None else max(b for b in boundaries if b <= newest_human)
    else:
        target = int(budget_tokens * target_ratio)
        fits_target = [b for b in boundaries if total - removable[b] <= target]
        cut = (fits_target or [b for b in boundaries if total - removable[b] <= budget_tokens])[0]
    if newest_human is not None and 0 < cut < newest_human:  # move to a user turn's start
        turns = (b for b in boundaries if cut <= b <= newest_human)
        cut = next((b for b in turns if isinstance(messages[b], HumanMessage)), cut)

    remove = [m for i, m in enumerate(messages[:cut]) if not pinned[i]]
    keep = [m for i, m in enumerate(messages) if i >= cut or pinned[i]]
    return CompactionPlan(remove, keep, total, total - removable[cut])


def tool_pairs_intact(messages: Sequence[BaseMessage]) -> bool:
    """Whether every ToolMessage answers a call made earlier in ``messages`` and every tool
    call is answered later, except the calls of the last AI message (still pending)."""
    made: set[str] = set()
    answered_after: dict[str, int] = {}  # call id -> position of its last result
    last_ai = -1
    for j, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in made:
                return False
            answered_after[m.tool_call_id] = j
        elif isinstance(m, AIMessage):
            made.update(c["id"] for c in m.tool_calls if c["id"])
            last_ai = j
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage) and i != last_ai:
            for call in m.tool_calls:
                if not call["id"] or answered_after.get(call["id"], -1) < i:
                    return False
    return True


def removals(plan: CompactionPlan) -> list[RemoveMessage]:
    """``RemoveMessage`` markers for ``add_messages`` that drop the plan's removed messages
    from a thread's state; every removed message must carry an id."""
    missing = [i for i, m in enumerate(plan.remove) if not m.id]
    if missing:
        raise InvalidInput(
            f"{len(missing)} message(s) to remove have no id (first at position {missing[0]} "
            "of the plan's remove list); messages in a thread's state get ids from add_messages"
        )
    return [RemoveMessage(id=str(m.id)) for m in plan.remove]
