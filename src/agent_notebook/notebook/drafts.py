"""The one check of what a caller asks the notebook to record, used by every front end.

:meth:`Notebook.record_many <agent_notebook.notebook.facade.Notebook.record_many>` runs it before
anything is read, derived or written. A front end that starts a session for the moments
(``record --task``, the MCP ``record`` tool) runs it first, through
:meth:`Notebook.check_drafts <agent_notebook.notebook.facade.Notebook.check_drafts>`, so a refused
record leaves no empty session behind.

A draft is refused when it is not a :class:`MomentDraft` (unknown fields are named with the
valid ones; ``image_path``/``audio_path`` are the media store's), when it holds nothing
(no text but blanks, no file to attach, no action), or when its text is over
``moments.max_text_bytes``. :func:`check_imported` holds a moment imported from another
notebook to the same limits (its text size, how deep its actions nest).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..config import MomentLimits
from ..core.validation import validate_record
from ..errors import InvalidInput
from ..model import Moment, MomentDraft

__all__ = ["check_drafts", "check_imported"]

#: How deep an action's arguments or result may nest: deeper values fail to serialize
#: (pydantic stops near 250 levels) or to parse back, and no tool call needs that many.
MAX_JSON_DEPTH = 64
#: The most bytes a character takes in UTF-8: a text this many times shorter than the limit
#: is within it without being encoded.
_MAX_CHAR_BYTES = 4


def check_drafts(
    items: Iterable[MomentDraft | Mapping[str, Any]], limits: MomentLimits, where: str = "moment"
) -> list[MomentDraft]:
    """``items`` as drafts, or :class:`InvalidInput` naming the first bad one (``where N``)."""
    checked = []
    for n, item in enumerate(items):
        label = f"{where} {n}"
        draft = item if isinstance(item, MomentDraft) else validate_record(MomentDraft, item, label)
        if draft.is_empty:
            raise InvalidInput(
                f"{label}: it holds nothing (no text but blanks, no file to attach, no action); "
                "give it a 'text', or attach an image or audio file"
            )
        _check_size(draft.text, limits.max_text_bytes, label)
        _check_actions(draft, label)
        checked.append(draft)
    return checked


def check_imported(moment: Moment, limits: MomentLimits, where: str) -> None:
    """Refuse an imported ``moment`` that ``record`` would have refused: text over
    ``moments.max_text_bytes`` (a rollup's is compaction's, not a recorded text: not
    held to it), actions nested too deep. ``where`` names it (the file, the moment)."""
    if moment.rollup is None:
        _check_size(moment.content.text, limits.max_text_bytes, where, "imported")
    _check_actions(moment, where)


def _check_actions(item: MomentDraft | Moment, label: str) -> None:
    for i, action in enumerate(item.actions):
        if _too_deep(action.arguments) or _too_deep(action.result):
            raise InvalidInput(
                f"{label}: actions.{i}: its arguments or result nest deeper than "
                f"{MAX_JSON_DEPTH} levels; flatten them (or record them as text)"
            )


def _too_deep(value: Any) -> bool:
    """True if ``value`` nests lists and objects more than :data:`MAX_JSON_DEPTH` deep."""
    level: list[Any] = [value]
    for _ in range(MAX_JSON_DEPTH):
        level = [
            item
            for v in level
            if isinstance(v, dict | list)
            for item in (v.values() if isinstance(v, dict) else v)
        ]
        if not level:
            return False
    return True


def _check_size(text: str, limit: int, label: str, done: str = "recorded") -> None:
    if len(text) * _MAX_CHAR_BYTES <= limit:
        return
    size = len(text.encode("utf-8"))
    if size > limit:
        split = (
            "Split it into several moments (or ingest it as a conversation)"
            if done == "recorded"
            else "Split it into several moments in the source"
        )
        raise InvalidInput(
            f"{label}: its text is {_readable(size)} ({size:,} bytes of UTF-8), over the limit "
            f"of {_readable(limit)} a moment (moments.max_text_bytes in config.yaml); nothing "
            f"was {done}. {split}, or raise the limit"
        )


def _readable(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"
