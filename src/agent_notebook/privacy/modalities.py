"""Modality opt-outs (``privacy.modalities``): what an opted-out modality leaves of a moment.

* ``text: false``: no text, and nothing derived from it or standing in for it: no concepts
  and no retrieval keys (not even ones the caller gives, which are words of the text), and
  the default importance instead of one read from the text. The moment keeps its time, role,
  speaker, relations and actions (which are not text but tool calls: mask their secrets
  with ``privacy.secrets``).
* ``audio: false``: no ``audio_path`` and no ``content.audio_signature``; an attached
  audio file is not read, copied nor signed (nothing of it reaches the notebook's files).
* ``image: false``: no ``image_path`` and no ``content.image_signature``; likewise for an
  attached image file.
* ``embeddings: false``: no ``content.multimodal_embedding``, and no vectors at all: the
  notebook has no :class:`SemanticIndex` (search is lexical).

What is dropped is dropped silently for the caller, and said once per session in its audit
log (:func:`audit_text`), so the owner can tell why a moment has no text.
"""

from __future__ import annotations

from typing import Any

from ..config import Modalities
from ..model import DEFAULT_IMPORTANCE, MomentDraft

__all__ = ["audit_text", "strip"]


def strip(draft: MomentDraft, modalities: Modalities) -> tuple[MomentDraft, list[str]]:
    """``draft`` without its opted-out modalities, and the names of those it had."""
    update: dict[str, Any] = {}
    dropped = []
    if not modalities.text and (draft.text or draft.concepts or draft.retrieval_keys):
        update.update(text="", concepts=[], retrieval_keys=[])
        dropped.append("text")
    if not modalities.text and draft.importance is None:
        update["importance"] = DEFAULT_IMPORTANCE
    if not modalities.audio and draft.audio_file is not None:
        update["audio_file"] = None  # the file is never read nor copied
        dropped.append("audio")
    if not modalities.image and draft.image_file is not None:
        update["image_file"] = None
        dropped.append("image")
    return (draft.model_copy(update=update) if update else draft), dropped


def audit_text(modality: str) -> str:
    """The audit log's entry for a session's first moment that lost ``modality``."""
    return (
        f"privacy: {modality} not recorded (privacy.modalities.{modality} is false in "
        "config.yaml); said once per session"
    )
